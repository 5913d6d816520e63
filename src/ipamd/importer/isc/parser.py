"""dhcpd.conf's statements: a tree of `Node`s, each with the file and line it starts on.

A statement is its words up to `;`, or up to `{` followed by a block of statements and `}`
(declarations: `subnet`, `host`, `group`, `class`, `if`, ...). A record type in an option
definition (`option x code 201 = { ip-address, text };`) keeps its braces as words.
`include "file";` is replaced by the statements of that file, read relative to the
including file's folder (docs/migrating.md). The read is bounded: all files together at
most `MAX_BYTES`, blocks nested at most `MAX_DEPTH`, includes at most `MAX_INCLUDES` deep;
past a bound, or on a missing file, an include loop or an unbalanced brace, a `ReadError`
names the file and line.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ipamd.importer.isc.lexer import Kind, Token, tokens
from ipamd.importer.model import ReadError, Source

MAX_BYTES = 16 * 1024 * 1024  # a site of 100,000 host declarations is about 10 MiB
MAX_DEPTH = 32  # global > shared-network > subnet > pool is 4; groups add a few
MAX_INCLUDES = 16
SHOWN_WORDS, SHOWN_CHARS = 40, 200  # of a statement quoted in a refusal or note


@dataclass(slots=True)
class Node:
    words: list[Token]
    source: Source
    block: list[Node] | None = None

    @property
    def keyword(self) -> str:
        first = self.words[0]
        return first.text.lower() if first.kind is Kind.WORD else ""

    def text(self) -> str:
        """The statement as written (strings quoted), for refusals; a long one cut short."""
        shown = " ".join(f'"{w.text}"' if w.kind is Kind.STRING else w.text
                         for w in self.words[:SHOWN_WORDS])
        if len(self.words) > SHOWN_WORDS or len(shown) > SHOWN_CHARS:
            shown = shown[:SHOWN_CHARS] + " ..."
        return shown + (" { ... }" if self.block is not None else ";")


@dataclass
class _Reading:
    """What the whole read shares: the byte budget and the chain of open includes."""

    budget: int = MAX_BYTES
    chain: list[Path] = field(default_factory=list)


def parse(path: str) -> list[Node]:
    """The statements of the configuration at ``path``, includes spliced in."""
    return _parse_file(Path(path), path, _Reading(), depth=0)


def _parse_file(path: Path, shown: str, reading: _Reading, depth: int) -> list[Node]:
    text = _read(path, shown, reading)
    reading.chain.append(path.resolve())
    try:
        return _Builder(path, shown, reading, depth).build(tokens(text, shown))
    finally:
        reading.chain.pop()


def _not_a_file(path: Path) -> str:
    if path.is_dir():
        return "a directory, not a file"
    return "not a regular file" if path.exists() else "no such file"


def _read(path: Path, shown: str, reading: _Reading) -> str:
    """The file's text, never more than the budget left (so memory stays bounded); a
    device or a pipe is refused before it is opened (it could block or never end)."""
    if not path.is_file():
        raise ReadError(shown, 1, _not_a_file(path))
    try:
        with path.open("rb") as handle:
            data = handle.read(reading.budget + 1)
    except OSError as error:
        raise ReadError(shown, 1, f"cannot read ({error.strerror})") from None
    if len(data) > reading.budget:
        line = data.count(b"\n", 0, reading.budget) + 1
        raise ReadError(shown, line, f"the configuration passes {MAX_BYTES // 2**20} MiB "
                                     "(with its includes) here: more than the importer reads")
    reading.budget -= len(data)
    # Latin-1 keeps every byte as one character; the lexer refuses what is not text.
    return data.decode("latin-1")


class _Builder:
    """One file's tokens into nodes: a stack of open blocks, never recursion per block."""

    def __init__(self, path: Path, shown: str, reading: _Reading, depth: int) -> None:
        self.path, self.shown, self.reading, self.depth = path, shown, reading, depth
        self.top: list[Node] = []
        self.open: list[Node] = []  # the declarations whose blocks are open
        self.blocks: list[list[Node]] = [self.top]  # where the next statement goes
        self.words: list[Token] = []
        self.inline = 0  # braces of an option definition's record type

    def build(self, stream: Iterable[Token]) -> list[Node]:
        for token in stream:
            if token.kind is not Kind.PUNCT or token.text not in "{};" or self.inline_word(token):
                self.words.append(token)
            elif token.text == ";":
                self.end_statement(token)
            elif token.text == "{":
                self.open_block(token)
            else:
                self.close_block(token)
        self.finish()
        return self.top

    def inline_word(self, token: Token) -> bool:
        """Braces inside `option NAME code N = { ... }` belong to the statement."""
        if token.text == "{" and self.is_definition():
            self.inline += 1
            return True
        if token.text == "}" and self.inline:
            self.inline -= 1
            return True
        return False

    def is_definition(self) -> bool:
        words = self.words
        return (len(words) >= 4 and words[0].is_word("option") and words[2].is_word("code")
                and any(w.kind is Kind.PUNCT and w.text == "=" for w in words))

    def where(self, line: int) -> Source:
        return Source(self.shown, line)

    def add(self, node: Node) -> None:
        self.blocks[-1].append(node)

    def end_statement(self, token: Token) -> None:
        if self.inline:
            raise ReadError(self.shown, token.line, "';' inside an option record's braces")
        if not self.words:
            return  # a stray ';' (after '}', say) is harmless
        node = Node(self.words, self.where(self.words[0].line))
        self.words = []
        if node.keyword == "include":
            for included in self.include(node):
                self.add(included)
        else:
            self.add(node)

    def open_block(self, token: Token) -> None:
        if not self.words:
            raise ReadError(self.shown, token.line, "'{' with no declaration before it")
        if self.depth + len(self.open) >= MAX_DEPTH:
            raise ReadError(self.shown, token.line,
                            f"blocks nested more than {MAX_DEPTH} deep: not a dhcpd.conf the "
                            "importer reads")
        block: list[Node] = []
        node = Node(self.words, self.where(self.words[0].line), block)
        self.words = []
        self.add(node)
        self.open.append(node)
        self.blocks.append(block)

    def close_block(self, token: Token) -> None:
        if self.words:
            raise ReadError(self.shown, self.words[-1].line,
                            f"missing ';' after {self.words[0].text!r} (before '}}')")
        if not self.open:
            raise ReadError(self.shown, token.line, "'}' with no '{' before it")
        self.open.pop()
        self.blocks.pop()

    def finish(self) -> None:
        if self.words:
            raise ReadError(self.shown, self.words[-1].line,
                            f"the file ends inside a statement ({self.words[0].text!r}, "
                            "missing ';')")
        if self.open:
            opened = self.open[-1]
            raise ReadError(self.shown, opened.source.line,
                            f"the file ends inside this {opened.keyword or 'block'}'s block "
                            "(missing '}')")

    def include(self, node: Node) -> list[Node]:
        line = node.source.line
        if len(node.words) != 2 or node.words[1].kind is not Kind.STRING:
            raise ReadError(self.shown, line, 'include takes one quoted file name: '
                                              'include "file";')
        name = node.words[1].text
        target = Path(name) if Path(name).is_absolute() else self.path.parent / name
        shown = str(target)
        if target.resolve() in self.reading.chain:
            loop = " -> ".join([*(str(p) for p in self.reading.chain), str(target.resolve())])
            raise ReadError(self.shown, line, f'include "{name}": an include loop ({loop})')
        if len(self.reading.chain) > MAX_INCLUDES:
            raise ReadError(self.shown, line,
                            f'include "{name}": includes nested more than {MAX_INCLUDES} deep')
        if not target.is_file():
            raise ReadError(self.shown, line, f'include "{name}": {_not_a_file(target)} '
                                              f'({target})')
        return _parse_file(target, shown, self.reading, self.depth + len(self.open))
