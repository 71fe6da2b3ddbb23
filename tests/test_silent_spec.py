"""Where the spec is silent, kip2cypher takes one documented reading (docs/interop.md, part A),
and where the spec decides against the reference engine it follows the spec (part B). One
regression test per reading, asserting kip2cypher's whole answer on a real Neo4j; each test
names the docs/interop.md entry it pins. Tests that docs/ already had are referenced there
instead of repeated here."""

from __future__ import annotations

import logging

import pytest
from kml_helpers import concept, ok

logging.getLogger("neo4j").setLevel(logging.ERROR)

SCHEMA = """
UPSERT {
  CONCEPT ?task { {type: "$ConceptType", name: "Task"} SET ATTRIBUTES { description: "A piece of work." } }
  CONCEPT ?person { {type: "$ConceptType", name: "Person"} SET ATTRIBUTES { description: "An actor." } }
  CONCEPT ?blocks { {type: "$PropositionType", name: "blocks"} SET ATTRIBUTES { description: "One task blocks another." } }
  CONCEPT ?stated { {type: "$PropositionType", name: "stated"} SET ATTRIBUTES { description: "Someone stated a fact." } }
}
"""

# A: every key, some as text that looks like a number or a date-time; B: the same keys as
# numbers or plain values; C: no attributes at all (every attribute path is missing).
TASKS = """
UPSERT {
  CONCEPT ?a { {type: "Task", name: "A"}
    SET ATTRIBUTES { status: "done", score: "3.0", code: "10", at: "2025-01-01T00:00:00.5Z", flag: true, note: "a\\nb" } }
  CONCEPT ?b { {type: "Task", name: "B"}
    SET ATTRIBUTES { status: "open", score: 3, code: "3", at: "2025-01-01T00:00:00Z" } }
  CONCEPT ?c { {type: "Task", name: "C"} }
  CONCEPT ?ann { {type: "Person", name: "Ann"} }
  PROPOSITION ?ab { (?a, "blocks", ?b) }
  PROPOSITION ?said { (?ann, "stated", ?ab) }
}
"""


@pytest.fixture(scope="module")
def tasks(neo4j_server):
    """Three tasks, one link between two of them and a statement about that link; read only."""
    from conftest import wipe

    from kip2cypher.nexus import Nexus

    with Nexus(neo4j_server.uri, auth=neo4j_server.auth, database=neo4j_server.database) as nx:
        wipe(nx.driver, nx.database)
        nx.ensure_schema()
        nx.bootstrap()
        ok(nx.execute_kip(SCHEMA))
        ok(nx.execute_kip(TASKS))
        yield nx
        wipe(nx.driver, nx.database)


def names(nexus, condition: str) -> dict:
    return nexus.execute_kip(f'FIND(?t.name) WHERE {{ ?t {{type: "Task"}} FILTER({condition}) }} ORDER BY ?t.name')


# ----------------------------------------------------------------------------- A1, A2
def missing(condition: str, *paths: str, outcome: str = "the solution is dropped", keep: str = "") -> str:
    """The ``warnings`` entry of a FILTER that a missing value makes unknown (docs/interop.md A1)."""
    guards = " || ".join(f"IS_NULL({p})" for p in paths)
    return (
        f"FILTER({condition}): where {' or '.join(paths)} is missing the test is unknown — never true, even under != or !"
        f" — so {outcome}; the reference engine reads a missing value as null and may answer otherwise."
        f" To make the test hold for a missing value write FILTER({guards} || {keep or condition})"
    )


def test_not_equal_drops_elements_missing_the_key_three_valued(tasks):
    # A1: C has no status; the reference keeps it (null != "done"), kip2cypher drops it — and says so.
    status = "?t.attributes.status"
    assert names(tasks, '?t.attributes.status != "done"') == {"result": ["B"], "warnings": [missing('?t.attributes.status != "done"', status)]}
    assert names(tasks, '!(?t.attributes.status == "done")') == {"result": ["B"], "warnings": [missing('!(?t.attributes.status == "done")', status)]}
    assert names(tasks, "?t.attributes.flag != true") == {"result": [], "warnings": [missing("?t.attributes.flag != true", "?t.attributes.flag")]}
    # the spec's own idiom keeps it, on both engines, and needs no warning
    assert names(tasks, 'IS_NULL(?t.attributes.status) || ?t.attributes.status != "done"') == {"result": ["B", "C"]}
    # a plain comparison drops C on both engines: nothing to say
    assert names(tasks, '?t.attributes.status == "open"') == {"result": ["B"]}


