"""The one harness of both golden kinds: the Cypher goldens (``tests/golden/*.txt``,
``test_golden.py``) and the program goldens (``tests/golden/programs/*.txt``,
``test_program_golden.py``).

Both file formats are a header of ``#`` comments, then cases::

    === a unique case name
    --- a section
    its body (lines, up to the next ``---`` or ``===``)

A kind (``GoldenKind``) says how a case is built from its sections, how it is rendered back,
and how its generated part is compared; this module reads the files, parametrizes the tests,
checks the round trip and regenerates a file's cases with ``KIP2CYPHER_REGEN_GOLDEN=1`` (review
the diff afterwards).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

GOLDEN_DIR = Path(__file__).parent / "golden"
#: Rewrite the files' generated sections with what the code produces now (then review the diff).
REGEN = os.environ.get("KIP2CYPHER_REGEN_GOLDEN") == "1"

Sections = list[tuple[str, str]]


@dataclass(frozen=True)
class GoldenKind:
    """One golden kind: where its files live and how a case maps to and from its sections.

    ``build(name, sections, filename)`` makes a case (raising ``ValueError`` on an unknown
    section), ``render(case)`` gives its lines back, and ``generated(case)`` is the part the
    code produces — what a test compares and what regeneration replaces."""

    directory: Path
    build: Callable[[str, Sections, str], Any]
    render: Callable[[Any], list[str]]
    generated: Callable[[Any], Any]

    def files(self) -> list[Path]:
        return sorted(self.directory.glob("*.txt"))

    def parse_text(self, text: str, filename: str) -> list[Any]:
        return [self.build(name, sections, filename) for name, sections in split_cases(text, filename)]

    def parse_file(self, path: Path) -> list[Any]:
        return self.parse_text(path.read_text(encoding="utf-8"), path.name)

    def render_file(self, header: str, cases: list[Any]) -> str:
        out = [header.rstrip("\n")] if header.strip() else []
        for case in cases:
            out += self.render(case)
        return "\n".join(out)

    def params(self) -> list[Any]:
        """Every case of every file as a ``pytest.param(path, case)`` with the id ``file::case``."""
        return [pytest.param(path, case, id=f"{path.stem}::{case.name}") for path in self.files() for case in self.parse_file(path)]

    def expected(self, path: Path, case: Any, actual: Any) -> Any:
        """The case to compare ``actual`` with: the file's, or — regenerating — ``actual``, written
        into the file in the case's place."""
        if not REGEN or self.generated(actual) == self.generated(case):
            return case
        cases = [actual if c.name == case.name else c for c in self.parse_file(path)]
        path.write_text(self.render_file(file_header(path), cases), encoding="utf-8")
        return actual

    def check_round_trip(self) -> None:
        """Every file has cases, and parse ∘ render is the identity on them."""
        for path in self.files():
            cases = self.parse_file(path)
            assert cases, f"{path.name} has no cases"
            assert self.parse_text(self.render_file(file_header(path), cases), path.name) == cases


def split_cases(text: str, filename: str) -> list[tuple[str, Sections]]:
    """``(case name, [(section, body) …])`` in file order; bodies lose their surrounding blank lines."""
    cases: list[tuple[str, Sections]] = []
    section: str | None = None
    buffer: list[str] = []

    def close() -> None:
        if section is not None and cases:
            cases[-1][1].append((section, "\n".join(buffer).strip("\n")))

    for line in text.splitlines():
        if line.startswith("=== "):
            close()
            section, buffer = None, []
            cases.append((line[4:].strip(), []))
        elif line.startswith("--- "):
            close()
            section, buffer = line[4:].strip(), []
        elif section is not None:
            buffer.append(line)
        elif line.strip() and not line.startswith("#"):
            raise ValueError(f"{filename}: text outside a section: {line!r}")
    close()
    names = [name for name, _ in cases]
    duplicates = {n for n in names if names.count(n) > 1}
    if duplicates:
        raise ValueError(f"{filename}: duplicate case names {sorted(duplicates)}")
    return cases


def file_header(path: Path) -> str:
    """The lines before a file's first case (its comments), kept when the file is regenerated."""
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("=== "):
            break
        lines.append(line)
    return "\n".join(lines) + "\n"


def unknown_section(filename: str, section: str, name: str) -> ValueError:
    return ValueError(f"{filename}: unknown section --- {section} in case {name!r}")
