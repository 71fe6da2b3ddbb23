"""Hostile input on the real Neo4j: stored and read back verbatim, never executed.

Every payload of tests/hostile_payloads.py goes through a full life cycle — defined as a
concept type and a predicate, used as type, name, predicate, attribute value, metadata
value, nested object key and parameter, then read back (FIND, FILTER, DESCRIBE), updated
and deleted through KIP — and afterwards the graph fingerprint equals the one taken
before: the graph held exactly what was intended at every step, and nothing else.
"""

from __future__ import annotations

import pytest
from hostile_payloads import ALL, INVALID_TOKENS, NAMES, RESERVED_NAMES, SLASHED, TOKEN_NAMES, TOO_LONG_NAMES, UNNAMEABLE, VALUES, fingerprint, kip_string
from kml_helpers import err, ok

from kip2cypher.config import Settings
from kip2cypher.cypher import storage
from kip2cypher.cypher.builder import quote


def _wipe(driver, database=None) -> None:
    while driver.execute_query("MATCH (n) WITH n LIMIT 10000 DETACH DELETE n RETURN count(*) AS c", database_=database).records[0]["c"]:
        pass


@pytest.fixture(scope="module")
def hx(neo4j_server):
    """One Genesis Nexus for the module; each test leaves the graph as it found it.

    The embedder is off here: the attack surface under test is the Cypher the compiler
    emits, and MiniLM inference on every write would dominate the run time. The 1 MiB
    test below runs with the default embedder.
    """
    from kip2cypher.nexus import Nexus

    with Nexus(neo4j_server.uri, auth=neo4j_server.auth, database=neo4j_server.database, settings=Settings(embedder=False)) as nx:
        _wipe(nx.driver, nx.database)
        nx.ensure_schema()
        nx.bootstrap()
        yield nx


def _fp(nx):
    return fingerprint(nx.driver, nx.database)


def _rows(nx, cypher, **params):
    return [dict(r) for r in nx.driver.execute_query(cypher, params, database_=nx.database).records]


def _capsule(s: str) -> str:
    """Type, predicate, two concepts and a link, the payload (KIP literal ``s``) in every string position."""
    return f"""
UPSERT {{
  CONCEPT ?t {{ {{type: "$ConceptType", name: {s}}} SET ATTRIBUTES {{ description: {s} }} }}
  CONCEPT ?pt {{ {{type: "$PropositionType", name: {s}}} SET ATTRIBUTES {{ subject_types: [{s}], object_types: ["*"] }} }}
  CONCEPT ?a {{ {{type: {s}, name: {s}}} SET ATTRIBUTES {{ value: {s}, list: [{s}, {s}], obj: {{ {s}: {s} }} }} }}
  CONCEPT ?b {{
    {{type: :hv, name: :hv2}}
    SET ATTRIBUTES {{ value: :hv, obj: :hobj }}
    SET PROPOSITIONS {{ ({s}, ?a) WITH METADATA {{ note: :hv }} }}
  }}
}}
WITH METADATA {{ source: {s} }}
"""


