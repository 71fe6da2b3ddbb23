"""Plan templates (``lower.templates``): a command that differs from compiled ones only in its
literal values is answered from the shape's template — and that answer is the cold compile's,
plan for plan (Cypher, parameters, facts), error for error (code, message, line and column).

The property test varies the values of every spec example and golden fixture: the template
path (the shape primed by two commands) and a cold compile must agree on every variant."""

from __future__ import annotations

import json
import math
from pathlib import Path

import parser_fixtures
import pytest
from golden_harness import GOLDEN_DIR, split_cases

from kip2cypher.domain import rules
from kip2cypher.errors import KipError
from kip2cypher.lower import compile as compiler
from kip2cypher.lower import templates
from kip2cypher.lower.upsert_plan import PropositionRowRef
from kip2cypher.syntax import parser

EVENT = (
    'UPSERT { CONCEPT ?e { {type: "Event", name: "ev-1"} SET ATTRIBUTES { summary: "met Bob", salience: 0.7, '
    'count: 12, done: true, tags: ["chat", "work"] } } WITH METADATA { source: "chat-log", confidence: 0.9 } }'
)
RECALL = 'FIND(?e.name) WHERE { ?e {type: "Event"} FILTER(?e.attributes.salience > 0.5 && CONTAINS(?e.attributes.summary, "Bob")) } LIMIT 5'


def _commands() -> list[tuple[str, str, dict]]:
    """(name, text, parameters) of every spec example and every golden fixture without an adoption."""
    entries = parser_fixtures.valid()
    params = parser_fixtures.example_params(entries)
    out = [(f"spec:{e.name}", e.text, params) for e in entries]
    for path in sorted(Path(GOLDEN_DIR).glob("*.txt")):
        for name, sections in split_cases(path.read_text(encoding="utf-8"), path.name):
            found = dict(sections)
            if "kip" in found and "adoption" not in found:
                out.append((f"{path.stem}:{name}", found["kip"], json.loads(found.get("request parameters") or "{}")))
    return out


def _varied(text: str, round_: int) -> str | None:
    """``text`` with every slot's value replaced by another of its class (same equalities and
    order), or None when it has no slot."""
    found = templates.shape(text)
    if found is None or not found.slots:
        return None
    pieces, last = [], 0
    for slot in found.slots:
        pieces += [text[last : slot.start], _token(_other(slot.value, round_))]
        last = slot.end
    return "".join(pieces) + text[last:]


def _other(value, round_: int):
    if isinstance(value, bool):
        return value if round_ % 2 else not value
    if isinstance(value, str):
        return f"{value} v{round_}" if len(value) < 240 else value[:-1]
    if isinstance(value, int):
        return value * 7 + (5 + round_ if value > 0 else -5 - round_)
    if abs(value) < 1:
        return math.copysign(abs(value) ** (1 / (2 + round_)), value)
    return value * 3 + 0.5 + round_


def _token(value) -> str:
    return json.dumps(value)


def _cold(text: str, params: dict):
    """A compile with every cache cleared: the reference answer."""
    compiler._compile_cached.cache_clear()
    compiler._templates.clear()
    parser.clear_cache()
    try:
        return compiler.compile_plan(text, params)
    except KipError as exc:
        return exc.to_dict()


def _warm(text: str, params: dict):
    try:
        return compiler.compile_plan(text, params)
    except KipError as exc:
        return exc.to_dict()


def _same(warm, cold) -> None:
    assert type(warm) is type(cold)
    if isinstance(cold, dict):
        assert warm == cold
        return
    assert warm == cold  # every compared field: statements, parameters, facts
    assert warm.warnings == cold.warnings  # not a compared field of Plan, but said with the answer
    assert compiler.statements(warm) == compiler.statements(cold)
    assert warm.command_text == cold.command_text and warm.kind == cold.kind and warm.namespace == cold.namespace
    assert getattr(warm, "fingerprint", None) == getattr(cold, "fingerprint", None)


def _prime(text: str, variant: str, params: dict) -> None:
    """Empty caches, then two commands of the shape: the second builds its template."""
    compiler._compile_cached.cache_clear()
    compiler._templates.clear()
    _warm(text, params)
    _warm(variant, params)


def _template_of(text: str, params: dict):
    found = templates.shape(text)
    key = (found.key, json.dumps(params, sort_keys=True, ensure_ascii=False), compiler._default_settings())
    return compiler._templates.get(key)


