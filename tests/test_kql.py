"""KQL behaviour on a real Neo4j: every FIND construct of spec §3 (and result shapes §6.2.2),
run through ``Nexus.execute_kip`` against the fixture graph of ``tests/kql_graph.py``.
Every test asserts the whole response."""

from __future__ import annotations

import logging

import kql_graph as g
import pytest
from kql_graph import C, P
from test_silent_spec import may_bind

from kip2cypher.execution.programs import find
from kip2cypher.lower.compile import compile_plan

logging.getLogger("neo4j").setLevel(logging.ERROR)


@pytest.fixture(scope="module")
def kg(neo4j_server):
    """A Nexus holding the fixture graph; the tests here only read it."""
    from conftest import wipe

    from kip2cypher.config import Settings
    from kip2cypher.nexus import Nexus

    with Nexus(neo4j_server.uri, auth=neo4j_server.auth, database=neo4j_server.database, settings=Settings(cursor_secret=b"k" * 32)) as nx:
        wipe(nx.driver, nx.database)
        nx.ensure_schema()
        g.load(nx.driver, nx.database)
        yield nx
        wipe(nx.driver, nx.database)


def run(kg, text, **params):
    return kg.execute_kip(text, parameters=params or None)


def err(response):
    assert set(response) == {"error"}, response
    return response["error"]["code"]


# ----------------------------------------------------------------------------- spec §3.6 examples
def test_example1_non_nsaid_headache_drugs(kg):
    r = run(
        kg,
        """
        FIND(?drug.name, ?drug.attributes.risk_level)
        WHERE {
          ?drug {type: "Drug"}
          ?headache {name: "Headache"}
          (?drug, "treats", ?headache)
          NOT { (?drug, "belongs_to_class", {name: "NSAID"}) }
          FILTER(?drug.attributes.risk_level < 4)
        }
        ORDER BY ?drug.attributes.risk_level ASC
        LIMIT 20""",
    )
    assert r == {"result": [["Acetaminophen"], [1]]}


def test_example2_nsaids_with_optional_side_effects(kg):
    r = run(
        kg,
        """
        FIND(?drug.name, ?side_effect.name, ?link.metadata.source)
        WHERE {
          (?drug, "belongs_to_class", {name: "NSAID"})
          OPTIONAL { ?link (?drug, "has_side_effect", ?side_effect) }
        }
        ORDER BY ?drug.name""",
    )
    assert r == {"result": [["Aspirin", "Ibuprofen", "Naproxen"], ["Stomach Upset", "Stomach Upset", None], ["FDA label", "EMA label", None]]}


def test_example3_higher_order_deconstruction(kg):
    r = run(
        kg,
        """
        FIND(?statement.metadata.confidence)
        WHERE {
          ?fact ({type: "Drug", name: "Aspirin"}, "treats", {type: "Symptom", name: "Headache"})
          ?statement ({type: "Person", name: "John Doe"}, "stated", ?fact)
        }""",
    )
    assert r == {"result": [0.75]}


def test_example4_recent_conversations_with_concepts(kg):
    r = run(
        kg,
        """
        FIND(?event, ?concept)
        WHERE {
          ?event {type: "Event"}
          FILTER(?event.attributes.event_class == "Conversation")
          FILTER(?event.attributes.start_time > "2025-06-01T00:00:00Z")
          FILTER(IS_NOT_NULL(?event.attributes.participants))
          OPTIONAL { (?event, "mentions", ?concept) }
        }
        ORDER BY ?event.attributes.start_time DESC
        LIMIT 20""",
    )
    # ev5 (2025-06-15, no mentions) sorts after ev1 (2025-07-01, two mentions) in DESC order.
    ev1_rows = sorted([C["aspirin"].obj(), C["headache"].obj()], key=lambda o: o["id"])
    assert r["result"][0] == [C["ev1"].obj(), C["ev1"].obj(), C["ev5"].obj()]
    assert sorted(r["result"][1][:2], key=lambda o: o["id"]) == ev1_rows
    assert r["result"][1][2] is None
    assert set(r) == {"result"}


def test_example5_associative_recall(kg):
    r = run(
        kg,
        """
        FIND(?pred, ?neighbor, ?link.metadata.confidence)
        WHERE {
          ?person {type: "Person", name: "Alice"}
          ?link (?person, ?pred, ?neighbor)
          FILTER(?pred != "belongs_to_domain")
        }
        ORDER BY ?link.metadata.confidence DESC, ?link.metadata.created_at DESC
        LIMIT 50""",
    )
    assert r == {"result": [["knows", "follows", "stated"], [C["bob"].obj(), C["carol"].obj(), P["ibu_head"].obj()], [0.7, 0.4, None]]}


# ----------------------------------------------------------------------------- §3.2 dot notation
def test_dot_notation_find_examples(kg):
    r = run(kg, 'FIND(?drug.name, ?drug.attributes.risk_level) WHERE { ?drug {type: "Drug"} } ORDER BY ?drug.name')
    assert r == {"result": [["Acetaminophen", "Aspirin", "Ibuprofen", "Morphine", "Naproxen", "Vitamin C"], [1, 2, 2, 5, 3, None]]}
    r = run(
        kg,
        'FIND(?link) WHERE { ?link ({type: "Drug", name: "Aspirin"}, "treats", {type: "Symptom", name: "Headache"}) FILTER(?link.metadata.confidence > 0.8) }',
    )
    assert r == {"result": [P["asp_head"].obj()]}


def test_whole_attributes_and_metadata_objects_decoded(kg):
    r = run(kg, 'FIND(?d.attributes, ?d.metadata, ?d.attributes.dosage, ?d.attributes.tags, ?d.attributes.note) WHERE { ?d {type: "Drug", name: "Aspirin"} }')
    a = C["aspirin"]
    assert r == {
        "result": [[dict(sorted(a.attributes.items()))], [dict(sorted(a.metadata.items()))], [{"mg": 500, "form": "tablet"}], [["nsaid", "otc"]], [None]]
    }


def test_top_level_fields_of_links_and_engine_metadata(kg):
    r = run(kg, 'FIND(?l.id, ?l.subject, ?l.predicate, ?l.object, ?l.metadata._version) WHERE { ?l (id: "P:asp_head:treats") }')
    assert r == {"result": [["P:asp_head:treats"], ["C:aspirin"], ["treats"], ["C:headache"], [1]]}


# ----------------------------------------------------------------------------- clauses
def test_concept_by_id_type_name_type_and_name(kg):
    assert run(kg, 'FIND(?n.name) WHERE { ?n {id: "C:fever"} }') == {"result": ["Fever"]}
    assert run(kg, 'FIND(?n.id) WHERE { ?n {type: "Symptom", name: "Cold"} }') == {"result": ["C:cold"]}
    assert run(kg, 'FIND(?n.name) WHERE { ?n {type: "DrugClass"} } ORDER BY ?n.name') == {"result": ["Analgesic", "NSAID", "Opioid"]}
    # By name only: a Drug and a Product are both called Aspirin.
    assert run(kg, 'FIND(?n.type) WHERE { ?n {name: "Aspirin"} } ORDER BY ?n.type') == {"result": ["Drug", "Product"]}


