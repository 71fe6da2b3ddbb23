"""Exactness of KML and of placeholders (issue 13): each test is named after what broke and runs
on a real Neo4j through ``Nexus.execute_kip``. Rules: docs/kml.md ("Placeholders in names",
"UPDATE", "Strict instance_schema", "Dry runs", "Errors with positions") and docs/kql.md."""

from __future__ import annotations

import pytest
from test_exactness import DATA, SCHEMA, error, ok


@pytest.fixture()
def drugs(genesis):
    for capsule in (SCHEMA, DATA):
        assert "error" not in genesis.execute_kip(capsule)
    return genesis


def pairs(nexus, command, **parameters):
    """The (subject name, object name) pairs a FIND of two names answers, sorted."""
    return sorted(zip(*ok(nexus.execute_kip(command, parameters=parameters))))


TREATS = [("Aspirin", "Fever"), ("Aspirin", "Headache"), ("Aspirin", "Pain"), ("Ibuprofen", "Headache"), ("Naproxen", "Pain")]
SLEEP_IDENTITY = "?link ({type: :s_type, name: :s_name}, :predicate, {type: :o_type, name: :o_name})"
IBUPROFEN_HEADACHE = {"s_type": "Drug", "s_name": "Ibuprofen", "predicate": "treats", "o_type": "Symptom", "o_name": "Headache"}


# ---------------------------------------------------------------- placeholders where a quoted name stands
def test_predicate_placeholder_in_a_proposition_clause_was_a_syntax_error(drugs):
    # Regression: `(?s, :predicate, ?o)` (the sleep cycle's iteration over the primer's
    # predicates) was KIP_1001 at the `:`.
    assert pairs(drugs, "FIND(?d.name, ?s.name) WHERE { (?d, :predicate, ?s) }", predicate="treats") == TREATS
    assert pairs(drugs, "FIND(?d.name, ?s.name) WHERE { ?l (?d, :predicate, ?s) }", predicate="treats") == TREATS


def test_predicate_placeholder_with_path_operators_and_in_alternatives(drugs):
    assert ok(drugs.execute_kip('FIND(?x.name) WHERE { ({type: "Drug", name: "Ibuprofen"}, :p{1,3}, ?x) }', parameters={"p": "treats"})) == ["Headache"]
    assert pairs(drugs, 'FIND(?d.name, ?s.name) WHERE { (?d, "precedes" | :p, ?s) }', p="treats") == TREATS
    assert pairs(drugs, "FIND(?d.name, ?s.name) WHERE { (?d, :a | :b, ?s) }", a="treats", b="precedes") == TREATS


def test_placeholder_bound_to_a_misspelled_predicate_is_kip_2001_at_the_placeholder(drugs):
    for command in (
        "FIND(?s.name) WHERE { (?d, :p, ?s) }",
        'FIND(?s.name) WHERE { ({type: "Drug", name: "Aspirin"}, :p{0,3}, ?s) }',
        'FIND(?s.name) WHERE { (?d, "treats" | :p, ?s) }',
        'UPDATE ?d SET ATTRIBUTES { score: 2 } WHERE { ?d {type: "Drug"} OPTIONAL { (?d, :p, ?s) } }',
    ):
        e = error(drugs.execute_kip(command, parameters={"p": "treatz"}))
        assert e["code"] == "KIP_2001" and '"treatz"' in e["message"] and '"treats"' in e["hint"], command
        assert "line" in e, e
    assert ok(drugs.execute_kip('FIND(?d.attributes.score) WHERE { ?d {type: "Drug"} }')) == [1, 1, 1]


