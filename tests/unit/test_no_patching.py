"""The no-patching check (tests/support/no_patching.py): src/ keeps it, and each way of
changing another package's module attributes is named with its file and line."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.support import no_patching

SRC = Path(__file__).resolve().parents[2] / "src"


def _found(source: str) -> list[tuple[int, str]]:
    findings = no_patching.findings_in(textwrap.dedent(source), Path("m.py"))
    return [(f.line, f.target) for f in findings]


def test_src_changes_no_other_package_s_module_attributes() -> None:
    found = no_patching.check(SRC)
    assert found == [], "\n".join(map(str, found))


@pytest.mark.parametrize(("source", "expected"), [
    ("import hypercorn.trio.run\nhypercorn.trio.run.TCPServer = object\n",
     [(2, "hypercorn.trio.run.TCPServer")]),
    ("import trio\ntrio.sleep = print\n", [(2, "trio.sleep")]),
    ("import hypercorn.trio.run as run\nrun.trio = None\n", [(2, "run.trio")]),
    ("from hypercorn.trio import run\nrun.TCPServer = object\n", [(2, "run.TCPServer")]),
    ("from hypercorn.config import Config\nConfig.backlog = 1\n", [(2, "Config.backlog")]),
    ("import json\njson.decoder.errmsg += 'x'\n", [(2, "json.decoder.errmsg")]),
    ("import json\ndel json.dumps\n", [(2, "json.dumps")]),
    ("import json\njson.a, (json.b, n) = 1, (2, 3)\n", [(2, "json.a"), (2, "json.b")]),
    ("import json\nsetattr(json, 'dumps', repr)\n", [(2, "setattr(json, 'dumps', repr)")]),
    ("import json\ndelattr(json.decoder, 'x')\n", [(2, "delattr(json.decoder, 'x')")]),
    ("def install():\n    import hypercorn.trio.run\n"
     "    hypercorn.trio.run.trio = None\n", [(3, "hypercorn.trio.run.trio")]),
])
def test_each_form_is_found_with_its_line(source: str, expected: list[tuple[int, str]]) -> None:
    assert sorted(_found(source)) == sorted(expected)


@pytest.mark.parametrize("source", [
    "from ipamd.api import http1\nhttp1.MAX_RECV = 1\n",  # ours
    "from . import http1\nhttp1.MAX_RECV = 1\n",  # ours, relative
    "import ipamd.api.http1\nipamd.api.http1.MAX_RECV = 1\n",  # ours
    "from quart import g\ng.actor = 'x'\n",  # a request-scoped object, made to be written
    "import logging\nlogging.getLogger('x').disabled = True\n",  # a call's result
    "import json\ndef f(json):\n    json.x = 1\n",  # a parameter shadows the module
    "import json\nx = {}\nx['json'] = json.dumps\n",  # reading is not changing
])
def test_what_is_not_another_package_s_module_is_not_found(source: str) -> None:
    assert _found(source) == []


def test_the_command_names_file_and_line_and_fails(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "patch.py").write_text("import trio\n\ntrio.run = None\n")
    (tmp_path / "fine.py").write_text("import trio\n\nvalue = trio.run\n")
    assert no_patching.main(["no_patching", str(tmp_path)]) == 1
    out = capsys.readouterr().out.strip().splitlines()
    assert out == [f"{tmp_path / 'patch.py'}:3: assigns trio.run, an attribute of module trio "
                   "(another package's): pass what is needed as a parameter"]
    (tmp_path / "patch.py").unlink()
    assert no_patching.main(["no_patching", str(tmp_path)]) == 0
