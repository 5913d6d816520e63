"""Route declarations: every route names its method, path, role, models and status.

The declaration drives three things from one place: the Quart URL rule with
auth, role check, rate limit, body/query validation and JSON rendering; the
OpenAPI 3.1 document; and the test that fails when a route lacks a role.

A handler is ``async def handler(ctx: RequestContext, **path_params)`` and returns
a JSON-able value (status from the declaration) or a ``Reply``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator
from pydantic_core import PydanticCustomError
from quart import Response, request

from ipamd.api import idempotency, untrusted
from ipamd.api.errors import UNSTORABLE, ApiError, bad_request, from_validation
from ipamd.api.token_cache import TokenCache
from ipamd.core import jsonutil
from ipamd.state import AppState

Role = Literal["viewer", "operator", "admin"]
ROLES: tuple[Role, ...] = ("viewer", "operator", "admin")
RANK = {role: rank for rank, role in enumerate(ROLES)}
REPLAYED = "Idempotent-Replayed"  # on a 201 replayed for an Idempotency-Key (docs/api-ipam.md)

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")


def _storable(data: Any) -> Any:
    """Refuse, naming the field, any string Postgres cannot store (NUL, lone surrogates)."""
    where = untrusted.unstorable(data)
    if where is not None:
        raise PydanticCustomError(
            UNSTORABLE, "must not contain NUL (\\u0000) or lone surrogates",
            {"field": where},
        )
    return data


class Body(BaseModel):
    """Base of request bodies: unknown fields and wrong types are refused, not coerced."""

    model_config = ConfigDict(extra="forbid", strict=True)

    @model_validator(mode="before")
    @classmethod
    def _storable_text(cls, data: Any) -> Any:
        return _storable(data)


class Query(BaseModel):
    """Base of query-string models: values arrive as strings, so coercion is allowed."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _storable_text(cls, data: Any) -> Any:
        return _storable(data)


@dataclass(frozen=True)
class Caller:
    role: Role
    remote_ip: str
    loopback: bool
    token_id: str | None = None
    token_name: str | None = None

    @property
    def actor(self) -> str:
        if self.token_id:
            return f"token:{self.token_id}"
        return "bootstrap:loopback"


@dataclass(frozen=True)
class RawJson:
    """A reply body that is JSON text already (a list page spliced from rendered rows)."""

    text: str