@pytest.mark.parametrize("payload", TOKEN_NAMES, ids=lambda p: p.id)
def test_hostile_string_everywhere_round_trips_verbatim(hx, payload):
    P, s = payload.text, kip_string(payload.text)
    P2 = P + "#2"
    params = {"hv": P, "hv2": P2, "hobj": {P: [P]}}
    before = _fp(hx)

    res = ok(hx.execute_kip(_capsule(s), parameters=params))
    type_id, predicate_id = res["upsert_concept_nodes"][:2]
    after = _fp(hx)
    assert (after["nodes"], after["relationships"]) == (before["nodes"] + 5, before["relationships"] + 3)

    # Read back through KIP (payload in the text and in parameters): every value exactly as written.
    reads = ok(
        hx.execute_kip_readonly(
            commands=[
                f"FIND(?a) WHERE {{ ?a {{type: {s}, name: {s}}} }}",
                "FIND(?b) WHERE { ?b {type: :hv, name: :hv2} }",
                f"FIND(?l) WHERE {{ ?l (?b, {s}, ?a) }}",
                f"FIND(?x.name) WHERE {{ ?x {{type: :hv}} FILTER(?x.attributes.value == :hv && CONTAINS(?x.name, {s}) && STARTS_WITH(?x.name, :hv)) }}",
                f"DESCRIBE CONCEPT TYPE {s}",
            ],
            parameters=params,
        )
    )
    assert all("error" not in r for r in reads), reads
    (a,), (b,), (link,), names, described = (r["result"] for r in reads)
    assert (a["type"], a["name"]) == (P, P)
    assert a["attributes"] == {"value": P, "list": [P, P], "obj": {P: P}}
    assert a["metadata"]["source"] == P
    assert (b["type"], b["name"], b["attributes"]) == (P, P2, {"value": P, "obj": {P: [P]}})
    assert (link["predicate"], link["subject"], link["object"]) == (P, b["id"], a["id"])
    assert (link["metadata"]["note"], link["metadata"]["source"]) == (P, P)
    if P.startswith(storage.JSON_MARKER):
        # Stored as JSON text behind the marker, so not comparable in FILTER (docs/kql.md, docs/reliability.md).
        assert names == []
    else:
        assert sorted(names) == sorted([P, P2])
    assert described["name"] == P and described["attributes"]["description"] == P

    # Stored form: the payload is a label and a relationship type, verbatim, in KIP's label space.
    (stored,) = _rows(
        hx,
        "MATCH (n:KipConcept {id: $a}) MATCH (s)-[r]->(o) WHERE r.kip_id = $l RETURN labels(n) AS labels, type(r) AS t, s.id AS s, o.id AS o",
        a=a["id"],
        l=link["id"],
    )
    assert sorted(stored["labels"]) == sorted(["KipConcept", storage.DEFAULT.label(P)])
    assert (stored["t"], stored["s"], stored["o"]) == (storage.DEFAULT.rel(P), b["id"], a["id"])

    # KML matching by the payload as a label: mutates exactly the two concepts, then removes them.
    kml = ok(
        hx.execute_kip(
            commands=[
                f"UPDATE ?x SET ATTRIBUTES {{ value: :hv2 }} SET METADATA {{ note: {s} }} WHERE {{ ?x {{type: {s}}} FILTER(?x.name == :hv) }}",
                f"FIND(?x.attributes.value, ?x.metadata.note) WHERE {{ ?x {{type: {s}, name: {s}}} }}",
                "DELETE CONCEPT ?x DETACH WHERE { ?x {type: :hv} }",
            ],
            parameters=params,
        )
    )
    assert [r.get("result") for r in kml] == [{"updated": 1, "matched": 1}, [[P2], [P]], {"deleted_concepts": 2, "deleted_propositions": 1}], kml
    _rows(hx, "MATCH (t:KipConcept) WHERE t.id IN $ids DETACH DELETE t", ids=[type_id, predicate_id])
    assert _fp(hx) == before


@pytest.mark.parametrize("payload", INVALID_TOKENS + UNNAMEABLE + SLASHED, ids=lambda p: p.id)
def test_unstorable_type_or_predicate_is_refused_cleanly(hx, payload):
    """Neo4j cannot hold an empty or NUL-holding label / relationship type, a type or predicate
    name that is only whitespace or holds a control character breaks the naming rule (refused
    when defined), and a predicate may not hold "/" (the namespace separator of relationship
    types): KIP_1002, nothing written."""
    P, s = payload.text, kip_string(payload.text)
    before = _fp(hx)
    e = err(hx.execute_kip(_capsule(s), parameters={"hv": P, "hv2": P + "#2", "hobj": {P: [P]}}), "KIP_1002")
    assert "debug" not in e
    assert _fp(hx) == before
    # As a name or value (a property, not a token) the same string is fine.
    res = ok(hx.execute_kip('UPSERT { CONCEPT ?c { {type: "Domain", name: :p} SET ATTRIBUTES { v: :p } } }', parameters={"p": P}))
    ((name, v),) = zip(*ok(hx.execute_kip_readonly("FIND(?c.name, ?c.attributes.v) WHERE { ?c {id: :id} }", parameters={"id": res["upsert_concept_nodes"][0]})))
    assert (name, v) == (P, P)
    ok(hx.execute_kip('DELETE CONCEPT ?c DETACH WHERE { ?c {type: "Domain", name: :p} }', parameters={"p": P}))
    assert _fp(hx) == before
    # Reading by such a type is a clean error or an empty answer, never an engine bug.
    r = hx.execute_kip_readonly(f"FIND(?x) WHERE {{ ?x {{type: {s}}} }}")
    assert r.get("result") == [] or r["error"]["code"] in ("KIP_1002", "KIP_2001"), r


