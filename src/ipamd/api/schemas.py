"""Response models: they document the API (OpenAPI) and are what the handlers return."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, Field

T = TypeVar("T")


class Page(BaseModel, Generic[T]):
    items: list[T]
    next_cursor: str | None = Field(description="null when there are no more pages")


class ErrorDetail(BaseModel):
    code: str
    message: str


class ErrorBody(BaseModel):
    error: ErrorDetail


class TokenOut(BaseModel):
    id: uuid.UUID
    tenant_id: uuid.UUID
    name: str
    role: str
    hint: str = Field(description="the first characters of the secret, for recognition")
    created_at: dt.datetime
    updated_at: dt.datetime
    expires_at: dt.datetime | None
    last_used_at: dt.datetime | None
    revoked: bool
    revoked_at: dt.datetime | None


class TokenCreated(TokenOut):
    token: str = Field(description="the secret, service_live_…; shown only in this response")


class AuditEntry(BaseModel):
    id: uuid.UUID
    at: dt.datetime
    actor: str
    action: str
    object_type: str
    object_id: str | None
    before: dict[str, Any] | None
    after: dict[str, Any] | None


class Health(BaseModel):
    status: str = Field(description="ok, or degraded when the database is unreachable")
    database: str
    schema_version: int | None
    version: str
    uptime_seconds: float