def test_negated_filter_in_a_not_block_keeps_elements_missing_the_key(tasks):
    # A1 inside NOT: the FILTER is unknown for C, so the NOT block does not match and C is kept;
    # the reference reads null != "done" as true and excludes C.
    r = tasks.execute_kip('FIND(?t.name) WHERE { ?t {type: "Task"} NOT { FILTER(?t.attributes.status != "done") } } ORDER BY ?t.name')
    condition = '?t.attributes.status != "done"'
    outcome = "this NOT does not exclude the solution"
    assert r == {"result": ["A", "C"], "warnings": [missing(condition, "?t.attributes.status", outcome=outcome)]}


def test_two_missing_values_are_not_equal_nor_ordered(tasks):
    # A1: on the reference two missing values compare equal (null <= null); here C pairs with nothing.
    r = tasks.execute_kip(
        'FIND(?x.name, ?y.name) WHERE { ?x {type: "Task"} ?y {type: "Task"} FILTER(?x.attributes.status <= ?y.attributes.status) } ORDER BY ?x.name, ?y.name'
    )
    condition = "?x.attributes.status <= ?y.attributes.status"
    assert r == {"result": [["A", "A", "B"], ["A", "B", "B"]], "warnings": [missing(condition, "?x.attributes.status", "?y.attributes.status")]}


def test_string_function_over_a_missing_value_is_unknown_even_negated(tasks):
    # A2: the reference reads a missing value as "" (C kept by the negation, matched by the empty prefix).
    condition = '!CONTAINS(?t.attributes.status, "do")'
    assert names(tasks, condition) == {"result": ["B"], "warnings": [missing(condition, "?t.attributes.status")]}
    condition = 'STARTS_WITH(?t.attributes.status, "")'
    assert names(tasks, condition) == {"result": ["A", "B"], "warnings": [missing(condition, "?t.attributes.status")]}
    assert names(tasks, 'CONTAINS(?t.attributes.status, "do")') == {"result": ["A"]}


# ----------------------------------------------------------------------------- A3, A4
def test_numeric_string_never_matches_a_number(tasks):
    # A3: A holds "3.0" (text), B holds 3; the reference coerces "3.0" to 3 and matches both.
    assert names(tasks, "?t.attributes.score >= 3") == {"result": ["B"]}
    assert names(tasks, "?t.attributes.score == 3") == {"result": ["B"]}
    assert names(tasks, "IN(?t.attributes.score, [3])") == {"result": ["B"]}
    warning = (
        '?t.attributes.score == "3.0": "3.0" is text: it equals only the same text, and never equals or orders against'
        " a number (the reference engine compares a numeric string with a number, or with another numeric string, as numbers);"
        " to compare numbers, store and write numbers: 3.0"
    )
    assert names(tasks, '?t.attributes.score == "3.0"') == {"result": ["A"], "warnings": [warning]}


def numeric_text(var: str, key: str, text: str, number: str, owner: str = "Task elements") -> str:
    """The ``warnings`` entry of an empty answer whose FILTER compares numeric text with a number (A3)."""
    return (
        f'?{var}: attribute "{key}" is held as text ("{text}") on {owner}; FILTER compares it with the number {number}, and text never'
        f' matches a number (the reference engine compares a numeric string with a number as numbers) — compare with "{text}" or store numbers'
    )


def test_numeric_text_compared_with_a_number_is_said_when_the_answer_is_empty(tasks):
    # A3: A holds score "3.0" (text); the reference matches A in each of these, kip2cypher answers
    # nothing — and the empty-answer key check finds the text and says so (one read, only then).
    warning = numeric_text("t", "score", "3.0", "3")
    assert names(tasks, '?t.attributes.score == 3 && ?t.name == "A"') == {"result": [], "warnings": [warning]}
    assert names(tasks, 'IN(?t.attributes.score, [3, 4]) && ?t.name == "A"') == {"result": [], "warnings": [warning]}
    r = tasks.execute_kip('FIND(?t.name) WHERE { ?t {type: "Task", name: "A"} FILTER(?t.attributes.score >= :n) }', parameters={"n": 2.5})
    assert r == {"result": [], "warnings": [numeric_text("t", "score", "3.0", "2.5")]}
    # compared with text, or a key no element holds as numeric text: nothing to say
    assert names(tasks, '?t.attributes.status == "gone"') == {"result": []}
    assert names(tasks, "?t.attributes.flag == 1") == {"result": []}


