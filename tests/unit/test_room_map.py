"""docs/DEVELOPING.md's room map matches the tree, and the typed handles match their owners."""

from __future__ import annotations

import fnmatch
import inspect
import re
from pathlib import Path

from ipamd.dhcp.server import DhcpServer
from ipamd.state import DhcpControl

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "src" / "ipamd"
GUIDE = REPO / "docs" / "DEVELOPING.md"


def _room_map() -> str:
    text = GUIDE.read_text(encoding="utf-8")
    return text[text.index("## The room map"):text.index("## Where new work goes")]


def _ignored() -> list[str]:
    lines = (REPO / ".gitignore").read_text().splitlines()
    return [line.strip().strip("/") for line in lines if line.strip() and line[0] != "#"]


def test_every_room_of_the_package_is_on_the_map():
    shown = _room_map()
    missing = [f"{p.name}/" for p in PACKAGE.iterdir()
               if p.is_dir() and p.name != "__pycache__" and f"`{p.name}/`" not in shown]
    missing += [p.name for p in PACKAGE.glob("*.py")
                if p.name != "__init__.py" and f"`{p.name}`" not in shown]
    assert missing == [], f"add these rooms to the room map in docs/DEVELOPING.md: {missing}"


def test_every_top_level_folder_is_on_the_map():
    shown = _room_map()
    ignored = _ignored()
    folders = [p.name for p in REPO.iterdir()
               if p.is_dir() and not p.name.startswith(".")
               and not any(fnmatch.fnmatch(p.name, pattern) for pattern in ignored)]
    missing = [name for name in folders if f"`{name}/`" not in shown]
    assert missing == [], f"add these folders to docs/DEVELOPING.md: {missing}"


def test_the_map_names_no_room_that_is_gone():
    # a table row names a room or a top-level folder; only wave-2 rooms may not exist yet
    for name, planned in re.findall(r"^\| `([a-z_]+)/`( \(wave 2\))? \|", _room_map(), re.M):
        exists = (PACKAGE / name).is_dir() or (REPO / name).is_dir()
        assert planned or exists, f"{name}/ is on the map but not in the tree"


def test_the_guide_stays_inside_the_repository():
    text = GUIDE.read_text(encoding="utf-8")
    assert "../" not in text and "/work/" not in text


def test_the_dhcp_server_is_what_its_handle_promises():
    promised = {name for name in vars(DhcpControl) if not name.startswith("_")}
    assert promised == {"addresses", "forget", "reload_plan", "counters_snapshot",
                        "saturated_seconds", "receiving_seconds", "lease_changes"}
    for name in promised:
        mine, theirs = getattr(DhcpControl, name), getattr(DhcpServer, name)
        if isinstance(mine, property):
            assert isinstance(theirs, property), name
        else:
            assert inspect.iscoroutinefunction(mine) == inspect.iscoroutinefunction(theirs), name
            assert list(inspect.signature(mine).parameters) == list(
                inspect.signature(theirs).parameters), name
