"""The browser console's static files, served at / on both faces (docs/console.md).

The files hold no data, so they are served without a token; everything with data comes
from /api/v1. Only the files found in the package at start-up are routed (one URL rule per
file): any other path is the API's ordinary 404 and no path ever reaches the filesystem.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from quart import Quart, Response, request

CONSOLE_DIR = Path(__file__).resolve().parent.parent / "console"

CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
    ".json": "application/json",
    ".txt": "text/plain; charset=utf-8",
}

# No inline script or style, nothing from elsewhere; data only from this origin's API.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=()",
}


@dataclass(frozen=True)
class StaticFile:
    body: bytes
    content_type: str
    etag: str


def load(directory: Path = CONSOLE_DIR) -> dict[str, StaticFile]:
    """URL path → file, for every servable file under the console directory."""
    files: dict[str, StaticFile] = {}
    if not directory.is_dir():
        return files
    for path in sorted(directory.rglob("*")):
        content_type = CONTENT_TYPES.get(path.suffix)
        if not path.is_file() or content_type is None or path.name.startswith("."):
            continue
        body = path.read_bytes()
        etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
        url = "/" + path.relative_to(directory).as_posix()
        files[url] = StaticFile(body, content_type, etag)
    if "/index.html" in files:
        files["/"] = files["/index.html"]
    return files


def _view(item: StaticFile) -> Callable[[], Awaitable[Response]]:
    async def view() -> Response:
        headers = dict(SECURITY_HEADERS)
        headers["ETag"] = item.etag
        # Revalidate every time (a cheap 304): an upgraded appliance serves new files at once.
        headers["Cache-Control"] = "no-cache"
        if item.etag in request.headers.get("If-None-Match", ""):
            return Response(b"", status=304, headers=headers)
        return Response(item.body, status=200, headers=headers, content_type=item.content_type)

    return view


def install(app: Quart) -> int:
    """Add one GET rule per console file; returns how many."""
    files = load()
    for index, (url, item) in enumerate(files.items()):
        app.add_url_rule(url, endpoint=f"console_{index}", view_func=_view(item), methods=["GET"])
    return len(files)