@dataclass
class Reply:
    body: Any
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class RequestContext:
    state: AppState
    caller: Caller
    route: RouteSpec
    request_id: str
    token_cache: TokenCache
    body: BaseModel | None = None  # an instance of the route's ``body`` model
    query: BaseModel | None = None  # an instance of the route's ``query`` model
    raw_body: Any = None
    idempotency_key: str | None = None

    @property
    def actor(self) -> str:
        return self.caller.actor

    def body_as(self, model: type[M]) -> M:
        """The validated body, typed: ``model`` is the one the route declares."""
        return _declared(self.body, model, self.route, "body")

    def query_as(self, model: type[M]) -> M:
        """The validated query string, typed: ``model`` is the one the route declares."""
        return _declared(self.query, model, self.route, "query")

    def fields(self, *, exclude_unset: bool = False) -> dict[str, Any]:
        """The body's fields as the domain rooms take them (a PATCH: ``exclude_unset``)."""
        return self.body_as(BaseModel).model_dump(exclude_unset=exclude_unset)

    async def run(self, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        return await self.state.db.run(fn, *args)

    async def tx(self, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        return await self.state.db.transaction(fn, *args)

    async def create(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> Reply:
        """Run a create unit ``fn(conn, *args) -> created object`` in one transaction, as 201.

        With an Idempotency-Key header (on routes declared idempotent) the same key and
        body replay the first 201; another body gets 409.
        """
        key = self.idempotency_key if self.route.idempotent else None
        if key is None:
            created = await self.state.db.transaction(fn, *args)
            return Reply(jsonutil.plain(created), 201)
        scope = f"{self.caller.actor}|{self.route.method}|{request.path}"
        digest = hashlib.sha256(jsonutil.canonical(self.raw_body)).digest()
        status, body, replayed = await self.state.db.transaction(
            idempotency.run_once,
            scope,
            key,
            digest,
            self.state.config.api.idempotency_ttl_seconds,
            fn,
            args,
        )
        # A replay says so, so a client that retries (ipamd-import) can tell it from a create.
        return Reply(body, status, {REPLAYED: "true"} if replayed else {})


def _declared(value: BaseModel | None, model: type[M], route: RouteSpec, part: str) -> M:
    # A handler asking for another model than its route declares is a bug in the route.
    if not isinstance(value, model):
        raise TypeError(f"{route.method} {route.path} declares no {part} {model.__name__}")
    return value


Handler = Callable[..., Awaitable[Any]]


@dataclass
class RouteSpec:
    method: str
    path: str  # OpenAPI style: /tokens/{token_id}
    role: Role
    handler: Handler
    summary: str
    tag: str
    body: type[BaseModel] | None = None
    query: type[BaseModel] | None = None
    response: Any = None  # a model, list[model], or None
    status: int = 200
    rate_limit_per_minute: Callable[[AppState], int] | None = None
    idempotent: bool = False
    errors: tuple[int, ...] = ()
    content_types: tuple[str, ...] = ("application/json",)

    @property
    def rule(self) -> str:
        return self.path.replace("{", "<").replace("}", ">")

    @property
    def endpoint(self) -> str:
        return f"{self.handler.__module__}.{self.handler.__name__}"


class Router:
    """A group of routes under one tag (one OpenAPI tag, one module)."""

    def __init__(self, tag: str) -> None:
        self.tag = tag
        self.routes: list[RouteSpec] = []

    def route(
        self,
        method: str,
        path: str,
        *,
        role: Role,
        summary: str,
        body: type[BaseModel] | None = None,
        query: type[BaseModel] | None = None,
        response: Any = None,
        status: int = 200,
        rate_limit_per_minute: Callable[[AppState], int] | None = None,
        idempotent: bool = False,
        errors: tuple[int, ...] = (),
        content_types: tuple[str, ...] = ("application/json",),
    ) -> Callable[[Handler], Handler]:
        if role not in ROLES:
            raise ValueError(f"{method} {path}: unknown role {role!r}")

        def register(handler: Handler) -> Handler:
            self.routes.append(
                RouteSpec(
                    method=method.upper(),
                    path=path,
                    role=role,
                    handler=handler,
                    summary=summary,
                    tag=self.tag,
                    body=body,
                    query=query,
                    response=response,
                    status=status,
                    rate_limit_per_minute=rate_limit_per_minute,
                    idempotent=idempotent,
                    errors=errors,
                    content_types=content_types,
                )
            )
            return handler

        return register


def parse_query(model: type[M] | None) -> M | None:
    if model is None:
        return None
    values: dict[str, Any] = {}
    for name in request.args:
        items = request.args.getlist(name)
        if len(items) > 1:
            raise bad_request(f"query parameter {name!r} given more than once")
        values[name] = items[0]
    try:
        return model.model_validate(values)
    except ValidationError as error:
        raise from_validation(error, "query") from None


async def parse_body(model: type[M] | None) -> tuple[Any, Any]:
    """Returns (validated model, raw parsed JSON)."""
    if model is None:
        return None, None
    # Over api.max_body_bytes, get_data raises 413 (rendered by the app's HTTP error handler).
    data = await request.get_data(cache=False)
    if not data or not data.strip():
        raw: Any = {}
    else:
        try:
            raw = untrusted.parse_json(data)
        except untrusted.Refused as error:
            if error.status == 400:
                raise bad_request(f"request body: {error.message}") from None
            raise ApiError(error.status, f"body: {error.message}", "validation_error") from None
    if not isinstance(raw, dict):
        raise ApiError(422, "body: expected a JSON object", "validation_error")
    try:
        return model.model_validate(raw), raw
    except ValidationError as error:
        raise from_validation(error) from None


def render(value: Any, status: int, headers: dict[str, str] | None = None) -> Response:
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    if isinstance(value, RawJson):
        return json_response(value.text, status, headers)
    text = "" if value is None and status == 204 else jsonutil.dumps(value)
    return json_response(text, status, headers)


def json_response(text: str, status: int, headers: dict[str, str] | None = None) -> Response:
    """A reply whose JSON is already text."""
    response = Response(text, status=status, content_type="application/json")
    for name, item in (headers or {}).items():
        response.headers[name] = item
    return response