@pytest.mark.parametrize("name, text, params", _commands(), ids=[c[0] for c in _commands()])
def test_a_template_answers_what_a_cold_compile_answers(name, text, params):
    variants = [v for v in (_varied(text, r) for r in range(4)) if v is not None]
    if not variants:
        assert _varied(text, 0) is None  # no literal a template could stand for: nothing to compare
        return
    colds = [_cold(variant, params) for variant in variants[1:]]
    _prime(text, variants[0], params)
    for variant, cold in zip(variants[1:], colds):
        _same(_warm(variant, params), cold)


CONSOLIDATE = 'UPDATE ?e SET METADATA { confidence: CLAMP(MUL(?e.metadata.confidence, 0.9072), 0.0, 1.0) } WHERE { ?e {type: "Event", name: "ev-1"} }'
FORGET = 'DELETE CONCEPT ?e DETACH WHERE { ?e {type: "Event", name: "ev-1"} }'


def test_agent_commands_are_templated():
    for text in (EVENT, RECALL, CONSOLIDATE):
        cold = _cold(_varied(text, 1), {})
        _prime(text, _varied(text, 0), {})
        assert isinstance(_template_of(text, {}), templates.Template)
        _same(compiler.compile_plan(_varied(text, 1)), cold)


CAPSULE = (
    "UPSERT {\n"
    '  CONCEPT ?d { {type: "Domain", name: "Social"} }\n'
    '  CONCEPT ?a { {type: "Person", name: "Ann 1"} SET ATTRIBUTES { city: "Oslo", age: 31 } SET PROPOSITIONS { ("belongs_to_domain", ?d) } }\n'
    '  CONCEPT ?b { {type: "Person", name: "Bob 1"} SET ATTRIBUTES { city: "Oslo", age: 31 } SET PROPOSITIONS { ("belongs_to_domain", ?d) } }\n'
    '  PROPOSITION ?k { (?a, "knows", ?b) } WITH METADATA { confidence: 0.8 }\n'
    "}"
)


def test_a_capsule_repeating_a_value_and_naming_concepts_in_set_propositions_was_never_templated():
    """An agent's capsule writes one value in several blocks (a city, a confidence) and links its
    concepts with SET PROPOSITIONS. Both kept the shape from being templated (a leaf equal to
    several slots; a row label built from the concept's name): every capsule compiled cold."""
    variant = CAPSULE.replace("Ann 1", "Ann 2").replace("Bob 1", "Bob 2").replace("Oslo", "Rome").replace("31", "44").replace("0.8", "0.6")
    later = CAPSULE.replace("Ann 1", "Cy 3").replace("Bob 1", "Di 3").replace("Oslo", "Pisa").replace("31", "52").replace("0.8", "0.7")
    cold = _cold(later, {})
    _prime(CAPSULE, variant, {})
    assert isinstance(_template_of(CAPSULE, {}), templates.Template)
    before = compiler.cache_stats()["template"]
    _same(_warm(later, {}), cold)
    assert compiler.cache_stats()["template"] == before + 1
    # the two cities differ now: another key (equalities are part of it), the cold answer
    apart = later.replace('"Pisa", age', '"Lyon", age', 1)
    _same(_warm(apart, {}), _cold(apart, {}))


def test_a_set_propositions_row_is_described_from_its_endpoints():
    plan = compiler.compile_plan(CAPSULE)
    rows = {plan.describe(PropositionRowRef(row.pos)) for row in plan.propositions}
    assert '({type: "Person", name: "Ann 1"}, "belongs_to_domain", {type: "Domain", name: "Social"})' in rows
    assert '({type: "Person", name: "Ann 1"}, "knows", {type: "Person", name: "Bob 1"})' in rows


def test_a_command_naming_its_element_exactly_was_never_templated():
    """The A11 / KIP_3002 label of an element the WHERE names exactly was text built from its name
    (`concept {type: "Event", name: "ev-1"}`): every UPDATE or DELETE by name — an agent's
    consolidation step — compiled cold (the agent stream's hit rate 0.85; 0.995 without them)."""
    for text in (CONSOLIDATE, FORGET):
        later = text.replace("ev-1", "ev-9").replace("0.9072", "0.9311")
        cold = _cold(later, {})
        _prime(text, text.replace("ev-1", "ev-2").replace("0.9072", "0.9513"), {})
        assert isinstance(_template_of(text, {}), templates.Template)
        warm = _warm(later, {})
        _same(warm, cold)
        assert rules.shown_named(warm.named) == 'concept {type: "Event", name: "ev-9"}'