def test_numeric_strings_compare_as_text(tasks):
    # A4: "10" < "3" as text (the reference compares them as numbers: B would not match, A not either).
    warning = (
        '?t.attributes.code < "3": "3" is text: it orders as text, character by character ("10" < "3"), and never'
        " equals or orders against a number (the reference engine compares a numeric string with a number, or with another numeric string, as numbers);"
        " to compare numbers, store and write numbers: 3"
    )
    assert names(tasks, '?t.attributes.code < "3"') == {"result": ["A"], "warnings": [warning]}


def test_datetime_strings_compare_as_text_not_instants(tasks):
    # A4: "…00.5Z" is half a second later, but "." sorts before "Z"; the offset spelling is other text.
    # A UTC time written with Z (the spec's own example) is not warned about; one with an offset is.
    assert names(tasks, '?t.attributes.at > "2025-01-01T00:00:00Z"') == {"result": []}
    warning = (
        '?t.attributes.at == "2025-01-01T00:00:00+00:00": "2025-01-01T00:00:00+00:00" compares as text, not as an'
        " instant: a value written with another offset or precision for the same moment does not match (the"
        ' reference engine compares date-times as instants); write and store UTC times alike, e.g. "2025-01-01T00:00:00Z"'
    )
    assert names(tasks, '?t.attributes.at == "2025-01-01T00:00:00+00:00"') == {"result": [], "warnings": [warning]}


def test_order_by_mixed_strings_is_text_order(tasks):
    # A4: the reference sorts "3" before "10" and the later instant (A) first.
    assert tasks.execute_kip('FIND(?t.name) WHERE { ?t {type: "Task"} } ORDER BY ?t.attributes.code') == {"result": ["A", "B", "C"]}
    assert tasks.execute_kip('FIND(?t.name) WHERE { ?t {type: "Task"} } ORDER BY ?t.attributes.at DESC') == {"result": ["B", "A", "C"]}


# ----------------------------------------------------------------------------- A5
def other_kind(fields: str, count: str, var: str, kind: str, lacks: str, has: str, where: str = "FIND") -> str:
    """The ``warnings`` entry of FIND rows whose endpoint variable is bound to the other kind (A5)."""
    return (
        f"{where} {fields}: {count} ?{var} to a {kind}, which has no {lacks} (a {kind} has {has}), so the value is null there;"
        " the reference engine refuses the command (KIP_1001)"
    )


def test_name_of_a_proposition_endpoint_is_null(tasks):
    # A5: ?o is the link (A blocks B); the reference answers KIP_1001 for the whole query. The
    # answer keeps null and says how many rows bound the other kind (a label test per row).
    r = tasks.execute_kip('FIND(?s.name, ?o.name, ?o.type) WHERE { (?s, "stated", ?o) }')
    has = "id, subject, predicate, object, attributes and metadata"
    assert r == {"result": [["Ann"], [None], [None]], "warnings": [other_kind("?o.name, ?o.type", "1 row bound", "o", "proposition", "name or type", has)]}
    r = tasks.execute_kip('FIND(?o.subject, ?o.name) WHERE { (?a, "blocks", ?o) }')
    has = "id, type, name, attributes and metadata"
    assert r == {"result": [[None], ["B"]], "warnings": [other_kind("?o.subject", "1 row bound", "o", "concept", "subject", has)]}
    # every row binds the kind that has the field: nothing to say
    assert tasks.execute_kip('FIND(?o.name) WHERE { (?a, "blocks", ?o) }') == {"result": ["B"]}


def may_bind(fields: str, where: str, var: str, kind: str, lacks: str) -> str:
    """The compile-time ``warnings`` entry of a read no answer row shows — FILTER, ORDER BY, an
    aggregate, KML — of a field the other kind of element lacks, on an endpoint variable (A5)."""
    has = {"proposition": "id, subject, predicate, object, attributes and metadata", "concept": "id, type, name, attributes and metadata"}[kind]
    pin = f'pin it with a concept clause, e.g. ?{var} {{type: "…"}}'
    if kind == "concept":
        pin = f"bind it with a proposition clause, e.g. ?{var} (?a, ?p, ?b)"
    return (
        f"{fields} (in {where}): ?{var} is an endpoint of a proposition clause and may bind a {kind}, which has no {lacks} (a {kind} has {has});"
        " for such a solution the value is null here — a FILTER comparison with it is not true, ORDER BY sorts it as null, an aggregate"
        f" skips it — while the reference engine refuses the command (KIP_1001). To read only {'concepts' if kind == 'proposition' else 'propositions'}, {pin}"
    )


