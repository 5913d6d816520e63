"""The install steps in the docs name real targets and agree with each other."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ["README.md", "image/README.md", "image/Containerfile", "systemd/ipamd.service",
        "docs/DEVELOPING.md"]
HOST_STEPS = [
    "make -C /opt/ipamd setup",
    "cp /opt/ipamd/systemd/ipamd.service /etc/systemd/system/",
    "systemctl daemon-reload && systemctl enable --now ipamd",
]
# A make command as written to be run: at the start of a line (a shell block, a comment in the
# unit, a RUN in the Containerfile) or at the start of a `code span`, not prose.
_MAKE = re.compile(r"(?:^[ \t#$]*(?:RUN[ \t]+)?|`)make((?:[ \t]+(?:-C[ \t]+\S+|[a-z][a-z0-9-]*))+)",
                   re.M)


def _targets() -> set[str]:
    text = (ROOT / "Makefile").read_text()
    return {m[1] for m in re.finditer(r"^([a-z][a-z0-9-]*)\s*:(?!=)", text, re.M)}


def _make_commands(text: str) -> list[list[str]]:
    commands = []
    for match in _MAKE.finditer(text):
        words = re.sub(r"-C[ \t]+\S+", "", match[1]).split()
        commands.append(words)
    return commands


@pytest.mark.parametrize("doc", DOCS)
def test_every_make_command_in_the_docs_names_real_targets(doc: str) -> None:
    targets = _targets()
    commands = _make_commands((ROOT / doc).read_text())
    assert commands or doc == "docs/DEVELOPING.md", f"{doc}: no make command found"
    named = {word for words in commands for word in words}
    unknown = named - targets
    assert not unknown, f"{doc}: make targets that do not exist: {sorted(unknown)}"


def test_the_retired_target_is_gone() -> None:
    for doc in DOCS:
        assert "install-deps" not in (ROOT / doc).read_text(), doc


@pytest.mark.parametrize("doc", ["README.md", "image/README.md"])
def test_host_install_steps_are_the_same_everywhere(doc: str) -> None:
    text = (ROOT / doc).read_text()
    for step in HOST_STEPS:
        assert step in text, f"{doc} lacks {step!r}"


def test_the_unit_comment_gives_the_same_steps_and_paths() -> None:
    unit = (ROOT / "systemd/ipamd.service").read_text()
    comment = "\n".join(line.lstrip("# ") for line in unit.splitlines() if line.startswith("#"))
    for step in HOST_STEPS:
        assert step in comment, step
    # What the unit starts is what `make run` starts, from where `make setup` put it.
    makefile = (ROOT / "Makefile").read_text()
    assert "supervisord -n -c appliance/supervisord.conf" in makefile
    assert "/opt/ipamd/.venv/bin/supervisord -n -c /opt/ipamd/appliance/supervisord.conf" in unit
    assert re.search(r"^setup:.*\bvenv\b.*\bvar\b", makefile, re.M)
    assert re.search(r"^run: setup\b", makefile, re.M)