def test_placeholders_in_clauses_limit_and_filters(kg):
    r = run(
        kg,
        'FIND(?drug.name) WHERE { ?symptom {name: :symptom_name} (?drug, "treats", ?symptom) FILTER(?drug.attributes.risk_level >= :min) } ORDER BY ?drug.name '
        "LIMIT :limit",
        symptom_name="Headache",
        min=2,
        limit=10,
    )
    assert r == {"result": ["Aspirin", "Ibuprofen"]}


def test_missing_placeholder_is_syntax_error(kg):
    assert err(run(kg, "FIND(?n) WHERE { ?n {name: :nope} }")) == "KIP_1001"


def test_proposition_by_id_and_structure(kg):
    assert run(kg, 'FIND(?l) WHERE { ?l (id: "P:nap_pain:treats") }') == {"result": [P["nap_pain"].obj()]}
    r = run(kg, 'FIND(?s.name, ?o.name) WHERE { (?s, "belongs_to_class", ?o) } ORDER BY ?s.name')
    assert r == {"result": [["Acetaminophen", "Aspirin", "Ibuprofen", "Morphine", "Naproxen"], ["Analgesic", "NSAID", "NSAID", "Opioid", "NSAID"]]}


def test_variables_unify_across_clauses(kg):
    r = run(
        kg,
        'FIND(?d.name) WHERE { (?d, "treats", {name: "Headache"}) (?d, "treats", {name: "Fever"}) (?d, "belongs_to_class", ?c) ?c {name: "NSAID"} } ORDER BY '
        "?d.name",
    )
    assert r == {"result": ["Aspirin", "Ibuprofen"]}


def test_two_clauses_may_bind_the_same_link(kg):
    # KIP variables unify (homomorphism): both clauses may match the same proposition.
    r = run(kg, 'FIND(?a.name, ?b.name) WHERE { ?a {name: "Morphine"} (?a, "treats", ?x) (?b, "treats", ?x) } ORDER BY ?b.name')
    assert r == {"result": [["Morphine", "Morphine"], ["Morphine", "Naproxen"]]}


def test_higher_order_any_depth(kg):
    # Bob stated (John stated (Aspirin treats Headache)).
    r = run(kg, 'FIND(?who.name, ?drug.name, ?sym.name) WHERE { (?who, "stated", ({type: "Person", name: "John Doe"}, "stated", (?drug, "treats", ?sym))) }')
    assert r == {"result": [["Bob"], ["Aspirin"], ["Headache"]]}
    r = run(kg, 'FIND(?user.name, ?drug.name) WHERE { (?user, "stated", (?drug, "treats", ?symptom)) } ORDER BY ?user.name')
    assert r == {"result": [["Alice", "John Doe"], ["Ibuprofen", "Aspirin"]]}


def test_link_as_subject_endpoint_variable_binds_proposition(kg):
    r = run(kg, 'FIND(?x) WHERE { ({type: "Person", name: "Bob"}, "stated", ?x) }')
    assert r == {"result": [P["john_stated"].obj()]}


# ----------------------------------------------------------------------------- predicate variables
def test_predicate_variable_projects_filters_and_unifies(kg):
    r = run(kg, 'FIND(?p, ?o.name) WHERE { ({type: "Drug", name: "Morphine"}, ?p, ?o) } ORDER BY ?p, ?o.name')
    assert r == {"result": [["belongs_to_class", "has_side_effect", "treats"], ["Opioid", "Headache", "Pain"]]}
    r = run(kg, 'FIND(?p) WHERE { ({name: "Alice"}, ?p, ?x) FILTER(IN(?p, ["knows", "follows"])) } ORDER BY ?p')
    assert r == {"result": ["follows", "knows"]}
    # ?p unifies: Bob and Alice are linked to Carol by the same predicate? (knows vs follows → only Bob)
    r = run(kg, 'FIND(?s.name, ?p) WHERE { (?s, ?p, {name: "Carol"}) (?s, ?p, ?other) ?other {name: "Bob"} }')
    assert r == {"result": [[], []]}
    r = run(kg, 'FIND(?s.name, ?p) WHERE { (?s, ?p, {name: "Carol"}) (?s, ?p, ?other) ?other {name: "Bob"} FILTER(?s != ?other) }')
    assert r == {"result": [[], []]}
    r = run(kg, 'FIND(?s.name, ?p) WHERE { (?s, ?p, {name: "Bob"}) (?s, ?p, ?other) } ORDER BY ?s.name')
    assert r == {"result": [["Alice"], ["knows"]]}


def test_predicate_variable_unification_across_clauses(kg):
    r = run(kg, 'FIND(?p) WHERE { ({name: "Alice"}, ?p, {name: "Bob"}) ({name: "Bob"}, ?p, {name: "Carol"}) }')
    assert r == {"result": ["knows"]}
    r = run(kg, 'FIND(?p) WHERE { ({name: "Alice"}, ?p, {name: "Carol"}) ({name: "Bob"}, ?p, {name: "Carol"}) }')
    assert r == {"result": []}


def test_predicate_variable_with_link_variable(kg):
    r = run(kg, 'FIND(?p, ?l.id) WHERE { ?l ({type: "Person", name: "Bob"}, ?p, ?o) } ORDER BY ?p')
    assert r == {"result": [["knows", "stated"], ["P:bob_knows_carol:knows", "P:bob_stated:stated"]]}


def test_unconstrained_predicate_variable_is_allowed_and_bounded_by_limit(kg):
    r = run(kg, 'FIND(?p, COUNT(?l)) WHERE { ?l (?s, ?p, ?o) FILTER(?p == "treats") }')
    assert r == {"result": [["treats"], [9]]}


def test_string_functions_on_predicate_variable(kg):
    r = run(kg, 'FIND(?p) WHERE { ({name: "Aspirin", type: "Drug"}, ?p, ?o) FILTER(STARTS_WITH(?p, "belongs") || ENDS_WITH(?p, "effect")) } ORDER BY ?p')
    assert r == {"result": ["belongs_to_class", "belongs_to_domain", "has_side_effect"]}


# ----------------------------------------------------------------------------- paths
def test_path_zero_hop_includes_self_and_one_row_per_pair(kg):
    r = run(kg, 'FIND(?p.name) WHERE { ?c {type: "Category", name: "Dog"} (?c, "is_subclass_of"{0,5}, ?p) } ORDER BY ?p.name')
    assert r == {"result": ["Animal", "Dog", "Entity", "Living Thing", "Mammal", "Pet", "Thing"]}


def test_path_diamond_counts_each_endpoint_pair_once(kg):
    r = run(kg, 'FIND(COUNT(?p)) WHERE { (?c, "is_subclass_of"{1,3}, ?p) ?c {name: "Dog"} }')
    # Dog → Mammal, Pet (1), Animal (2, via both), Living Thing (3)
    assert r == {"result": 4}
    r = run(kg, 'FIND(?p.name) WHERE { ({name: "Dog"}, "is_subclass_of"{2}, ?p) }')
    assert r == {"result": ["Animal"]}


