"""The OpenAPI 3.1 document: valid, and complete for every IPAM operation."""

from openapi_spec_validator import validate

from ipamd.api import app, openapi


def _document() -> dict:
    return openapi.build(app.all_routes(), app.API_PREFIX)


def test_document_validates_as_openapi_3_1():
    document = _document()
    assert document["openapi"] == "3.1.0"
    validate(document)


def test_every_operation_has_security_errors_and_schemas():
    document = _document()
    for path, operations in document["paths"].items():
        for method, op in operations.items():
            where = f"{method.upper()} {path}"
            assert op["security"] == [{"bearer": []}], where
            assert {"401", "403"} <= set(op["responses"]), where
            for status, response in op["responses"].items():
                if status.startswith(("4", "5")) or status == "default":
                    schema = response["content"]["application/json"]["schema"]
                    assert schema == {"$ref": "#/components/schemas/ErrorBody"}, where
            if method in ("post", "patch", "put"):
                body = op.get("requestBody")
                if body is not None:
                    assert body["content"]["application/json"]["schema"], where
            success = [s for s in op["responses"] if s.startswith("2")]
            assert len(success) == 1, where
            if success[0] != "204":
                assert op["responses"][success[0]]["content"], where


def test_ipam_creates_take_an_idempotency_key_and_children_nest():
    document = _document()
    for path in ("/prefixes", "/subnets", "/subnets/{subnet_id}/pools",
                 "/subnets/{subnet_id}/reservations", "/subnets/{subnet_id}/excludes",
                 "/subnets/{subnet_id}/options", "/subnets/{subnet_id}/assignments",
                 "/tenants", "/client-classes"):
        post = document["paths"][path]["post"]
        names = [p["name"] for p in post.get("parameters", [])]
        assert "Idempotency-Key" in names, path
        assert "201" in post["responses"], path
    for item in ("/pools/{pool_id}", "/excludes/{exclude_id}", "/reservations/{reservation_id}",
                 "/options/{option_id}", "/assignments/{assignment_id}"):
        assert set(document["paths"][item]) == {"get", "patch", "delete"}, item
    assert "402" in document["paths"]["/subnets/{subnet_id}/reservations"]["post"]["responses"]


def test_csv_export_is_documented_as_text():
    content = _document()["paths"]["/netbox/prefixes"]["get"]["responses"]["200"]["content"]
    assert content["text/csv"]["schema"] == {"type": "string"}
    assert content["application/json"]["schema"]["type"] == "array"
