"""Text → ``Plan``: parse once, check what needs the request's parameters, dispatch to the lowering.

``LOWERINGS`` is the static table from each command's AST class to the function that lowers
it (``fn(command, parameters, settings) -> Plan``). ``compile_plan`` caches plans by text,
parameters and settings; plans are immutable, so a cached plan is shared safely between
threads and requests.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from .. import errors
from ..caching import TextCache, text_cache
from ..config import Settings
from ..domain import embeddings
from ..syntax import ast
from ..syntax.parser import CACHEABLE_CHARS, MAX_INPUT_BYTES, check_size, parse
from ..syntax.placeholders import check_quoted_placeholders
from ..syntax.script import sniff_kind
from ..syntax.values import Deferring, parameters_size
from . import delete, describe, export, find, merge, search, surprises, templates, update, upsert
from .plan import Compiled, Plan, replaced

LOWERINGS: dict[type, Callable[[Any, dict[str, Any], Settings], Plan]] = {
    ast.Find: find.lower_find,
    ast.Capsule: upsert.lower_capsule,
    ast.Update: update.lower_update,
    ast.MergeConcept: merge.lower_merge,
    ast.DeleteAttributes: update.lower_delete_attributes,
    ast.DeleteMetadata: update.lower_delete_metadata,
    ast.DeletePropositions: delete.lower_delete_propositions,
    ast.DeleteConcept: delete.lower_delete_concept,
    ast.DescribePrimer: describe.lower_describe_primer,
    ast.DescribeDomains: describe.lower_describe_domains,
    ast.DescribeConceptTypes: describe.lower_describe_concept_types,
    ast.DescribeConceptType: describe.lower_describe_concept_type,
    ast.DescribePropositionTypes: describe.lower_describe_proposition_types,
    ast.DescribePropositionType: describe.lower_describe_proposition_type,
    ast.Search: search.lower_search,
    ast.Export: export.lower_export,
}


def lower(command: ast.Command, parameters: dict[str, Any] | None = None, settings: Settings | None = None, **facts: Any) -> Plan:
    """Lower a parsed command to a plan, binding the request's parameters (``Deferring`` ones
    keep unbound placeholders as run-time Cypher parameters, ``syntax.values``). ``facts``: more
    fields of the plan (``command_text``, ``namespace``), set in the same copy."""
    bound = Deferring(parameters) if isinstance(parameters, Deferring) else dict(parameters or {})
    plan = LOWERINGS[type(command)](command, bound, settings or _default_settings())
    warnings = tuple(dict.fromkeys((*surprises.warnings(command, bound), *plan.warnings)))  # the lowering's own: A5 (``surprises.other_kind``)
    return replaced(plan, {"command_kind": ast.command_kind(command), "warnings": warnings, **facts})


@lru_cache(maxsize=1)
def _default_settings() -> Settings:
    return Settings()


def _parse(text: str, settings: Settings) -> ast.Command:
    """The compiler's parse of a command: with the settings' bounds, through the parse cache."""
    return parse(text, max_bytes=settings.max_input_bytes, max_depth=settings.max_nesting_depth)


def classify(text: str, settings: Settings | None = None) -> tuple[str | None, errors.KipError | None]:
    """A command's kind before it is compiled, and its syntax error when it does not parse.

    The parse is the compiler's own (same bounds, same cache), so compiling a command that
    parsed does not parse it again; one that did not is classified by its first word, and the
    caller keeps its error instead of parsing it again. A text of a templated shape parses (the
    same tokens around literals of the same classes) and is not parsed: its kind is the shape's."""
    settings = settings or _default_settings()
    found = _shape(text, settings) if isinstance(text, str) and len(text) <= CACHEABLE_CHARS else None
    kind = _kinds.get((found.key, settings)) if found is not None and found.slots else None
    if kind is not None:
        return kind, None
    try:
        return ast.command_kind(_parse(text, settings)), None
    except errors.KipError as exc:
        return sniff_kind(text), exc


def _compile(text: str, params_json: str, settings: Settings, keep_placeholders: bool = False) -> Plan:
    return _compile_bound(text, json.loads(params_json), settings, keep_placeholders)


