"""Which process serves a TCP connection: the API's worker processes (api.workers > 1) all
accept on the same sockets, and a test that must reach each of them asks the kernel."""

from __future__ import annotations

import os
from pathlib import Path


def worker_pids(parent: int | None = None) -> list[int]:
    """The API worker processes (``ipamd child api-worker``) whose parent is ``parent``
    (default: this process, which runs the appliance in the tests)."""
    parent = os.getpid() if parent is None else parent
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            ppid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except (OSError, IndexError, ValueError):
            continue
        if ppid == parent and b"api-worker" in argv:
            found.append(int(proc.name))
    return sorted(found)


def _socket_inode(server_port: int, client_port: int) -> str | None:
    """The inode of the server side of the loopback connection client_port → server_port."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local, remote, inode = fields[1], fields[2], fields[9]
            if (int(local.rsplit(":", 1)[1], 16) == server_port
                    and int(remote.rsplit(":", 1)[1], 16) == client_port and inode != "0"):
                return inode
    return None


def serving_pid(server_port: int, client_port: int, pids: list[int]) -> int | None:
    """Which of ``pids`` holds the server side of that connection (None: none of them)."""
    inode = _socket_inode(server_port, client_port)
    if inode is None:
        return None
    for pid in pids:
        try:
            fds = list(Path(f"/proc/{pid}/fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(fd) == f"socket:[{inode}]":
                    return pid
            except OSError:
                continue
    return None