def test_path_open_upper_bound_is_unbounded_and_only_the_minimum_is_capped(kg):
    r = run(kg, 'FIND(?p.name) WHERE { ({name: "Dog"}, "is_subclass_of"{4,}, ?p) } ORDER BY ?p.name')
    assert r == {"result": ["Entity", "Thing"]}
    # An explicit maximum above max_hops is a bound like any other (the search is breadth-first).
    everything = run(kg, 'FIND(?p.name) WHERE { ({name: "Dog"}, "is_subclass_of"{1,}, ?p) } ORDER BY ?p.name')
    assert run(kg, 'FIND(?p.name) WHERE { ({name: "Dog"}, "is_subclass_of"{1,50}, ?p) } ORDER BY ?p.name') == everything
    # The minimum costs one clause per hop: above max_hops it is refused, naming the setting.
    response = run(kg, 'FIND(?p) WHERE { ({name: "Dog"}, "is_subclass_of"{11,}, ?p) }')
    assert err(response) == "KIP_4002" and "KIP2CYPHER_MAX_HOPS" in response["error"]["hint"]


def test_path_alternatives(kg):
    r = run(kg, 'FIND(?x.name) WHERE { ({name: "Alice"}, "knows" | "follows", ?x) } ORDER BY ?x.name')
    assert r == {"result": ["Bob", "Carol"]}
    r = run(kg, 'FIND(?x.name) WHERE { ({name: "Alice"}, "knows" | "follows"{1,2}, ?x) } ORDER BY ?x.name')
    assert r == {"result": ["Bob", "Carol"]}
    r = run(kg, 'FIND(?l.predicate) WHERE { ?l ({name: "Alice"}, "knows" | "follows", ?x) } ORDER BY ?l.predicate')
    assert r == {"result": ["follows", "knows"]}


def test_link_variable_on_quantified_path_rejected(kg):
    assert err(run(kg, 'FIND(?l) WHERE { ?l ({name: "Dog"}, "is_subclass_of"{1,2}, ?p) }')) == "KIP_1001"


# ----------------------------------------------------------------------------- FILTER
@pytest.mark.parametrize(
    "condition, expected",
    [
        ("?d.attributes.risk_level == 2", ["Aspirin", "Ibuprofen"]),
        ("?d.attributes.risk_level != 2", ["Acetaminophen", "Morphine", "Naproxen"]),
        ("?d.attributes.risk_level < 2", ["Acetaminophen"]),
        ("?d.attributes.risk_level > 3", ["Morphine"]),
        ("?d.attributes.risk_level <= 2", ["Acetaminophen", "Aspirin", "Ibuprofen"]),
        ("?d.attributes.risk_level >= 3", ["Morphine", "Naproxen"]),
        ("?d.attributes.risk_level >= 2 && ?d.attributes.risk_level < 5", ["Aspirin", "Ibuprofen", "Naproxen"]),
        ('?d.attributes.risk_level == 1 || ?d.name == "Morphine"', ["Acetaminophen", "Morphine"]),
        ("!(?d.attributes.risk_level > 1)", ["Acetaminophen"]),  # missing risk_level: unknown, dropped
        ("!(?d.attributes.risk_level > 1) && !IS_NULL(?d.attributes.risk_level)", ["Acetaminophen"]),
        ("(?d.attributes.risk_level == 1 || ?d.attributes.risk_level == 5) && ?d.attributes.controlled == true", ["Morphine"]),
        ('IN(?d.name, ["Aspirin", "Morphine", "Nope"])', ["Aspirin", "Morphine"]),
        ("IS_NULL(?d.attributes.risk_level)", ["Vitamin C"]),
        ("IS_NOT_NULL(?d.attributes.price)", ["Acetaminophen", "Ibuprofen", "Naproxen"]),
        ("IS_NULL(?d.attributes.note)", ["Acetaminophen", "Aspirin", "Ibuprofen", "Morphine", "Naproxen", "Vitamin C"]),
        ("IS_NOT_NULL(?d.attributes.dosage)", ["Aspirin"]),
        ('CONTAINS(?d.name, "pro")', ["Ibuprofen", "Naproxen"]),
        ('STARTS_WITH(?d.name, "A")', ["Acetaminophen", "Aspirin"]),
        ('ENDS_WITH(?d.name, "en")', ["Acetaminophen", "Ibuprofen", "Naproxen"]),
        ('REGEX(?d.name, "^[AM]")', ["Acetaminophen", "Aspirin", "Morphine"]),
        ('REGEX(?d.name, "pir")', ["Aspirin"]),
        ('REGEX(?d.name, "(?i)ASPIRIN")', ["Aspirin"]),
        ('REGEX(?d.attributes.description, "vitamin.supplement")', []),  # "." stops at the line break (docs/interop.md A8)
        ('REGEX(?d.attributes.description, "(?s)vitamin.supplement")', ["Vitamin C"]),
        ('?d.attributes.risk_level > "1"', []),
        ('?d.attributes.dosage == "x" || ?d.attributes.dosage != "x"', []),
        ("?d.attributes.note != 1", []),
        ("?d.attributes.note == null", ["Acetaminophen", "Aspirin", "Ibuprofen", "Morphine", "Naproxen", "Vitamin C"]),
        ("?d.attributes.price != null", ["Acetaminophen", "Ibuprofen", "Naproxen"]),
        ("?d.attributes.dosage != null && null != ?d.attributes.tags", ["Aspirin"]),
        ("?d.attributes.risk_level > null || ?d.attributes.risk_level <= null", []),
        ("?d.attributes.approved", ["Aspirin"]),
        ("!?d.attributes.approved", []),  # only Aspirin has `approved` (true); missing is unknown
        ("IS_NULL(?d.attributes.approved) || !?d.attributes.approved", ["Acetaminophen", "Ibuprofen", "Morphine", "Naproxen", "Vitamin C"]),
        ("IN(?d.attributes.risk_level, [1, 5])", ["Acetaminophen", "Morphine"]),
        ('CONTAINS(?d.attributes.tags, "nsaid")', []),
        ('?d.metadata.source == "FDA"', ["Acetaminophen", "Ibuprofen"]),
        ('IS_NOT_NULL(?d.metadata.expires_at) && ?d.metadata.expires_at > "2026"', ["Acetaminophen"]),
        ("?d.metadata._version == 1 && ?d.attributes.risk_level == 5", ["Morphine"]),
    ],
)
def test_filter_operators_and_functions(kg, condition, expected):
    text = f'FIND(?d.name) WHERE {{ ?d {{type: "Drug"}} FILTER({condition}) }} ORDER BY ?d.name'
    assert run(kg, text) == (warned(text, expected) if condition in WARNED else {"result": expected})


