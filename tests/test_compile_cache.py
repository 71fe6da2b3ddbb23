"""The compile and parse caches serve repeated small commands and never hold large payloads."""

from __future__ import annotations

import json

import pytest

from kip2cypher.lower import compile as compiler
from kip2cypher.syntax import parser

QUERY = 'FIND(?d.name) WHERE { ?d {type: "Drug", name: :name} }'


def test_repeated_small_command_is_served_from_the_cache():
    first = compiler.compile_plan(QUERY, {"name": "Aspirin"})
    assert compiler.compile_plan(QUERY, {"name": "Aspirin"}) is first
    assert compiler.compile_plan(QUERY, {"name": "Ibuprofen"}) is not first


def test_compile_cache_does_not_hold_large_parameter_payloads():
    # Regression: the cache keyed on the full parameter JSON kept ~1.7 MB alive per 500-block
    # parameterized capsule, so a server streaming capsules grew by gigabytes.
    before = compiler._compile_cached.cache_info().currsize
    big = "x" * (parser.CACHEABLE_CHARS + 1)
    plan = compiler.compile_plan(QUERY, {"name": big})
    assert any(big in s.params.values() for s in plan.steps())
    assert compiler._compile_cached.cache_info().currsize == before


def _large_capsule(name: str) -> str:
    items = ", ".join(f'k{i}: "{"v" * 60}"' for i in range(1200))
    text = 'UPSERT { CONCEPT ?d { {type: "Drug", name: "' + name + '"} SET ATTRIBUTES { ' + items + " } } }"
    assert len(text) > parser.CACHEABLE_CHARS
    return text


def test_parse_cache_does_not_hold_large_texts_seen_once():
    # Distinct large texts (literal capsules) are never repeated: caching each would evict the small commands.
    before = parser._parse_single.cache_info().currsize
    for name in ("Big one", "Big two", "Big three"):
        parser.parse(_large_capsule(name))
    assert parser._parse_single.cache_info().currsize == before


def test_parse_cache_holds_a_large_text_that_comes_again():
    # An application streaming one parameterized capsule text sends it with every batch: parsed once.
    text = _large_capsule("Big again")
    first = parser.parse(text)
    assert parser.parse(text) is first  # the second batch did not parse it again (it did until round 9)
    assert parser._parse_single.cache_get((text, (parser.MAX_INPUT_BYTES, parser.MAX_NESTING_DEPTH))) is first
    assert parser.parse(text) is first


def test_large_texts_seen_once_are_kept_aside_only_up_to_their_bound():
    # The first parse of a large text waits aside for its second sighting — at most RECENT_LARGE of them.
    texts = [_large_capsule(f"Aside {i}") for i in range(parser.RECENT_LARGE + 2)]
    for text in texts:
        parser.parse(text)
    assert parser._LARGE_RECENT.info().currsize == parser.RECENT_LARGE


@pytest.mark.parametrize(
    "parameters",
    [
        {},
        {"b": 1, "a": [1, 2], "c": (1, "x"), "d": None, "e": -0.0, "f": 1e16, "g": True, "h": [0.5, -0.0], "i": "é\U0001f600"},
        {"a": {"z": 1, "y": 2}},  # nested objects come back with sorted keys: the JSON round trip
        {"a": [{"z": 1}]},
        {"a": 2**70},
        {"a": [True, 1, 1.0, None]},
    ],
)
def test_a_large_capsule_binds_the_copy_its_parameters_json_reads_back(parameters):
    # A text over 64 Ki characters is never cached, so its compile skips the key's JSON text:
    # the parameters it binds must still be exactly what that JSON reads back (types, key order).
    expected = json.loads(json.dumps(parameters, sort_keys=True, ensure_ascii=False))
    assert repr(compiler._json_copy(parameters)) == repr(expected)


def test_a_large_parameterized_capsule_compiles_as_through_the_json_key():
    blocks = "\n".join(f"CONCEPT {{ {{type: :t, name: :n{i}}} SET ATTRIBUTES {{ tags: :a{i}, rank: :r{i} }} }}" for i in range(1500))
    text = "UPSERT {\n" + blocks + "\n}"
    assert len(text) > parser.CACHEABLE_CHARS
    params = {
        "t": "Drug",
        **{f"n{i}": f"N{i}" for i in range(1500)},
        **{f"a{i}": ("x", "y") for i in range(1500)},
        **{f"r{i}": i / 7 for i in range(1500)},
    }
    through_json = compiler._compile(text, json.dumps(params, sort_keys=True, ensure_ascii=False), compiler._default_settings())
    assert repr(compiler.compile_plan(text, params)) == repr(through_json)