@pytest.mark.parametrize("payload", RESERVED_NAMES, ids=lambda p: p.id)
def test_engine_label_as_type_or_predicate_is_refused(hx, payload):
    """A type named KipConcept would label its instances like every concept; a predicate named
    KIP_SUBJECT would forge structural links. Refused (KIP_3004); fine as a name or value."""
    P, s = payload.text, kip_string(payload.text)
    before = _fp(hx)
    e = err(hx.execute_kip(_capsule(s), parameters={"hv": P, "hv2": P + "#2", "hobj": {P: [P]}}), "KIP_3004")
    assert "reserved" in e["message"]
    definition = "$ConceptType" if P.startswith("Kip") else "$PropositionType"
    err(hx.execute_kip(f'UPSERT {{ CONCEPT ?t {{ {{type: "{definition}", name: :p}} }} }}', parameters={"p": P}), "KIP_3004")
    assert _fp(hx) == before
    res = ok(hx.execute_kip('UPSERT { CONCEPT ?c { {type: "Domain", name: :p} SET ATTRIBUTES { v: :p } } }', parameters={"p": P}))
    assert ok(hx.execute_kip_readonly('FIND(?c.attributes.v) WHERE { ?c {type: "Domain", name: :p} }', parameters={"p": P})) == [P]
    _rows(hx, "MATCH (c:KipConcept {id: $id}) DETACH DELETE c", id=res["upsert_concept_nodes"][0])
    assert _fp(hx) == before


@pytest.mark.parametrize("payload", TOO_LONG_NAMES, ids=lambda p: p.id)
def test_name_over_index_limit_is_refused_cleanly(hx, payload):
    P = payload.text
    before = _fp(hx)
    e = err(hx.execute_kip('UPSERT { CONCEPT ?c { {type: "Domain", name: :p} } }', parameters={"p": P}), "KIP_2002")
    assert "debug" not in e and "limits.md" in e["message"]
    err(hx.execute_kip('UPSERT { CONCEPT ?t { {type: "$ConceptType", name: :p} } }', parameters={"p": P}), "KIP_2002")
    assert _fp(hx) == before
    # The same text as a value is fine.
    ok(hx.execute_kip('UPSERT { CONCEPT ?c { {type: "Domain", name: "LongValue"} SET ATTRIBUTES { text: :p } } }', parameters={"p": P}))
    assert ok(hx.execute_kip_readonly('FIND(?c.attributes.text) WHERE { ?c {type: "Domain", name: "LongValue"} }')) == [P]
    ok(hx.execute_kip('DELETE CONCEPT ?c DETACH WHERE { ?c {type: "Domain", name: "LongValue"} }'))
    assert _fp(hx) == before


def test_one_mib_values_round_trip_with_the_default_embedder(neo4j_server, hx):
    """1 MiB strings as attribute, metadata, grounding text (embedded by MiniLM) and parameter."""
    from kip2cypher.nexus import Nexus

    before = _fp(hx)
    with Nexus(neo4j_server.uri, auth=neo4j_server.auth, database=neo4j_server.database) as nx:  # default settings
        for payload in VALUES:
            V = payload.text
            assert len(V.encode("utf-8")) >= (1 << 20) - 4
            res = ok(
                nx.execute_kip(
                    'UPSERT { CONCEPT ?c { {type: "Domain", name: :n} SET ATTRIBUTES { value: :v, description: :v, nested: { inner: [:v] } } } WITH METADATA { '
                    "note: :v } }",
                    parameters={"n": payload.id, "v": V},
                )
            )
            (c,) = ok(nx.execute_kip_readonly("FIND(?c) WHERE { ?c {id: :id} }", parameters={"id": res["upsert_concept_nodes"][0]}))
            assert c["attributes"] == {"value": V, "description": V, "nested": {"inner": [V]}}
            assert c["metadata"]["note"] == V
            assert ok(nx.execute_kip_readonly('FIND(COUNT(?c)) WHERE { ?c {type: "Domain"} FILTER(?c.attributes.value == :v) }', parameters={"v": V})) == 1
            ok(nx.execute_kip("DELETE CONCEPT ?c DETACH WHERE { ?c {id: :id} }", parameters={"id": c["id"]}))
    assert _fp(hx) == before


