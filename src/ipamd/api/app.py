"""The Quart (quart-trio) application: routes, auth, limits, errors, access log."""

from __future__ import annotations

import logging
import re
import time
from typing import Any

import trio
from quart import Response, g, request
from quart_trio import QuartTrio
from werkzeug.exceptions import HTTPException, MethodNotAllowed, RequestEntityTooLarge

from ipamd.api import auth, console, idempotency, openapi
from ipamd.api.direct import Direct, failure, log_access, request_id
from ipamd.api.errors import CODES, ApiError, envelope, from_domain
from ipamd.api.ratelimit import retry_after
from ipamd.api.router import (
    Reply,
    RequestContext,
    Router,
    RouteSpec,
    parse_body,
    parse_query,
    render,
)
from ipamd.api.routes import alert_destinations as alert_destination_routes
from ipamd.api.routes import (
    assignments,
    audit,
    client_classes,
    excludes,
    health,
    license,
    netbox,
    options,
    pd_pools,
    pools,
    prefixes,
    reservations,
    search,
    shared_networks,
    subnets,
    tenants,
    tokens,
    whoami,
)
from ipamd.api.routes import dns as dns_routes
from ipamd.api.routes import history as history_routes
from ipamd.api.routes import leases as lease_routes
from ipamd.api.routes import ops as ops_routes
from ipamd.api.routes import outbox as outbox_routes
from ipamd.api.routes import settings as settings_routes
from ipamd.api.routes import webhooks as webhook_routes
from ipamd.api.token_cache import TokenCache
from ipamd.api.workers import Limiter, LocalLimits
from ipamd.core import jsonutil
from ipamd.core.errors import DomainError
from ipamd.core.histogram import ApiLatency
from ipamd.state import AppState

API_PREFIX = "/api/v1"
log = logging.getLogger("ipamd.api")

# Every router of the API; a module added here is served and documented.
ROUTERS: list[Router] = [health.router, tokens.router, audit.router, history_routes.router]
ROUTERS += [whoami.router]  # the console shows the caller's name and role
ROUTERS += [webhook_routes.router, outbox_routes.router]
ROUTERS += [lease_routes.router, settings_routes.router]  # DHCP: leases, trusted relays
ROUTERS += [ops_routes.router, alert_destination_routes.router]  # docs/operations-monitoring.md
ROUTERS += [dns_routes.router]  # DNS (docs/dns.md)
ROUTERS += [
    tenants.router, prefixes.router, subnets.router, pools.router, excludes.router,
    reservations.router, assignments.router, options.router, client_classes.router,
    search.router, netbox.router, license.router,
]
ROUTERS += [pd_pools.router]  # IPv6 prefix delegation (docs/dhcpv6.md)
ROUTERS += [shared_networks.router]  # several subnets on one link (docs/api-ipam.md)

# A request's scope extension (Gate): set once its body may be read.
BODY_WANTED = "ipamd.body_wanted"


def all_routes() -> list[RouteSpec]:
    return [route for router in ROUTERS for route in router.routes]


def _rule(path: str) -> str:
    # {x_id} → <uuid:x_id> so a malformed id is a 404 before any SQL; other params are strings.
    return re.sub(
        r"\{(\w+)\}",
        lambda m: f"<uuid:{m[1]}>" if m[1].endswith("_id") else f"<{m[1]}>",
        path,
    )


def _header(name: str) -> str | None:
    """A request header, or None. (``headers.get`` of a missing header raises and catches a
    werkzeug HTTP exception inside: ~40 µs, and most requests lack the optional ones.)"""
    values = request.headers.getlist(name)
    return values[0] if values else None


async def _drain_body(response: Response) -> None:
    """Read a request body the handler never read (refused before it: 401, 404, 405, ...).

    A keep-alive connection whose request body was not read to its end is closed after the
    response (api/http1.py: the unread bytes would be taken for the next request); reading
    it (bounded by MAX_CONTENT_LENGTH) keeps the connection usable. A body too large or too
    slow closes the connection instead.
    A request that declares no body (most GETs) has nothing left to read.
    A client that sent `Expect: 100-continue` waits for a 100 before it sends the body, and
    none is sent before the request is authorized (Gate): a request refused before that
    gets its answer at once, without a 100, and the connection closes (RFC 9110 §10.1.1).
    """
    if _header("Content-Length") in (None, "", "0") and _header("Transfer-Encoding") is None:
        return
    if not g.get("authorized") and (_header("Expect") or "").lower() == "100-continue":
        response.headers["Connection"] = "close"
        return
    with trio.move_on_after(2) as waited:
        try:
            await request.body
        except RequestEntityTooLarge:
            response.headers["Connection"] = "close"
    if waited.cancelled_caught:
        response.headers["Connection"] = "close"


def _error_response(error: ApiError) -> Response:
    return render(error.body(), error.status, error.headers)


