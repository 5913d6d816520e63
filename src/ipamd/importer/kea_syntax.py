"""Kea's configuration syntax: JSON as Kea reads it, every value with the file and line it came
from (so the plan names them).

Beyond JSON, as Kea's own parser takes it: comments of three kinds (`//` and `#` to the end of
the line, `/* ... */`), trailing commas, numbers such as `.5`, and `<?include "file"?>`, which
puts another file's text in its place (a missing file, or one that includes itself again, is
an error naming the file and line of the include). Input is bounded: files up to
`MAX_BYTES` each and in all, nesting up to `MAX_DEPTH`. Every failure is a `ReadError`.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Iterator
from typing import Any

from ipamd.importer.model import ReadError, Source

MAX_BYTES = 16 * 1024 * 1024  # a large Kea file is a few MiB (thousands of reservations)
MAX_DEPTH = 64  # Kea's own files nest about 8 deep
MAX_INCLUDES = 64


class KObj(dict[str, Any]):
    """A JSON object with the source of itself and of each key."""

    def __init__(self, source: Source) -> None:
        super().__init__()
        self.source = source
        self.sources: dict[str, Source] = {}

    def at(self, key: str) -> Source:
        return self.sources.get(key, self.source)


class KList(list[Any]):
    """A JSON array with the source of itself and of each item."""

    def __init__(self, source: Source) -> None:
        super().__init__()
        self.source = source
        self.sources: list[Source] = []


_TOKEN = re.compile(r"""
    (?P<newline>\n)
  | (?P<space>[ \t\r\f\v]+)
  | (?P<line_comment>(//|\#)[^\n]*)
  | (?P<block_comment>/\*)
  | (?P<include><\?include[ \t]+"(?P<path>[^"\n]*)"[ \t]*\?>)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<number>-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<word>true|false|null)
  | (?P<punct>[{}\[\]:,])
""", re.VERBOSE)

Token = tuple[str, Any, Source]  # kind ("value" or the punctuation), value, where


class _Lexer:
    def __init__(self) -> None:
        self.total = 0
        self.includes = 0

    def tokens(self, path: str, stack: tuple[str, ...] = ()) -> Iterator[Token]:
        text = self._read(path, stack)
        stack = (*stack, os.path.realpath(path))
        line, pos = 1, 0
        while pos < len(text):
            match = _TOKEN.match(text, pos)
            if match is None:
                raise ReadError(path, line, f"unexpected {_shown(text[pos])}")
            kind, pos = match.lastgroup or "", match.end()
            if kind == "newline":
                line += 1
            elif kind == "block_comment":
                end = text.find("*/", pos)
                if end < 0:
                    raise ReadError(path, line, "a /* comment is never closed")
                line += text.count("\n", pos, end)
                pos = end + 2
            elif kind == "include":
                yield from self._include(path, line, match.group("path"), stack)
            elif kind in ("string", "number", "word"):
                yield "value", _scalar(path, line, kind, match.group()), Source(path, line)
            elif kind == "punct":
                if text.startswith(("{{", "{%"), pos - 1):
                    raise ReadError(path, line, "a template placeholder ({{ ... }}): render "
                                    "the template into a configuration first")
                yield match.group(), None, Source(path, line)
        yield "end", None, Source(path, line)

    def _read(self, path: str, stack: tuple[str, ...]) -> str:
        where = stack[-1] if stack else path
        try:
            info = os.stat(path)
            if not stat.S_ISREG(info.st_mode):
                # a pipe or device would block or never end: refused before it is opened
                raise ReadError(path, 1, f"is not a regular file (a {_file_kind(info.st_mode)})")
            size = info.st_size
            if size > MAX_BYTES or self.total + size > MAX_BYTES:
                raise ReadError(path, 1, f"{size} bytes; the reader takes configurations of "
                                f"at most {MAX_BYTES // (1024 * 1024)} MiB")
            self.total += size
            with open(path, "rb") as handle:
                raw = handle.read(MAX_BYTES + 1)
        except OSError as error:
            raise ReadError(path, 1, f"cannot be read ({error.strerror or error}); "
                            f"included from {where}" if stack else
                            f"cannot be read ({error.strerror or error})") from None
        return _decode(path, raw)

    def _include(self, path: str, line: int, target: str, stack: tuple[str, ...]
                 ) -> Iterator[Token]:
        self.includes += 1
        if self.includes > MAX_INCLUDES:
            raise ReadError(path, line, f"more than {MAX_INCLUDES} includes")
        if "{{" in target or "${" in target:
            raise ReadError(path, line, f'include "{target}" holds a template placeholder')
        full = target if os.path.isabs(target) else os.path.join(os.path.dirname(path), target)
        if not os.path.exists(full) and os.path.exists(target):
            full = target  # Kea resolves a relative include from its working directory
        if not os.path.exists(full):
            raise ReadError(path, line, f'include "{target}": no such file ({full})')
        if os.path.realpath(full) in stack:
            raise ReadError(path, line, f'include "{target}" includes itself again (a loop: '
                            + " -> ".join([*stack, os.path.realpath(full)]) + ")")
        for token in self.tokens(full, stack):
            if token[0] != "end":
                yield token


def _file_kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "directory"), (stat.S_ISFIFO, "pipe"),
                       (stat.S_ISCHR, "device"), (stat.S_ISBLK, "device"),
                       (stat.S_ISSOCK, "socket")):
        if test(mode):
            return name
    return "special file"


def _decode(path: str, raw: bytes) -> str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw.count(b"\n", 0, error.start) + 1
        raise ReadError(path, line, f"not UTF-8 text (byte 0x{raw[error.start]:02x} at "
                        f"offset {error.start})") from None
    nul = text.find("\0")
    if nul >= 0:
        raise ReadError(path, text.count("\n", 0, nul) + 1, "a NUL byte: not a text file")
    return text


def _shown(char: str) -> str:
    return repr(char) if char.isprintable() else f"character U+{ord(char):04X}"


def _scalar(path: str, line: int, kind: str, text: str) -> Any:
    if kind == "word":
        return {"true": True, "false": False, "null": None}[text]
    if kind == "number":
        return float(text) if any(c in text for c in ".eE") else int(text)
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ReadError(path, line, f"bad string escape ({error.msg})") from None


class _Parser:
    def __init__(self, tokens: Iterator[Token]) -> None:
        self.tokens = tokens
        self.kind, self.value, self.source = next(tokens)

    def advance(self) -> None:
        self.kind, self.value, self.source = next(self.tokens)

    def fail(self, message: str) -> ReadError:
        return ReadError(self.source.file, self.source.line, message)

    def value_at(self, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise self.fail(f"nested deeper than {MAX_DEPTH} levels")
        if self.kind == "{":
            return self.object_at(depth)
        if self.kind == "[":
            return self.array_at(depth)
        if self.kind == "value":
            value = self.value
            self.advance()
            return value
        raise self.fail("the file ends where a value belongs" if self.kind == "end"
                        else f"expected a value, found {self.kind!r}")

    def object_at(self, depth: int) -> KObj:
        obj = KObj(self.source)
        self.advance()
        while self.kind != "}":
            if self.kind != "value" or not isinstance(self.value, str):
                raise self.fail("the file ends inside an object" if self.kind == "end"
                                else f"expected a quoted key or '}}', found {self.kind!r}")
            key, where = self.value, self.source
            if key in obj:
                raise self.fail(f'"{key}" appears twice in this object')
            self.advance()
            self.expect(":")
            obj[key] = self.value_at(depth + 1)
            obj.sources[key] = where
            if not self.separator("}"):
                break
        self.expect("}")
        return obj

    def array_at(self, depth: int) -> KList:
        items = KList(self.source)
        self.advance()
        while self.kind != "]":
            where = self.source
            items.append(self.value_at(depth + 1))
            items.sources.append(where)
            if not self.separator("]"):
                break
        self.expect("]")
        return items

    def separator(self, closing: str) -> bool:
        """After an item: a comma (a trailing one before `closing` too, as Kea allows)."""
        if self.kind == ",":
            self.advance()
            return True
        return False

    def expect(self, kind: str) -> None:
        if self.kind != kind:
            raise self.fail("the file ends early" if self.kind == "end"
                            else f"expected {kind!r}, found {self.kind!r}")
        self.advance()


PLACEHOLDER = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\$\{[A-Za-z_][A-Za-z0-9_]*\}")


def _placeholder(value: Any) -> str | None:
    """The first template placeholder in a string or a list of strings."""
    for item in value if isinstance(value, KList) else [value]:
        found = PLACEHOLDER.search(item) if isinstance(item, str) else None
        if found:
            return found.group()
    return None


def placeholders(node: Any) -> Iterator[tuple[KObj, str, str]]:
    """Every (object, key, placeholder) where a value still holds a template placeholder
    (`{{ name }}`, `{% ... %}`, `${NAME}`): the renderer never ran over the file."""
    if isinstance(node, KObj):
        for key, value in list(node.items()):
            found = _placeholder(value)
            if found:
                yield node, key, found
            else:
                yield from placeholders(value)
    elif isinstance(node, KList):
        for item in node:
            yield from placeholders(item)


def load(path: str) -> KObj:
    """The file's top-level object; `ReadError` names the file and line of what is wrong."""
    parser = _Parser(_Lexer().tokens(path))
    if parser.kind != "{":
        raise parser.fail("a Kea configuration is one JSON object ({ \"Dhcp4\": ... })")
    top = parser.object_at(1)
    if parser.kind != "end":
        raise parser.fail(f"text after the configuration's closing brace: {parser.kind!r}")
    return top