def test_command_text_over_the_input_limit_is_refused_before_parsing(hx):
    """A 1 MiB string inside the command text is over the 256 KiB input limit: KIP_4002, use a parameter."""
    big = "y" * (1 << 20)
    e = err(hx.execute_kip(f'UPSERT {{ CONCEPT ?c {{ {{type: "Domain", name: "Big"}} SET ATTRIBUTES {{ v: "{big}" }} }} }}'), "KIP_4002")
    assert "KiB" in e["message"]


# ------------------------------------------------------------------ regression: \u0060 in identifiers
def test_unicode_escape_in_identifier_cannot_close_the_backticks(hx):
    """Cypher decodes \\uXXXX inside backtick-quoted names, so a type name holding the six
    characters \\u0060 used to close the quoted label: ``DELETE ATTRIBUTES … WHERE { ?a {type:
    "Drug\\\\u0060) DETACH DELETE a //"} }`` ran ``MATCH (a:KipConcept:`Drug`) DETACH DELETE a``
    and deleted every Drug. quote() now writes each backslash as \\u005c."""
    assert quote("a\\u0060b") == "`a\\u005cu0060b`"
    hostile = "Drug\\u0060) DETACH DELETE a //"
    ok(
        hx.execute_kip(
            """UPSERT {
        CONCEPT ?d { {type: "$ConceptType", name: "Drug"} }
        CONCEPT ?h { {type: "$ConceptType", name: :h} }
        CONCEPT ?a { {type: "Drug", name: "Aspirin"} }
        CONCEPT ?x { {type: :h, name: "x"} }
    }""",
            parameters={"h": hostile},
        )
    )
    before = _fp(hx)
    assert ok(hx.execute_kip('DELETE ATTRIBUTES {"nothing"} FROM ?a WHERE { ?a {type: :h} }', parameters={"h": hostile})) == {
        "updated_concepts": 0,
        "updated_propositions": 0,
    }
    assert ok(hx.execute_kip_readonly("FIND(?a.name) WHERE { ?a {type: :h} }", parameters={"h": hostile})) == ["x"]
    assert _fp(hx) == before
    assert _rows(hx, "MATCH (n:`kip:Drug`) RETURN n.name AS n") == [{"n": "Aspirin"}]
    for type_ in (hostile, "Drug"):
        ok(hx.execute_kip("DELETE CONCEPT ?x DETACH WHERE { ?x {type: :t} }", parameters={"t": type_}))
        ok(hx.execute_kip('DELETE CONCEPT ?x DETACH WHERE { ?x {type: "$ConceptType", name: :t} }', parameters={"t": type_}))


def test_corpus_size():
    assert len(ALL) >= 100