def test_filter_on_the_name_of_a_proposition_endpoint_dropped_the_row_without_a_warning(tasks):
    # A5 in a FILTER: A blocks B, and Ann stated that link; ?o.name is null for the link, the
    # comparison unknown, Ann's row dropped — the reference refuses the command. No answer row
    # shows it, so the entry comes from the command alone ("may"), negated test or plain.
    warning = may_bind("?o.name", "FILTER", "o", "proposition", "name")
    ours = 'IN(?p, ["blocks", "stated"])'
    r = tasks.execute_kip(f'FIND(?s.name) WHERE {{ (?s, ?p, ?o) FILTER({ours} && ?o.name != "X") }}')
    assert r == {"result": ["A"], "warnings": [warning]}
    r = tasks.execute_kip(f'FIND(?s.name) WHERE {{ (?s, ?p, ?o) FILTER({ours} && !(?o.name == "X")) }}')
    assert r == {"result": ["A"], "warnings": [warning]}
    # the FIND shows ?o.name too — but not the rows the FILTER dropped: said from the command
    r = tasks.execute_kip('FIND(?o.name) WHERE { (?s, "stated", ?o) FILTER(?o.name != "X") }')
    assert r == {"result": [], "warnings": [warning]}
    # pinned by a concept clause, ?o binds only concepts: nothing to say
    r = tasks.execute_kip('FIND(?s.name) WHERE { ?o {type: "Task"} (?s, ?p, ?o) FILTER(?o.name != "X") }')
    assert r == {"result": ["A"]}


def test_order_by_and_aggregate_of_a_proposition_endpoint_field_said_nothing(tasks):
    # A5 in ORDER BY (a key FIND does not show) and in an aggregate: the link's null name sorts
    # as null / is skipped by COUNT; the reference refuses both commands. The rows are in the
    # answer (a collapsed solution, a group): a hidden column says exactly how many bound a link.
    has = "id, subject, predicate, object, attributes and metadata"
    r = tasks.execute_kip('FIND(?s.name) WHERE { (?s, "stated", ?o) } ORDER BY ?o.name')
    assert r == {"result": ["Ann"], "warnings": [other_kind("?o.name", "1 row bound", "o", "proposition", "name", has, "ORDER BY")]}
    r = tasks.execute_kip('FIND(COUNT(?o.name), COUNT(?o)) WHERE { (?s, "stated", ?o) }')
    assert r == {"result": [0, 1], "warnings": [other_kind("?o.name", "1 row bound", "o", "proposition", "name", has)]}
    r = tasks.execute_kip('FIND(?o.type, COUNT(?s)) WHERE { (?s, ?p, ?o) FILTER(IN(?p, ["blocks", "stated"])) } ORDER BY ?o.type')
    assert r == {"result": [["Task", None], [1, 1]], "warnings": [other_kind("?o.type", "1 row bound", "o", "proposition", "type", has)]}
    # no row binds a link: nothing to say
    assert tasks.execute_kip('FIND(?a.name) WHERE { (?a, "blocks", ?o) } ORDER BY ?o.name') == {"result": ["A"]}
    # a key FIND shows is said once, by the FIND column
    r = tasks.execute_kip('FIND(?o.name) WHERE { (?s, "stated", ?o) } ORDER BY ?o.name')
    assert r == {"result": [None], "warnings": [other_kind("?o.name", "1 row bound", "o", "proposition", "name", has)]}


def test_kml_filter_on_a_proposition_field_of_a_concept_endpoint_is_said(tasks):
    # A5 in a KML WHERE: ?o.subject of the object of `blocks` (a concept, B): the dry run
    # matches nothing — the reference refuses the command — and the answer says why it may.
    r = tasks.execute_kip('DELETE PROPOSITIONS ?l WHERE { ?l (?a, "blocks", ?o) FILTER(?o.subject == "x") }', dry_run=True)
    assert r["warnings"] == [may_bind("?o.subject", "FILTER", "o", "concept", "subject")]


def test_concept_field_of_a_link_variable_is_refused(tasks):
    # A5: known to be a proposition (a link variable) or a concept at compile time, the path can
    # never have a value: KIP_1001 naming the kind's fields (the reference refuses these too).
    r = tasks.execute_kip('FIND(?l.name) WHERE { ?l (?s, "blocks", ?o) }')
    assert r == {
        "error": {
            "code": "KIP_1001",
            "message": "?l binds proposition links, which have no `name`: `?l.name` can never have a value. (line 1, column 6)\n"
            'FIND(?l.name) WHERE { ?l (?s, "blocks", ?o) }\n     ^',
            "hint": "A proposition has ?l.id, ?l.subject, ?l.predicate, ?l.object, ?l.attributes.<key> and ?l.metadata.<key>.",
            "line": 1,
            "column": 6,
        }
    }
    r = tasks.execute_kip('FIND(?t.name) WHERE { ?t {type: "Person"} FILTER(?t.subject == "x") }')
    assert r["error"]["code"] == "KIP_1001" and r["error"]["hint"] == "A concept has ?t.id, ?t.type, ?t.name, ?t.attributes.<key> and ?t.metadata.<key>."