#: The conditions above whose reading may differ from the reference engine's: their answer
#: carries the compile-time ``warnings`` (docs/interop.md A1, A4; their texts: test_silent_spec.py).
WARNED = {
    "?d.attributes.risk_level != 2",
    "!(?d.attributes.risk_level > 1)",
    '?d.attributes.risk_level > "1"',
    '?d.attributes.dosage == "x" || ?d.attributes.dosage != "x"',
    "?d.attributes.note != 1",
    'IS_NOT_NULL(?d.metadata.expires_at) && ?d.metadata.expires_at > "2026"',
}


def warned(text: str, result) -> dict:
    """The response of ``text`` with its compile-time warnings (one at least)."""
    warnings = list(compile_plan(text).warnings)
    assert warnings, text
    return {"result": result, "warnings": warnings}


def test_filter_sees_every_variable_of_its_scope_wherever_written(kg):
    r = run(kg, 'FIND(?d.name) WHERE { FILTER(?s.attributes.severity == "high" && ?d.attributes.risk_level < 2) ?d {type: "Drug"} (?d, "treats", ?s) }')
    assert r == {"result": ["Acetaminophen"]}


def test_filter_comparing_two_variables(kg):
    both = (
        'FIND(?a.name, ?b.name) WHERE { ?a {type: "Drug"} ?b {type: "Drug"} FILTER(?a.attributes.risk_level == ?b.attributes.risk_level && ?a.name < ?b.name) }'
    )
    r = run(
        kg,
        both,
    )
    assert r == warned(both, [["Aspirin"], ["Ibuprofen"]])  # two missing values are not equal here
    r = run(kg, 'FIND(?a.name) WHERE { (?a, "treats", ?s) (?b, "treats", ?s) ?b {name: "Naproxen"} FILTER(?a != ?b) }')
    assert r == {"result": ["Morphine"]}


def test_invalid_regex_is_syntax_error(kg):
    assert err(run(kg, 'FIND(?d) WHERE { ?d {type: "Drug"} FILTER(REGEX(?d.name, "[unclosed")) }')) == "KIP_1001"


def test_whole_object_is_not_comparable(kg):
    assert err(run(kg, 'FIND(?d) WHERE { ?d {type: "Drug"} FILTER(?d.attributes == "x") }')) == "KIP_1001"


# ----------------------------------------------------------------------------- NOT / OPTIONAL / UNION
def test_not_is_anti_join_with_internal_variables(kg):
    r = run(
        kg,
        """FIND(?drug.name) WHERE {
        ?drug {type: "Drug"}
        NOT { ?nsaid_class {name: "NSAID"} (?drug, "belongs_to_class", ?nsaid_class) }
    } ORDER BY ?drug.name""",
    )
    assert r == {"result": ["Acetaminophen", "Morphine", "Vitamin C"]}
    # ?nsaid_class is not visible outside NOT.
    assert err(run(kg, 'FIND(?c) WHERE { ?d {type: "Drug"} NOT { (?d, "belongs_to_class", ?c) } }')) == "KIP_3001"


def test_not_with_filter_inside(kg):
    r = run(kg, 'FIND(?d.name) WHERE { ?d {type: "Drug"} NOT { (?d, "treats", ?s) FILTER(?s.name == "Headache") } } ORDER BY ?d.name')
    # ?s may bind a proposition, whose name is null: that solution would not be excluded (docs/interop.md A5)
    assert r == {"result": ["Morphine", "Naproxen", "Vitamin C"], "warnings": [may_bind("?s.name", "FILTER", "s", "proposition", "name")]}
    r = run(kg, 'FIND(?d.name) WHERE { ?d {type: "Drug"} NOT { ?s {type: "Symptom"} (?d, "treats", ?s) FILTER(?s.name == "Headache") } } ORDER BY ?d.name')
    assert r == {"result": ["Morphine", "Naproxen", "Vitamin C"]}
    r = run(kg, 'FIND(?d.name) WHERE { ?d {type: "Drug"} NOT { FILTER(?d.attributes.risk_level > 1) } } ORDER BY ?d.name')
    assert r == {"result": ["Acetaminophen", "Vitamin C"]}


def test_optional_miss_projects_nulls_and_is_null_is_true(kg):
    r = run(
        kg,
        """FIND(?d.name, ?se) WHERE {
        ?d {type: "Drug"}
        OPTIONAL { (?d, "has_side_effect", ?se) }
        FILTER(IS_NULL(?se))
    } ORDER BY ?d.name""",
    )
    assert r == {"result": [["Acetaminophen", "Naproxen", "Vitamin C"], [None, None, None]]}


def test_optional_with_filter_inside_keeps_the_outer_row(kg):
    r = run(
        kg,
        """FIND(?d.name, ?s.name) WHERE {
        ?d {type: "Drug"}
        OPTIONAL { (?d, "treats", ?s) FILTER(?s.attributes.severity == "high") }
    } ORDER BY ?d.name""",
    )
    assert r == {"result": [["Acetaminophen", "Aspirin", "Ibuprofen", "Morphine", "Naproxen", "Vitamin C"], ["Fever", "Fever", "Fever", None, None, None]]}


def test_optional_with_several_clauses_is_all_or_nothing(kg):
    r = run(
        kg,
        """FIND(?d.name, ?c.name, ?s.name) WHERE {
        ?d {type: "Drug"}
        OPTIONAL { (?d, "belongs_to_class", ?c) (?d, "has_side_effect", ?s) }
    } ORDER BY ?d.name""",
    )
    assert r == {
        "result": [
            ["Acetaminophen", "Aspirin", "Ibuprofen", "Morphine", "Naproxen", "Vitamin C"],
            [None, "NSAID", "NSAID", "Opioid", None, None],
            [None, "Stomach Upset", "Stomach Upset", "Headache", None, None],
        ]
    }


def test_nested_optional_and_not(kg):
    r = run(
        kg,
        """FIND(?d.name, ?s.name) WHERE {
        ?d {type: "Drug"}
        OPTIONAL { (?d, "treats", ?s) NOT { (?d, "belongs_to_class", {name: "NSAID"}) } OPTIONAL { (?s, "mentions", ?z) } }
    } ORDER BY ?d.name, ?s.name""",
    )
    assert r == {
        "result": [
            ["Acetaminophen", "Acetaminophen", "Aspirin", "Ibuprofen", "Morphine", "Naproxen", "Vitamin C"],
            ["Fever", "Headache", None, None, "Pain", None, "Cold"],
        ]
    }


def test_union_same_variable_logical_or_deduplicated(kg):
    r = run(
        kg,
        """FIND(?drug.name) WHERE {
        ?drug {type: "Drug"} (?drug, "treats", {name: "Headache"})
        UNION { ?drug {type: "Drug"} (?drug, "treats", {name: "Fever"}) }
    } ORDER BY ?drug.name""",
    )
    assert r == {"result": ["Acetaminophen", "Aspirin", "Ibuprofen"]}


