"""Kea's JSON as Kea reads it, and hostile input: every failure is a ReadError naming the file
and line, never another exception (docs/migrating.md, "When a file cannot be read")."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from ipamd.importer import kea, kea_syntax
from ipamd.importer.cli import main
from ipamd.importer.model import ReadError
from tests.unit.importer.helpers import EXAMPLES, write


def test_comments_of_three_kinds_trailing_commas_and_short_numbers(tmp_path):
    top = kea_syntax.load(write(tmp_path, """\
        // a line comment
        # a hash comment
        { /* a block
             comment */ "Dhcp4": {
            "valid-lifetime": 4000, # after a value
            "list": [1, 2, .5, -0.25e1, ],
            "text": "a // not a comment # nor this",
          },
        }
        """))
    dhcp4 = top["Dhcp4"]
    assert dhcp4["list"] == [1, 2, 0.5, -2.5]
    assert dhcp4["text"] == "a // not a comment # nor this"
    assert dhcp4.at("valid-lifetime").line == 5
    assert dhcp4["list"].sources[2].line == 6


def test_an_include_puts_the_other_file_in_place_with_its_own_lines(tmp_path):
    (tmp_path / "subnets.json").write_text(
        '\n\n{ "subnet": "10.77.1.0/24", "pools": [ { "pool": "10.77.1.10 - 10.77.1.20" } ] }\n')
    path = write(tmp_path, """\
        { "Dhcp4": {
            "subnet4": [ <?include "subnets.json"?> ]
        } }
        """)
    subnet = kea_syntax.load(path)["Dhcp4"]["subnet4"][0]
    assert subnet.source.file.endswith("subnets.json") and subnet.source.line == 3
    plan = kea.read(path)
    assert [obj.kind for obj in plan.objects] == ["prefix", "subnet", "pool"]


def test_a_missing_include_names_the_file_and_the_line_of_the_include(tmp_path):
    path = write(tmp_path, '{ "Dhcp4": {\n  "subnet4": [ <?include "gone.json"?> ] } }\n')
    with pytest.raises(ReadError) as caught:
        kea.read(path)
    assert caught.value.file == path and caught.value.line == 2
    assert 'include "gone.json": no such file' in str(caught.value)


def test_an_include_loop_is_refused(tmp_path):
    (tmp_path / "a.json").write_text('<?include "b.json"?>\n')
    (tmp_path / "b.json").write_text('\n<?include "a.json"?>\n')
    path = write(tmp_path, '{ "Dhcp4": { "x": [ <?include "a.json"?> ] } }')
    with pytest.raises(ReadError) as caught:
        kea.read(path)
    assert caught.value.file.endswith("b.json") and caught.value.line == 2
    assert "a loop" in caught.value.message


@pytest.mark.parametrize("text, line, words", [
    ('{ "Dhcp4": {\n "a": 1,\n "a": 2 } }', 3, '"a" appears twice'),
    ('{ "Dhcp4": {\n "a": /* never closed\n', 2, "never closed"),
    ('{ "Dhcp4": {\n "a": "open\n" } }', 2, "unexpected"),
    ('{ "Dhcp4": {\n "a": {{ subnet }} } }', 2, "template placeholder"),
    ('{ "Dhcp4": {\n "a": tru } }', 2, "unexpected"),
    ('{ "Dhcp4": {} }\n{ }', 2, "after the configuration"),
    ('[ 1 ]', 1, "one JSON object"),
    ('{ "Dhcp4": {\n "a": "\\q" } }', 2, "escape"),
    ('{ "Dhcp4": 3 }', 1, "not an object"),
    ('{ "Dhcp9": {} }', 1, "no Dhcp4 or Dhcp6"),
])
def test_malformed_input_is_named_by_file_and_line(tmp_path, text, line, words):
    path = write(tmp_path, text)
    with pytest.raises(ReadError) as caught:
        kea.read(path)
    assert (caught.value.file, caught.value.line) == (path, line)
    assert words in caught.value.message


def _truncations(text: str, count: int) -> list[int]:
    step = max(1, len(text) // count)
    return list(range(1, len(text), step))


@pytest.mark.parametrize("example", ["kea4/reservations.json", "kea6/shared-network.json",
                                     "kea4/all-options.json"])
def test_every_truncation_of_an_example_is_a_read_error(tmp_path, example):
    text = (EXAMPLES / example).read_text()
    for cut in _truncations(text, 60):
        path = write(tmp_path, text[:cut])
        try:
            kea.read(path)
        except ReadError as error:
            assert error.file == path and 1 <= error.line <= text[:cut].count("\n") + 1
        else:  # a cut inside trailing comments still holds the whole configuration
            assert text[cut:].strip().startswith(("//", "#", "}")) or not text[cut:].strip()


def test_binary_garbage_is_a_read_error(tmp_path):
    rng = random.Random(52)
    for size in (1, 17, 4096, 100_000):
        path = tmp_path / f"garbage-{size}"
        path.write_bytes(bytes(rng.randrange(256) for _ in range(size)))
        with pytest.raises(ReadError) as caught:
            kea.read(str(path))
        assert caught.value.file == str(path) and caught.value.line >= 1


def test_a_50_mb_file_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "huge.json"
    with path.open("wb") as handle:
        handle.write(b'{ "Dhcp4": { "x": "')
        handle.truncate(50 * 1024 * 1024)
    with pytest.raises(ReadError) as caught:
        kea.read(str(path))
    assert caught.value.line == 1 and "at most 16 MiB" in caught.value.message


@pytest.mark.parametrize("opening", ["[", '{"a":'])
def test_deep_nesting_is_refused_by_line(tmp_path, opening):
    path = write(tmp_path, '{ "Dhcp4":\n' + opening * 100_000)
    with pytest.raises(ReadError) as caught:
        kea.read(path)
    assert caught.value.line == 2 and "nested deeper than 64" in caught.value.message


def test_a_nul_byte_and_bad_utf8_are_named(tmp_path):
    nul = tmp_path / "nul.json"
    nul.write_bytes(b'{ "Dhcp4": {\n\n "a": "x\x00" } }')
    with pytest.raises(ReadError, match=r"nul.json:3: a NUL byte"):
        kea.read(str(nul))
    latin = tmp_path / "latin.json"
    latin.write_bytes(b'{ "Dhcp4": {\n "a": "caf\xe9" } }')
    with pytest.raises(ReadError, match=r"latin.json:2: not UTF-8"):
        kea.read(str(latin))


def test_the_command_prints_the_error_and_no_traceback(tmp_path, capsys):
    path = write(tmp_path, '{ "Dhcp4": {\n "subnet4": [ <?include "nowhere.json"?> ] } }')
    assert main(["plan", path, "--format", "kea"]) == 3
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (f'ipamd-import: {path}:2: include "nowhere.json": no such file '
                   f"({Path(path).parent / 'nowhere.json'})\n")


def test_a_placeholder_inside_a_value_refuses_that_parameter(tmp_path):
    path = write(tmp_path, """\
        { "Dhcp4": { "subnet4": [ {
            "subnet": "10.77.1.0/24",
            "boot-file-name": "{{ boot_file }}",
            "pools": [ { "pool": "${POOL}" } ] } ] } }
        """)
    plan = kea.read(path)
    assert [(item.construct, item.source.line) for item in plan.refused[:2]] == [
        ("boot-file-name", 3), ("pool", 4)]
    assert "template placeholder {{ boot_file }}" in plan.refused[0].reason
    subnet = next(obj for obj in plan.objects if obj.kind == "subnet")
    assert "boot_file" not in subnet.body
    assert not any(obj.kind == "pool" for obj in plan.objects)


def test_a_directory_a_pipe_or_a_device_is_refused_before_it_is_opened(tmp_path, capsys):
    pipe = tmp_path / "pipe.json"
    os.mkfifo(pipe)  # opening it would wait for a writer forever
    for path, kind in ((tmp_path, "directory"), (pipe, "pipe"), (Path("/dev/zero"), "device")):
        assert main(["plan", str(path)]) == 3
        assert capsys.readouterr().err == (f"ipamd-import: {path}:1: is not a regular file "
                                           f"(a {kind})\n")
    including = write(tmp_path, '{ "Dhcp4": { "x": [ <?include "pipe.json"?> ] } }')
    with pytest.raises(ReadError, match=r"pipe\.json:1: is not a regular file"):
        kea.read(including)