def test_the_spec_examples_are_mostly_templated():
    """Not a timing: how many spec examples with a slot reuse a template (guards the hit rate)."""
    entries = [e for e in parser_fixtures.valid() if not e.name.startswith("extra:")]
    params = parser_fixtures.example_params(entries)
    shaped = templated = 0
    for entry in entries:
        if _varied(entry.text, 0) is None or isinstance(_cold(entry.text, params), dict):
            continue
        shaped += 1
        _prime(entry.text, _varied(entry.text, 0), params)
        templated += isinstance(_template_of(entry.text, params), templates.Template)
    assert shaped > 20 and templated >= shaped // 2, (templated, shaped)


@pytest.mark.parametrize(
    "bad",
    [
        '"\\ud800 lone"',  # an unpaired surrogate escape (the parser's error, located)
        "1e999",  # out of the double range
        "123456789012345678901234567890",  # beyond 64 bits: a value, checked where it is computed with
        '""',  # empty: keyed, not a slot
        '"$self"',  # a name KIP gives meaning
        '"kip:x"',  # reserved
        "-0.0",
        "1",
        "null",
    ],
)
def test_a_value_outside_the_templates_class_gets_the_cold_answer(bad):
    text = EVENT.replace('"met Bob"', "VALUE").replace("12", "VALUE2")
    for where in ("VALUE", "VALUE2"):
        command = text.replace(where, bad).replace("VALUE2", "14").replace("VALUE", '"c"')
        cold = _cold(command, {})
        _prime(text.replace("VALUE2", "12").replace("VALUE", '"a"'), text.replace("VALUE2", "13").replace("VALUE", '"b"'), {})
        assert isinstance(_template_of(text.replace("VALUE2", "12").replace("VALUE", '"a"'), {}), templates.Template)
        warm = _warm(command, {})
        _same(warm, cold)
        if isinstance(cold, dict) and bad.startswith(('"\\u', "1e")):
            assert cold["code"] == "KIP_1001" and cold["line"] == 1 and cold["column"] > 1


def test_a_shape_whose_value_feeds_a_derived_fact_is_never_templated():
    """SEARCH builds its Lucene queries from the term: not a slot the template can fill, so
    every command of the shape compiles cold (and a bad THRESHOLD answers the cold error)."""
    text = 'SEARCH CONCEPT "aspirin" WITH TYPE "Drug" THRESHOLD 0.5 LIMIT 5'
    bad = text.replace("0.5", "1.5")
    cold = _cold(bad, {})
    assert cold["code"] == "KIP_1001"
    _prime(text, text.replace("0.5", "0.6").replace("aspirin", "ibuprofen"), {})
    assert _template_of(text, {}) == compiler._NEVER
    assert _warm(bad, {}) == cold


def test_a_cursor_command_has_no_shape_and_values_inside_regex_stay_in_the_key():
    assert templates.shape('FIND(?d.name) WHERE { ?d {type: "Drug"} } LIMIT 2 CURSOR "abc"') is None
    found = templates.shape('FIND(?d.name) WHERE { ?d {type: "Drug"} FILTER(REGEX(?d.name, "^A.*")) } LIMIT 2')
    assert found is not None and found.slots == ()


def test_names_that_shape_the_statement_are_not_slots():
    found = templates.shape('FIND(?s.name) WHERE { ?s {type: "Drug", name: "Aspirin"} (?s, "treats", ?o) ?o {id: "C:1"} } LIMIT 3')
    assert [s.value for s in found.slots] == ["Aspirin"]


def test_a_value_holding_a_bound_placeholder_name_is_refused_as_cold():
    """The quoted-placeholder rule reads string values: ``"… :who"`` with ``who`` bound is refused."""
    text = 'FIND(?p.name) WHERE { ?p {type: "Person", name: :who} FILTER(?p.attributes.note == "hello there") }'
    params = {"who": "Alice"}
    bad = text.replace("hello there", "hello :who")
    cold = _cold(bad, params)
    assert cold["code"] == "KIP_1001" and ":who" in cold["message"]
    _prime(text, text.replace("hello there", "good bye"), params)
    assert isinstance(_template_of(text, params), templates.Template)
    assert _warm(bad, params) == cold


