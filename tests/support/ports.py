import socket


def free_port(kind: int = socket.SOCK_STREAM) -> int:
    """A port that is free on loopback right now."""
    with socket.socket(socket.AF_INET, kind) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
