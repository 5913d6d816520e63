"""Applying a plan through the HTTP API (spec §1: created through the API), safely:

- in the plan's order, which is dependency order: a parent is created before its children,
  whose bodies refer to its id;
- every create carries an Idempotency-Key derived from the source object's key, so a rerun
  with the same token (after an interruption) replays what exists and creates only what is
  missing (docs/api-ipam.md, "Conventions"; keys live `api.idempotency_ttl_seconds`);
- a 409 is never overwritten: when the object already there is the planned one (the same
  CIDR, name, range, address and identity, or option code) it is used as it is for the
  children and the fields that differ are named; anything else (an overlapping pool, an
  address reserved for another client) is reported as a conflict and skipped;
- a 402 (the license cap) stops the run cleanly; so do 401/403 and an unreachable API.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from ipamd.importer.model import Plan, Planned, collection_path, resolve

# What makes an object already on the appliance the planned one, when a create meets a 409:
# these fields equal (the API shows them in the canonical form the plan uses).
IDENTITY: dict[str, tuple[str, ...]] = {
    "prefix": ("cidr",), "subnet": ("cidr",), "client_class": ("name",),
    "shared_network": ("name",), "pool": ("start_ip", "end_ip"),
    "exclude": ("start_ip", "end_ip"), "reservation": ("ip", "mac", "duid"),
    "assignment": ("ip", "hostname"), "pd_pool": ("prefix", "delegated_length"),
    "subnet_option": ("code", "vendor_class"), "class_option": ("code", "vendor_class"),
    "reservation_option": ("code", "vendor_class"),
}
# List filters that narrow the search on the server (the rest is matched here).
FILTERS: dict[str, str] = {"prefix": "cidr", "subnet": "cidr", "shared_network": "name"}
MAX_PAGES = 100  # of 1,000 items: far more client classes than any configuration holds
REPLAYED = "idempotent-replayed"  # set by the API on a replayed 201 (docs/api-ipam.md)


class Stop(Exception):
    """The run cannot go on (license cap, credentials, the API unreachable)."""


@dataclass
class Entry:
    key: str
    kind: str
    source: str
    outcome: str  # created, exists, conflict, invalid, skipped
    detail: str = ""


@dataclass
class Report:
    entries: list[Entry] = field(default_factory=list)
    stopped: str | None = None

    def count(self, outcome: str) -> int:
        return sum(1 for entry in self.entries if entry.outcome == outcome)

    def summary(self, total: int) -> str:
        done = len(self.entries)
        parts = [f"{self.count(name)} {name}" for name in
                 ("created", "exists", "conflict", "invalid", "skipped")]
        tail = f"; stopped after {done} of {total}: {self.stopped}" if self.stopped else ""
        return f"{', '.join(parts)} (of {total} planned){tail}"


Progress = Callable[[int, int, Entry], None]


class Applier:
    def __init__(self, client: httpx.Client, progress: Progress | None = None) -> None:
        self.client = client
        self.progress = progress
        self.ids: dict[str, str] = {}
        self.no_shared_networks = False

    def apply(self, plan: Plan) -> Report:
        report = Report()
        total = len(plan.objects)
        for number, obj in enumerate(plan.objects, 1):
            try:
                entry = self.one(obj)
            except Stop as why:
                report.stopped = str(why)
                break
            report.entries.append(entry)
            if self.progress is not None:
                self.progress(number, total, entry)
        return report

    def one(self, obj: Planned) -> Entry:
        def entry(outcome: str, detail: str = "") -> Entry:
            return Entry(obj.key, obj.kind, str(obj.source), outcome, detail)

        body = dict(obj.body)
        if obj.kind == "shared_network" and self.no_shared_networks:
            return entry("skipped", "this appliance has no /shared-networks")
        if "shared_network_id" in body and self.no_shared_networks:
            del body["shared_network_id"]
        missing = [key for key in obj.parents if key not in self.ids
                   and not (key.startswith("shared_network:") and self.no_shared_networks)]
        if missing:
            return entry("skipped", f"needs {missing[0]}, which was not created")
        reply = self.post(collection_path(obj, self.ids), resolve(body, self.ids),
                          obj.idempotency_key())
        return self.judge(obj, reply, entry)

    def judge(self, obj: Planned, reply: httpx.Response, entry: Callable[..., Entry]) -> Entry:
        if reply.status_code == 201:
            self.ids[obj.key] = str(reply.json()["id"])
            replayed = reply.headers.get(REPLAYED) == "true"
            return entry("exists" if replayed else "created",
                         "made by an earlier run" if replayed else "")
        message = _message(reply)
        if reply.status_code == 402:
            raise Stop(f"the license cap: {message}")
        if reply.status_code in (401, 403):
            raise Stop(f"{reply.status_code}: {message} (check the token and its role: "
                       "operator or admin)")
        if reply.status_code == 404 and obj.kind == "shared_network":
            self.no_shared_networks = True
            return entry("skipped", "this appliance has no /shared-networks; its subnets are "
                         "created without one")
        if reply.status_code == 409:
            found = self.existing(obj)
            if found is None:
                return entry("conflict", message)
            self.ids[obj.key] = found[0]
            differs = f" (it differs from the plan in {', '.join(found[1])})" if found[1] else ""
            return entry("exists", f"already there; kept as it is{differs}")
        if reply.status_code in (400, 404, 422):
            return entry("invalid", f"{reply.status_code}: {message}")
        raise Stop(f"{reply.status_code} from the API: {message}")

    def post(self, path: str, body: dict[str, Any], key: str) -> httpx.Response:
        try:
            return self.client.post(path, json=body, headers={"Idempotency-Key": key})
        except httpx.HTTPError as error:
            raise Stop(f"the API did not answer ({type(error).__name__}: {error})") from None

    def existing(self, obj: Planned) -> tuple[str, list[str]] | None:
        """The object already there that is the planned one (its IDENTITY fields equal), and
        the fields it holds with other values; None when there is none."""
        fields = IDENTITY[obj.kind]
        want = {name: obj.body.get(name) for name in fields}
        params: dict[str, Any] = {"limit": 1000}
        if obj.kind in FILTERS:
            params[FILTERS[obj.kind]] = obj.body[FILTERS[obj.kind]]
        path = collection_path(obj, self.ids)
        for _ in range(MAX_PAGES):  # bounded: a configuration's scope holds far fewer
            page = self.get(path, params)
            if page is None:
                return None
            for item in page.get("items", []):
                if all(item.get(name) == value for name, value in want.items()):
                    return str(item["id"]), _differing(obj, item)
            if not page.get("next_cursor"):
                return None
            params["cursor"] = page["next_cursor"]
        return None

    def get(self, path: str, params: dict[str, Any]) -> dict[str, Any] | None:
        try:
            reply = self.client.get(path, params=params)
        except httpx.HTTPError as error:
            raise Stop(f"the API did not answer ({type(error).__name__}: {error})") from None
        if reply.status_code != 200:
            return None
        page = reply.json()
        return page if isinstance(page, dict) else None


def _differing(obj: Planned, item: dict[str, Any]) -> list[str]:
    """The planned fields the existing object holds with other values (references aside)."""
    return sorted(name for name, value in obj.body.items()
                  if isinstance(value, str | int | bool | list | dict) and name in item
                  and item[name] != value)


def _message(reply: httpx.Response) -> str:
    try:
        error = reply.json()["error"]
        return f"{error['code']}: {error['message']}"
    except (ValueError, KeyError, TypeError):
        return reply.text[:200] or reply.reason_phrase


def client(url: str, token: str, ca_file: str | None = None,
           timeout: float = 30.0) -> httpx.Client:
    """An API client: `url` is the appliance's base (`https://ipam.example`) or its
    `/api/v1`; the token goes only in the Authorization header; `ca_file` trusts the
    appliance's own certificate (docs/security.md), else the system's CAs."""
    base = url.rstrip("/")
    if not base.endswith("/api/v1"):
        base += "/api/v1"
    verify = ssl.create_default_context(cafile=ca_file) if ca_file else True
    return httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"},
                        timeout=timeout, verify=verify)