def test_predicate_placeholder_bound_to_a_non_string_or_an_unstorable_name(drugs):
    e = error(drugs.execute_kip("FIND(?s.name) WHERE { (?d, :p, ?s) }", parameters={"p": ["treats"]}))
    assert e["code"] == "KIP_1001" and ":p" in e["message"] and (e["line"], e["column"]) == (1, 28)
    e = error(drugs.execute_kip("FIND(?s.name) WHERE { (?d, :p, ?s) }", parameters={"p": ""}))
    assert e["code"] == "KIP_1002" and (e["line"], e["column"]) == (1, 28)
    e = error(drugs.execute_kip("FIND(?s.name) WHERE { (?d, :p, ?s) }", parameters={"q": "treats"}))
    assert e["code"] == "KIP_1001" and '"q"' in e["message"] and (e["line"], e["column"]) == (1, 28)


def test_sleep_cycle_decay_and_cleanup_by_placeholder_identity_were_syntax_errors(drugs):
    # The published agent instructions: confidence decay (UPDATE) and expiry cleanup (DELETE)
    # iterate :predicate over the primer's predicates.
    update = f"UPDATE ?link SET METADATA {{ confidence: MUL(COALESCE(?link.metadata.confidence, 1), 0.5) }} WHERE {{ {SLEEP_IDENTITY} }}"
    assert ok(drugs.execute_kip(update, parameters=IBUPROFEN_HEADACHE)) == {"updated": 1, "matched": 1}
    find = f"FIND(?link.metadata.confidence) WHERE {{ {SLEEP_IDENTITY} }}"
    assert ok(drugs.execute_kip(find, parameters=IBUPROFEN_HEADACHE)) == [0.5]
    e = error(drugs.execute_kip(update, parameters={**IBUPROFEN_HEADACHE, "predicate": "treatz"}))
    assert e["code"] == "KIP_2001" and '"treats"' in e["hint"]
    delete = f"DELETE PROPOSITIONS ?link WHERE {{ {SLEEP_IDENTITY} }}"
    assert ok(drugs.execute_kip(delete, parameters=IBUPROFEN_HEADACHE)) == {"deleted_propositions": 1}
    assert ok(drugs.execute_kip('FIND(COUNT(?l)) WHERE { ?l (?d, "treats", ?s) }')) == 4


def test_upsert_predicate_placeholders_in_set_propositions_and_proposition_blocks(drugs):
    capsule = """
    UPSERT {
      CONCEPT ?cough { {type: :o_type, name: "Cough"} }
      CONCEPT ?d { {type: :s_type, name: "Ibuprofen"} SET PROPOSITIONS { (:predicate, ?cough) } }
      PROPOSITION ?link { ({type: :s_type, name: :s_name}, :predicate, ?cough) }
    }"""
    params = {"s_type": "Drug", "s_name": "Naproxen", "o_type": "Symptom", "predicate": "treats"}
    result = ok(drugs.execute_kip(capsule, parameters=params))
    assert len(result["upsert_proposition_links"]) == 1
    assert pairs(drugs, 'FIND(?d.name, ?s.name) WHERE { ?s {type: "Symptom", name: "Cough"} (?d, "treats", ?s) }') == [
        ("Ibuprofen", "Cough"),
        ("Naproxen", "Cough"),
    ]
    # the substituted value is checked as a literal is: undefined, not a string, unstorable
    e = error(drugs.execute_kip(capsule, parameters={**params, "predicate": "treatz"}))
    assert e["code"] == "KIP_2001" and '"treats"' in e["hint"] and "line" in e
    e = error(drugs.execute_kip(capsule, parameters={**params, "predicate": 7}))
    assert e["code"] == "KIP_1001" and ":predicate" in e["message"] and e["line"] == 4
    e = error(drugs.execute_kip(capsule, parameters={**params, "predicate": "a\u0000b"}))
    assert e["code"] == "KIP_1002"


def test_quoted_predicate_placeholders_stay_refused(drugs):
    for command in (
        'FIND(?s.name) WHERE { (?d, "x :p", ?s) }',
        'UPSERT { CONCEPT ?d { {type: "Drug", name: "Aspirin"} SET PROPOSITIONS { ("x :p", {type: "Symptom", name: "Pain"}) } } }',
    ):
        e = error(drugs.execute_kip(command, parameters={"p": "treats"}))
        assert e["code"] == "KIP_1001" and "inside a quoted string" in e["message"], command


