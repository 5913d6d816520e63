"""Small helpers of the importer's unit tests: write a configuration, read its plan."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from ipamd.importer import kea
from ipamd.importer.model import Plan, Planned, Resolver

EXAMPLES = Path("/usr/share/doc/kea/examples")  # Debian's kea-doc (Makefile TEST_PACKAGES)


def write(tmp_path: Path, text: str, name: str = "kea.json") -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return str(path)


def kea4(tmp_path: Path, dhcp4: dict[str, Any], resolver: Resolver | None = None) -> Plan:
    """The plan of `{"Dhcp4": dhcp4}`."""
    return kea.read(write(tmp_path, json.dumps({"Dhcp4": dhcp4}, indent=1)), resolver)


def kea6(tmp_path: Path, dhcp6: dict[str, Any]) -> Plan:
    return kea.read(write(tmp_path, json.dumps({"Dhcp6": dhcp6}, indent=1)))


def of_kind(plan: Plan, kind: str) -> list[Planned]:
    return [obj for obj in plan.objects if obj.kind == kind]


def bodies(plan: Plan, kind: str) -> list[dict[str, Any]]:
    return [dict(obj.body) for obj in of_kind(plan, kind)]


def refusals(plan: Plan) -> list[str]:
    """Each refusal as `construct: reason`."""
    return [f"{item.construct}: {item.reason}" for item in plan.refused]


def refused(plan: Plan, *words: str) -> bool:
    """Some refusal mentions every word."""
    return any(all(word in line for word in words) for line in refusals(plan))


def noted(plan: Plan, *words: str) -> bool:
    return any(all(word in note.text for word in words) for note in plan.notes)
