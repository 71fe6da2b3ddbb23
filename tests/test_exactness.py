"""Exactness (issue 13): answers that used to be silently wrong, each with a regression test
named after what broke. Run on a real Neo4j through ``Nexus.execute_kip``; every test asserts
the whole response. Rules: docs/kql.md ("Grounding", "Paths", "Solutions and ORDER BY")."""

from __future__ import annotations

import pytest

SCHEMA = """
UPSERT {
  CONCEPT ?drug { {type: "$ConceptType", name: "Drug"} SET PROPOSITIONS { ("belongs_to_domain", {type: "Domain", name: "CoreSchema"}) } }
  CONCEPT ?symptom { {type: "$ConceptType", name: "Symptom"} SET PROPOSITIONS { ("belongs_to_domain", {type: "Domain", name: "CoreSchema"}) } }
  CONCEPT ?step { {type: "$ConceptType", name: "Step"} SET PROPOSITIONS { ("belongs_to_domain", {type: "Domain", name: "CoreSchema"}) } }
  CONCEPT ?treats { {type: "$PropositionType", name: "treats"} SET PROPOSITIONS { ("belongs_to_domain", {type: "Domain", name: "CoreSchema"}) } }
  CONCEPT ?precedes { {type: "$PropositionType", name: "precedes"} SET PROPOSITIONS { ("belongs_to_domain", {type: "Domain", name: "CoreSchema"}) } }
  CONCEPT ?sub { {type: "$PropositionType", name: "is_subclass_of"} SET PROPOSITIONS { ("belongs_to_domain", {type: "Domain", name: "CoreSchema"}) } }
}
"""

DATA = """
UPSERT {
  CONCEPT ?headache { {type: "Symptom", name: "Headache"} }
  CONCEPT ?fever { {type: "Symptom", name: "Fever"} }
  CONCEPT ?pain { {type: "Symptom", name: "Pain"} }
  CONCEPT ?aspirin { {type: "Drug", name: "Aspirin"} SET ATTRIBUTES { score: 1 } SET PROPOSITIONS { ("treats", ?headache) ("treats", ?fever)
    ("treats", ?pain) } }
  CONCEPT ?ibuprofen { {type: "Drug", name: "Ibuprofen"} SET ATTRIBUTES { score: 1 } SET PROPOSITIONS { ("treats", ?headache) } }
  CONCEPT ?naproxen { {type: "Drug", name: "Naproxen"} SET ATTRIBUTES { score: 1 } SET PROPOSITIONS { ("treats", ?pain) } }
}
"""


def _chain(length: int) -> str:
    """Steps s00 → s01 → … → s<length> linked by "precedes", plus a two-step cycle c0 ⇄ c1."""
    blocks = [f'CONCEPT ?s{i:02d} {{ {{type: "Step", name: "s{i:02d}"}} SET ATTRIBUTES {{ visits: 0 }} }}' for i in range(length + 1)]
    links = [f'PROPOSITION ?l{i:02d} {{ (?s{i:02d}, "precedes", ?s{i + 1:02d}) }}' for i in range(length)]
    cycle = [
        'CONCEPT ?c0 { {type: "Step", name: "c0"} }',
        'CONCEPT ?c1 { {type: "Step", name: "c1"} SET PROPOSITIONS { ("precedes", ?c0) } }',
        'PROPOSITION ?back { (?c0, "precedes", ?c1) }',
    ]
    return "UPSERT {\n" + "\n".join(blocks + links + cycle) + "\n}"


@pytest.fixture()
def nexus13(genesis):
    for capsule in (SCHEMA, DATA, _chain(12)):
        response = genesis.execute_kip(capsule)
        assert "error" not in response, response
    return genesis


def ok(response):
    assert set(response) <= {"result", "next_cursor"}, response
    return response["result"]


def error(response):
    assert set(response) == {"error"}, response
    return response["error"]


# ---------------------------------------------------------------- grounding: every name, every time
def test_misspelled_alternative_is_reported_not_silently_dropped(nexus13):
    e = error(nexus13.execute_kip('FIND(?d.name, ?s.name) WHERE { ?d {type: "Drug"} (?d, "treats" | "treatz", ?s) }'))
    assert e["code"] == "KIP_2001" and '"treatz"' in e["message"] and '"treats"' in e["hint"]


def test_zero_hop_ancestor_idiom_with_a_typo_is_reported_not_answered_with_itself(nexus13):
    e = error(nexus13.execute_kip('FIND(?p.name) WHERE { ?c {type: "Drug", name: "Aspirin"} (?c, "is_subclas_of"{0,5}, ?p) }'))
    assert e["code"] == "KIP_2001" and '"is_subclass_of"' in e["hint"]


