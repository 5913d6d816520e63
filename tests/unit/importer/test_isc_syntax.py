"""dhcpd.conf as dhcpd reads it, and hostile input: every failure is a ReadError naming the
file and line, never another exception (docs/migrating.md, "When a file cannot be read")."""

from __future__ import annotations

import random
import textwrap
from pathlib import Path

import pytest

from ipamd.importer import isc
from ipamd.importer.cli import main
from ipamd.importer.isc import lexer, parser
from ipamd.importer.model import Plan, ReadError
from tests.support import isc_site
from tests.support.isc_site import generate

SITE = isc_site.SITE.parent


def write(folder: Path, text: str, name: str = "dhcpd.conf") -> str:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return str(path)


def read_error(path: str) -> ReadError:
    with pytest.raises(ReadError) as caught:
        isc.read(path)
    return caught.value


def test_tokens_strings_escapes_comments_and_lines():
    text = ('option x "a\\"b\\\\c\\t\\101\\x41 # not a comment"; # a comment\n'
            'hardware ethernet 0:0:c0:5d:bd:95;\n"two\nlines" after;\n')
    found = [(t.kind.value, t.text, t.line) for t in lexer.tokens(text, "f")]
    assert found[:4] == [("word", "option", 1), ("word", "x", 1),
                         ("string", 'a"b\\c\tAA # not a comment', 1), ("punct", ";", 1)]
    assert ("word", "0:0:c0:5d:bd:95", 2) in found
    assert ("string", "two\nlines", 3) in found and ("word", "after", 4) in found


def test_statements_blocks_and_record_definitions_keep_their_lines(tmp_path):
    nodes = parser.parse(write(tmp_path, """\
        option contrived code 201 = { boolean, integer 32, text };
        subnet 10.77.0.0 netmask 255.255.255.0 {

          range 10.77.0.10 10.77.0.20;
        };
        """))
    definition, subnet = nodes
    assert definition.block is None and definition.words[5].text == "{"
    assert subnet.keyword == "subnet" and subnet.source.line == 2
    assert [n.source.line for n in subnet.block or []] == [4]


def test_an_include_is_read_relative_to_the_including_file(tmp_path, monkeypatch):
    write(tmp_path / "conf" / "parts", 'host a { hardware ethernet 2:0:0:0:0:1; }\n',
          "hosts.conf")
    path = write(tmp_path / "conf", '\nsubnet 10.77.0.0 netmask 255.255.255.0 {\n'
                                    '  include "parts/hosts.conf";\n}\n')
    monkeypatch.chdir(tmp_path)  # not the including file's folder
    (subnet,) = parser.parse(path)
    (host,) = subnet.block or []
    assert host.source.file.endswith("parts/hosts.conf") and host.source.line == 1


def test_a_missing_include_names_the_file_and_the_line_of_the_include(tmp_path):
    path = write(tmp_path, 'authoritative;\n\ninclude "gone.conf";\n')
    error = read_error(path)
    assert (error.file, error.line) == (path, 3)
    assert 'include "gone.conf": no such file' in str(error)
    assert str(tmp_path / "gone.conf") in str(error)


def test_an_include_loop_and_too_deep_includes_are_refused(tmp_path):
    write(tmp_path, 'include "b.conf";\n', "a.conf")
    write(tmp_path, '\ninclude "a.conf";\n', "b.conf")
    error = read_error(str(tmp_path / "a.conf"))
    assert error.file.endswith("b.conf") and error.line == 2 and "include loop" in str(error)
    for n in range(20):
        write(tmp_path, f'include "c{n + 1}.conf";\n', f"c{n}.conf")
    write(tmp_path, "authoritative;\n", "c20.conf")
    assert "nested more than 16 deep" in str(read_error(str(tmp_path / "c0.conf")))