class Gate:
    """What is decided before Quart sees a request (docs/security.md, "The HTTP face").

    The node's request rate limit (docs/security.md: ``limits.requests_per_minute`` per client IP,
    loopback exempt) is decided here and only here: a request over it costs no routing,
    request context, body read or handler. Its 429 is the one Quart gave: the error
    envelope, Retry-After, and the headers ``_end`` adds; the body is not read (api/http1.py
    then closes a connection whose request had one). Route-specific limits
    (``RouteSpec.rate_limit_per_minute``) stay in the view. A plain GET of a route without
    path parameters is then answered by ``direct`` (api/direct.py) without Quart.

    A request with `Expect: 100-continue` gets its 100 when the app first reads the body
    (api/http1.py), and Quart reads at once, before the view has authorized anything: here
    that first read waits until the view says the body is wanted (``body_wanted``), so a
    request refused before (401, 403, 404, ...) is never told to send its body."""

    def __init__(self, inner: Any, state: AppState, limiter: Limiter,
                 latency: ApiLatency, direct: Direct) -> None:
        self.inner = inner
        self.state = state
        self.limiter = limiter
        self.latency = latency
        self.direct = direct

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            started = time.perf_counter()
            client = scope.get("client")
            remote = str(client[0]) if client else ""
            if not auth.is_loopback(remote):
                limit = self.state.config.limits.requests_per_minute
                wait = await self.limiter.hit(f"all|{remote}", limit)
                if wait is not None:
                    await self._refuse(scope, send, remote, limit, wait, started)
                    return
            headers = self.direct.takes(scope)
            if headers is not None:
                await self.direct.answer(scope, headers, send, started)
                return
            if scope.get("http_version") == "1.1" and any(
                    name == b"expect" and value.lower() == b"100-continue"
                    for name, value in scope["headers"]):
                wanted = trio.Event()
                scope = {**scope, "extensions": {**(scope.get("extensions") or {}),
                                                 BODY_WANTED: wanted}}
                receive = _when_wanted(wanted, receive)
        await self.inner(scope, receive, send)

    async def _refuse(self, scope: dict[str, Any], send: Any, remote: str, limit: int,
                      wait: float, started: float) -> None:
        error = ApiError(429, f"more than {limit} requests a minute from this address")
        body = jsonutil.dumps(error.body()).encode()
        rid = request_id(next((value.decode("latin-1") for name, value
                               in scope["headers"] if name == b"x-request-id"), None))
        await send({"type": "http.response.start", "status": 429, "headers": [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"retry-after", retry_after(wait).encode()),
            (b"x-request-id", rid.encode()),
            (b"cache-control", b"no-store"),
            (b"x-content-type-options", b"nosniff")]})
        await send({"type": "http.response.body", "body": body})
        self.latency.observe(scope["method"], "rate_limited", 429,
                             time.perf_counter() - started)
        if self.state.config.logging.access_log:
            log_access(rid, scope["method"], scope["path"], 429, started, remote, None)


def _when_wanted(wanted: trio.Event, receive: Any) -> Any:
    async def receive_when_wanted() -> Any:
        await wanted.wait()
        return await receive()

    return receive_when_wanted


def body_wanted() -> None:
    """The request is authorized: its body may be read (and a 100-continue sent)."""
    g.authorized = True
    # Gate puts a trio.Event there (hypercorn types extension values as dicts)
    wanted: object = (request.scope.get("extensions") or {}).get(BODY_WANTED)
    if isinstance(wanted, trio.Event):
        wanted.set()


def create_app(
    state: AppState, token_cache: TokenCache | None = None, limits: Limiter | None = None
) -> QuartTrio:
    """The app. ``token_cache`` remembers verified tokens only while its ``follow`` task
    listens for token changes (the runtime runs it); without one every request looks up.
    ``limits`` (default: this process's own) keeps the per-client-IP rate limits; an API
    worker process passes the main process's (api/workers.py)."""
    tokens_seen = token_cache if token_cache is not None else TokenCache()
    app = QuartTrio("ipamd", static_folder=None)
    app.config["MAX_CONTENT_LENGTH"] = state.config.api.max_body_bytes
    app.config["JSON_SORT_KEYS"] = False
    app.config["PROVIDE_AUTOMATIC_OPTIONS"] = False
    limiter = limits if limits is not None else LocalLimits()
    latency = state.counters.api_latency
    _install_request_hooks(app, state, latency)
    _install_error_handlers(app, state)
    _install_routes(app, state, limiter, tokens_seen)
    if state.config.api.console_enabled:
        console.install(app)  # the browser console's static files at / (docs/console.md)
    # ASGI middleware goes in place of Quart's asgi_app, Quart's documented way.
    direct = Direct(state, tokens_seen, latency,
                    [(API_PREFIX + route.path, route) for route in all_routes()])
    gate = Gate(app.asgi_app, state, limiter, latency, direct)
    app.asgi_app = gate  # type: ignore[method-assign,assignment]  # middleware, as Quart documents
    return app