def test_bulk_update_over_a_misspelled_alternative_writes_nothing(nexus13):
    e = error(nexus13.execute_kip('UPDATE ?d SET ATTRIBUTES { score: 9 } WHERE { ?d {type: "Drug"} (?d, "treats" | "treatz", ?s) }'))
    assert e["code"] == "KIP_2001"
    assert ok(nexus13.execute_kip('FIND(?d.attributes.score) WHERE { ?d {type: "Drug"} }')) == [1, 1, 1]


def test_misspelled_alternative_in_delete_and_export_is_reported(nexus13):
    for command in (
        'DELETE PROPOSITIONS ?l WHERE { ?l (?d, "treats" | "treatz", ?s) }',
        'EXPORT ?d WHERE { ?d {type: "Drug"} (?d, "treats" | "treatz", ?s) }',
    ):
        assert error(nexus13.execute_kip(command))["code"] == "KIP_2001", command
    assert ok(nexus13.execute_kip('FIND(COUNT(?l)) WHERE { ?l (?d, "treats", ?s) }')) == 5


# ---------------------------------------------------------------- paths: {m,} means what it says
def test_open_ended_path_is_not_cut_at_ten_hops(nexus13):
    reached = ok(nexus13.execute_kip('FIND(?x.name) WHERE { ({type: "Step", name: "s00"}, "precedes"{1,}, ?x) } ORDER BY ?x.name'))
    assert reached == [f"s{i:02d}" for i in range(1, 13)]
    back = ok(nexus13.execute_kip('FIND(?x.name) WHERE { (?x, "precedes"{1,}, {type: "Step", name: "s12"}) } ORDER BY ?x.name'))
    assert back == [f"s{i:02d}" for i in range(12)]


def test_update_over_an_open_ended_path_updates_every_target(nexus13):
    response = nexus13.execute_kip(
        'UPDATE ?x SET ATTRIBUTES { visits: ADD(?x.attributes.visits, 1) } WHERE { ({type: "Step", name: "s00"}, "precedes"{0,}, ?x) }'
    )
    assert ok(response) == {"updated": 13, "matched": 13}
    visits = ok(nexus13.execute_kip('FIND(?x.attributes.visits) WHERE { ?x {type: "Step"} FILTER(STARTS_WITH(?x.name, "s")) }'))
    assert visits == [1] * 13


def test_explicit_maximum_above_the_minimum_cap_is_a_bound_not_an_error(nexus13):
    r = ok(nexus13.execute_kip('FIND(COUNT(?x)) WHERE { ({type: "Step", name: "s00"}, "precedes"{1,50}, ?x) }'))
    assert r == 12


def test_paths_are_walks_exact_counts_on_a_cycle(nexus13):
    # c0 → c1 → c0: a walk of exactly 5 steps from c0 ends at c1, of exactly 4 at c0 (links repeat).
    assert ok(nexus13.execute_kip('FIND(?x.name) WHERE { ({type: "Step", name: "c0"}, "precedes"{5}, ?x) }')) == ["c1"]
    assert ok(nexus13.execute_kip('FIND(?x.name) WHERE { ({type: "Step", name: "c0"}, "precedes"{4}, ?x) }')) == ["c0"]
    both = ok(nexus13.execute_kip('FIND(?x.name) WHERE { ({type: "Step", name: "c0"}, "precedes"{4,5}, ?x) } ORDER BY ?x.name'))
    assert both == ["c0", "c1"]
    # {3} on the chain: exactly three links from s00, each end once.
    assert ok(nexus13.execute_kip('FIND(?x.name) WHERE { ({type: "Step", name: "s00"}, "precedes"{3}, ?x) }')) == ["s03"]


# ---------------------------------------------------------------- solutions collapse before ORDER BY / LIMIT
def test_order_by_a_variable_find_does_not_keep_still_collapses_duplicates(nexus13):
    # Aspirin treats three symptoms; FIND keeps only ?d, so it is one solution, sorted by its
    # smallest symptom name (ASC): Aspirin (Fever), Ibuprofen (Headache), Naproxen (Pain).
    r = nexus13.execute_kip('FIND(?d.name) WHERE { ?d {type: "Drug"} (?d, "treats", ?s) } ORDER BY ?s.name')
    assert ok(r) == ["Aspirin", "Ibuprofen", "Naproxen"]
    # DESC sorts by the largest: Aspirin (Pain) and Naproxen (Pain), then Ibuprofen (Headache).
    r = nexus13.execute_kip('FIND(?d.name) WHERE { ?d {type: "Drug"} (?d, "treats", ?s) } ORDER BY ?s.name DESC, ?d.name')
    assert ok(r) == ["Aspirin", "Naproxen", "Ibuprofen"]


