"""The KIP errors of KML programs: the ``status`` column of a guarded write (``domain.writes.apply_tail``)
and the other refusals of a write, as messages an LLM can act on."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ... import errors
from ...domain import rules
from ...errors import KipError


def not_found(message: str, hint: str = "", offset: int | None = None) -> KipError:
    """KIP_3002 (``offset``: where the command names the missing element)."""
    return KipError(errors.NOT_FOUND, message, hint or errors.DEFAULT_HINTS[errors.NOT_FOUND], offset=offset)


def version_conflict(element: str, expected: Any, found: Any, at: int | None = None) -> KipError:
    if expected == 0:
        message = f"EXPECT VERSION 0 (create-only) failed: {element} already exists (its _version is {found})."
    elif found is None:
        message = f"EXPECT VERSION {expected} failed: {element} does not exist yet (it would be created at _version 1)."
    else:
        message = f"EXPECT VERSION {expected} failed: {element} is at _version {found}. Nothing was written."
    return KipError(errors.VERSION_CONFLICT, message, errors.DEFAULT_HINTS[errors.VERSION_CONFLICT], offset=at)


def check_status(row: Mapping[str, Any], describe: Callable[[], str], expect: int | None, at: int | None = None) -> None:
    """Raise the KIP error a write's status row reports for the element ``describe()`` names
    (``ok``: nothing), positioned at ``at`` (where the command writes the element). The name is
    built only for an error: a 100-block capsule's labels cost more than its status checks."""
    status = row["status"]
    if status == "ok":
        return
    label = describe()
    if status == "version":
        raise version_conflict(label, expect, None if row.get("created") else row["version"], at)
    if status == "protected":
        raise rules.immutable(label, "it already exists and this write would change it", at)
    raise not_found(f"{label} does not exist.", "", at)