def _install_request_hooks(app: QuartTrio, state: AppState, latency: ApiLatency) -> None:
    """Each request's id, timing, latency figure, access log line and unread body."""

    @app.before_request
    async def _begin() -> Response | None:
        g.started = time.perf_counter()
        g.request_id = request_id(_header("X-Request-Id"))
        g.actor = None
        remote = request.remote_addr or ""
        g.loopback = auth.is_loopback(remote)
        return None

    @app.after_request
    async def _end(response: Response) -> Response:
        await _drain_body(response)
        response.headers["X-Request-Id"] = getattr(g, "request_id", "")
        response.headers.setdefault("Cache-Control", "no-store")
        response.headers["X-Content-Type-Options"] = "nosniff"
        rule = request.url_rule.rule if request.url_rule is not None else "unmatched"
        started = getattr(g, "started", time.perf_counter())
        latency.observe(request.method, rule, response.status_code,
                        time.perf_counter() - started)
        if state.config.logging.access_log:
            log_access(getattr(g, "request_id", None), request.method, request.path,
                        response.status_code, started, request.remote_addr,
                        getattr(g, "actor", None))
        return response


def _install_error_handlers(app: QuartTrio, state: AppState) -> None:
    """Every failure answered in the error envelope (api/errors.py), never a stack trace."""

    @app.errorhandler(ApiError)
    async def _api_error(error: ApiError) -> Response:
        return _error_response(error)

    @app.errorhandler(DomainError)
    async def _domain_error(error: DomainError) -> Response:
        return _error_response(from_domain(error))

    @app.errorhandler(HTTPException)
    async def _http_error(error: HTTPException) -> Response:
        return _http_error_response(error, state.config.api.max_body_bytes)

    @app.errorhandler(Exception)
    async def _unexpected(error: Exception) -> Response:
        return render(*failure(error, getattr(g, "request_id", "?")))


def _http_error_response(error: HTTPException, max_body_bytes: int) -> Response:
    """Werkzeug's own refusals (no route, wrong method, body too large) in the envelope."""
    status = error.code or 500
    messages = {
        404: f"no such resource: {request.path}",
        405: f"{request.method} is not allowed on {request.path}",
        413: f"request body larger than {max_body_bytes} bytes",
    }
    message = messages.get(status, error.description or error.name)
    headers = {}
    if isinstance(error, MethodNotAllowed) and error.valid_methods:
        headers["Allow"] = ", ".join(sorted(error.valid_methods))
    if status == 413:
        # The rest of the body was never read: this connection cannot carry another request.
        headers["Connection"] = "close"
    return render(envelope(CODES.get(status, "error"), message), status, headers)


def _install_routes(
    app: QuartTrio, state: AppState, limiter: Limiter, token_cache: TokenCache
) -> None:
    """Every declared route (ROUTERS) and the OpenAPI document that describes them."""
    for route in all_routes():
        app.add_url_rule(
            API_PREFIX + _rule(route.path),
            endpoint=route.endpoint,
            view_func=_view(state, limiter, token_cache, route),
            methods=[route.method],
        )

    document = openapi.build(all_routes(), API_PREFIX)

    @app.route(API_PREFIX + "/openapi.json", methods=["GET"])
    async def _openapi() -> Response:
        # The description of the API is public: it holds no data.
        return render(document, 200)


def _view(
    state: AppState, limiter: Limiter, token_cache: TokenCache, route: RouteSpec
) -> Any:
    async def view(**params: Any) -> Response:
        remote = request.remote_addr or ""
        if route.rate_limit_per_minute is not None and not g.loopback:
            limit = route.rate_limit_per_minute(state)
            wait = await limiter.hit(f"{route.endpoint}|{remote}", limit)
            if wait is not None:
                raise ApiError(
                    429,
                    f"more than {limit} {route.method} {route.path} requests a minute "
                    "from this address",
                    headers={"Retry-After": retry_after(wait)},
                )
        caller = await auth.authenticate(
            state, token_cache, remote, _header("Authorization"))
        if caller.token_id is None:
            auth.check_bootstrap_request(
                route.method, _header("Host"), _header("Content-Type"),
                state.config.api.bootstrap_host_names)
        g.actor = caller.actor
        auth.authorize(caller, route.role)
        body_wanted()
        key = _header("Idempotency-Key")
        ctx = RequestContext(
            state=state,
            caller=caller,
            route=route,
            request_id=g.request_id,
            token_cache=token_cache,
            query=parse_query(route.query),
            idempotency_key=idempotency.check_key(key) if key is not None else None,
        )
        ctx.body, ctx.raw_body = await parse_body(route.body)
        result = await route.handler(ctx, **params)
        if isinstance(result, Response):
            return result
        if isinstance(result, Reply):
            return render(result.body, result.status, result.headers)
        return render(result, route.status)

    view.__name__ = route.endpoint
    return view