def test_limit_counts_collapsed_solutions(nexus13):
    r = nexus13.execute_kip('FIND(?d.name) WHERE { ?d {type: "Drug"} (?d, "treats", ?s) } ORDER BY ?s.name LIMIT 3')
    assert ok(r) == ["Aspirin", "Ibuprofen", "Naproxen"] and "next_cursor" not in r
    first = nexus13.execute_kip('FIND(?d.name) WHERE { ?d {type: "Drug"} (?d, "treats", ?s) } ORDER BY ?s.name LIMIT 2')
    assert ok(first) == ["Aspirin", "Ibuprofen"]
    rest = nexus13.execute_kip(
        'FIND(?d.name) WHERE { ?d {type: "Drug"} (?d, "treats", ?s) } ORDER BY ?s.name LIMIT 2 CURSOR :c', parameters={"c": first["next_cursor"]}
    )
    assert ok(rest) == ["Naproxen"]


# ---------------------------------------------------------------- cursors survive across processes
def test_next_cursor_of_one_process_is_honoured_by_another_of_the_same_nexus(nexus13, neo4j_server):
    # Regression: the signing key was random per process unless KIP2CYPHER_CURSOR_SECRET was set,
    # so a restart or a second replica refused every cursor. Two Nexus objects with default
    # settings stand for two processes: they sign with the secret the database stored.
    from kip2cypher.config import Settings
    from kip2cypher.nexus import Nexus

    query = 'FIND(?x.name) WHERE { ?x {type: "Step"} } ORDER BY ?x.name LIMIT 5'

    def nexus(**settings):
        return Nexus(neo4j_server.uri, auth=neo4j_server.auth, database=neo4j_server.database, settings=Settings(embedder=False, **settings))

    with nexus() as first, nexus() as second, nexus(cursor_secret=b"another nexus") as foreign:
        page = first.execute_kip_readonly(query)
        assert ok(page) == ["c0", "c1", "s00", "s01", "s02"]
        following = second.execute_kip_readonly(query + " CURSOR :c", parameters={"c": page["next_cursor"]})
        assert ok(following) == ["s03", "s04", "s05", "s06", "s07"]
        refused = error(foreign.execute_kip_readonly(query + " CURSOR :c", parameters={"c": page["next_cursor"]}))
        assert refused["code"] == "KIP_1001" and "another nexus" in refused["message"]
        other_query = error(
            second.execute_kip_readonly(
                query.replace("LIMIT 5", "LIMIT 5 ").replace("?x.name)", "?x.id)", 1) + " CURSOR :c", parameters={"c": page["next_cursor"]}
            )
        )
        assert other_query["code"] == "KIP_1001"


def test_nan_and_infinity_parameters_are_refused_before_anything_runs(nexus13):
    for bad in (float("nan"), float("inf"), [1, float("-inf")]):
        e = error(nexus13.execute_kip('UPSERT { CONCEPT ?d { {type: "Drug", name: "Bad"} SET ATTRIBUTES { x: :v } } }', parameters={"v": bad}))
        assert e["code"] == "KIP_1001" and ":v" in e["message"]
    assert ok(nexus13.execute_kip('FIND(COUNT(?d)) WHERE { ?d {type: "Drug", name: "Bad"} }')) == 0


# ---------------------------------------------------------------- warnings for keys no element carries
def test_empty_answer_warns_about_a_key_no_element_of_the_type_carries(nexus13):
    r = nexus13.execute_kip('FIND(?d.name) WHERE { ?d {type: "Drug"} FILTER(?d.attributes.scroe > 0) } ORDER BY ?d.metadata.confidense')
    assert r == {
        "result": [],
        "warnings": [
            '?d: attribute "scroe" is not present on any Drug; did you mean "score"?',
            '?d: metadata key "confidense" is not present on any Drug.',
        ],
    }
    # a key some element carries is not warned about, and a non-empty answer costs no check
    assert nexus13.execute_kip('FIND(?d.name) WHERE { ?d {type: "Drug"} FILTER(?d.attributes.score > 5) }') == {"result": []}
    assert ok(nexus13.execute_kip('FIND(?d.attributes.scroe) WHERE { ?d {type: "Drug", name: "Aspirin"} }')) == [None]