def test_a_text_over_the_size_bound_is_refused_as_cold():
    settings = compiler._default_settings().replace(max_input_bytes=len(_varied(EVENT, 0)) + 5)
    longer = EVENT.replace("met Bob", "met Bob and a long list of other people at the fair, " * 3)
    compiler._compile_cached.cache_clear()
    compiler._templates.clear()
    parser.clear_cache()
    with pytest.raises(KipError) as cold:
        compiler._compile(longer, "{}", settings)
    compiler.compile_plan(EVENT, None, settings)
    compiler.compile_plan(_varied(EVENT, 0), None, settings)
    with pytest.raises(KipError) as warm:
        compiler.compile_plan(longer, None, settings)
    assert warm.value.to_dict() == cold.value.to_dict() and cold.value.code == "KIP_4002"


def test_a_readonly_classification_of_a_templated_shape_does_not_parse():
    """``execute_kip_readonly`` classifies before it compiles: a new text of a templated shape gets
    its kind from the shape (it parses: same tokens, literals of the same classes), not a parse."""
    cold = compiler.classify(_varied(RECALL, 1))
    _prime(RECALL, _varied(RECALL, 0), {})
    parser.clear_cache()
    assert compiler.classify(_varied(RECALL, 2)) == (cold[0], None) == ("KQL", None)
    assert parser._parse_single.cache_info().currsize == 0
    assert compiler.classify('FIND(?e.name) WHERE { ?e {type: "Event"} FILTER(?e.attributes.salience > "x") LIMIT 5')[1] is not None


@pytest.mark.parametrize("typed", ['"3.0"', '"10"', '"2025-01-01T00:00:00+02:00"'])
def test_a_template_primed_by_plain_text_keeps_the_warning_of_text_that_reads_as_a_number(typed):
    """A shape primed by ordinary strings must not stand for a string the A4 warning reads
    (docs/interop.md): its answer carries the warning a cold compile gives, never the primer's none."""
    shaped = 'FIND(?e.name) WHERE {{ ?e {{type: "Event"}} FILTER(?e.attributes.level >= {}) }}'
    _prime(shaped.format('"alpha"'), shaped.format('"beta"'), {})
    warm, cold = _warm(shaped.format(typed), {}), _cold(shaped.format(typed), {})
    assert cold.warnings, "the cold compile warns about text compared as a number or an instant"
    _same(warm, cold)


def test_an_unterminated_string_or_comment_was_rescanned_from_every_later_quote():
    """40 KB of ``\\"`` after one quote took 65 s in ``shape`` (before any parse, holding the GIL):
    the failed string match was retried from every later quote. An unterminated string or comment
    is now one token to the end of the text — one pass — and a string has no shape (cold compile)."""
    hostile = '"' + '\\"' * 20_000
    assert [m.span() for m in templates._LITERAL.finditer(hostile)] == [(0, len(hostile))]
    assert [m.span() for m in templates._TOKEN.finditer(hostile)] == [(0, len(hostile))]
    assert templates.shape(hostile) is None
    comments = "/* " * 13_000
    assert [m.span() for m in templates._TOKEN.finditer(comments)] == [(0, len(comments))]
    assert [m.span() for m in templates._LITERAL.finditer(comments)] == [(0, len(comments))]


def test_a_value_written_twice_is_templated():
    """One value in several slots (the same source on two blocks, equal attributes) was never
    templated: the plan's leaf matched more than one slot. The key keeps those slots equal, so
    the template fills them from the first — and answers what a cold compile answers."""
    text = (
        'UPSERT { CONCEPT ?a { {type: "Person", name: "Ann"} SET ATTRIBUTES { mood: "calm", visits: 3, seen: "calm" } } '
        'CONCEPT ?b { {type: "Person", name: "Bob"} SET ATTRIBUTES { mood: "calm", visits: 3 } } } WITH METADATA { source: "chat" }'
    )
    colds = [_cold(_varied(text, r), {}) for r in (1, 2)]
    _prime(text, _varied(text, 0), {})
    assert isinstance(_template_of(text, {}), templates.Template)
    for r, cold in zip((1, 2), colds):
        _same(_warm(_varied(text, r), {}), cold)
    unequal = text.replace("visits: 3 }", "visits: 4 }")  # another equality pattern: another shape
    assert templates.shape(unequal).key != templates.shape(text).key
    _same(_warm(unequal, {}), _cold(unequal, {}))