# ----------------------------------------------------------------------------- A6, B7
def test_count_of_a_path_ignores_missing_and_min_takes_strings(tasks):
    # A6: the reference counts every ?t (3) and takes MIN/MAX over numbers only (null, null).
    r = tasks.execute_kip('FIND(COUNT(?t.attributes.status), COUNT(?t), MIN(?t.attributes.code), MAX(?t.attributes.status)) WHERE { ?t {type: "Task"} }')
    warning = (
        "COUNT(?t.attributes.status) counts only the solutions where ?t.attributes.status is present (aggregation ignores"
        " null values); the reference engine counts every ?t — to count solutions write COUNT(?t)"
    )
    assert r == {"result": [2, 3, "10", "open"], "warnings": [warning]}
    r = tasks.execute_kip('FIND(COUNT(DISTINCT ?t.attributes.status)) WHERE { ?t {type: "Task"} }')
    warning = (
        "COUNT(DISTINCT ?t.attributes.status) counts the distinct values of ?t.attributes.status (missing ones ignored);"
        " the reference engine counts the distinct ?t — to count those write COUNT(DISTINCT ?t)"
    )
    assert r == {"result": 2, "warnings": [warning]}


# ----------------------------------------------------------------------------- A7
def test_not_written_before_its_variable_is_correlated(tasks):
    # A7: the NOT is read with the whole block (A blocks B: A is excluded); the reference reads
    # clauses in order, finds no shared variable and ignores the NOT (A, B, C).
    r = tasks.execute_kip('FIND(?t.name) WHERE { NOT { (?t, "blocks", ?x) } ?t {type: "Task"} } ORDER BY ?t.name')
    warning = (
        'NOT { (?t, "blocks", ?x) } is correlated with ?t, bound after it in the text — kip2cypher reads a block as a whole;'
        " the reference engine reads clauses in order and would not see ?t in this NOT;"
        " write the NOT after the clauses that bind ?t to read the same on both"
    )
    assert r == {"result": ["B", "C"], "warnings": [warning]}
    # written after ?t's clause, it reads the same on both engines: no warning
    r = tasks.execute_kip('FIND(?t.name) WHERE { ?t {type: "Task"} NOT { (?t, "blocks", ?x) } } ORDER BY ?t.name')
    assert r == {"result": ["B", "C"]}


# ----------------------------------------------------------------------------- A8
def test_regex_dot_stops_at_a_line_break_unless_the_pattern_says_dotall(tasks):
    # A8: A's note is "a\nb"; as in the reference (Rust regex) and every usual dialect, "." does
    # not match a line break — the engine's wrapper alone runs in DOTALL mode; (?s) asks for it.
    assert names(tasks, 'REGEX(?t.attributes.note, "a.b")') == {"result": []}
    assert names(tasks, 'REGEX(?t.attributes.note, "(?s)a.b")') == {"result": ["A"]}
    assert names(tasks, 'REGEX(?t.attributes.note, "^b")') == {"result": []}
    assert names(tasks, 'REGEX(?t.attributes.note, "b$")') == {"result": ["A"]}


# ----------------------------------------------------------------------------- A11 (reads)
def test_find_of_a_missing_named_element_is_empty(tasks):
    # A11: the reference answers KIP_3002 for a fully identified matcher that matches nothing.
    # The answer is empty and says why: one clause naming its element exactly matched nothing.
    absent = "The {} does not exist (the reference engine answers KIP_3002 for an element named exactly that does not exist)"
    r = tasks.execute_kip('FIND(?t.name) WHERE { ?t {type: "Task", name: "Nope"} }')
    assert r == {"result": [], "warnings": [absent.format('concept {type: "Task", name: "Nope"}')]}
    r = tasks.execute_kip('FIND(?l) WHERE { ?l (id: "P:gone") }')
    assert r == {"result": [], "warnings": [absent.format('proposition (id: "P:gone")')]}
    # a pattern that may simply match nothing: no entry
    assert tasks.execute_kip('FIND(?t.name) WHERE { ?t {type: "Task"} FILTER(?t.name == "Nope") }') == {"result": []}


