"""GET routes without path parameters answered before Quart (issue 54: a list page's CPU).

Quart's request machinery (request and app contexts, werkzeug's headers and query parsing,
the Response object, hooks, its ASGI adapter) was about a third of a list page's CPU in an
API worker. A request this module takes — a declared GET route with no path parameters and
no route rate limit, no body, no ``Expect``, a query string of plain ``name=value`` pairs
(no percent escapes or ``+``, so decoding it cannot differ from werkzeug's) — runs the same
steps as ``app._view`` and the app's hooks (auth, role, Idempotency-Key check, query model,
handler, the error envelope, X-Request-Id, Cache-Control, X-Content-Type-Options, the
latency figure, the access log) and sends the same head and body; anything else goes to
Quart. tests/integration/test_api_direct.py compares both paths byte for byte.
"""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from collections.abc import Iterable
from typing import Any

from pydantic import ValidationError

from ipamd.api import auth, idempotency
from ipamd.api.errors import ApiError, bad_request, envelope, from_domain, from_validation
from ipamd.api.router import RawJson, Reply, RequestContext, RouteSpec
from ipamd.api.token_cache import TokenCache
from ipamd.core import jsonutil
from ipamd.core.errors import DomainError
from ipamd.core.histogram import ApiLatency
from ipamd.db.outage import is_connection_loss
from ipamd.state import AppState

access_log = logging.getLogger("ipamd.access")
log = logging.getLogger("ipamd.api")

_REQUEST_ID = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
_PAIR = rb"[A-Za-z0-9_]+=[A-Za-z0-9._~:/,-]*"
PLAIN_QUERY = re.compile(rb"(?:%s(?:&%s)*)?\Z" % (_PAIR, _PAIR))
# The request headers a direct answer reads; a body or Expect sends the request to Quart.
READ = frozenset({b"authorization", b"host", b"content-type", b"x-request-id",
                  b"idempotency-key"})
BODY = frozenset({b"transfer-encoding", b"expect"})
Headers = dict[bytes, str]


def request_id(incoming: str | None) -> str:
    """The client's X-Request-Id when it is a sane one, else a new one."""
    return incoming if incoming is not None and _REQUEST_ID.match(incoming) else uuid.uuid4().hex


def log_access(request_id: str | None, method: str, path: str, status: int, started: float,
               remote: str | None, actor: str | None) -> None:
    access_log.info(json.dumps(
        {"request_id": request_id, "method": method, "path": path, "status": status,
         "ms": round((time.perf_counter() - started) * 1000, 2), "remote": remote,
         "actor": actor},
        separators=(",", ":")))


def failure(error: Exception, request_id: str) -> tuple[Any, int, dict[str, str]]:
    """An exception as the envelope's (body, status, headers), as the app's handlers give it."""
    if isinstance(error, ApiError):
        return error.body(), error.status, error.headers
    if isinstance(error, DomainError):
        mapped = from_domain(error)
        return mapped.body(), mapped.status, mapped.headers
    if is_connection_loss(error):
        # A restart or failover, not a bug: no traceback (the Database's Outage logged it
        # once), and the client is told to come back shortly.
        return (envelope("unavailable", "the database is unreachable; retry shortly"), 503,
                {"Retry-After": "2"})
    log.exception("request %s failed", request_id)
    return envelope("internal", f"internal error (request id {request_id})"), 500, {}


# What a handler answered here may return (its declared return type): a Quart Response
# (CSV, metrics text) is made and sent by Quart.
RETURNS = frozenset({"dict[str, Any]", "Reply"})


def answerable(route: RouteSpec) -> bool:
    return (route.method == "GET" and "{" not in route.path and route.body is None
            and route.rate_limit_per_minute is None
            and route.handler.__annotations__.get("return") in RETURNS)


