"""Run a list of HTTP requests against the API and print what came back, as JSON.

Used by the end-to-end tests from inside a network namespace (``ip netns exec``), so the
appliance sees a real non-loopback peer. Usage: ``api_probe.py PLAN.json`` where the plan is

    {"base": "https://10.77.9.1:4433/api/v1", "ca": "/path/cert.pem",
     "steps": [{"name": "health", "method": "GET", "path": "/health",
                "headers": {}, "json": null, "repeat": 1, "new_connection": false,
                "connections": 1}]}

and the output is ``{"steps": [{"name", "statuses", "elapsed", "first": {...},
"by_status": {"<status>": {"index", "body", "headers"}}}]}``: every status in order, and
the first response of each distinct status with its body and headers. With
``new_connection`` every request of the step asks the server to close its connection, so
each goes over a connection of its own (with api.workers > 1: to any worker). With
``connections`` N > 1 the step opens N kept-alive connections of its own, one after the
other, and sends its requests over them in turn (with api.workers > 1 they are shared
evenly, so N = 2 reaches both workers).
"""

from __future__ import annotations

import json
import ssl
import sys
import time
from collections.abc import Callable
from typing import Any

import httpx

# The probe must finish even against a wedged server; each request is bounded too.
REQUEST_TIMEOUT = 10.0
MAX_REPEAT = 2000
MAX_CONNECTIONS = 16


def _tls(ca: str | None) -> ssl.SSLContext | bool:
    if not ca:
        return False
    # The appliance's self-signed certificate names the host, not the test address:
    # trust exactly that certificate and skip only the name check.
    context = ssl.create_default_context(cafile=ca)
    context.check_hostname = False
    return context


def _body(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return response.text[:500]


def run_step(client: httpx.Client, step: dict[str, Any],
             new_client: Callable[[], httpx.Client]) -> dict[str, Any]:
    connections = int(step.get("connections", 1))
    if connections == 1:
        return _run(step, [client])
    if not 1 < connections <= MAX_CONNECTIONS:
        raise ValueError(f"connections must be 1..{MAX_CONNECTIONS}")
    own = [new_client() for _ in range(connections)]
    try:
        return _run(step, own)
    finally:
        for each in own:
            each.close()


def _run(step: dict[str, Any], clients: list[httpx.Client]) -> dict[str, Any]:
    repeat = int(step.get("repeat", 1))
    if not 1 <= repeat <= MAX_REPEAT:
        raise ValueError(f"repeat must be 1..{MAX_REPEAT}")
    statuses: list[int] = []
    by_status: dict[str, Any] = {}
    started = time.monotonic()
    headers = dict(step.get("headers") or {})
    if step.get("new_connection"):
        headers["Connection"] = "close"
    for index in range(repeat):
        response = clients[index % len(clients)].request(
            step.get("method", "GET"), step["path"], headers=headers, json=step.get("json"),
        )
        statuses.append(response.status_code)
        key = str(response.status_code)
        if key not in by_status:
            by_status[key] = {"index": index, "body": _body(response),
                              "headers": dict(response.headers)}
    return {"name": step.get("name", step["path"]), "statuses": statuses,
            "elapsed": round(time.monotonic() - started, 3), "by_status": by_status}


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: api_probe.py PLAN.json", file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as handle:
        plan = json.load(handle)
    results = []

    def new_client() -> httpx.Client:  # one kept-alive connection
        return httpx.Client(base_url=plan["base"], verify=_tls(plan.get("ca")),
                            timeout=REQUEST_TIMEOUT, limits=httpx.Limits(max_connections=1))

    with httpx.Client(base_url=plan["base"], verify=_tls(plan.get("ca")),
                      timeout=REQUEST_TIMEOUT) as client:
        for step in plan["steps"]:
            results.append(run_step(client, step, new_client))
    json.dump({"steps": results}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
