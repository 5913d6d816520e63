async def test_bootstrap_then_bearer(anon, appliance):
    assert (await anon.get("/health")).status_code == 200
    made = await anon.post("/tokens", json={"name": "first", "role": "admin"})
    assert made.status_code == 201, made.text
    secret = made.json()["token"]
    assert secret.startswith("service_live_")
    denied = await anon.get("/health")
    assert denied.status_code == 401
    assert denied.json()["error"]["code"] == "unauthorized"
    ok = await anon.get("/health", headers={"Authorization": f"Bearer {secret}"})
    assert ok.status_code == 200, ok.text
    assert ok.json()["database"] == "ok"
