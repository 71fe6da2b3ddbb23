"""Golden tests: KIP → expected Cypher text and parameters, for every ``tests/golden/*.txt``.

File format (one file per area: kql.txt, kml.txt, meta.txt …; many cases per file)::

    === a unique case name
    --- kip
    FIND(?d.name) WHERE { ?d {type: :t} }
    --- request parameters            (optional: the request's `parameters` JSON)
    {"t": "Drug"}
    --- adoption                      (optional: the namespace's adoption mapping, TOML — docs/adopt.md)
    [types.Drug]
    label = "Drug"
    --- passes                        (optional, FIND only: the optimisation passes applied, or
    lean                               "none" — lower/passes.py; then only the FIND query is shown)
    --- cypher: FIND                  (one cypher/params pair per compiled statement, in order)
    MATCH (d:KipConcept:`Drug`)
    ...
    --- params
    {"p0": "Drug"}

or, for a command that must not compile, ``--- error`` followed by the KIP error code.

Two tests per case, one per tier: ``test_golden`` diffs the compiled text and parameters
(offline: no Neo4j), and ``test_golden_explain`` (marked ``neo4j``: it uses the server) runs
every statement the compiler produces under EXPLAIN on the test Neo4j, so a Cypher syntax
error cannot hide in a golden file. Regenerate after an intended change with
``KIP2CYPHER_REGEN_GOLDEN=1 python -m pytest tests/test_golden.py`` and review the diff
(``golden_harness.py``: the harness shared with the program goldens).
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from golden_harness import GOLDEN_DIR, GoldenKind, Sections, unknown_section

logging.getLogger("neo4j").setLevel(logging.ERROR)


@dataclass
class Case:
    name: str
    kip: str
    request: dict[str, Any] | None = None
    #: the adoption mapping the case compiles under (TOML); None: nothing adopted
    adoption: str | None = None
    statements: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)  # (label, cypher, params)
    error: str | None = None
    #: the optimisation passes a FIND compiles with (``lower/passes.py``); None: all of them
    passes: tuple[str, ...] | None = None


def build(name: str, sections: Sections, filename: str) -> Case:
    case = Case(name, "")
    for section, text in sections:
        if section == "kip":
            case.kip = text
        elif section == "request parameters":
            case.request = json.loads(text)
        elif section == "adoption":
            case.adoption = text
        elif section == "passes":
            case.passes = tuple(text.split()) if text.strip() != "none" else ()
        elif section.startswith("cypher"):
            label = section.split(":", 1)[1].strip() if ":" in section else ""
            case.statements.append((label, text, {}))
        elif section == "params":
            label, cypher, _ = case.statements[-1]
            case.statements[-1] = (label, cypher, json.loads(text))
        elif section == "error":
            case.error = text.strip()
        else:
            raise unknown_section(filename, section, name)
    return case


def render(case: Case) -> list[str]:
    out = [f"=== {case.name}", "--- kip", case.kip]
    if case.request is not None:
        out += ["--- request parameters", json.dumps(case.request, ensure_ascii=False, sort_keys=True)]
    if case.adoption is not None:
        out += ["--- adoption", case.adoption]
    if case.passes is not None:
        out += ["--- passes", " ".join(case.passes) or "none"]
    if case.error is not None:
        out += ["--- error", case.error]
    for label, cypher, params in case.statements:
        out += [f"--- cypher: {label}" if label else "--- cypher", cypher, "--- params", json.dumps(params, ensure_ascii=False, sort_keys=True)]
    return out + [""]


#: The Cypher goldens: ``tests/golden/*.txt``; the generated part is the error or the statements.
CYPHER = GoldenKind(GOLDEN_DIR, build, render, lambda case: (case.error, case.statements))


def golden_settings(mapping: str | None = None):
    from kip2cypher import adoption
    from kip2cypher.config import Settings

    chosen = adoption.parse(mapping) if mapping is not None else None
    return Settings(max_hops=10, max_result_rows=10000, strict_schema=False, cypher_prefix="", cursor_secret=b"golden-secret", adoption=chosen)


def compile_case(case: Case) -> Case:
    from kip2cypher.errors import KipError
    from kip2cypher.lower.compile import compile_command

    actual = Case(case.name, case.kip, case.request, case.adoption, passes=case.passes)
    try:
        if case.passes is None:
            statements = compile_command(case.kip, case.request, golden_settings(case.adoption))
        else:
            statements = compile_find(case.kip, case.request, golden_settings(case.adoption), case.passes)
    except KipError as exc:
        actual.error = exc.code
        return actual
    actual.statements = [(s.get("label", ""), s["cypher"], json.loads(json.dumps(s["parameters"]))) for s in statements]
    return actual


def compile_find(kip: str, request: dict[str, Any] | None, settings, passes: tuple[str, ...]) -> list[dict[str, Any]]:
    """The query of a FIND lowered with only ``passes`` (``lower/passes.py``), as ``compile_command`` gives it."""
    from kip2cypher.lower.find import lower_find
    from kip2cypher.syntax.parser import parse

    query = lower_find(parse(kip), dict(request or {}), settings, passes).query
    return [{"label": query.label, "cypher": query.text, "parameters": dict(query.params)}]


@pytest.fixture(scope="module")
def explain_driver(neo4j_server):
    from neo4j import GraphDatabase

    driver = GraphDatabase.driver(neo4j_server.uri, auth=neo4j_server.auth, notifications_min_severity="INFORMATION")
    yield driver, neo4j_server.database
    driver.close()


_MISSING = re.compile(r"Expected parameter\(s\): (.+)")


#: The one deprecation kip2cypher keeps (docs/neo4j-versions.md): Cypher 25 on Neo4j 2026.x
#: deprecates the vector index procedure for its SEARCH clause, which Neo4j 5.26 does not have.
KNOWN_DEPRECATIONS = ("db.index.vector.queryNodes is deprecated",)


def explain(driver, database, cypher: str, params: dict[str, Any]) -> list[str]:
    """EXPLAIN a statement (parameters supplied only at run time are filled with null); the
    deprecation notifications Neo4j gives for it, but the KNOWN_DEPRECATIONS."""
    from neo4j import NotificationClassification

    params = dict(params)
    for _ in range(3):
        try:
            summary = driver.execute_query("EXPLAIN " + cypher, params, database_=database).summary
            notes = [s.status_description for s in summary.gql_status_objects if s.classification == NotificationClassification.DEPRECATION]
            return [note for note in notes if not any(known in note for known in KNOWN_DEPRECATIONS)]
        except Exception as exc:  # noqa: BLE001
            match = _MISSING.search(str(exc))
            if not match:
                raise AssertionError(f"Neo4j rejected golden Cypher:\n{cypher}\n{exc}") from None
            for name in match.group(1).split(","):
                params[name.strip()] = None


CASES = CYPHER.params()


@pytest.mark.parametrize("path, case", CASES)
def test_golden(path: Path, case: Case) -> None:
    """The compiled statements' text and parameters, or the error code (offline)."""
    actual = compile_case(case)
    case = CYPHER.expected(path, case, actual)
    assert actual.error == case.error, f"{case.name}: expected error {case.error}, got {actual.error}"
    assert [s[0] for s in actual.statements] == [s[0] for s in case.statements], case.name
    for (label, got_text, got_params), (_, want_text, want_params) in zip(actual.statements, case.statements):
        assert got_text == want_text, f"{case.name} [{label}]: Cypher differs"
        assert got_params == want_params, f"{case.name} [{label}]: parameters differ"


@pytest.mark.parametrize("path, case", [c for c in CASES if c.values[1].error is None])
def test_golden_explain(path: Path, case: Case, explain_driver) -> None:
    """Neo4j plans every statement the compiler produces for the case (the Neo4j tier): what
    ``test_golden`` pins as text is Cypher the server accepts — without a deprecation, so that it
    stays in the subset Cypher 5 and Cypher 25 share (the compatibility tier runs this on Neo4j
    2026.x under Cypher 25; docs/neo4j-versions.md)."""
    driver, database = explain_driver
    for _, cypher, params in compile_case(case).statements:
        assert explain(driver, database, cypher, params) == [], f"{case.name}: Neo4j deprecates part of\n{cypher}"


def test_golden_files_parse_and_round_trip() -> None:
    CYPHER.check_round_trip()