def test_missing_named_elements_of_a_larger_where_are_said_when_the_answer_is_empty(tasks):
    # A11 with more clauses: an empty answer runs one read (the key check's) of which elements the
    # WHERE names exactly exist; the reference answers KIP_3002 for the first missing one.
    absent = "The {} does not exist (the reference engine answers KIP_3002 for an element named exactly that does not exist)"
    r = tasks.execute_kip('FIND(?x.name) WHERE { ?d {type: "Task", name: "Nope"} (?d, "blocks", ?x) }')
    assert r == {"result": [], "warnings": [absent.format('concept {type: "Task", name: "Nope"}')]}
    r = tasks.execute_kip('FIND(?p.name) WHERE { ({type: "Person", name: "Bob"}, "stated", ?l) ?l (id: "P:gone") (?p, "stated", ?l) }')
    assert r == {"result": [], "warnings": [absent.format('concept {type: "Person", name: "Bob"}'), absent.format('proposition (id: "P:gone")')]}
    # both exist, the pattern just matches nothing; or the named element sits in a NOT: no entry
    assert tasks.execute_kip('FIND(?x.name) WHERE { ?d {type: "Task", name: "B"} (?d, "blocks", ?x) }') == {"result": []}
    r = tasks.execute_kip('FIND(?t.name) WHERE { ?t {type: "Task", name: "C"} (?t, "blocks", ?x) NOT { ?q {type: "Task", name: "Nope"} } }')
    assert r == {"result": []}


# ----------------------------------------------------------------------------- B1, B2
def test_path_between_two_free_variables_is_answered(tasks):
    # B1: the reference refuses a multi-hop pattern between two unbound variables (KIP_1001).
    assert tasks.execute_kip('FIND(?x.name, ?y.name) WHERE { (?x, "blocks"{1,3}, ?y) }') == {"result": [["A"], ["B"]]}


def test_uncorrelated_not_excludes_everything_when_it_matches(tasks):
    # B2: §3.4.4 excludes the solutions for which the inner pattern holds; sharing no variable,
    # it holds for all of them or for none. The reference ignores such a NOT.
    assert tasks.execute_kip('FIND(?t.name) WHERE { ?t {type: "Task"} NOT { (?x, "blocks", ?y) } }') == {"result": []}
    r = tasks.execute_kip('FIND(?t.name) WHERE { ?t {type: "Task"} NOT { ?q {type: "Task", name: "Nope"} } } ORDER BY ?t.name')
    assert r == {"result": ["A", "B", "C"]}


# ----------------------------------------------------------------------------- writes
@pytest.fixture()
def fresh(genesis):
    """The same data, written anew for each test that changes it."""
    ok(genesis.execute_kip(SCHEMA))
    ok(genesis.execute_kip(TASKS))
    return genesis


def test_update_counts_only_elements_whose_values_changed(fresh):
    # A9: A is "done" already: matched, not rewritten, not counted; the reference counts 3 and bumps A.
    # The response says so (same statement, no extra round trip), dry runs alike.
    version = concept(fresh, "Task", "A")["metadata"]["_version"]
    update = 'UPDATE ?t SET ATTRIBUTES { status: "done" } WHERE { ?t {type: "Task"} }'
    held = (
        'matched element{} already held these values: not rewritten and not counted in "updated"'
        " (_version unchanged; the reference engine rewrites and counts them)"
    )
    one = {"result": {"updated": 2, "matched": 3}, "warnings": ["1 " + held.format("")]}
    assert fresh.execute_kip(update, dry_run=True) == one
    assert fresh.execute_kip(update) == one
    assert concept(fresh, "Task", "A")["metadata"]["_version"] == version
    assert fresh.execute_kip(update) == {"result": {"updated": 0, "matched": 3}, "warnings": ["3 " + held.format("s")]}
    # nothing held already: no warning
    assert fresh.execute_kip('UPDATE ?t SET ATTRIBUTES { status: "open" } WHERE { ?t {type: "Task"} }') == {"result": {"updated": 3, "matched": 3}}


def test_update_matched_counts_after_the_limit(fresh):
    # B5: §4.3 "after the LIMIT cap"; the reference counts the 3 matches before the cap.
    r = fresh.execute_kip('UPDATE ?t SET ATTRIBUTES { reviewed: true } WHERE { ?t {type: "Task"} } LIMIT 1')
    assert r == {"result": {"updated": 1, "matched": 1}}