def test_value_placeholders_already_accepted_keep_working(drugs):
    # type/name in matchers, DESCRIBE … TYPE, SEARCH WITH TYPE / MODE / THRESHOLD / LIMIT, CURSOR
    assert ok(drugs.execute_kip("FIND(?d.name) WHERE { ?d {type: :t, name: :n} }", parameters={"t": "Drug", "n": "Naproxen"})) == ["Naproxen"]
    assert ok(drugs.execute_kip("DESCRIBE CONCEPT TYPE :t", parameters={"t": "Drug"}))["name"] == "Drug"
    assert ok(drugs.execute_kip("DESCRIBE PROPOSITION TYPE :p", parameters={"p": "treats"}))["name"] == "treats"
    hits = ok(
        drugs.execute_kip(
            "SEARCH CONCEPT :term WITH TYPE :t MODE :mode THRESHOLD :th LIMIT :n",
            parameters={"term": "aspirin", "t": "Drug", "mode": "keyword", "th": 0.5, "n": 2},
        )
    )
    assert [h["name"] for h in hits] == ["Aspirin"]
    first = drugs.execute_kip('FIND(?d.name) WHERE { ?d {type: "Drug"} } ORDER BY ?d.name LIMIT :n', parameters={"n": 2})
    assert ok(first) == ["Aspirin", "Ibuprofen"]
    rest = drugs.execute_kip('FIND(?d.name) WHERE { ?d {type: "Drug"} } ORDER BY ?d.name LIMIT :n CURSOR :c', parameters={"n": 2, "c": first["next_cursor"]})
    assert ok(rest) == ["Naproxen"]


# ---------------------------------------------------------------- numbers: never non-finite, never silently skipped
def attributes(nexus, name):
    """``[attributes, _version]`` of the drug ``name``."""
    [[attrs], [version]] = ok(nexus.execute_kip('FIND(?d.attributes, ?d.metadata._version) WHERE { ?d {type: "Drug", name: :n} }', parameters={"n": name}))
    return attrs, version


def set_x(nexus, **values):
    for name, x in values.items():
        ok(nexus.execute_kip('UPDATE ?d SET ATTRIBUTES { x: :x } WHERE { ?d {type: "Drug", name: :n} }', parameters={"n": name, "x": x}))


def test_update_arithmetic_stored_infinity_now_skips_the_key_and_reports_it(drugs):
    # Regression: MUL(x, 10) with x = 1e308 stored Infinity (responses carried Infinity, EXPORT wrote `inf`).
    set_x(drugs, Aspirin=1e308, Ibuprofen=2, Naproxen=-1e308)
    before, version = attributes(drugs, "Aspirin")
    r = ok(drugs.execute_kip('UPDATE ?d SET ATTRIBUTES { x: MUL(?d.attributes.x, 10), score: 2 } WHERE { ?d {type: "Drug"} }'))
    assert r == {"updated": 3, "matched": 3, "skipped_non_finite": 2}
    assert attributes(drugs, "Aspirin") == ({**before, "score": 2}, version + 1)  # x kept, score written
    assert attributes(drugs, "Ibuprofen")[0]["x"] == 20
    # NaN (∞ − ∞) is skipped too; an element whose only key is skipped is matched, not updated
    r = ok(
        drugs.execute_kip(
            'UPDATE ?d SET ATTRIBUTES { x: ADD(MUL(?d.attributes.x, 10), MUL(?d.attributes.x, -10)) } WHERE { ?d {type: "Drug", name: "Aspirin"} }'
        )
    )
    assert r == {"updated": 0, "matched": 1, "skipped_non_finite": 1}
    # a CLAMP brings an overflowing intermediate back into range: IEEE order is exact there
    r = ok(drugs.execute_kip('UPDATE ?d SET ATTRIBUTES { y: CLAMP(MUL(?d.attributes.x, 10), 0, 1) } WHERE { ?d {type: "Drug", name: "Aspirin"} }'))
    assert r == {"updated": 1, "matched": 1} and attributes(drugs, "Aspirin")[0]["y"] == 1
    # the export of what UPDATE left re-applies (no `inf` in the capsule)
    capsule = ok(drugs.execute_kip('EXPORT ?d WHERE { ?d {type: "Drug"} }'))["capsule"]
    assert "inf" not in capsule.lower() and "nan" not in capsule.lower()
    assert "error" not in drugs.execute_kip(capsule)