def test_union_independent_variables_project_null(kg):
    r = run(
        kg,
        """FIND(?drug.name, ?product.name) WHERE {
        ?drug {type: "Drug"} (?drug, "treats", {name: "Pain"})
        UNION { ?product {type: "Product"} (?product, "manufactured_by", {name: "Bayer"}) }
    } ORDER BY ?drug.name, ?product.name""",
    )
    assert r == {"result": [["Morphine", "Naproxen", None], [None, None, "Aspirin"]]}


def test_union_branch_does_not_see_outer_variables(kg):
    # Inside the OPTIONAL, the UNION branch's ?d is a fresh variable: it does not join on the outer ?d.
    r = run(
        kg,
        """FIND(?d.name, ?x.name) WHERE {
        ?d {type: "Drug", name: "Vitamin C"}
        OPTIONAL { (?d, "treats", ?x) UNION { ?d {type: "Drug", name: "Morphine"} (?d, "has_side_effect", ?x) } }
    } ORDER BY ?x.name""",
    )
    assert r == {"result": [["Vitamin C", "Vitamin C"], ["Cold", "Headache"]]}


def test_three_way_union_and_clause_after_union(kg):
    r = run(
        kg,
        """FIND(?x.name) WHERE {
        ?x {name: "Alice"}
        UNION { ?x {name: "Bob"} }
        UNION { ?x {name: "Carol"} }
        (?x, "knows", ?y)
    } ORDER BY ?x.name""",
    )
    assert r == {"result": ["Alice", "Bob"]}


def test_filter_after_union_applies_to_merged_rows(kg):
    r = run(
        kg,
        """FIND(?d.name) WHERE {
        (?d, "treats", {name: "Headache"})
        UNION { (?d, "treats", {name: "Pain"}) }
        FILTER(?d.attributes.risk_level >= 2)
    } ORDER BY ?d.name""",
    )
    assert r == {"result": ["Aspirin", "Ibuprofen", "Morphine", "Naproxen"]}


# ----------------------------------------------------------------------------- §3.3 dedup
def test_distinct_solutions_with_equal_values_are_kept(kg):
    # Aspirin and Ibuprofen both have risk_level 2: two solutions, two rows.
    r = run(kg, 'FIND(?d.attributes.risk_level) WHERE { ?d {type: "Drug"} (?d, "belongs_to_class", {name: "NSAID"}) } ORDER BY ?d.attributes.risk_level')
    assert r == {"result": [2, 2, 3]}
    # The Drug and the Product are both named "Aspirin": both rows kept.
    r = run(kg, 'FIND(?x.name) WHERE { ?x {name: "Aspirin"} }')
    assert r == {"result": ["Aspirin", "Aspirin"]}


def test_duplicate_solutions_collapse_before_limit(kg):
    # Aspirin treats two symptoms: without dedup it would appear twice and crowd out LIMIT.
    r = run(kg, 'FIND(?d.name) WHERE { (?d, "treats", ?s) } ORDER BY ?d.name LIMIT 3')
    assert r["result"] == ["Acetaminophen", "Aspirin", "Ibuprofen"]
    assert "next_cursor" in r


# ----------------------------------------------------------------------------- aggregation
def test_implicit_group_by_and_order_by_aggregate(kg):
    r = run(kg, 'FIND(?c.name, COUNT(?d)) WHERE { (?d, "belongs_to_class", ?c) } ORDER BY COUNT(?d) DESC, ?c.name')
    assert r == {"result": [["NSAID", "Analgesic", "Opioid"], [3, 1, 1]]}


def test_aggregations_only_give_scalars(kg):
    text = (
        "FIND(COUNT(?d), COUNT(DISTINCT ?d.attributes.risk_level), SUM(?d.attributes.price), AVG(?d.attributes.risk_level), MIN(?d.name), "
        'MAX(?d.attributes.risk_level)) WHERE { ?d {type: "Drug"} }'
    )
    r = run(kg, text)
    assert r == warned(text, [6, 4, 13.5, 2.6, "Acetaminophen", 5])  # COUNT(DISTINCT path): docs/interop.md A6
    assert run(kg, 'FIND(COUNT(?d)) WHERE { ?d {type: "Drug"} }') == {"result": 6}


def test_count_over_optional_miss_is_zero(kg):
    r = run(kg, 'FIND(?d.name, COUNT(?se)) WHERE { ?d {type: "Drug"} OPTIONAL { (?d, "has_side_effect", ?se) } } ORDER BY ?d.name')
    assert r == {"result": [["Acetaminophen", "Aspirin", "Ibuprofen", "Morphine", "Naproxen", "Vitamin C"], [0, 1, 1, 1, 0, 0]]}


def test_count_on_empty_match_is_zero_scalar(kg):
    assert run(kg, 'FIND(COUNT(?d)) WHERE { ?d {type: "Drug", name: "Nope"} }') == {"result": 0}


def test_group_by_whole_node_and_predicate(kg):
    r = run(kg, 'FIND(?p, COUNT(?o)) WHERE { ({type: "Drug", name: "Aspirin"}, ?p, ?o) } ORDER BY ?p')
    assert r == {"result": [["belongs_to_class", "belongs_to_domain", "has_side_effect", "treats"], [1, 1, 1, 2]]}
    r = run(kg, 'FIND(?s, COUNT(?d)) WHERE { ?s {type: "Symptom", name: "Pain"} (?d, "treats", ?s) }')
    assert r == {"result": [[C["pain"].obj()], [2]]}


def test_sum_over_node_rejected_and_order_by_non_find_expression_with_aggregation(kg):
    assert err(run(kg, 'FIND(SUM(?d)) WHERE { ?d {type: "Drug"} }')) == "KIP_1001"
    assert err(run(kg, 'FIND(?c.name, COUNT(?d)) WHERE { (?d, "belongs_to_class", ?c) } ORDER BY ?d.name')) == "KIP_1001"


# ----------------------------------------------------------------------------- ORDER BY
def test_order_by_nulls_last_in_both_directions(kg):
    asc = run(kg, 'FIND(?d.name) WHERE { ?d {type: "Drug"} } ORDER BY ?d.attributes.price ASC, ?d.name')
    desc = run(kg, 'FIND(?d.name) WHERE { ?d {type: "Drug"} } ORDER BY ?d.attributes.price DESC, ?d.name')
    assert asc == {"result": ["Acetaminophen", "Ibuprofen", "Naproxen", "Aspirin", "Morphine", "Vitamin C"]}
    assert desc == {"result": ["Naproxen", "Ibuprofen", "Acetaminophen", "Aspirin", "Morphine", "Vitamin C"]}


def test_order_by_several_keys_and_bare_predicate_variable(kg):
    r = run(kg, 'FIND(?e.name) WHERE { ?e {type: "Event"} } ORDER BY ?e.attributes.salience_score DESC, ?e.attributes.start_time DESC')
    assert r == {"result": ["Old chat", "Checkup chat", "Pharmacy visit", "Hallway chat", "Evening reflection"]}