@pytest.mark.parametrize(("text", "line", "words"), [
    ('subnet 10.77.0.0 netmask 255.255.255.0 {\n  range 10.77.0.1 10.77.0.9\n}\n', 2,
     "missing ';'"),
    ('subnet 10.77.0.0 netmask 255.255.255.0 {\n  range 10.77.0.1 10.77.0.9;\n', 1,
     "missing '}'"),
    ("authoritative;\n}\n", 2, "'}' with no '{'"),
    ("\n{ authoritative; }\n", 2, "'{' with no declaration"),
    ('option domain-name "unterminated;\n', 1, "unterminated string"),
    ("option routers {{ router }};\n", 1, "template placeholder '{{'"),
    ("option routers ${ROUTER};\n", 1, "template placeholder '${'"),
    ("\n\noption routers <%= router %>;\n", 3, "template placeholder '<%'"),
    ("max-lease-time 7200\n", 1, "missing ';'"),
])
def test_malformed_input_is_named_by_file_and_line(tmp_path, text, line, words):
    path = write(tmp_path, text)
    error = read_error(path)
    assert (error.file, error.line) == (path, line) and words in str(error), str(error)


def test_every_truncation_of_the_site_config_plans_or_is_a_read_error(tmp_path):
    whole = (SITE / "dhcpd.conf").read_text()
    for cut in range(0, len(whole), 5):
        path = write(tmp_path, whole[:cut])
        try:
            assert isinstance(isc.read(path), Plan)
        except ReadError as error:
            assert error.file == path and 1 <= error.line <= whole[:cut].count("\n") + 1


def test_shuffled_statements_plan_or_are_a_read_error(tmp_path):
    """Mutations of real syntax (tokens dropped, doubled, swapped) reach the mapping: it
    refuses what it cannot read, and never raises anything but a ReadError."""
    base = (SITE / "dhcpd.conf").read_text().split()
    rng = random.Random(52)
    for _ in range(150):
        words = list(base)
        for _ in range(rng.randint(1, 6)):
            at, other = rng.randrange(len(words)), rng.randrange(len(words))
            choice = rng.random()
            if choice < 0.4:
                del words[at]
            elif choice < 0.7:
                words.insert(at, words[other])
            else:
                words[at], words[other] = words[other], words[at]
        path = write(tmp_path, " ".join(words))
        try:
            isc.read(path)
        except ReadError as error:
            assert error.file == path


VOCABULARY = ["subnet", "netmask", "host", "group", "class", "pool", "range", "option",
              "shared-network", "fixed-address", "hardware", "ethernet", "match", "if", "=",
              "allow", "deny", "members", "of", '"x"', "{", "}", ";", ",", "(", ")", "code",
              "array", "integer", "10.77.1.1", "255.255.255.0", "0:1:2", "01:02:00:00:00:00:01",
              "substring", "hardware", "routers", "filename", "next-server", "include",
              "dynamic-bootp", "host-identifier", "dhcp-client-identifier", "default-lease-time",
              "7200", "-1", "4294967296", "domain-name", "arch", "user-class"]


@pytest.mark.parametrize("name", ["dhcpd.conf", "hosts.conf"])
def test_statements_spiked_with_dhcpd_words_plan_or_are_a_read_error(tmp_path, name):
    base = (SITE / name).read_text().split()
    rng = random.Random(name)
    for _ in range(400):
        words = list(base)
        for _ in range(rng.randint(1, 4)):
            words.insert(rng.randrange(len(words)), rng.choice(VOCABULARY))
        path = write(tmp_path, " ".join(words))
        try:
            isc.read(path, lambda name, family: ["10.77.1.9"])
        except ReadError as error:
            assert error.file.startswith(str(tmp_path))


def test_binary_garbage_is_a_read_error(tmp_path):
    rng = random.Random(7)
    for n in range(20):
        path = tmp_path / f"garbage{n}.conf"
        path.write_bytes(bytes(rng.randrange(256) for _ in range(4096)))
        error = read_error(str(path))
        assert error.file == str(path) and error.line >= 1


