"""Fuzzing the whole compiler against the real Neo4j.

Two hypothesis strategies feed ``compile_plan`` (parse + validate + lower):

- *mutants*: the valid fixtures (tests/fixtures/parser/valid.kip, every spec example)
  edited at random — deletions, duplications, truncations, KIP-significant fragments and
  hostile strings (tests/hostile_payloads.py) inserted anywhere;
- *generated*: well-formed FIND / UPSERT / UPDATE / DELETE commands built from clause
  templates, with hostile strings in every string position and in parameters.

Properties: nothing but ``KipError`` ever escapes the compiler; and whatever compiles
produces Cypher that Neo4j accepts under EXPLAIN (parameters the plan only binds at
run time are given as null). Counters are printed for docs/reliability.md.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

import parser_fixtures
import pytest
from hostile_payloads import NAMES, kip_string
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kip2cypher.config import Settings
from kip2cypher.errors import KipError
from kip2cypher.lower.compile import compile_plan, statements

SEEDS = [entry.text for entry in parser_fixtures.valid()]
HOSTILE = [p.text for p in NAMES]
SETTINGS = Settings(embedder=False)
FRAGMENTS = [
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    ",",
    ":",
    "?",
    "?x",
    "?x.name",
    "?x.attributes.k",
    ":p",
    ":limit",
    '"',
    '""',
    "\\",
    "//",
    "/*",
    "*/",
    "\n",
    "!",
    "==",
    "!=",
    "&&",
    "||",
    "|",
    "{1,3}",
    "{0,}",
    "0",
    "-1",
    "1e400",
    "1.5",
    "true",
    "null",
    "FIND",
    "WHERE",
    "FILTER",
    "NOT",
    "OPTIONAL",
    "UNION",
    "UPSERT",
    "CONCEPT",
    "PROPOSITION",
    "SET",
    "ATTRIBUTES",
    "PROPOSITIONS",
    "METADATA",
    "WITH",
    "LIMIT",
    "CURSOR",
    "ORDER BY",
    "DESC",
    "DETACH",
    "DELETE",
    "UPDATE",
    "MERGE",
    "INTO",
    "EXPECT VERSION 0",
    "ADD(",
    "COALESCE(",
    "IN(",
    "REGEX(",
    "COUNT(DISTINCT ",
    "id",
    "type",
    "name",
    "é",
    "😀",
    "`",
    "'",
    "$",
    "\u001e",
]

# Placeholder values by name, so that the unmutated fixtures compile.
PARAMS: dict[str, Any] = {
    "limit": 5,
    "cursor": None,
    "timestamp": "2025-01-01T00:00:00Z",
    "now": "2025-01-01T00:00:00Z",
    "ts": "2025-01-01T00:00:00Z",
    "decay_threshold": "2025-01-01T00:00:00Z",
    "v": 1,
    "claim_version": 2,
    "types": ["Drug", "Symptom"],
    "decay_factor": 0.9,
    "bump": 1,
    "threshold": 0.5,
    "mode": "keyword",
    "merged_preferences": {"tone": "brief"},
    "keep": "Aspirin",
    "dup": "ASA",
}
for _name in re.findall(r":([A-Za-z_]\w*)", "\n".join(SEEDS)):
    PARAMS.setdefault(_name, "x")

STATS: Counter[str] = Counter()
_EXPLAINED: set[str] = set()
_MISSING = re.compile(r"Expected parameter\(s\): (.+)")


@pytest.fixture(scope="module")
def explain_driver(neo4j_server):
    from neo4j import GraphDatabase

    driver = GraphDatabase.driver(neo4j_server.uri, auth=neo4j_server.auth, notifications_min_severity="OFF")
    yield driver, neo4j_server.database
    driver.close()


def explain(driver, database, cypher: str, params: dict[str, Any]) -> None:
    """EXPLAIN one statement (once per distinct text); run-time-only parameters become null."""
    if cypher in _EXPLAINED:
        return
    params = dict(params)
    for _ in range(4):
        try:
            driver.execute_query("EXPLAIN " + cypher, params, database_=database)
            _EXPLAINED.add(cypher)
            STATS["statements explained"] += 1
            return
        except Exception as exc:  # noqa: BLE001
            match = _MISSING.search(str(exc))
            if not match:
                raise AssertionError(f"Neo4j rejected generated Cypher:\n{cypher}\nparams: {params!r}\n{exc}") from None
            for name in match.group(1).split(","):
                params[name.strip()] = None
    raise AssertionError(f"could not bind the parameters of:\n{cypher}")


def compile_and_explain(text: str, params: dict[str, Any], explain_driver, kind: str) -> None:
    STATS[f"{kind} inputs"] += 1
    try:
        plan = compile_plan(text, params, SETTINGS)
    except KipError as error:
        assert re.fullmatch(r"KIP_[1-4]\d{3}", error.code), error.code
        assert error.message
        if error.code == "KIP_4003":
            pytest.fail(f"internal error while compiling {text!r}: {error.message}")
        STATS[f"{kind} rejected {error.code}"] += 1
        return
    STATS[f"{kind} compiled"] += 1
    driver, database = explain_driver
    for statement in statements(plan):
        explain(driver, database, statement["cypher"], statement["parameters"])


# ------------------------------------------------------------------ mutants of the valid fixtures
@st.composite
def mutants(draw) -> str:
    text = draw(st.sampled_from(SEEDS))
    for _ in range(draw(st.integers(0, 3))):
        cut = draw(st.integers(0, len(text)))
        kind = draw(st.sampled_from(["delete", "insert", "duplicate", "truncate", "hostile", "hostile-literal", "swap"]))
        if kind == "delete":
            text = text[:cut] + text[cut + draw(st.integers(1, 12)) :]
        elif kind == "insert":
            text = text[:cut] + draw(st.sampled_from(FRAGMENTS)) + text[cut:]
        elif kind == "duplicate":
            text = text[:cut] + text[cut : cut + draw(st.integers(1, 60))] + text[cut:]
        elif kind == "truncate":
            text = text[:cut]
        elif kind == "hostile":
            text = text[:cut] + draw(st.sampled_from(HOSTILE)) + text[cut:]
        elif kind == "hostile-literal":
            # replace one existing string literal by a hostile one: stays valid
            literals = list(re.finditer(r'"(?:[^"\\\n]|\\.)*"', text))
            if literals:
                m = draw(st.sampled_from(literals))
                text = text[: m.start()] + kip_string(draw(st.sampled_from(HOSTILE))) + text[m.end() :]
        else:
            a, b = sorted((cut, draw(st.integers(0, len(text)))))
            text = text[:a] + text[b:] + text[a:b]
    return text


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(text=mutants(), hostile_params=st.booleans(), value=st.sampled_from(HOSTILE))
def test_mutated_fixtures_compile_to_cypher_neo4j_accepts(explain_driver, text, hostile_params, value):
    params = {k: (value if isinstance(v, str) and hostile_params else v) for k, v in PARAMS.items()}
    compile_and_explain(text, params, explain_driver, "mutant")


def test_every_valid_fixture_compiles_and_explains(explain_driver):
    """The unmutated spec examples: each compiles or is refused with a KIP error (e.g. KIP_3001 for an
    unbound variable in a spec fragment), and every compiled statement passes EXPLAIN."""
    for text in SEEDS:
        compile_and_explain(text, PARAMS, explain_driver, "fixture")
    assert STATS["fixture compiled"] >= len(SEEDS) * 0.8, STATS


# ------------------------------------------------------------------ generated commands
names = st.sampled_from(HOSTILE + ["Drug", "Symptom", "treats", "Aspirin", "$self"])
keys = st.sampled_from(["name", "risk_level", "description", "confidence", "tags", "_version", "source"])
variables = st.sampled_from(["a", "b", "c", "link", "p", "DELETE", "_x", "x1"])
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False, allow_infinity=False) | names,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(names, inner, max_size=3),
    max_leaves=6,
)


def literal(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


@st.composite
def filters(draw, bound: list[str]) -> str:
    v = draw(st.sampled_from(bound))
    left = draw(st.sampled_from([f"?{v}.name", f"?{v}.attributes.{draw(keys)}", f"?{v}.metadata.{draw(keys)}", f"?{v}.id"]))
    op = draw(st.sampled_from(["==", "!=", "<", ">=", "CONTAINS", "STARTS_WITH", "ENDS_WITH", "REGEX", "IN", "IS_NULL"]))
    right = draw(st.sampled_from([literal(draw(names)), ":hp", str(draw(st.integers(-5, 5))), "null", "true"]))
    if op in ("CONTAINS", "STARTS_WITH", "ENDS_WITH"):
        return f"{op}({left}, {right})"
    if op == "REGEX":
        return f"REGEX({left}, {literal(re.escape(draw(names)))})"
    if op == "IN":
        return f"IN({left}, [{right}, {literal(draw(names))}])"
    if op == "IS_NULL":
        return f"{draw(st.sampled_from(['IS_NULL', 'IS_NOT_NULL']))}({left})"
    expr = f"{left} {op} {right}"
    return f"!({expr})" if draw(st.booleans()) else expr


@st.composite
def where_clauses(draw) -> tuple[str, list[str]]:
    bound: list[str] = []
    items: list[str] = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["concept", "concept-name", "link", "link-var", "path"]))
        a, b = draw(variables), draw(variables)
        if kind == "concept":
            items.append(f"?{a} {{type: {literal(draw(names))}}}")
            bound.append(a)
        elif kind == "concept-name":
            items.append(f"?{a} {{type: :ht, name: {literal(draw(names))}}}")
            bound.append(a)
        elif kind == "link":
            items.append(f"(?{a}, {literal(draw(names))}, ?{b})")
            bound += [a, b]
        elif kind == "link-var":
            l = draw(variables)
            items.append(f"?{l} (?{a}, {literal(draw(names))}, {{type: {literal(draw(names))}}})")
            bound += [l, a]
        else:
            items.append(f"(?{a}, {literal(draw(names))}{draw(st.sampled_from(['{1,3}', '{0,2}', '{2}', '']))}, ?{b})")
            bound += [a, b]
    for _ in range(draw(st.integers(0, 2))):
        items.append(f"FILTER({draw(filters(bound))})")
    if draw(st.booleans()):
        wrapper = draw(st.sampled_from(["NOT", "OPTIONAL", "UNION"]))
        c = draw(variables)
        items.append(f"{wrapper} {{ ?{c} {{type: {literal(draw(names))}}} (?{c}, {literal(draw(names))}, ?{draw(st.sampled_from(bound))}) }}")
        if wrapper != "NOT":
            bound.append(c)
    return "WHERE { " + "\n  ".join(items) + " }", bound


@st.composite
def commands(draw) -> str:
    where, bound = draw(where_clauses())
    v = draw(st.sampled_from(bound))
    kind = draw(st.sampled_from(["find", "find-agg", "update", "delete-attrs", "delete-concept", "upsert"]))
    if kind == "find":
        order = f" ORDER BY ?{v}.name {draw(st.sampled_from(['ASC', 'DESC']))}" if draw(st.booleans()) else ""
        return f"FIND(?{v}, ?{v}.name) {where}{order} LIMIT {draw(st.integers(1, 50))}"
    if kind == "find-agg":
        return f"FIND(?{v}.name, COUNT(DISTINCT ?{draw(st.sampled_from(bound))})) {where}"
    if kind == "update":
        increment = f"{draw(keys).lstrip('_')}: ADD(COALESCE(?{v}.attributes.n, 0), :hn)"
        return f"UPDATE ?{v} SET ATTRIBUTES {{ {increment} }} SET METADATA {{ note: {literal(draw(json_values))} }} {where} LIMIT 10"
    if kind == "delete-attrs":
        return f'DELETE ATTRIBUTES {{ {literal(draw(names))}, "x" }} FROM ?{v} {where}'
    if kind == "delete-concept":
        return f"DELETE CONCEPT ?{v} DETACH {where}"
    blocks = []
    for i in range(draw(st.integers(1, 3))):
        attrs = ", ".join(f"{k.lstrip('_') or 'k'}: {literal(draw(json_values))}" for k in draw(st.lists(keys, max_size=3, unique=True)))
        blocks.append(
            f"CONCEPT ?c{i} {{ {{type: {literal(draw(names))}, name: :hp}} SET ATTRIBUTES {{ {attrs} }}"
            + (f" SET PROPOSITIONS {{ ({literal(draw(names))}, ?c{i - 1}) }}" if i else "")
            + " }"
        )
    return "UPSERT { " + " ".join(blocks) + " } WITH METADATA { source: :hp }"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(text=commands(), hp=st.sampled_from(HOSTILE), ht=st.sampled_from(HOSTILE + ["Drug"]), hn=st.integers(-3, 3))
def test_generated_commands_compile_to_cypher_neo4j_accepts(explain_driver, text, hp, ht, hn):
    compile_and_explain(text, {"hp": hp, "ht": ht, "hn": hn}, explain_driver, "generated")


def test_zz_print_fuzz_figures(capsys):
    with capsys.disabled():
        print(f"\n[reliability] fuzz: {dict(sorted(STATS.items()))}")