def test_update_of_a_missing_named_element_matches_nothing(fresh):
    # A11: the reference answers KIP_3002.
    r = fresh.execute_kip('UPDATE ?t SET ATTRIBUTES { reviewed: true } WHERE { ?t {type: "Task", name: "Nope"} }')
    absent = 'The concept {type: "Task", name: "Nope"} does not exist (the reference engine answers KIP_3002 for an element named exactly that does not exist)'
    assert r == {"result": {"updated": 0, "matched": 0}, "warnings": [absent]}


def test_update_of_a_missing_named_element_of_a_larger_where_matches_nothing(fresh):
    # A11 with more clauses: the named element is checked only because nothing matched (dry runs alike).
    update = 'UPDATE ?x SET ATTRIBUTES { seen: true } WHERE { ?d {type: "Task", name: "Nope"} (?d, "blocks", ?x) }'
    absent = 'The concept {type: "Task", name: "Nope"} does not exist (the reference engine answers KIP_3002 for an element named exactly that does not exist)'
    assert fresh.execute_kip(update, dry_run=True) == {"result": {"updated": 0, "matched": 0}, "warnings": [absent]}
    assert fresh.execute_kip(update) == {"result": {"updated": 0, "matched": 0}, "warnings": [absent]}
    r = fresh.execute_kip('UPDATE ?x SET ATTRIBUTES { seen: true } WHERE { ?d {type: "Task", name: "A"} (?d, "blocks", ?x) }')
    assert r == {"result": {"updated": 1, "matched": 1}}


def test_not_equal_warns_even_when_every_element_carries_the_key(fresh):
    # A1: the entry says what the reading is; knowing that no element lacks the key would need a
    # read of every element of the type on a non-empty answer (docs/interop.md A1).
    ok(fresh.execute_kip('UPDATE ?t SET ATTRIBUTES { status: "new" } WHERE { ?t {type: "Task", name: "C"} }'))
    condition = '?t.attributes.status != "done"'
    assert names(fresh, condition) == {"result": ["B", "C"], "warnings": [missing(condition, "?t.attributes.status")]}


def test_merge_attributes_filled_counts_keys_and_a_changed_alias_list(fresh):
    # A10: §4.4 step 2 "Fill attributes" unions the aliases and appends the source's name: a
    # changed aliases list counts once, each key copied once (as the reference counts).
    ok(
        fresh.execute_kip("""
        UPSERT {
          CONCEPT ?d { {type: "Task", name: "D"} }
          CONCEPT ?e { {type: "Task", name: "E"} }
          CONCEPT ?f { {type: "Task", name: "F"} SET ATTRIBUTES { aliases: ["f"], size: 2 } }
          CONCEPT ?g { {type: "Task", name: "G"} SET ATTRIBUTES { aliases: ["g"] } }
          CONCEPT ?h { {type: "Task", name: "H"} SET ATTRIBUTES { aliases: ["h"] } }
          CONCEPT ?i { {type: "Task", name: "I"} SET ATTRIBUTES { aliases: ["H", "h"] } }
        }""")
    )
    merge = 'MERGE CONCEPT ?s INTO ?t WHERE {{ ?s {{type: "Task", name: "{}"}} ?t {{type: "Task", name: "{}"}} }}'
    counts = {"merged": True, "links_repointed": 0, "links_deduplicated": 0}
    assert fresh.execute_kip(merge.format("D", "E")) == {"result": {**counts, "attributes_filled": 1}}
    assert concept(fresh, "Task", "E")["attributes"] == {"aliases": ["D"]}
    assert fresh.execute_kip(merge.format("F", "G")) == {"result": {**counts, "attributes_filled": 2}}
    assert concept(fresh, "Task", "G")["attributes"] == {"aliases": ["g", "f", "F"], "size": 2}
    # the target lists the source's name and aliases already: nothing filled
    assert fresh.execute_kip(merge.format("H", "I")) == {"result": {**counts, "attributes_filled": 0}}
    assert concept(fresh, "Task", "I")["attributes"] == {"aliases": ["H", "h"]}


def test_delete_of_a_missing_named_target_answers_kip_3002(fresh):
    # docs/interop.md, end of part B: Appendix 4 "does not exist (for DELETE, …)", as the reference answers.
    r = fresh.execute_kip('DELETE CONCEPT ?c DETACH WHERE { ?c {type: "Task", name: "Nope"} }')
    assert r["error"]["code"] == "KIP_3002" and "Nope" in r["error"]["message"], r
    assert fresh.execute_kip('DELETE PROPOSITIONS ?l WHERE { ?l (id: "P:gone") }')["error"]["code"] == "KIP_3002"
    # a pattern that simply matches nothing keeps answering zero counts
    r = fresh.execute_kip('DELETE CONCEPT ?c DETACH WHERE { ?c {type: "Task"} FILTER(?c.name == "Nope") }')
    assert r == {"result": {"deleted_concepts": 0, "deleted_propositions": 0}}