def _compile_bound(text: str, parameters: dict[str, Any], settings: Settings, keep_placeholders: bool = False) -> Plan:
    """``_compile`` with the parameters already read back from their JSON (a copy of the request's)."""
    parameters = Deferring(parameters) if keep_placeholders else parameters
    command = _parse(text, settings)
    try:
        check_quoted_placeholders(command, text, parameters)
        return lower(command, parameters, settings, command_text=text, namespace=settings.namespace)
    except errors.KipError as exc:
        # The command parsed: its kind travels with the error, so the batch rules never parse it again.
        exc.command_kind = ast.command_kind(command)
        raise exc.locate(text)
    except RecursionError:
        # A last line of defence: every walk over a command is meant to be iterative or bounded
        # by the nesting limit, so this is a repetition the limits missed — the caller's
        # command is too large for the engine, not wrong (KIP_4002, never an internal error).
        raise errors.KipError(
            errors.RESOURCE_EXHAUSTED,
            "The command repeats or nests a construct more often than the compiler can lower.",
            'Split it into smaller commands (a batch), or say repeated alternatives once: a predicate alternative "a" | "b", IN(…, [...]), ||.',
        ) from None


#: Plan templates by (shape, parameters, settings): ``_SEEN`` after a shape's first command, its
#: ``Template`` after the second (or ``_NEVER`` when the shape cannot be templated).
_templates = TextCache(1 << 20, 2048)
_SEEN, _NEVER = "seen", "never"
#: The kind of the commands of every templated shape, for ``classify`` (by shape and settings).
_kinds = TextCache(1 << 20, 2048)
#: How compiles were answered since the process started (``cache_stats``): a rough count
#: (unlocked increments), for the bench's hit rate.
_stats = {"calls": 0, "template": 0, "cold": 0}


def cache_stats() -> dict[str, int]:
    """Compiles so far: ``calls``, answered from a ``template``, compiled ``cold`` (parse and
    lowering); the rest came from the exact-text cache."""
    return dict(_stats)


def _compile_shaped(text: str, params_json: str, settings: Settings, keep_placeholders: bool = False) -> Plan:
    """``_compile``, or — for a text of a shape already templated — the template's plan with this
    text's values (``lower.templates``: a fill costs µs where a parse and lowering cost ms)."""
    if keep_placeholders:
        return _compile(text, params_json, settings, keep_placeholders)
    found = _shape(text, settings)
    if found is None or not found.slots:
        _stats["cold"] += 1
        return _compile(text, params_json, settings)
    key = (found.key, params_json, settings)
    entry = _templates.get(key)
    if isinstance(entry, templates.Template):
        _stats["template"] += 1
        return templates.fill(entry, found.slots, text)
    _stats["cold"] += 1
    plan = _compile(text, params_json, settings)
    if entry is None:
        _templates.put(key, _SEEN, len(text))
    elif entry == _SEEN:
        template = _template(plan, found, params_json, settings)
        _templates.put(key, template or _NEVER, len(text))
        if template is not None:
            _kinds.put((found.key, settings), plan.kind, len(text))
    return plan


def _shape(text: str, settings: Settings) -> templates.Shape | None:
    """The shape of ``text``, or None when only a cold compile can answer it: too long for the
    settings (the parse's first check, which a fill skips), or a literal that does not decode."""
    try:
        check_size(text, min(settings.max_input_bytes, MAX_INPUT_BYTES))
        return templates.shape(text)
    except errors.KipError:
        return None


def _template(plan: Plan, found: templates.Shape, params_json: str, settings: Settings) -> templates.Template | None:
    """The template of ``plan``'s shape, checked against the same shape lowered with sentinel values."""
    text, slots = templates.sentinel_text(plan.command_text, found.slots)
    try:
        variant = _compile(text, params_json, settings)
    except errors.KipError:
        return None  # a value the lowering checks beyond its class: never templated
    return templates.build(plan, found.slots, variant, slots)


#: ``json.dumps(parameters, sort_keys=True, ensure_ascii=False)``, the encoder built once.
_KEY_ENCODER = json.JSONEncoder(sort_keys=True, ensure_ascii=False)

#: Compiled plans by (text, parameters, settings), bounded by the characters of text and
#: parameters (a plan costs ≈ 45 bytes per character with its AST: ≈ 45 MB at the bound).
_compile_cached = text_cache(1 << 20, 2048)(_compile_shaped)


