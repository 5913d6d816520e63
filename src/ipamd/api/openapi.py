"""OpenAPI 3.1 description generated from the route declarations and their pydantic models."""

from __future__ import annotations

import re
import typing
from typing import Any

from pydantic import BaseModel, TypeAdapter
from pydantic.json_schema import models_json_schema

from ipamd import __version__
from ipamd.api.errors import CODES
from ipamd.api.router import RouteSpec
from ipamd.api.schemas import ErrorBody

REF = "#/components/schemas/{model}"

_ERROR_TEXT = {
    400: "Bad request (malformed JSON, bad query parameter, bad cursor)",
    401: "Missing or invalid Bearer token",
    402: "License limit reached",
    403: "The token's role does not permit this operation",
    404: "Not found",
    409: "Conflict (overlap, duplicate, or Idempotency-Key reused with another body)",
    413: "Request body too large",
    422: "Validation error; the message names the field",
    429: "Rate limited; see Retry-After",
    503: "Unavailable",
}


def _models(routes: list[RouteSpec]) -> list[type[BaseModel]]:
    found: dict[str, type[BaseModel]] = {"ErrorBody": ErrorBody}

    def add(candidate: Any) -> None:
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            found.setdefault(candidate.__name__, candidate)
        for arg in typing.get_args(candidate):
            add(arg)

    for route in routes:
        add(route.body)
        add(route.response)
    return list(found.values())


def _schema_of(annotation: Any, names: dict[Any, str]) -> dict[str, Any]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return {"$ref": REF.format(model=names[annotation])}
    schema = TypeAdapter(annotation).json_schema(ref_template=REF, mode="serialization")
    # The models it refers to are already in components/schemas.
    schema.pop("$defs", None)
    return schema


def _error_content() -> dict[str, Any]:
    return {"application/json": {"schema": {"$ref": REF.format(model="ErrorBody")}}}


def _content_schema(content_type: str, schema: dict[str, Any]) -> dict[str, Any]:
    # Only JSON bodies follow the response model; CSV and other text is a string.
    return schema if content_type == "application/json" else {"type": "string"}


def _query_parameters(model: type[BaseModel]) -> list[dict[str, Any]]:
    schema = model.model_json_schema(by_alias=True)
    props = schema.get("properties", {})
    required = set(schema.get("required", []))
    params = []
    for name, prop in props.items():
        param: dict[str, Any] = {
            "name": name,
            "in": "query",
            "required": name in required,
            "schema": {k: v for k, v in prop.items() if k not in {"title", "description"}},
        }
        if "description" in prop:
            param["description"] = prop["description"]
        params.append(param)
    return params


def build(routes: list[RouteSpec], prefix: str) -> dict[str, Any]:
    models = _models(routes)
    keys, defs = models_json_schema(
        [(m, "serialization") for m in models], ref_template=REF
    )
    names = {key[0]: value["$ref"].rsplit("/", 1)[-1] for key, value in keys.items()}
    paths: dict[str, dict[str, Any]] = {}
    for route in routes:
        paths.setdefault(prefix + route.path, {})[route.method.lower()] = _operation(route, names)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "ipamd API",
            "version": __version__,
            "description": "IP address management and DHCP in one appliance.",
        },
        "servers": [{"url": prefix}],
        "paths": {path.removeprefix(prefix) or "/": ops for path, ops in paths.items()},
        "components": {
            "schemas": defs.get("$defs", {}),
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer",
                           "description": "service_live_… API token"},
            },
        },
    }


def _operation(route: RouteSpec, names: dict[Any, str]) -> dict[str, Any]:
    operation: dict[str, Any] = {
        "operationId": route.handler.__name__,
        "summary": route.summary,
        "tags": [route.tag],
        "security": [{"bearer": []}],
        "x-required-role": route.role,
        "responses": _responses(route, names),
    }
    params = _parameters(route)
    if params:
        operation["parameters"] = params
    if route.body is not None:
        operation["requestBody"] = {
            # An empty body reads as {}: only a model with required fields needs one.
            "required": bool(route.body.model_json_schema().get("required")),
            "content": {"application/json": {"schema": _schema_of(route.body, names)}},
        }
    return operation


def _parameters(route: RouteSpec) -> list[dict[str, Any]]:
    params: list[dict[str, Any]] = [
        {"name": name, "in": "path", "required": True,
         "schema": {"type": "string", "format": "uuid"} if name.endswith("_id")
         else {"type": "string"}}
        for name in re.findall(r"\{(\w+)\}", route.path)
    ]
    if route.query is not None:
        params += _query_parameters(route.query)
    if route.idempotent:
        params.append({
            "name": "Idempotency-Key", "in": "header", "required": False,
            "schema": {"type": "string", "minLength": 1, "maxLength": 255},
            "description": "same key and body replay the first 201; another body gets 409",
        })
    return params


def _responses(route: RouteSpec, names: dict[Any, str]) -> dict[str, Any]:
    success: dict[str, Any] = {"description": "Success"}
    if route.status != 204:
        schema = _schema_of(route.response, names) if route.response is not None else {}
        success["content"] = {
            ctype: {"schema": _content_schema(ctype, schema)} for ctype in route.content_types
        }
    responses: dict[str, Any] = {str(route.status): success}
    statuses = set(route.errors) | {401, 403, 413, 429}
    if route.body is not None:
        statuses |= {400, 422}
    if route.query is not None:
        statuses.add(400)
    for status in sorted(statuses):
        responses[str(status)] = {
            "description": _ERROR_TEXT.get(status, CODES.get(status, "error")),
            "content": _error_content(),
        }
    responses["default"] = {
        "description": "Unexpected error",
        "content": _error_content(),
    }
    return responses