def test_clamp_with_an_empty_interval_is_refused_or_skips_the_key(fresh):
    # A12: CLAMP(x, lo, hi) with lo > hi has no answer: literal bounds are KIP_1001 before
    # running; a bound read from the element makes the result null and the key is skipped
    # (the reference yields null: the key is skipped too).
    r = fresh.execute_kip('UPDATE ?t SET ATTRIBUTES { level: CLAMP(0.5, 1, 0) } WHERE { ?t {type: "Task", name: "C"} }')
    assert r == {
        "error": {
            "code": "KIP_1001",
            "message": "CLAMP(x, lo, hi) needs lo ≤ hi, got lo = 1 and hi = 0: no value lies in that interval. (line 1, column 35)\n"
            'UPDATE ?t SET ATTRIBUTES { level: CLAMP(0.5, 1, 0) } WHERE { ?t {type: "Task", name: "C"} }\n'
            "                                  ^",
            "hint": "Swap the bounds: CLAMP(x, 0, 1).",
            "line": 1,
            "column": 35,
        }
    }
    ok(fresh.execute_kip('UPDATE ?t SET ATTRIBUTES { lo: 5, level: 1 } WHERE { ?t {type: "Task", name: "C"} }'))
    r = fresh.execute_kip('UPDATE ?t SET ATTRIBUTES { level: CLAMP(0.5, ?t.attributes.lo, 2), seen: true } WHERE { ?t {type: "Task", name: "C"} }')
    assert r == {"result": {"updated": 1, "matched": 1}}
    assert concept(fresh, "Task", "C")["attributes"] == {"lo": 5, "level": 1, "seen": True}


def test_membership_link_of_a_user_type_in_core_schema_can_be_deleted(fresh):
    # A12: only the links filing the protected definitions under CoreSchema are protected; the
    # reference refuses (KIP_3004) every link that touches CoreSchema or another protected node.
    ok(
        fresh.execute_kip(
            'UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Task"} SET PROPOSITIONS { ("belongs_to_domain", {type: "Domain", name: "CoreSchema"}) } } }'
        )
    )
    r = fresh.execute_kip(
        'DELETE PROPOSITIONS ?l WHERE { ?l ({type: "$ConceptType", name: "Task"}, "belongs_to_domain", {type: "Domain", name: "CoreSchema"}) }'
    )
    assert r == {"result": {"deleted_propositions": 1}}
    protected = 'DELETE PROPOSITIONS ?l WHERE { ?l ({type: "$ConceptType", name: "Domain"}, "belongs_to_domain", {type: "Domain", name: "CoreSchema"}) }'
    refused = fresh.execute_kip(protected)
    assert set(refused) == {"error"} and refused["error"]["code"] == "KIP_3004"


# ----------------------------------------------------------------------------- A3 on adopted data
@pytest.fixture()
def gauges(neo4j_server):
    """A team's graph adopted as the type Gauge: one level held as text, one as a number."""
    from conftest import wipe

    from kip2cypher import adoption
    from kip2cypher.nexus import Nexus

    with Nexus(neo4j_server.uri, auth=neo4j_server.auth, database=neo4j_server.database) as nx:
        wipe(nx.driver, nx.database)
        nx.driver.execute_query("CREATE (:Gauge {name: 'g1', level: '3.0'}), (:Gauge {name: 'g2', level: 3})", database_=nx.database)
        nx.ensure_schema()
        nx.bootstrap()
        nx.adopt(adoption.parse('[types.Gauge]\nlabel = "Gauge"\nattributes = ["level"]\n'))
        yield nx
        wipe(nx.driver, nx.database)


def test_numeric_text_of_adopted_data_draws_no_signal(gauges):
    # A3, adopted data (docs/adopt.md): the reference engine cannot read a team's graph, so there is
    # no answer of it to differ from; the team's values compare as Neo4j types them, and the
    # empty-answer check reads memory types only: no entry.
    r = gauges.execute_kip('FIND(?g.name) WHERE { ?g {type: "Gauge"} FILTER(?g.attributes.level == 3 && ?g.name == "g1") }')
    assert r == {"result": []}
    assert gauges.execute_kip('FIND(?g.name) WHERE { ?g {type: "Gauge"} FILTER(?g.attributes.level == 3) }') == {"result": ["g2"]}