def compile_plan(
    text: str,
    parameters: dict[str, Any] | None = None,
    settings: Settings | None = None,
    keep_placeholders: bool = False,
    *,
    parameters_checked: bool = False,
) -> Plan:
    """Parse and lower one command (cached by text, parameters and settings).

    ``keep_placeholders``: an unbound placeholder at a plain-value position becomes the Cypher
    parameter ``$name`` for the caller to bind (a plan for embedding, never executed here).
    ``parameters_checked``: the request program already ran ``parameters_size`` over the
    whole request (a 400-value capsule's walk costs ≈ 1 ms: done once, not twice)."""
    settings = settings or _default_settings()
    _stats["calls"] += 1
    if not isinstance(parameters or {}, dict):
        raise errors.KipError(
            errors.INVALID_SYNTAX,
            f"parameters must be a JSON object, got {type(parameters).__name__}.",
            'Pass the placeholder values as an object {"name": value}.',
        )
    # JSON values a command can use (finite numbers, whole characters, bounded
    # nesting), within the size bound: checked before they are copied.
    if not parameters_checked and parameters:
        parameters_size([parameters], settings.max_parameter_bytes, settings.max_nesting_depth)
    if isinstance(text, str) and len(text) > CACHEABLE_CHARS:
        # A large capsule is rarely repeated: neither cached nor templated (below), so it needs no
        # key — its parameters are copied as their JSON reads back, without writing the JSON.
        _stats["cold"] += 1
        return _compile_bound(text, _json_copy(parameters or {}), settings, keep_placeholders)
    # No parameters (most agent commands): the key without a JSON encoder (≈ 5 µs a call).
    params_json = _KEY_ENCODER.encode(parameters) if parameters else "{}"
    if not isinstance(text, str):
        parse(text)  # reports the non-string command (KIP_1001)
    if len(text) + len(params_json) > CACHEABLE_CHARS:
        # A large capsule or parameter payload is rarely repeated: caching it (or a template, keyed
        # by both) would only hold memory — and the shape pass costs ≈ 10 ms per 100 KB of text.
        _stats["cold"] += 1
        return _compile(text, params_json, settings, keep_placeholders)
    return _compile_cached(text, params_json, settings, keep_placeholders)


#: Exact types a JSON round trip gives back equal and of the same type (ints: within 64 bits).
_FLAT = frozenset({str, int, float, bool, type(None)})


def _json_copy(parameters: dict[str, Any]) -> dict[str, Any]:
    """``json.loads(json.dumps(parameters, sort_keys=True, ensure_ascii=False))``, the copy a compile
    binds — without the JSON text when every value is a scalar or a list of scalars (a bulk
    capsule's parameters: ≈ 15 % of its compile); anything else takes the JSON round trip. A
    scalar is tested inline, not through a generator: a bulk capsule has thousands."""
    copied = {}
    for key in sorted(parameters) if all(type(key) is str for key in parameters) else ():
        value = parameters[key]
        kind = type(value)
        if kind in _FLAT:
            if kind is int and value.bit_length() > 64:
                break
            copied[key] = value
        elif (kind is list or kind is tuple) and _flat_items(value):
            copied[key] = list(value)
        else:
            break
    else:
        if len(copied) == len(parameters):
            return copied
    return json.loads(_KEY_ENCODER.encode(parameters))


def _flat_items(items: list | tuple) -> bool:
    """Every item a scalar ``_FLAT`` keeps as it is."""
    return all(type(item) in _FLAT and (type(item) is not int or item.bit_length() <= 64) for item in items)


def issued(plan: Plan) -> tuple[Compiled, ...]:
    """Every statement a command's program may issue, in program order: the plan's own steps,
    then — after a KML write, when an embedder is configured — the executor's refresh of the
    SEARCH embeddings of the elements the write touched (``execution.programs.start``)."""
    return plan.steps() + (embeddings.refresh(plan.names) if plan.kind == "KML" else ())


def statements(plan: Plan) -> list[dict[str, Any]]:
    """``issued(plan)`` as ``{"cypher", "parameters", "label"}`` (``label`` names the step that issues it)
    plus ``runtime_parameters``: the kept placeholders the caller binds, when there are any."""
    return [
        {
            "cypher": s.text,
            "parameters": dict(s.params),
            **({"label": s.label} if s.label else {}),
            **({"runtime_parameters": list(s.runtime)} if s.runtime else {}),
        }
        for s in issued(plan)
    ]


def compile_command(
    text: str, parameters: dict[str, Any] | None = None, settings: Settings | None = None, keep_placeholders: bool = False
) -> list[dict[str, Any]]:
    """Public ``kip2cypher.compile``: the Cypher statements with their parameters and steps."""
    return statements(compile_plan(text, parameters, settings, keep_placeholders))
