"""The program of every bulk KML mutation (UPDATE, DELETE ATTRIBUTES / METADATA / PROPOSITIONS /
CONCEPT): one write statement, the refusals it reports (protected targets, operands beyond 64
bits), the strict instance_schema checks, a KIP_2001 check only when it can matter."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from ... import errors
from ...cypher import storage
from ...domain import rules
from ...domain.writes import NOW
from ...errors import KipError
from ...lower.update import BulkPlan
from ..requests import Context, Run
from . import find, grounding


def bulk(plan: BulkPlan, ctx: Context) -> Generator[Any, Any, dict]:
    """A dry run runs the read-only probe instead of the write: the same checks and counts,
    nothing written. Any error raised after the write rolls it back."""
    statement = plan.probe if ctx.dry_run else plan.write
    rows = yield Run(statement, {NOW: ctx.now} if NOW in statement.params else {})
    row = rows[0]
    refuse_protected(row["_bad"], plan.keyword)
    refuse_big_integers(row.get("big") or [])
    if plan.schema_rule and row["strict"]:
        yield from check_schema(plan, row["strict"])
    # An undefined type or predicate matches nothing; one used only in OPTIONAL/NOT/UNION may hide anywhere.
    yield from grounding.check(plan.names, plan.grounding_all if row["matched"] == 0 else plan.grounding_optional, plan.grounding_at)
    warnings = []
    if plan.named and row["matched"] == 0:
        if not plan.named_missing_is_empty:
            raise missing_target(plan)
        warnings.append(find.absent(rules.shown_named(plan.named)))
    if plan.named_check is not None and row["matched"] == 0:
        warnings += yield from find.why_empty(plan.named_check, (), plan.named_all)
    result = {key: row[column] for key, column in plan.result}
    result.update({key: row[column] for key, column in plan.reported if row[column]})
    if plan.held and row["held"]:
        warnings.append(held_values(row["held"]))
    return {"result": result, "warnings": warnings} if warnings else {"result": result}


def held_values(count: int) -> str:
    """UPDATE's elements that already held the values (docs/interop.md A9): "updated" counts
    changed elements only; the reference engine rewrites and counts these too."""
    which = "1 matched element already held" if count == 1 else f"{count} matched elements already held"
    return f'{which} these values: not rewritten and not counted in "updated" (_version unchanged; the reference engine rewrites and counts them)'


def refuse_protected(bad: list[str], keyword: str) -> None:
    """KIP_3004 naming (up to three of) the protected elements the command matched; nothing was written."""
    if bad:
        shown = ", ".join(bad[:3]) + (f" and {len(bad) - 3} more" if len(bad) > 3 else "")
        raise rules.immutable(f"{keyword} matched {shown}, which")


def missing_target(plan: BulkPlan) -> KipError:
    """KIP_3002: the DELETE names its target exactly and it does not exist (nothing was changed)."""
    return KipError(
        errors.NOT_FOUND,
        f"{plan.keyword}: the {rules.shown_named(plan.named)} named by the WHERE does not exist; nothing was deleted.",
        "Check the id or the exact type and name (case-sensitive) with FIND or SEARCH; if it was already deleted, there is nothing left to do.",
    )


def refuse_big_integers(found: list[list[str]]) -> None:
    """KIP_2003 when an operand of UPDATE arithmetic holds an integer beyond 64 bits: stored
    exactly (as JSON text), but Neo4j cannot compute with it, and skipping it would be silent."""
    if found:
        label, key = found[0]
        raise KipError(
            errors.INVALID_VALUE_TYPE,
            f"UPDATE arithmetic reads {_key_name(key)} of {label}, which holds an integer beyond the 64-bit range "
            f"({storage.INT64_MIN} … {storage.INT64_MAX}); it cannot be computed with exactly, so nothing was written.",
            "Store the value within the 64-bit range (or as a float) with UPDATE … SET ATTRIBUTES { key: value } before "
            "computing with it, or exclude such elements with a FILTER. This is not transient: retrying will fail the same way.",
        )


def check_schema(plan: BulkPlan, found: list[list[Any]]) -> Generator[Any, Any, None]:
    """Strict mode: the matched concepts' instance_schemas, read once per type, then checked."""
    types = sorted({type_ for type_, _ in found})
    rows = yield Run(plan.schemas_read, {"types": types})
    schemas = {r["name"]: storage.safe_decode(r["schema"]) for r in rows}
    for type_, data in sorted(found, key=lambda f: f[0]):
        if plan.checks_values:
            rules.check_value_types(type_, schemas.get(type_), {**plan.written, **{k: v for k, v in data.items() if v is not None}}, plan.key_at)
        else:
            rules.check_required_kept(type_, schemas.get(type_), data, plan.keyword, plan.key_at)


def _key_name(key: str) -> str:
    """``attr.k`` → ``attribute `k```, ``meta.k`` → ``metadata key `k```."""
    if key.startswith(storage.ATTR_PREFIX):
        return f"attribute `{key[len(storage.ATTR_PREFIX) :]}`"
    return f"metadata key `{key[len(storage.META_PREFIX) :]}`"
