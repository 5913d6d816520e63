"""Well-formed JSON with values of every wrong kind: the Kea reader plans or refuses, naming
the line, and never raises anything but a ReadError (docs/migrating.md)."""

from __future__ import annotations

import copy
import json
import random
from typing import Any

import pytest

from ipamd.importer import kea, kea_syntax
from ipamd.importer.model import ReadError
from tests.unit.importer.helpers import EXAMPLES

ODD: list[Any] = [None, True, -1, 0, 2**40, 1.5, "", "x", "::", "0.0.0.0", "10.77.1.0/24",
                  "a - b", [], {}, ["x"], {"a": 1}, "01:02", "{{ x }}", "1a:1b:1c:1d:1e:1f"]


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def _mutate(node: Any, rng: random.Random) -> None:
    """Replace one value somewhere under ``node`` with an odd one."""
    while isinstance(node, dict | list) and node:
        slot = rng.choice(list(node)) if isinstance(node, dict) else rng.randrange(len(node))
        if rng.random() < 0.4 or not isinstance(node[slot], dict | list) or not node[slot]:
            node[slot] = copy.deepcopy(rng.choice(ODD))
            return
        node = node[slot]


@pytest.mark.parametrize("seed", range(4))
def test_odd_values_anywhere_are_planned_or_refused(tmp_path, seed):
    rng = random.Random(seed)
    examples = sorted([*(EXAMPLES / "kea4").glob("*.json"), *(EXAMPLES / "kea6").glob("*.json")])
    path = tmp_path / "mutated.json"
    for _ in range(150):
        example = rng.choice(examples)
        config = _plain(kea_syntax.load(str(example)))
        for _ in range(rng.randint(1, 4)):
            _mutate(config, rng)
        path.write_text(json.dumps(config, indent=1))
        try:
            plan = kea.read(str(path))
        except ReadError as error:
            assert error.file == str(path) and error.line >= 1
        else:
            for item in [*plan.objects, *plan.refused]:
                assert item.source.file == str(path), example