def test_order_by_variable_not_in_find(kg):
    r = run(kg, 'FIND(?s.name) WHERE { (?d, "treats", ?s) ?s {type: "Symptom"} } ORDER BY ?s.name DESC')
    assert r == {"result": ["Pain", "Headache", "Fever", "Cold"]}


# ----------------------------------------------------------------------------- LIMIT / CURSOR
def test_cursor_pages_are_complete_disjoint_and_stable(kg):
    query = 'FIND(?n.name) WHERE { ?n {type: "Category"} } LIMIT 3'
    seen = []
    page = run(kg, query)
    while True:
        seen.extend(page["result"])
        if "next_cursor" not in page:
            break
        assert len(page["result"]) == 3
        page = run(kg, query.replace("LIMIT 3", "LIMIT 3 CURSOR :c"), c=page["next_cursor"])
    assert sorted(seen) == sorted(["Dog", "Mammal", "Pet", "Animal", "Living Thing", "Entity", "Thing"])
    assert len(seen) == 7


def test_next_cursor_absent_when_exactly_limit_rows(kg):
    r = run(kg, 'FIND(?c.name) WHERE { ?c {type: "DrugClass"} } ORDER BY ?c.name LIMIT 3')
    assert r == {"result": ["Analgesic", "NSAID", "Opioid"]}
    r = run(kg, 'FIND(?c.name) WHERE { ?c {type: "DrugClass"} } ORDER BY ?c.name LIMIT 2')
    assert r["result"] == ["Analgesic", "NSAID"] and set(r) == {"result", "next_cursor"}
    r2 = kg.execute_kip('FIND(?c.name) WHERE { ?c {type: "DrugClass"} } ORDER BY ?c.name LIMIT 2 CURSOR :cur', parameters={"cur": r["next_cursor"]})
    assert r2 == {"result": ["Opioid"]}


def test_cursor_from_another_query_or_tampered_is_rejected(kg):
    r = run(kg, 'FIND(?c.name) WHERE { ?c {type: "DrugClass"} } ORDER BY ?c.name LIMIT 1')
    token = r["next_cursor"]
    other = run(kg, 'FIND(?c.name) WHERE { ?c {type: "Symptom"} } ORDER BY ?c.name LIMIT 1 CURSOR :c', c=token)
    assert err(other) == "KIP_1001"
    tampered = token[:-2] + ("AA" if token[-2:] != "AA" else "BB")
    assert err(run(kg, 'FIND(?c.name) WHERE { ?c {type: "DrugClass"} } ORDER BY ?c.name LIMIT 1 CURSOR :c', c=tampered)) == "KIP_1001"
    assert err(run(kg, 'FIND(?c.name) WHERE { ?c {type: "DrugClass"} } ORDER BY ?c.name LIMIT 1 CURSOR "garbage"')) == "KIP_1001"
    # Same query, different LIMIT: the position is still valid.
    ok = run(kg, 'FIND(?c.name) WHERE { ?c {type: "DrugClass"} } ORDER BY ?c.name LIMIT 5 CURSOR :c', c=token)
    assert ok == {"result": ["NSAID", "Opioid"]}


def test_cursor_with_aggregation_groups(kg):
    q = 'FIND(?c.name, COUNT(?d)) WHERE { (?d, "belongs_to_class", ?c) } ORDER BY ?c.name LIMIT 2'
    r = run(kg, q)
    assert r["result"] == [["Analgesic", "NSAID"], [1, 3]]
    r2 = run(kg, q + " CURSOR :c", c=r["next_cursor"])
    assert r2 == {"result": [["Opioid"], [1]]}


# ----------------------------------------------------------------------------- errors
def test_undefined_type_and_predicate_are_kip_2001_with_hint(kg):
    # Semantic errors carry line/column and the excerpt with a caret, like syntax errors (issue 13).
    r = run(kg, 'FIND(?d) WHERE { ?d {type: "drug"} }')
    assert r == {
        "error": {
            "code": "KIP_2001",
            "message": (
                'Concept type "drug" is not defined in the schema. (line 1, column 28)\nFIND(?d) WHERE { ?d {type: "drug"} }\n                           ^'
            ),
            "hint": 'Names are case-sensitive: use "Drug", not "drug".',
            "line": 1,
            "column": 28,
        }
    }
    r = run(kg, 'FIND(?d) WHERE { (?d, "treat", ?s) }')
    assert r == {
        "error": {
            "code": "KIP_2001",
            "message": 'Predicate "treat" is not defined in the schema. (line 1, column 23)\nFIND(?d) WHERE { (?d, "treat", ?s) }\n                      ^',
            "hint": 'Did you mean "treats"? Run DESCRIBE PROPOSITION TYPES to list the defined names.',
            "line": 1,
            "column": 23,
        }
    }


def test_undefined_name_in_optional_is_reported_even_with_results(kg):
    r = run(kg, 'FIND(?d.name, ?x) WHERE { ?d {type: "Drug", name: "Aspirin"} OPTIONAL { (?d, "has_side_efect", ?x) } }')
    assert err(r) == "KIP_2001"


def test_defined_type_without_instances_is_empty_not_error(kg):
    text = 'FIND(?x) WHERE { ?x {type: "Domain", name: "Nope"} }'
    assert run(kg, text) == {"result": [], "warnings": [find.absent('concept {type: "Domain", name: "Nope"}')]}


def test_unbound_variables_are_kip_3001(kg):
    assert err(run(kg, 'FIND(?nope) WHERE { ?d {type: "Drug"} }')) == "KIP_3001"
    assert err(run(kg, 'FIND(?d) WHERE { ?d {type: "Drug"} FILTER(?x.name == "a") }')) == "KIP_3001"
    assert err(run(kg, 'FIND(?d) WHERE { ?d {type: "Drug"} } ORDER BY ?x.name')) == "KIP_3001"
    assert err(run(kg, 'FIND(COUNT(?x)) WHERE { ?d {type: "Drug"} }')) == "KIP_3001"


def test_dot_path_on_predicate_variable_rejected(kg):
    assert err(run(kg, 'FIND(?p.name) WHERE { ({name: "Alice"}, ?p, ?o) }')) == "KIP_1001"


def test_readonly_execution_of_find(kg):
    assert kg.execute_kip_readonly('FIND(COUNT(?d)) WHERE { ?d {type: "Drug"} }') == {"result": 6}