# ------------------------------------------------------------------ catastrophic REGEX
def test_catastrophic_regex_is_refused_or_defused_before_it_can_outrun_the_query_timeout(neo4j_server, hx):
    """A backtracking REGEX answers at once and burns no database CPU.

    Neo4j checks the transaction timeout only between rows and Java's matcher ignores
    interruption, so one evaluation of ``(a+)+\\1b`` (~2^n steps) on one value ran 67 s past a
    3 s timeout. kip2cypher.syntax.regex_guard prices every pattern before anything runs
    (docs/kql.md): back-references and nested quantifiers are refused with KIP_4001, and a
    repetition at either end of a search is reduced to its minimum (``(a+)+$`` → ``(a+)$``,
    ``.*.*.*.*.*x`` → ``x``), which removes the backtracking instead of refusing the pattern."""
    from kip2cypher.nexus import Nexus

    before = _fp(hx)
    blocks = " ".join(f'CONCEPT ?c{i} {{ {{type: "Domain", name: "redos-{i:02d}"}} SET ATTRIBUTES {{ s: :s }} }}' for i in range(80))
    ok(hx.execute_kip(f"UPSERT {{ {blocks} }}", parameters={"s": "a" * 25 + "c"}))
    query = 'FIND(?d.name) WHERE { ?d {type: "Domain"} FILTER(STARTS_WITH(?d.name, "redos-") && REGEX(?d.attributes.s, :re)) }'
    # 3 s, not 1 s: a busy machine may take a second to plan the first query; an undefused
    # (a+)+$ over 80 values of 25 a's (~2^25 steps each) would still run far past it.
    with Nexus(neo4j_server.uri, auth=neo4j_server.auth, database=neo4j_server.database, settings=Settings(embedder=False, query_timeout_s=3)) as nx:
        for pattern in ("(a+)+\\1b", "x(a+)+y", "^.*.*.*.*.*x"):
            e = err(nx.execute_kip_readonly(query, parameters={"re": pattern}), "KIP_4001")
            assert "refused before running" in e["message"]
        for pattern in ("(a+)+$", ".*.*.*.*.*x"):
            assert ok(nx.execute_kip_readonly(query, parameters={"re": pattern})) == []
        # An ordinary pattern over the same rows runs, and the same Nexus answers right after.
        assert len(ok(nx.execute_kip_readonly(query, parameters={"re": "^a+c$"}))) == 80
    ok(hx.execute_kip('DELETE CONCEPT ?d DETACH WHERE { ?d {type: "Domain"} FILTER(STARTS_WITH(?d.name, "redos-")) }'))
    assert _fp(hx)["nodes"] == before["nodes"]


def test_hostile_attribute_and_metadata_keys_are_refused_before_anything_runs(hx):
    """Top-level attribute / metadata keys are KIP identifiers (spec §2.8.1): a hostile key in KIP
    text is refused with KIP_1002 at parse time; identifier-shaped ones are stored under exactly
    that key (a reserved `_` metadata key is KIP_2002). Nested keys inside values are free-form
    (tested above)."""
    import re as _re

    identifier = _re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*\Z")
    before = _fp(hx)
    outcomes = {"KIP_1002": 0, "stored": 0, "KIP_2002": 0}
    for payload in NAMES:
        key = kip_string(payload.text)
        for text in (
            f'UPSERT {{ CONCEPT ?c {{ {{type: "Domain", name: "keys"}} SET ATTRIBUTES {{ {key}: 1 }} }} }}',
            f'UPSERT {{ CONCEPT ?c {{ {{type: "Domain", name: "keys"}} }} WITH METADATA {{ {key}: 1 }} }}',
            f'UPDATE ?c SET ATTRIBUTES {{ {key}: 2 }} WHERE {{ ?c {{type: "Domain", name: "keys"}} }}',
            f'DELETE ATTRIBUTES {{ {key} }} FROM ?c WHERE {{ ?c {{type: "Domain", name: "keys"}} }}',
        ):
            r = hx.execute_kip(text)
            if not identifier.match(payload.text):
                assert r.get("error", {}).get("code") == "KIP_1002", (payload.id, text, r)
                outcomes["KIP_1002"] += 1
            elif "error" in r:
                assert r["error"]["code"] == "KIP_2002" and payload.text.startswith("_"), (payload.id, r)
                outcomes["KIP_2002"] += 1
            else:
                outcomes["stored"] += 1
        if identifier.match(payload.text):
            rows = _rows(hx, "MATCH (n:KipConcept {type: 'Domain', name: 'keys'}) RETURN [k IN keys(n) WHERE k STARTS WITH 'attr.' | k] AS ks")
            assert rows and all(k == "attr." + payload.text for k in rows[0]["ks"]), rows
            _rows(hx, "MATCH (n:KipConcept {type: 'Domain', name: 'keys'}) DETACH DELETE n")
    assert _fp(hx) == before
    assert outcomes["KIP_1002"] >= 4 * 100, outcomes