def test_export_of_a_stored_infinity_is_refused_instead_of_writing_inf(drugs):
    # Data written before the fix (or by foreign Cypher) may hold ±Infinity: EXPORT wrote `inf`,
    # a capsule that no longer parses. It is now KIP_2003 naming the element and the key.
    drugs.driver.execute_query("MATCH (d:KipConcept {type: 'Drug', name: 'Naproxen'}) SET d.`attr.x` = 1e308 * 10", database_=drugs.database)
    e = error(drugs.execute_kip('EXPORT ?d WHERE { ?d {type: "Drug"} }'))
    assert e["code"] == "KIP_2003" and "attribute `x`" in e["message"] and '"Naproxen"' in e["message"]


def test_add_past_64_bits_was_a_retryable_internal_error(drugs):
    # Regression: KIP_4003 "retry later" invited endless retries; it is a non-retryable KIP_2003.
    set_x(drugs, Aspirin=2**63 - 1)
    before = attributes(drugs, "Aspirin")
    for expression in ("ADD(?d.attributes.x, 1)", "MUL(?d.attributes.x, 2)"):
        e = error(drugs.execute_kip(f'UPDATE ?d SET ATTRIBUTES {{ x: {expression} }} WHERE {{ ?d {{type: "Drug", name: "Aspirin"}} }}'))
        assert e["code"] == "KIP_2003" and "64-bit" in e["message"] and "MUL(?x.attributes.n, 1.0)" in e["hint"], e
    assert attributes(drugs, "Aspirin") == before
    # in floating point the same computation is allowed
    assert ok(drugs.execute_kip('UPDATE ?d SET ATTRIBUTES { x: MUL(?d.attributes.x, 2.0) } WHERE { ?d {type: "Drug", name: "Aspirin"} }'))["updated"] == 1
    assert attributes(drugs, "Aspirin")[0]["x"] == float(2**64)


def test_integer_beyond_64_bits_was_silently_skipped_by_arithmetic(drugs):
    # Regression: an integer beyond 64 bits is stored exactly as JSON text; ADD/MUL skipped it
    # without a word. Now KIP_2003 names it and nothing is written.
    set_x(drugs, Aspirin=123456789012345678901, Ibuprofen=1)
    e = error(drugs.execute_kip('UPDATE ?d SET ATTRIBUTES { x: ADD(?d.attributes.x, 1) } WHERE { ?d {type: "Drug"} }'))
    assert e["code"] == "KIP_2003" and "attribute `x`" in e["message"] and '"Aspirin"' in e["message"]
    assert attributes(drugs, "Aspirin")[0]["x"] == 123456789012345678901
    assert attributes(drugs, "Ibuprofen")[0]["x"] == 1  # rolled back with the rest


# ---------------------------------------------------------------- strict schema on every write path
GADGET = """
UPSERT {
  CONCEPT ?t {
    {type: "$ConceptType", name: "Gadget"}
    SET ATTRIBUTES { instance_schema: { kind: { type: "string", is_required: true }, count: { type: "integer" },
      level: { type: "string", enum: ["low", "high"] } } }
    SET PROPOSITIONS { ("belongs_to_domain", {type: "Domain", name: "CoreSchema"}) }
  }
  CONCEPT ?g { {type: "Gadget", name: "g1"} SET ATTRIBUTES { kind: "a", count: 2 } }
}"""


