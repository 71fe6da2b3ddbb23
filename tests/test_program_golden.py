"""Program goldens (``program_golden.py``): each plan kind's program driven by canned rows, without Neo4j."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from program_golden import PROGRAM_DIR, parse_text, render, run_case

REGEN = os.environ.get("KIP2CYPHER_REGEN_GOLDEN") == "1"


def _header(path: Path) -> str:
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("=== "):
            break
        lines.append(line)
    return "\n".join(lines) + "\n"


def _cases():
    for path in sorted(PROGRAM_DIR.glob("*.txt")):
        for case in parse_text(path.read_text(encoding="utf-8"), path.name):
            yield pytest.param(path, case, id=f"{path.stem}::{case.name}")


@pytest.mark.parametrize("path, case", list(_cases()))
def test_program_golden(path: Path, case) -> None:
    actual = run_case(case)
    if REGEN and (actual.program, actual.response) != (case.program, case.response):
        cases = [actual if c.name == case.name else c for c in parse_text(path.read_text(encoding="utf-8"), path.name)]
        path.write_text(render(_header(path), cases), encoding="utf-8")
        case = actual
    assert actual.program == case.program, f"{case.name}: the program's requests differ"
    assert actual.response == case.response, f"{case.name}: the response differs"


def test_program_golden_files_round_trip() -> None:
    for path in sorted(PROGRAM_DIR.glob("*.txt")):
        text = path.read_text(encoding="utf-8")
        cases = parse_text(text, path.name)
        assert cases, f"{path.name} has no cases"
        assert parse_text(render(_header(path), cases), path.name) == cases
