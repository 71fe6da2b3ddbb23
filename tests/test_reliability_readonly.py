"""execute_kip_readonly never writes: a graph fingerprint (node/relationship counts + SHA-256 of
every label, type and property) is taken before and after each request and must not change.

Inputs: every valid spec example (the KML ones above all, collected from
tests/fixtures/parser/valid.kip) and hostile variants of each — string literals replaced by
hostile payloads, KML disguised behind comments and whitespace, hidden in batches (as text and as
{command, parameters} objects), under dry_run, and a compiled KML plan forced through the
read-only path (Neo4j's READ access mode is the second lock on the door).
"""

from __future__ import annotations

import re

import parser_fixtures
import pytest
from hostile_payloads import NAMES, fingerprint, kip_string
from kml_helpers import COGNIZINE, SCHEMA, ok

from kip2cypher.config import Settings
from kip2cypher.lower.compile import compile_plan
from kip2cypher.syntax.script import command_kind_of

FIXTURES = parser_fixtures.valid()
KML = [e for e in FIXTURES if command_kind_of(e.text) == "KML"]
READS = [e for e in FIXTURES if command_kind_of(e.text) != "KML"]
HOSTILE = [p.text for p in NAMES]
PARAMS = parser_fixtures.example_params(FIXTURES)
FIGURES = {"requests": 0, "kml refused": 0}


def _wipe(driver, database=None) -> None:
    while driver.execute_query("MATCH (n) WITH n LIMIT 10000 DETACH DELETE n RETURN count(*) AS c", database_=database).records[0]["c"]:
        pass


@pytest.fixture(scope="module")
def ro(neo4j_server):
    """Genesis + the medical schema + Cognizine + Aspirin/Headache: the KML examples would match things."""
    from kip2cypher.nexus import Nexus

    with Nexus(neo4j_server.uri, auth=neo4j_server.auth, database=neo4j_server.database, settings=Settings(embedder=False)) as nx:
        _wipe(nx.driver, nx.database)
        nx.ensure_schema()
        nx.bootstrap()
        ok(nx.execute_kip(SCHEMA))
        ok(nx.execute_kip(COGNIZINE))
        ok(
            nx.execute_kip(
                'UPSERT { CONCEPT ?h { {type: "Symptom", name: "Headache"} } '
                'CONCEPT ?a { {type: "Drug", name: "Aspirin"} SET ATTRIBUTES { risk_level: 1, risk_category: "low", old_id: 7 } '
                'SET PROPOSITIONS { ("treats", ?h) WITH METADATA { source: "untrusted_source_v1", confidence: 0.5 } } } }'
            )
        )
        yield nx


def _check(nx, before, arguments: dict, *, expect_refusal: bool) -> dict:
    response = nx.execute(arguments, readonly=True)
    FIGURES["requests"] += 1
    if expect_refusal:
        assert "error" in response and response["error"]["code"] == "KIP_3004", response
        assert "execute_kip_readonly" in response["error"]["message"]
        FIGURES["kml refused"] += 1
    assert fingerprint(nx.driver, nx.database) == before, f"readonly request wrote something: {arguments!r}"
    return response


def _hostile_variant(text: str, seed: int) -> str:
    """Every string literal replaced by hostile payloads (picked deterministically)."""
    literals = list(re.finditer(r'"(?:[^"\\\n]|\\.)*"', text))
    out, last = [], 0
    for i, m in enumerate(literals):
        out.append(text[last : m.start()] + kip_string(HOSTILE[(seed * 7 + i * 13) % len(HOSTILE)]))
        last = m.end()
    return "".join(out) + text[last:]


@pytest.mark.parametrize("entry", KML, ids=[e.name for e in KML])
def test_kml_example_and_its_hostile_variants_write_nothing(ro, entry):
    before = fingerprint(ro.driver, ro.database)
    text = entry.text
    index = FIXTURES.index(entry)
    variants = [
        text,
        _hostile_variant(text, index),
        '// FIND(?x) WHERE { ?x {type: "Drug"} }\n' + text,
        "/* DESCRIBE PRIMER */ " + text,
        "\n\t  " + text + "\n// trailing comment",
    ]
    for variant in variants:
        for dry_run in (False, True):
            _check(ro, before, {"command": variant, "parameters": PARAMS, "dry_run": dry_run}, expect_refusal=True)
    find = 'FIND(?d.name) WHERE { ?d {type: "Drug"} }'
    for batch in (
        [find, text],
        [text, find],
        [find, {"command": _hostile_variant(text, index + 1), "parameters": {**PARAMS, "name": HOSTILE[index % len(HOSTILE)]}}],
        ["DESCRIBE PRIMER"] * 3 + [{"command": text}],
    ):
        response = _check(ro, before, {"commands": batch, "parameters": PARAMS}, expect_refusal=True)
        assert "commands[" in response["error"]["message"]  # says where the KML is


def test_kml_plan_forced_through_the_read_path_is_refused_by_neo4j(ro):
    """Bypass the pre-scan: a compiled UPSERT / DELETE run in a READ session is refused by Neo4j itself."""
    before = fingerprint(ro.driver, ro.database)
    for text in (
        'UPSERT { CONCEPT ?d { {type: "Drug", name: "Forced"} SET ATTRIBUTES { x: 1 } } }',
        'DELETE CONCEPT ?d DETACH WHERE { ?d {type: "Drug", name: "Aspirin"} }',
        'UPDATE ?d SET ATTRIBUTES { risk_level: 9 } WHERE { ?d {type: "Drug"} }',
    ):
        plan = compile_plan(text, {}, ro.settings)
        with pytest.raises(Exception) as caught:
            ro.run_plan(plan, readonly=True)
        assert getattr(caught.value, "code", None) == "KIP_4003", caught.value
        assert "read-only transaction" in caught.value.message
        assert fingerprint(ro.driver, ro.database) == before


@pytest.mark.parametrize("entry", READS, ids=[e.name for e in READS])
def test_read_examples_and_hostile_variants_write_nothing(ro, entry):
    """FIND / DESCRIBE / SEARCH / EXPORT examples run (or fail cleanly) and write nothing."""
    before = fingerprint(ro.driver, ro.database)
    index = FIXTURES.index(entry)
    for variant in (entry.text, _hostile_variant(entry.text, index)):
        response = _check(ro, before, {"command": variant, "parameters": PARAMS}, expect_refusal=False)
        if "error" in response:
            assert response["error"]["code"] != "KIP_4003", response


def test_zz_print_readonly_figures(capsys):
    with capsys.disabled():
        print(f"\n[reliability] readonly: {FIGURES}, KML examples {len(KML)}, read examples {len(READS)}")
