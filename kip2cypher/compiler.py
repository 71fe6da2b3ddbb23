"""Command AST → ``Plan``: the dispatch from each construct to the module that lowers it."""
from __future__ import annotations

import importlib
import json
from functools import lru_cache
from typing import Any, Optional

from . import ast, errors
from .config import Settings
from .plan import Plan

# AST class → (module under kip2cypher.lower, function). Each function has the signature
# ``fn(command, parameters: dict, settings: Settings) -> Plan``.
LOWERINGS: dict[type, tuple[str, str]] = {
    ast.Find: ("kql", "lower_find"),
    ast.Capsule: ("kml", "lower_capsule"),
    ast.Update: ("kml", "lower_update"),
    ast.MergeConcept: ("kml", "lower_merge"),
    ast.DeleteAttributes: ("kml", "lower_delete_attributes"),
    ast.DeleteMetadata: ("kml", "lower_delete_metadata"),
    ast.DeletePropositions: ("kml", "lower_delete_propositions"),
    ast.DeleteConcept: ("kml", "lower_delete_concept"),
    ast.DescribePrimer: ("meta", "lower_describe_primer"),
    ast.DescribeDomains: ("meta", "lower_describe_domains"),
    ast.DescribeConceptTypes: ("meta", "lower_describe_concept_types"),
    ast.DescribeConceptType: ("meta", "lower_describe_concept_type"),
    ast.DescribePropositionTypes: ("meta", "lower_describe_proposition_types"),
    ast.DescribePropositionType: ("meta", "lower_describe_proposition_type"),
    ast.Search: ("meta", "lower_search"),
    ast.Export: ("meta", "lower_export"),
}


def _lowering(command: ast.Command):
    module_name, function_name = LOWERINGS[type(command)]
    try:
        module = importlib.import_module(f"kip2cypher.lower.{module_name}")
        return getattr(module, function_name)
    except (ImportError, AttributeError):
        raise errors.KipError(
            errors.INTERNAL_ERROR,
            f"{type(command).__name__} commands are not supported by this engine version yet.",
            "Use another command; this capability is still being built.",
        ) from None


def lower(command: ast.Command, parameters: Optional[dict[str, Any]] = None, settings: Optional[Settings] = None) -> Plan:
    """Lower a parsed command to a plan, binding the request's parameters."""
    plan = _lowering(command)(command, dict(parameters or {}), settings or _default_settings())
    if plan.kind == "KML":
        _refresh_embeddings_after(plan)
    return plan


def _refresh_embeddings_after(plan: Plan) -> None:
    """Wrap a KML plan so that, in the same write transaction, the elements it touched get
    fresh SEARCH embeddings (``embedding.after_write``; a no-op without an embedder)."""
    from datetime import datetime, timezone

    from . import embedding

    runner = plan.runner

    def run_then_embed(tx):
        since = datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        response = runner(tx)
        embedding.after_write(tx, since)
        return response

    plan.runner = run_then_embed


@lru_cache(maxsize=1)
def _default_settings() -> Settings:
    return Settings()


def _compile(text: str, params_json: str, settings: Settings) -> Plan:
    from .parser import parse
    from .values import check_quoted_placeholders

    check_limits(text, settings)  # only on a cache miss: a cached text already passed (settings are in the key)
    parameters = json.loads(params_json)
    check_quoted_placeholders(text, parameters)
    return lower(parse(text), parameters, settings)


_compile_cached = lru_cache(maxsize=2048)(_compile)


def check_limits(text: Any, settings: Settings) -> None:
    """``Settings.max_input_bytes`` / ``max_nesting_depth`` (KIP_4002), checked before parsing.

    The parser keeps its own built-in ceiling (the same defaults), so these settings tighten the
    bounds per Nexus; docs/limits.md.
    """
    from .parser import check_bounds

    if isinstance(text, str):  # the parser reports a non-string command
        check_bounds(text, settings.max_input_bytes, settings.max_nesting_depth)


def compile_plan(text: str, parameters: Optional[dict[str, Any]] = None, settings: Optional[Settings] = None) -> Plan:
    """Parse and lower one command (cached by text, parameters and settings)."""
    try:
        params_json = json.dumps(parameters or {}, sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise errors.KipError(errors.INVALID_SYNTAX, f"parameters must be JSON values: {exc}", "Pass strings, numbers, booleans, null, arrays and objects only.") from None
    from .parser import CACHEABLE_CHARS

    settings = settings or _default_settings()
    if len(text) + len(params_json) > CACHEABLE_CHARS:
        # A large capsule or parameter payload is rarely repeated: caching it would only hold memory.
        return _compile(text, params_json, settings)
    return _compile_cached(text, params_json, settings)


def compile_command(text: str, parameters: Optional[dict[str, Any]] = None, settings: Optional[Settings] = None) -> list[dict[str, Any]]:
    """Public ``kip2cypher.compile``: the Cypher statements with their parameters."""
    plan = compile_plan(text, parameters, settings)
    return [{"cypher": s.text, "parameters": s.params, **({"label": s.label} if s.label else {})} for s in plan.statements]
