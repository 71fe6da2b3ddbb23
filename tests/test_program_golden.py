"""Program goldens (``program_golden.py``): each plan kind's program driven by canned rows, without Neo4j."""

from __future__ import annotations

from pathlib import Path

import pytest
from program_golden import PROGRAMS, run_case


@pytest.mark.parametrize("path, case", PROGRAMS.params())
def test_program_golden(path: Path, case) -> None:
    actual = run_case(case)
    case = PROGRAMS.expected(path, case, actual)
    assert actual.program == case.program, f"{case.name}: the program's requests differ"
    assert actual.response == case.response, f"{case.name}: the response differs"


def test_program_golden_files_round_trip() -> None:
    PROGRAMS.check_round_trip()