class Direct:
    """The routes answered here, by path, and what answering them needs."""

    def __init__(self, state: AppState, token_cache: TokenCache, latency: ApiLatency,
                 routes: Iterable[tuple[str, RouteSpec]]) -> None:
        self.state = state
        self.token_cache = token_cache
        self.latency = latency
        # path -> (the route, its Quart rule: the latency figure's label)
        self.routes = {path: (route, path) for path, route in routes if answerable(route)}

    def takes(self, scope: dict[str, Any]) -> Headers | None:
        """The headers it reads when this request is answered here, else None."""
        if scope["method"] != "GET" or scope["path"] not in self.routes \
                or not PLAIN_QUERY.match(scope["query_string"]) or scope.get("root_path"):
            return None  # (a root path is Quart's to strip from the path)
        wanted: Headers = {}
        for name, value in scope["headers"]:
            name = name.lower()
            if name in BODY or (name == b"content-length" and value.strip() != b"0"):
                return None
            if name in READ and name not in wanted:
                wanted[name] = value.decode("latin-1")  # as Quart decodes them
        if scope["http_version"] < "1.1":
            wanted.setdefault(b"host", "")  # as Quart gives an HTTP/1.0 request no Host
        return wanted

    async def answer(self, scope: dict[str, Any], headers: Headers, send: Any,
                     started: float) -> None:
        route, rule = self.routes[scope["path"]]
        rid = request_id(headers.get(b"x-request-id"))
        client = scope.get("client")
        remote = str(client[0]) if client else ""
        actor: list[str] = []
        try:
            status, extra, text = await self._run(route, scope, headers, remote, rid, actor)
        except Exception as error:  # every failure in the envelope, as the app's handlers
            body, status, extra = failure(error, rid)
            text = jsonutil.dumps(body)
        data = text.encode()
        head = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(data))]
        head += [(name.lower().encode(), value.encode()) for name, value in extra.items()]
        head.append((b"x-request-id", rid.encode()))
        if not any(name == b"cache-control" for name, _ in head):
            head.append((b"cache-control", b"no-store"))
        head.append((b"x-content-type-options", b"nosniff"))
        await send({"type": "http.response.start", "status": status, "headers": head})
        await send({"type": "http.response.body", "body": data})
        self.latency.observe("GET", rule, status, time.perf_counter() - started)
        if self.state.config.logging.access_log:
            log_access(rid, "GET", scope["path"], status, started, remote,
                       actor[0] if actor else None)

    async def _run(self, route: RouteSpec, scope: dict[str, Any], headers: Headers,
                   remote: str, rid: str, actor: list[str]) -> tuple[int, dict[str, str], str]:
        """``app._view`` for this request: (status, headers, JSON text)."""
        state = self.state
        caller = await auth.authenticate(state, self.token_cache, remote,
                                         headers.get(b"authorization"))
        if caller.token_id is None:
            auth.check_bootstrap_request(route.method, headers.get(b"host"),
                                         headers.get(b"content-type"),
                                         state.config.api.bootstrap_host_names)
        actor.append(caller.actor)
        auth.authorize(caller, route.role)
        key = headers.get(b"idempotency-key")
        ctx = RequestContext(
            state=state, caller=caller, route=route, request_id=rid,
            token_cache=self.token_cache, query=_query(route, scope["query_string"]),
            idempotency_key=idempotency.check_key(key) if key is not None else None)
        result = await route.handler(ctx)
        if isinstance(result, Reply):
            return result.status, result.headers, _text(result.body, result.status)
        return route.status, {}, _text(result, route.status)


def _text(value: Any, status: int) -> str:
    if isinstance(value, RawJson):
        return value.text
    return "" if value is None and status == 204 else jsonutil.dumps(value)


def _query(route: RouteSpec, raw: bytes) -> Any:
    """``router.parse_query`` for a plain query string (PLAIN_QUERY: nothing to decode)."""
    if route.query is None:
        return None
    values: dict[str, str] = {}
    if raw:
        for pair in raw.decode("ascii").split("&"):
            name, _, value = pair.partition("=")
            if name in values:
                raise bad_request(f"query parameter {name!r} given more than once")
            values[name] = value
    try:
        return route.query.model_validate(values)
    except ValidationError as error:
        raise from_validation(error, "query") from None
