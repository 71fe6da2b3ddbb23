"""Golden tests: KIP → expected Cypher text and parameters, for every ``tests/golden/*.txt``.

File format (one file per area: kql.txt, kml.txt, meta.txt …; many cases per file)::

    === a unique case name
    --- kip
    FIND(?d.name) WHERE { ?d {type: :t} }
    --- request parameters            (optional: the request's `parameters` JSON)
    {"t": "Drug"}
    --- cypher: FIND                  (one cypher/params pair per compiled statement, in order)
    MATCH (d:KipConcept:`Drug`)
    ...
    --- params
    {"p0": "Drug"}

or, for a command that must not compile, ``--- error`` followed by the KIP error code.

Every expected statement is also run under EXPLAIN on the test Neo4j, so a Cypher
syntax error cannot hide in a golden file. Regenerate after an intended change with
``KIP2CYPHER_REGEN_GOLDEN=1 python -m pytest tests/test_golden.py`` and review the diff.
"""

from __future__ import annotations

import json
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

GOLDEN_DIR = Path(__file__).parent / "golden"
REGEN = os.environ.get("KIP2CYPHER_REGEN_GOLDEN") == "1"

logging.getLogger("neo4j").setLevel(logging.ERROR)


@dataclass
class Case:
    name: str
    kip: str
    request: dict[str, Any] | None = None
    statements: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)  # (label, cypher, params)
    error: str | None = None


def parse_file(path: Path) -> list[Case]:
    return parse_text(path.read_text(encoding="utf-8"), path.name)


def parse_text(text: str, filename: str) -> list[Case]:
    cases: list[Case] = []
    section: str | None = None
    buffer: list[str] = []

    def close() -> None:
        if section is None or not cases:
            return
        text = "\n".join(buffer).strip("\n")
        case = cases[-1]
        if section == "kip":
            case.kip = text
        elif section == "request parameters":
            case.request = json.loads(text)
        elif section.startswith("cypher"):
            label = section.split(":", 1)[1].strip() if ":" in section else ""
            case.statements.append((label, text, {}))
        elif section == "params":
            label, cypher, _ = case.statements[-1]
            case.statements[-1] = (label, cypher, json.loads(text))
        elif section == "error":
            case.error = text.strip()
        else:
            raise ValueError(f"{filename}: unknown section --- {section} in case {case.name!r}")

    for line in text.splitlines():
        if line.startswith("=== "):
            close()
            section, buffer = None, []
            cases.append(Case(line[4:].strip(), ""))
        elif line.startswith("--- "):
            close()
            section, buffer = line[4:].strip(), []
        elif section is not None:
            buffer.append(line)
        elif line.strip() and not line.startswith("#"):
            raise ValueError(f"{filename}: text outside a section: {line!r}")
    close()
    names = [c.name for c in cases]
    duplicates = {n for n in names if names.count(n) > 1}
    if duplicates:
        raise ValueError(f"{filename}: duplicate case names {sorted(duplicates)}")
    return cases


def render_file(header: str, cases: list[Case]) -> str:
    out = [header.rstrip("\n")] if header.strip() else []
    for case in cases:
        out.append(f"=== {case.name}")
        out.append("--- kip")
        out.append(case.kip)
        if case.request is not None:
            out.append("--- request parameters")
            out.append(json.dumps(case.request, ensure_ascii=False, sort_keys=True))
        if case.error is not None:
            out.append("--- error")
            out.append(case.error)
        for label, cypher, params in case.statements:
            out.append(f"--- cypher: {label}" if label else "--- cypher")
            out.append(cypher)
            out.append("--- params")
            out.append(json.dumps(params, ensure_ascii=False, sort_keys=True))
        out.append("")
    return "\n".join(out)


def file_header(path: Path) -> str:
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("=== "):
            break
        lines.append(line)
    return "\n".join(lines) + "\n"


def golden_settings():
    from kip2cypher.config import Settings

    return Settings(max_hops=10, max_result_rows=10000, strict_schema=False, cypher_prefix="", cursor_secret=b"golden-secret")


def compile_case(case: Case) -> Case:
    from kip2cypher.errors import KipError
    from kip2cypher.lower.compile import compile_command

    actual = Case(case.name, case.kip, case.request)
    try:
        statements = compile_command(case.kip, case.request, golden_settings())
    except KipError as exc:
        actual.error = exc.code
        return actual
    actual.statements = [(s.get("label", ""), s["cypher"], json.loads(json.dumps(s["parameters"]))) for s in statements]
    return actual


def _all_cases() -> list[Any]:
    params = []
    for path in sorted(GOLDEN_DIR.glob("*.txt")):
        for case in parse_file(path):
            params.append(pytest.param(path, case, id=f"{path.stem}::{case.name}"))
    return params


@pytest.fixture(scope="module")
def explain_driver(neo4j_server):
    from neo4j import GraphDatabase

    driver = GraphDatabase.driver(neo4j_server.uri, auth=neo4j_server.auth, notifications_min_severity="OFF")
    yield driver, neo4j_server.database
    driver.close()


_MISSING = re.compile(r"Expected parameter\(s\): (.+)")


def explain(driver, database, cypher: str, params: dict[str, Any]) -> None:
    """EXPLAIN a statement; parameters supplied only at run time are filled with null."""
    params = dict(params)
    for _ in range(3):
        try:
            driver.execute_query("EXPLAIN " + cypher, params, database_=database)
            return
        except Exception as exc:  # noqa: BLE001
            match = _MISSING.search(str(exc))
            if not match:
                raise AssertionError(f"Neo4j rejected golden Cypher:\n{cypher}\n{exc}") from None
            for name in match.group(1).split(","):
                params[name.strip()] = None


@pytest.mark.parametrize("path, case", _all_cases())
def test_golden(path: Path, case: Case, explain_driver) -> None:
    actual = compile_case(case)
    if REGEN and (actual.statements != case.statements or actual.error != case.error):
        cases = parse_file(path)
        cases = [actual if c.name == case.name else c for c in cases]
        path.write_text(render_file(file_header(path), cases), encoding="utf-8")
        case = actual
    assert actual.error == case.error, f"{case.name}: expected error {case.error}, got {actual.error}"
    assert [s[0] for s in actual.statements] == [s[0] for s in case.statements], case.name
    for (label, got_text, got_params), (_, want_text, want_params) in zip(actual.statements, case.statements):
        assert got_text == want_text, f"{case.name} [{label}]: Cypher differs"
        assert got_params == want_params, f"{case.name} [{label}]: parameters differ"
    driver, database = explain_driver
    for _, cypher, params in case.statements:
        explain(driver, database, cypher, params)


def test_golden_files_parse_and_round_trip() -> None:
    for path in sorted(GOLDEN_DIR.glob("*.txt")):
        cases = parse_file(path)
        assert cases, f"{path.name} has no cases"
        assert parse_text(render_file(file_header(path), cases), path.name) == cases
