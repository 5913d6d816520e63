"""dhcpd.conf's tokens (docs/migrating.md, "From ISC dhcpd"): words, strings, punctuation.

The file is free-form text; `#` starts a comment to the end of the line (not inside a
string). A word is anything dhcpd reads as a name, a number, an address or colon-hex
(`routers`, `600`, `10.0.0.1`, `0:0:c0:5d:bd:95`, `2001:db8::/64`); keywords are matched
case-insensitively by the parser. Strings take dhcpd's escapes (\\t \\r \\n \\b, \\" \\\\,
octal \\NNN, hex \\xHH). Anything that cannot be dhcpd.conf — a control byte, text that is
not ASCII outside a string or comment, an unterminated string, a template placeholder
(`{{`, `{%`, `${`, `<%`) — ends the read with a `ReadError` naming the file and line.
"""

from __future__ import annotations

import enum
import re
import sys
from collections.abc import Iterator
from typing import NamedTuple

from ipamd.importer.model import ReadError


class Kind(enum.Enum):
    WORD = "word"
    STRING = "string"
    PUNCT = "punct"


class Token(NamedTuple):  # a tuple: cheap to make by the million (a 16 MiB file)
    kind: Kind
    text: str  # a string's decoded value, without the quotes
    line: int

    def is_word(self, *keywords: str) -> bool:
        """A word equal to one of ``keywords`` (dhcpd's keywords are case-insensitive)."""
        return self.kind is Kind.WORD and self.text.lower() in keywords


_WORD_CHARS = r"A-Za-z0-9_.:/*+\-@\[\]"
_TOKEN = re.compile(
    r"(?P<space>[ \t\r\f\v]+)"
    r"|(?P<newline>\n)"
    r"|(?P<comment>\#[^\n]*)"
    r'|(?P<string>"(?:[^"\\\n]|\\.|\n)*")'
    rf"|(?P<word>[{_WORD_CHARS}]+)"
    r"|(?P<punct>[{};,=()!~&|<>$%^'`?])"
    r"|(?P<other>.)",
    re.DOTALL,
)
_TEMPLATE_STARTS = ("{{", "{%", "${", "<%")
_ESCAPE = re.compile(r"\\(?:([0-7]{1,3})|x([0-9A-Fa-f]{1,2})|(.))", re.DOTALL)
_RAW_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")  # written as bytes, not as escapes
_SIMPLE_ESCAPES = {"t": "\t", "r": "\r", "n": "\n", "b": "\b"}


def tokens(text: str, file: str) -> Iterator[Token]:
    """The tokens of ``text`` (one file's content, read as Latin-1 so no byte is lost)."""
    line = 1
    for match in _TOKEN.finditer(text):
        group = match.lastgroup
        value = match.group()
        if group == "newline":
            line += 1
        elif group in ("space", "comment"):
            continue
        elif group == "word":
            yield Token(Kind.WORD, sys.intern(value) if value[0].isalpha() else value, line)
        elif group == "string":
            yield Token(Kind.STRING, _unescape(value[1:-1], file, line), line)
            line += value.count("\n")
        elif group == "punct":
            _refuse_template(text, match.start(), file, line)
            yield Token(Kind.PUNCT, value, line)
        else:
            raise ReadError(file, line, _why_not(value))


def _refuse_template(text: str, at: int, file: str, line: int) -> None:
    if text.startswith(_TEMPLATE_STARTS, at):
        marker = text[at:at + 2]
        raise ReadError(
            file, line, f"template placeholder {marker!r}: render the template first, then "
                        "import the file dhcpd reads")


def _why_not(char: str) -> str:
    if char == '"':
        return "unterminated string (no closing '\"')"
    code = ord(char)
    if code < 0x20 or code == 0x7F:
        return f"control byte 0x{code:02x}: not a dhcpd.conf text file"
    if code > 0x7F:
        return (f"byte 0x{code:02x} outside a string or comment: dhcpd.conf words are "
                "ASCII (is this a dhcpd.conf file?)")
    return f"unexpected character {char!r}"


def _unescape(body: str, file: str, line: int) -> str:
    """A string's value: dhcpd's escapes applied; UTF-8 text kept as such."""
    if _RAW_CONTROL.search(body):
        raise ReadError(file, line, "control byte inside a string: not a dhcpd.conf text "
                                        "file")
    if "\\" in body:
        body = _ESCAPE.sub(_escape_value, body)
    try:
        return body.encode("latin-1").decode("utf-8")
    except UnicodeError:
        return body


def _escape_value(match: re.Match[str]) -> str:
    octal, hexa, char = match.groups()
    if octal is not None:
        return chr(int(octal, 8) & 0xFF)
    if hexa is not None:
        return chr(int(hexa, 16))
    return _SIMPLE_ESCAPES.get(char, char)