def test_a_nul_byte_and_latin1_outside_strings_are_named(tmp_path):
    path = tmp_path / "dhcpd.conf"
    path.write_bytes(b"authoritative;\nlog-facility\x00 local7;\n")
    assert "control byte 0x00" in str(read_error(str(path)))
    path.write_bytes(b'# M\xfcller\noption domain-name "caf\xc3\xa9.example";\nr\xe9seau;\n')
    error = read_error(str(path))
    assert error.line == 3 and "byte 0xe9" in str(error)


def test_a_50_mb_file_is_refused_at_the_bound_with_its_line(tmp_path):
    path = tmp_path / "huge.conf"
    line = b"host h { hardware ethernet 02:00:00:00:00:01; fixed-address 10.77.0.1; }\n"
    with path.open("wb") as handle:
        for _ in range(50 * 2**20 // (len(line) * 1000) + 1):
            handle.write(line * 1000)
    error = read_error(str(path))
    assert error.file == str(path) and "passes 16 MiB" in str(error)
    assert error.line == parser.MAX_BYTES // len(line) + 1


def test_deep_nesting_is_refused_by_line(tmp_path):
    path = write(tmp_path, "group {\n" * 40 + "}\n" * 40)
    error = read_error(path)
    assert error.line == parser.MAX_DEPTH + 1 and "nested more than 32" in str(error)
    # an include inside nested blocks counts its own blocks on top of them
    write(tmp_path, "group {\n" * 20 + "}\n" * 20, "inner.conf")
    path = write(tmp_path, "group {\n" * 20 + 'include "inner.conf";\n' + "}\n" * 20,
                 "outer.conf")
    error = read_error(path)
    assert error.file.endswith("inner.conf") and error.line == 13


def test_the_command_prints_the_error_and_no_traceback(tmp_path, capsys):
    path = write(tmp_path, 'subnet 10.77.0.0 netmask 255.255.255.0 {\n  include "x.conf";\n}\n')
    assert main(["plan", path, "--format", "isc"]) == 3
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert f'{path}:2: include "x.conf": no such file' in err


def test_the_command_plans_a_dhcpd_conf_found_by_its_first_statement(tmp_path, capsys):
    out_json = tmp_path / "plan.json"
    assert main(["plan", str(SITE / "dhcpd.conf"), "--json", str(out_json)]) == 0
    out, _ = capsys.readouterr()
    assert "subnet 10.77.1.0/24" in out and "refused (" in out
    assert "is a DNS name" in out  # no --resolve: names are refused, named
    assert '"kind": "client_class"' in out_json.read_text()
    assert main(["plan", str(isc_site.EXAMPLE)]) == 0
    assert "total: 0 to create (nothing), 0 refused" in capsys.readouterr()[0]


def test_long_statements_are_judged_in_bounded_work_and_quoted_short(tmp_path):
    deep = "(" * 100_000 + "option user-class" + ")" * 100_000
    path = write(tmp_path, f'class "c" {{ match if {deep} = "x"; }}\n'
                           f'frobnicate {"a " * 100_000};\n')
    plan = isc.read(path)
    by_line = {item.source.line: item for item in plan.refused}
    assert sorted(by_line) == [1, 2]
    assert "a test of 200004 words" in by_line[1].reason  # after "if"
    assert all(len(item.construct) < 300 for item in plan.refused)


def test_a_device_or_a_directory_is_not_read(tmp_path):
    path = write(tmp_path, 'include "/dev/zero";\n')
    error = read_error(path)
    assert (error.line, error.message) == (1, 'include "/dev/zero": not a regular file '
                                              "(/dev/zero)")
    assert read_error("/dev/zero").message == "not a regular file"
    assert read_error(str(tmp_path)).message == "a directory, not a file"
    assert read_error(str(tmp_path / "none.conf")).message == "no such file"


def test_generated_configurations_plan_without_a_crash(tmp_path):
    """Configurations made from the grammar the reader maps (tests/support/isc_site/
    generate.py): a plan, never an exception, whatever the combination."""
    planned = 0
    for seed in range(600):
        path = write(tmp_path, generate.config(seed))
        plan = isc.read(path, lambda name, family: ["10.77.1.9"])
        planned += len(plan.objects)
    assert planned > 1000  # the combinations do reach the mapping
