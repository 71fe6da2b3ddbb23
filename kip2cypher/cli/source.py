"""Where the CLI gets KIP text from, and how it splits it — the one place the CLI touches the syntax modules.

``compile`` / ``parse`` / ``call`` take SOURCE, resolved in this order (no guessing):

1. ``-`` (or no argument) is standard input;
2. the path of an existing file is that file;
3. anything else is the KIP text itself (``kip2cypher compile 'FIND(?d.name) WHERE {…}'``).

A SOURCE that is neither an existing file nor valid KIP and looks like a file name (one
word, no KIP brackets or quotes) is reported as a missing file, not as a syntax error.
Nothing here imports the neo4j driver.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import astuple, dataclass
from typing import Any

import click

from .. import KipError
from .. import parse as parse_command
from ..syntax.script import command_kind_of as command_kind
from ..syntax.script import split_script

__all__ = ["Source", "WriteCounts", "command_kind", "command_texts", "first_line", "read_file", "read_source", "split_script", "write_counts"]

_PATH_LIKE = re.compile(r"[^\s{}()\[\]\"?]+")


@dataclass(frozen=True)
class Source:
    """KIP text and where it came from (``-``, a path, or ``argument``)."""

    text: str
    origin: str

    @property
    def is_argument(self) -> bool:
        return self.origin == "argument"


def read_file(path: str) -> str:
    """The text of a file, or of stdin for ``-``."""
    if path == "-":
        return sys.stdin.read()
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except OSError as exc:
        raise click.BadParameter(f"cannot read {path}: {exc.strerror}")


def read_source(source: str | None) -> Source:
    """SOURCE → its text, by the three rules of the module docstring."""
    if source is None or source == "-" or os.path.isfile(source):
        return Source(read_file(source or "-"), source or "-")
    return Source(source, "argument")


def refuse_missing_file(source: Source) -> None:
    """An argument that is not KIP and looks like a file name (one word, no KIP brackets or
    quotes) is a file that does not exist: say so instead of reporting a KIP syntax error."""
    if source.is_argument and _PATH_LIKE.fullmatch(source.text.strip() or "?") and parsed(source.text) is None:
        raise click.BadParameter(f"{source.text!r} is neither an existing file nor a KIP command.", param_hint="SOURCE")


def command_texts(source: Source) -> list[tuple[str, int]]:
    """One command, or the commands of a script, as ``(text, line)``; raises KipError (the single-command error)."""
    try:
        parse_command(source.text)
        return [(source.text, 1)]
    except KipError as single_error:
        refuse_missing_file(source)
        try:
            return split_script(source.text)
        except KipError:
            raise single_error from None


def first_line(command: str, width: int = 50) -> str:
    """A command's first line, cut to ``width``: how a command is named in listings."""
    return command.strip().splitlines()[0][:width] if command.strip() else ""


def parsed(text: str) -> Any | None:
    """The AST of one command, or None when it does not parse (the executor reports that error)."""
    try:
        return parse_command(text)
    except KipError:
        return None


def ast_json(text: str) -> Any:
    """``kip2cypher parse`` output for one command."""
    from ..syntax.serialize import ast_to_json

    return ast_to_json(parse_command(text))


def find_headers(text: str) -> list[str] | None:
    """The FIND projections as written (the table header), or None when the text is not a FIND."""
    from ..syntax import ast

    node = parsed(text)
    if not isinstance(node, ast.Find):
        return None
    return [text[p.span.start : p.span.end] or f"col{i + 1}" for i, p in enumerate(node.projections)]


@dataclass(frozen=True)
class WriteCounts:
    """What a capsule writes, read from its AST (the §6.2.2 UPSERT result does not itemize
    SET PROPOSITIONS links, so the response alone under-counts)."""

    upserts: int = 0
    concepts: int = 0
    proposition_blocks: int = 0
    links: int = 0  # SET PROPOSITIONS entries

    @property
    def propositions(self) -> int:
        return self.proposition_blocks + self.links

    def __add__(self, other: WriteCounts) -> WriteCounts:
        return WriteCounts(*(a + b for a, b in zip(astuple(self), astuple(other))))


def write_counts(text: str) -> WriteCounts:
    """The UPSERT statements, CONCEPT blocks, PROPOSITION blocks and SET PROPOSITIONS links of a capsule (zeros otherwise)."""
    from ..syntax import ast

    node = parsed(text)
    if not isinstance(node, ast.Capsule):
        return WriteCounts()
    blocks = [block for upsert in node.upserts for block in upsert.blocks]
    concepts = [b for b in blocks if isinstance(b, ast.ConceptBlock)]
    return WriteCounts(
        upserts=len(node.upserts),
        concepts=len(concepts),
        proposition_blocks=len(blocks) - len(concepts),
        links=sum(len(b.set_propositions or ()) for b in concepts),
    )