# ----------------------------------------------------------------------------- injection
def test_hostile_names_are_stored_and_queried_verbatim(kg):
    before = g.counts(kg.driver, kg.database)
    evil = C["evil"]
    predicate_literal = '"' + g.EVIL_PREDICATE.replace("\\", "\\\\").replace('"', '\\"') + '"'
    r = kg.execute_kip("FIND(?x, ?l.predicate, ?o.name) WHERE { ?x {type: :t} ?l (?x, " + predicate_literal + ", ?o) }", parameters={"t": g.EVIL_TYPE})
    assert r == {"result": [[evil.obj()], [g.EVIL_PREDICATE], ["Alice"]]}
    r = kg.execute_kip("FIND(?o.name) WHERE { ({type: :t, name: :n}, " + predicate_literal + "{1,2}, ?o) }", parameters={"t": g.EVIL_TYPE, "n": g.EVIL_NAME})
    assert r == {"result": ["Alice"]}
    r = kg.execute_kip(
        'FIND(?x.name, ?x.attributes) WHERE { ?x {name: :n} FILTER(?x.name == :n && STARTS_WITH(?x.type, "Evil`")) }', parameters={"n": g.EVIL_NAME}
    )
    assert r == {"result": [[g.EVIL_NAME], [{g.EVIL_KEY: "kept verbatim"}]]}
    r = kg.execute_kip("FIND(?x.id) WHERE { ?x {type: :t, name: :n} }", parameters={"t": g.EVIL_TYPE, "n": g.EVIL_NAME})
    assert r == {"result": ["C:evil"]}
    # Nothing was deleted or changed by any of the hostile strings.
    assert g.counts(kg.driver, kg.database) == before
    assert kg.driver.execute_query("MATCH (n) WHERE n.pwned IS NOT NULL RETURN count(n) AS c", database_=kg.database).records[0]["c"] == 0


def test_hostile_undefined_type_reports_kip_2001(kg):
    r = kg.execute_kip("FIND(?x) WHERE { ?x {type: :t} }", parameters={"t": "Drug`) DETACH DELETE x //"})
    assert err(r) == "KIP_2001"
    assert g.counts(kg.driver, kg.database)[0] > 0


# ----------------------------------------------------------------------------- more scoping cases
def test_optional_as_first_item(kg):
    r = run(kg, 'FIND(?x.name, ?d.name) WHERE { OPTIONAL { ?x {type: "Company", name: "Nope"} } ?d {type: "Drug", name: "Morphine"} }')
    assert r == {"result": [[None], ["Morphine"]]}


def test_not_containing_union(kg):
    # Exclude drugs that treat Headache OR belong to the Opioid class.
    r = run(
        kg,
        """FIND(?d.name) WHERE {
        ?d {type: "Drug"}
        NOT { (?d, "treats", {name: "Headache"}) UNION { (?x, "belongs_to_class", {name: "Nothing"}) } }
        NOT { (?d, "belongs_to_class", {name: "Opioid"}) }
    } ORDER BY ?d.name""",
    )
    assert r == {"result": ["Naproxen", "Vitamin C"]}


def test_union_branch_with_not_and_optional(kg):
    r = run(
        kg,
        """FIND(?d.name, ?se.name) WHERE {
        ?d {type: "Drug", name: "Aspirin"}
        UNION {
            ?d {type: "Drug"}
            NOT { (?d, "belongs_to_class", ?c) }
            OPTIONAL { (?d, "has_side_effect", ?se) }
        }
    } ORDER BY ?d.name""",
    )
    assert r == {"result": [["Aspirin", "Vitamin C"], [None, None]]}


def test_regex_pattern_from_placeholder(kg):
    r = run(kg, 'FIND(?d.name) WHERE { ?d {type: "Drug"} FILTER(REGEX(?d.name, :re)) } ORDER BY ?d.name', re="^(Asp|Mor)")
    assert r == {"result": ["Aspirin", "Morphine"]}


def test_regex_pattern_read_from_the_graph_is_refused(kg):
    """A pattern that is a value of the graph cannot be priced before it runs (syntax/regex_guard.py)."""
    r = run(kg, 'FIND(?p.name) WHERE { ?p {type: "Product"} ?d {type: "Drug"} FILTER(REGEX(?p.name, ?d.name)) }')
    assert err(r) == "KIP_1001" and "CONTAINS" in r["error"]["hint"]
    r = run(kg, 'FIND(?p.name) WHERE { ?p {type: "Product"} ?d {type: "Drug"} FILTER(CONTAINS(?p.name, ?d.name)) }')
    assert r == {"result": ["Aspirin"]}


def test_link_attributes_and_metadata_objects(kg):
    r = run(kg, 'FIND(?l.attributes, ?l.metadata.confidence) WHERE { ?l ({name: "Alice"}, "knows", {name: "Bob"}) }')
    assert r == {"result": [[{"since": 2019}], [0.7]]}


def test_too_many_rows_without_limit_is_kip_4002(neo4j_server, kg):
    from kip2cypher.config import Settings
    from kip2cypher.nexus import Nexus

    with Nexus(neo4j_server.uri, auth=neo4j_server.auth, database=neo4j_server.database, settings=Settings(max_result_rows=5)) as small:
        assert err(small.execute_kip('FIND(?n) WHERE { ?n {type: "Drug"} }')) == "KIP_4002"
        r = small.execute_kip('FIND(?n.name) WHERE { ?n {type: "Drug"} } ORDER BY ?n.name LIMIT 4')
        assert r["result"] == ["Acetaminophen", "Aspirin", "Ibuprofen", "Morphine"] and "next_cursor" in r


def test_cursor_signed_with_another_secret_is_rejected(neo4j_server, kg):
    from kip2cypher.config import Settings
    from kip2cypher.nexus import Nexus

    query = 'FIND(?c.name) WHERE { ?c {type: "DrugClass"} } ORDER BY ?c.name LIMIT 1'
    token = run(kg, query)["next_cursor"]
    with Nexus(neo4j_server.uri, auth=neo4j_server.auth, database=neo4j_server.database, settings=Settings(cursor_secret=b"other" * 8)) as other:
        assert err(other.execute_kip(query + " CURSOR :c", parameters={"c": token})) == "KIP_1001"


def test_cursor_placeholder_with_other_parameter_values_is_rejected(kg):
    query = 'FIND(?d.name) WHERE { (?d, "treats", {name: :s}) } ORDER BY ?d.name LIMIT 1'
    token = run(kg, query, s="Headache")["next_cursor"]
    assert err(run(kg, query + " CURSOR :c", s="Fever", c=token)) == "KIP_1001"
    assert run(kg, query + " CURSOR :c", s="Headache", c=token) == {
        "result": ["Aspirin"],
        "next_cursor": run(kg, query + " CURSOR :c", s="Headache", c=token)["next_cursor"],
    }