@pytest.fixture()
def strict(genesis):
    assert "error" not in genesis.execute_kip(GADGET)
    genesis.settings = genesis.settings.replace(strict_schema=True)
    return genesis


def gadget(nexus):
    [[attrs], [version]] = ok(nexus.execute_kip('FIND(?g.attributes, ?g.metadata._version) WHERE { ?g {type: "Gadget", name: "g1"} }'))
    return attrs, version


def test_strict_update_wrote_wrong_typed_values(strict):
    before = gadget(strict)
    for body, column in (("kind: 5", 28), ("count: MUL(?g.attributes.count, 1.5)", 28), ('kind: "b", level: "mid"', 39)):
        e = error(strict.execute_kip(f'UPDATE ?g SET ATTRIBUTES {{ {body} }} WHERE {{ ?g {{type: "Gadget"}} }}'))
        assert e["code"] == "KIP_2003" and (e["line"], e["column"]) == (1, column), (body, e)
    assert gadget(strict) == before  # rolled back
    assert error(strict.execute_kip('UPDATE ?g SET ATTRIBUTES { kind: 5 } WHERE { ?g {type: "Gadget"} }', dry_run=True))["code"] == "KIP_2003"
    r = ok(strict.execute_kip('UPDATE ?g SET ATTRIBUTES { kind: "b", count: MUL(?g.attributes.count, 3), level: "high" } WHERE { ?g {type: "Gadget"} }'))
    assert r == {"updated": 1, "matched": 1} and gadget(strict)[0] == {"kind": "b", "count": 6, "level": "high"}


def test_strict_delete_attributes_removed_a_required_attribute(strict):
    before = gadget(strict)
    e = error(strict.execute_kip('DELETE ATTRIBUTES { count, kind } FROM ?g WHERE { ?g {type: "Gadget"} }'))
    assert e["code"] == "KIP_2002" and "`kind`" in e["message"] and (e["line"], e["column"]) == (1, 28)
    assert gadget(strict) == before
    assert ok(strict.execute_kip('DELETE ATTRIBUTES { count } FROM ?g WHERE { ?g {type: "Gadget"} }')) == {"updated_concepts": 1, "updated_propositions": 0}


def test_lenient_mode_still_writes_what_strict_mode_refuses(genesis):
    assert "error" not in genesis.execute_kip(GADGET)
    assert ok(genesis.execute_kip('UPDATE ?g SET ATTRIBUTES { kind: 5 } WHERE { ?g {type: "Gadget"} }')) == {"updated": 1, "matched": 1}
    assert ok(genesis.execute_kip('DELETE ATTRIBUTES { kind } FROM ?g WHERE { ?g {type: "Gadget"} }'))["updated_concepts"] == 1


# ---------------------------------------------------------------- dry runs report what the command would do
HIGHER_ORDER = """
UPSERT {
  CONCEPT ?ann { {type: "Drug", name: "Ann"} }
  PROPOSITION ?claim { ({type: "Drug", name: "Aspirin"}, "treats", {type: "Symptom", name: "Headache"}) }
  PROPOSITION ?said { (?ann, "treats", ?claim) }
}"""


