"""The DESCRIBE programs: run the plan's statement(s) and shape the rows into the §6.2.2 result."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from ... import cursor, embedding, errors, profiles
from ...config import Settings
from ...cypher import storage
from ...domain.capabilities import DESCRIBE_DEFAULT_LIMIT, EXPORT_DEFAULT_LIMIT, EXPORT_MAX_LIMIT, search_capabilities
from ...errors import KipError
from ...lower.describe import DomainsPlan, PrimerPlan, TypeDefinitionPlan, TypeListPlan
from ...syntax import ast
from ...version import __version__
from ..requests import Context, Run
from ..results import concept_object
from . import grounding
from .dry_run import explain_all

SELF_IDENTITY_DEFAULT = (
    "I am an AI agent whose long-term memory is a Cognitive Nexus: a knowledge graph of concepts and "
    "propositions that I query and evolve with KIP. My persona has not been written down yet; it emerges "
    "through interaction and is recorded on my $self node."
)
NEXUS_DESCRIPTION = (
    "My memory and knowledge are stored in the Cognitive Nexus, which I can query via KIP (KQL "
    f"{'/'.join(ast.command_words(ast.KQL))}, META {'/'.join(ast.command_words(ast.META))}) and evolve via KML "
    f"({', '.join(ast.command_words(ast.KML))})."
)


# ------------------------------------------------------------------ DESCRIBE … TYPES
def type_list(plan: TypeListPlan, ctx: Context) -> Generator[Any, Any, dict]:
    if ctx.dry_run:
        return (yield from explain_all("META", plan.steps()))
    names = [row["name"] for row in (yield Run(plan.query))]
    response: dict[str, Any] = {"result": names[: plan.limit]}
    if len(names) > plan.limit:
        response["next_cursor"] = cursor.encode(ctx.settings, plan.fingerprint, names[plan.limit - 1])
    return response


# ------------------------------------------------------------------ DESCRIBE … TYPE "X"
def type_definition(plan: TypeDefinitionPlan, ctx: Context) -> Generator[Any, Any, dict]:
    if ctx.dry_run:
        return (yield from explain_all("META", plan.steps()))
    rows = yield Run(plan.query)
    if rows:
        return {"result": concept_object(rows[0]["t"])}
    guess = errors.closest(plan.name, (yield from grounding.defined_names(plan.names, plan.meta_type)))
    listing = "DESCRIBE CONCEPT TYPES" if plan.meta_type == storage.CONCEPT_TYPE else "DESCRIBE PROPOSITION TYPES"
    if guess is not None:
        hint = f'Did you mean "{guess}"? Names are case-sensitive; run {listing} to list the defined names.'
    else:
        hint = f'Run {listing} to list the defined names, or define "{plan.name}" with an UPSERT of a {plan.meta_type} node.'
    raise KipError(errors.NOT_FOUND, f'The {plan.what} "{plan.name}" is not defined.', hint)


# ------------------------------------------------------------------ DOMAINS and PRIMER
def domains(plan: DomainsPlan, ctx: Context) -> Generator[Any, Any, dict]:
    if ctx.dry_run:
        return (yield from explain_all("META", plan.steps()))
    return {"result": [domain_summary(row["d"], row["members"]) for row in (yield Run(plan.query))]}


def primer(plan: PrimerPlan, ctx: Context) -> Generator[Any, Any, dict]:
    if ctx.dry_run:
        return (yield from explain_all("META", plan.steps()))
    rows = yield Run(plan.self_query)
    identity = identity_layer(rows[0]["s"] if rows else None, rows[0].get("profile") if rows else None, ctx)
    domain_map = []
    for row in (yield Run(plan.domains)):
        entry = domain_summary(row["d"], row["members"])
        entry["key_concepts"] = [c for c in row["key_concepts"] if c is not None]
        entry["key_propositions"] = list(row["key_propositions"])
        domain_map.append(entry)
    return {"result": {"identity": identity, "domain_map": domain_map, "total_domains": len(domain_map)}}


def core(profile: str | None) -> dict[str, Any]:
    """The KIP core version and the official capsule profile the nexus was bootstrapped with
    (``kip2cypher.profiles``; both null for a nexus bootstrapped before profiles were recorded)."""
    return {"version": profiles.core_version(profile), "profile": profile}


def domain_summary(props: dict[str, Any], members: int) -> dict[str, Any]:
    node = concept_object(props)
    attributes = node["attributes"]
    summary: dict[str, Any] = {"id": node["id"], "name": node["name"], "description": attributes.get("description")}
    for key in ("display_hint", "scope_note", "aliases"):
        if key in attributes:
            summary[key] = attributes[key]
    summary["member_count"] = members
    return summary


def identity_layer(self_props: dict[str, Any] | None, profile: str | None, ctx: Context) -> dict[str, Any]:
    identity: dict[str, Any] = {"type": "Person", "name": "$self"}
    if self_props is None:
        identity.update({"id": None, "exists": False, "summary": SELF_IDENTITY_DEFAULT, "attributes": {}})
    else:
        node = concept_object(self_props)
        attributes = node["attributes"]
        summary = attributes.get("identity_narrative") or attributes.get("persona") or attributes.get("description") or SELF_IDENTITY_DEFAULT
        if not isinstance(summary, str):
            summary = SELF_IDENTITY_DEFAULT
        identity.update({"id": node["id"], "exists": True, "summary": summary, "attributes": attributes})
    identity["nexus"] = NEXUS_DESCRIPTION
    identity["capabilities"] = capabilities(ctx.settings, ctx.embedder, profile)
    return identity


def capabilities(settings: Settings, embedder: Any, profile: str | None) -> dict[str, Any]:
    """What this engine can really do, from its live configuration (``embedder``: the one in force,
    or None) and the nexus's recorded ``profile``: ``protocol`` is its KIP version (the default
    profile's when none this build knows is recorded; RC10 and RC11 share one syntax)."""
    return {
        "protocol": f"KIP {profiles.core_version(profile) or profiles.get(None).core_version}",
        "engine": f"kip2cypher {__version__} (Cypher on Neo4j)",
        "commands": list(ast.command_words()),
        "search": search_capabilities(embedder, embedding.unavailable_reason()),
        "limits": {
            "max_path_hops": settings.max_hops,
            "max_result_rows": settings.max_result_rows,
            "max_batch_commands": settings.max_batch,
            "query_timeout_seconds": settings.query_timeout_s,
            "describe_page_size": DESCRIBE_DEFAULT_LIMIT,
            "export_default_limit": EXPORT_DEFAULT_LIMIT,
            "export_max_limit": EXPORT_MAX_LIMIT,
        },
        "strict_schema": settings.strict_schema,
        "core": core(profile),
    }