def test_shared_pattern_api_for_kml(kg):
    """lower_where → require → distinct → statement: what UPDATE/DELETE/EXPORT build on."""
    from kip2cypher.config import Settings
    from kip2cypher.lower import context as ctx_kinds
    from kip2cypher.lower import pattern as pat
    from kip2cypher.syntax.parser import parse

    where = parse('FIND(?l) WHERE { ?l (?s, ?p, ?o) FILTER(?p != "belongs_to_domain") FILTER(?l.metadata.confidence > 0.8) }').where
    p = pat.lower_where(where, {}, Settings())
    binding = p.require("l", used_in="UPDATE", kinds={ctx_kinds.PROPOSITION})
    assert binding.kind == ctx_kinds.PROPOSITION and p.bindings["p"].kind == ctx_kinds.PREDICATE and p.bindings["s"].kind == ctx_kinds.ELEMENT
    p.distinct(["l"], used_in="UPDATE")
    stmt = p.statement()
    stmt.line("RETURN ", p.ref("l"), ".id AS id ORDER BY id")
    text, params = stmt.build()
    rows = kg.driver.execute_query(text, params, database_=kg.database).records
    expected = sorted(
        x.id for x in P.values() if x.predicate != "belongs_to_domain" and isinstance(x.metadata.get("confidence"), float) and x.metadata["confidence"] > 0.8
    )
    assert [r["id"] for r in rows] == expected
    with pytest.raises(Exception) as info:
        p.require("nope")
    assert getattr(info.value, "code", None) == "KIP_3001"
    with pytest.raises(Exception) as info:
        pat.lower_where(parse('FIND(?x) WHERE { ?x {type: "Drug"} (?x, ?x, ?y) }').where, {}, Settings())
    assert getattr(info.value, "code", None) == "KIP_1001"


def test_in_needs_a_list(kg):
    assert err(run(kg, 'FIND(?d) WHERE { ?d {type: "Drug"} FILTER(IN(?d.name, :names)) }', names="Aspirin")) == "KIP_1001"
    assert run(kg, 'FIND(?d.name) WHERE { ?d {type: "Drug"} FILTER(IN(?d.name, :names)) }', names=["Aspirin"]) == {"result": ["Aspirin"]}


def test_aggregating_order_by_a_path_of_a_grouped_variable(kg):
    r = run(kg, 'FIND(?l.id, COUNT(?x)) WHERE { ?l ({name: "Alice"}, ?p, ?o) OPTIONAL { (?x, "stated", ?l) } } ORDER BY ?l.metadata.confidence DESC')
    assert r == {
        "result": [
            ["P:alice_knows_bob:knows", "P:alice_follows_carol:follows", "P:alice_med:belongs_to_domain", "P:alice_stated_ibu:stated"],
            [0, 0, 0, 0],
        ]
    }


def test_or_filter_next_to_other_filters_keeps_its_parentheses(kg):
    # Regression: two FILTERs are AND-ed; an OR chain must not bleed into its neighbour.
    r = run(
        kg,
        """FIND(?d.name) WHERE {
        ?d {type: "Drug"}
        FILTER(IS_NULL(?d.attributes.price) || ?d.attributes.price > 4)
        FILTER(?d.attributes.risk_level >= 2)
    } ORDER BY ?d.name""",
    )
    assert r == {"result": ["Aspirin", "Ibuprofen", "Morphine", "Naproxen"]}
    text = 'FIND(?d.name) WHERE { ?d {type: "Drug"} FILTER(!(?d.name == "Aspirin" || ?d.attributes.risk_level > 1)) } ORDER BY ?d.name'
    assert run(kg, text) == warned(text, ["Acetaminophen"])  # Vitamin C: false || unknown = unknown


@pytest.mark.parametrize("negated", ["?d.attributes.risk_level != 2", "!(?d.attributes.risk_level == 2)"])
def test_not_equal_and_negated_equal_agree_on_missing_values(kg, negated):
    # Regression (issue 13): `x != v` dropped elements without x while `!(x == v)` kept them.
    # Both are unknown on a missing value (three-valued logic): the element is dropped by both.
    text = f'FIND(?d.name) WHERE {{ ?d {{type: "Drug"}} FILTER({negated}) }} ORDER BY ?d.name'
    assert run(kg, text) == warned(text, ["Acetaminophen", "Morphine", "Naproxen"])
    kept = run(kg, f'FIND(?d.name) WHERE {{ ?d {{type: "Drug"}} FILTER(IS_NULL(?d.attributes.risk_level) || {negated}) }} ORDER BY ?d.name')
    assert kept == {"result": ["Acetaminophen", "Morphine", "Naproxen", "Vitamin C"]}


def test_not_block_of_filters_keeps_rows_whose_filter_is_unknown(kg):
    # NOT { … } is pattern negation: a FILTER that is unknown does not match, so the row stays.
    text = 'FIND(?d.name) WHERE { ?d {type: "Drug"} NOT { FILTER(?d.attributes.risk_level != 2) } } ORDER BY ?d.name'
    assert run(kg, text) == warned(text, ["Aspirin", "Ibuprofen", "Vitamin C"])


# ----------------------------------------------------------------------------- optimisation passes
#: FINDs each optimisation pass rewrites (lower/passes.py), on the fixture graph.
PASS_QUERIES = [
    'FIND(?d.name, ?l) WHERE { ?d {type: "Drug"} ?l (?d, "treats", ?symptom) }',
    'FIND(?l.id) WHERE { ?l (?s, "treats", ?o) } ORDER BY ?l.id LIMIT 4',
    'FIND(?d.attributes.risk_level, COUNT(?d.attributes.price), MIN(?d.attributes.price)) WHERE { ?d {type: "Drug"} }',
    'FIND(?d.name) WHERE { ?d {type: "Drug"} } ORDER BY ?d.attributes.risk_level DESC LIMIT 3',
    'FIND(?d.name, COUNT(?s), MAX(?s.name)) WHERE { ?d {type: "Drug"} (?d, "treats", ?s) }',
    'FIND(?d.name, COUNT(?s)) WHERE { ?d {type: "Drug"} (?d, "treats", ?s) } ORDER BY COUNT(?s) DESC, ?d.name LIMIT 3',
    'FIND(?d.name, ?s.name) WHERE { ?d {type: "Drug"} (?d, "treats", ?s) } ORDER BY ?s.name LIMIT 4',
    'FIND(?d) WHERE { ?d {type: "Drug"} } ORDER BY ?d.name LIMIT 10',
    'FIND(?p, ?o.name) WHERE { ({type: "Drug", name: "Morphine"}, ?p, ?o) } ORDER BY ?p, ?o.name',
    'FIND(?drug.name, ?e.name) WHERE { ?drug {type: "Drug"} OPTIONAL { (?drug, "has_side_effect", ?e) } }',
    'FIND(?d.name) WHERE { (?d, "treats", ?s) } ORDER BY ?s.name DESC',
]


def _plain(value):
    """A query answer with nodes and relationships as their element ids (comparable)."""
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return getattr(value, "element_id", value)


@pytest.mark.parametrize("text", PASS_QUERIES)
def test_every_optimisation_pass_answers_what_the_unoptimised_query_answers(kg, text):
    """Each pass alone, and all of them, give the rows of the unoptimised FIND (in the same order:
    the identity tie-break makes the order total), and some rows."""
    from kip2cypher.lower.find import lower_find
    from kip2cypher.lower.passes import PASSES
    from kip2cypher.syntax.parser import parse

    def rows(passes):
        query = lower_find(parse(text), {}, kg.settings, passes).query
        return _plain([record.data() for record in kg.driver.execute_query(query.text, query.params, database_=kg.database).records])

    unoptimised = rows(())
    assert unoptimised, text
    for passes in [(name,) for name in PASSES] + [PASSES]:
        assert rows(passes) == unoptimised, (text, passes)