@pytest.mark.parametrize(
    "command",
    [
        'UPDATE ?d SET ATTRIBUTES { score: ADD(?d.attributes.score, 1) } WHERE { ?d {type: "Drug"} (?d, "treats", ?s) }',
        'UPDATE ?d SET ATTRIBUTES { score: 1 } WHERE { ?d {type: "Drug"} }',
        'DELETE ATTRIBUTES { score } FROM ?d WHERE { ?d {type: "Drug", name: "Aspirin"} }',
        'DELETE METADATA { note } FROM ?d WHERE { ?d {type: "Drug"} }',
        'DELETE PROPOSITIONS ?l WHERE { ?l ({type: "Drug", name: "Aspirin"}, "treats", ?s) }',
        'DELETE CONCEPT ?s DETACH WHERE { ?s {type: "Symptom", name: "Headache"} }',
    ],
)
def test_dry_run_of_a_bulk_write_answered_zero_counts(drugs, command):
    # Regression: DELETE dry runs answered zeros and UPDATE's `updated` 0 whatever they matched.
    assert "error" not in drugs.execute_kip(HIGHER_ORDER)
    ok(drugs.execute_kip('UPDATE ?d SET METADATA { note: "n" } WHERE { ?d {type: "Drug", name: "Ibuprofen"} }'))
    snapshot = 'FIND(?x, ?x.metadata._version) WHERE { ?x {type: "Drug"} }'
    links = 'FIND(COUNT(?l)) WHERE { ?l (?s, "treats", ?o) }'
    before = (ok(drugs.execute_kip(snapshot)), ok(drugs.execute_kip(links)))
    dry = drugs.execute_kip(command, dry_run=True)  # with its warnings, if any (docs/interop.md A9)
    assert (ok(drugs.execute_kip(snapshot)), ok(drugs.execute_kip(links))) == before
    assert "error" not in dry and any(dry["result"].values()), dry
    assert drugs.execute_kip(command) == dry


# ---------------------------------------------------------------- KML run-time errors carry positions
def located(response, code, line, column):
    e = error(response)
    assert (e["code"], e.get("line"), e.get("column")) == (code, line, column), e
    assert e["message"].endswith("^"), e  # the source line with a caret
    return e


def test_upsert_run_time_errors_had_no_position(drugs):
    head = 'UPSERT {\n  CONCEPT ?a { {type: "Drug", name: "Aspirin"} SET PROPOSITIONS { '
    located(drugs.execute_kip(head + '("treats", {type: "Symptom", name: "Cough"}) } }\n}'), "KIP_3002", 2, 78)
    located(drugs.execute_kip(head + '("treatz", {type: "Symptom", name: "Pain"}) } }\n}'), "KIP_2001", 2, 67)
    located(drugs.execute_kip(head + '(:p, {type: "Symptom", name: "Pain"}) } }\n}', parameters={"p": "treatz"}), "KIP_2001", 2, 68)
    located(drugs.execute_kip(head + '("treats", ?later) } }\n  CONCEPT ?later { {type: "Symptom", name: "Pain"} }\n}'), "KIP_3001", 2, 78)
    located(drugs.execute_kip('UPSERT {\n  CONCEPT ?a { {type: "Drugg", name: "Aspirin"} }\n}'), "KIP_2001", 2, 23)
    located(drugs.execute_kip('UPSERT { PROPOSITION ?p { (id: "P:none") } }'), "KIP_3002", 1, 27)
    located(drugs.execute_kip('UPSERT {\n  CONCEPT ?d { {type: "$ConceptType", name: "Domain"} SET ATTRIBUTES { description: "mine" } }\n}'), "KIP_3004", 2, 16)


def test_merge_errors_on_source_and_target_had_no_position(drugs):
    located(drugs.execute_kip('MERGE CONCEPT ?s INTO ?t\nWHERE { ?s {type: "Drug", name: "Aspirin"} ?t {type: "Drug", name: "Nobody"} }'), "KIP_3002", 1, 15)
    located(drugs.execute_kip('MERGE CONCEPT ?s INTO ?t\nWHERE { ?s {type: "Drug", name: "Aspirin"} ?t {type: "Drug"} }'), "KIP_3003", 1, 23)
    located(drugs.execute_kip('MERGE CONCEPT ?s INTO ?t\nWHERE { ?s {type: "Drug", name: "Aspirin"} ?t {type: "Drugg"} }'), "KIP_2001", 2, 54)
