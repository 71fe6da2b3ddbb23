"""The lowered form of a read: immutable steps between the WHERE and the RETURN, and their lines.

The FIND lowering (``lower/find.py``) does not write its tail as Cypher lines directly: it
builds a ``FindForm`` — the WHERE's lines, the §3.3 ``Distinct``, the grouping (``Group``) and
the other ``With`` steps, the ORDER BY keys, the RETURN items — in its plain, unoptimised
shape, with the facts an optimisation needs recorded beside it (whether the row keys make the
DISTINCT redundant, which node could pre-group an aggregation, which stored values a guard
reads twice). The passes (``lower/passes.py``) rewrite a form into a form; ``lines`` renders
whatever form comes out. A form of the WHERE itself (``Where``) is what the lean pass rewrites
before the clause lowering runs.

Fragments inside a form are never mutated: a pass that changes one builds a copy
(``cypher.clauses.substituted``), so the form before a pass stays valid.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from ..cypher.builder import Fragment, Internal, Part, Var, frag, join


@dataclass(frozen=True)
class Where:
    """A WHERE as the clause lowering takes it: its items and the variables of reified
    proposition clauses it need not expand to (``unread``, set by the lean pass)."""

    items: tuple
    unread: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Distinct:
    """``WITH DISTINCT items``: one row per distinct solution over the kept variables (§3.3).
    ``unique``: the row keys (``context.Keys``) prove the rows distinct already."""

    items: tuple[Part, ...]
    unique: bool = False


@dataclass(frozen=True)
class With:
    """``WITH [*, ]items``: a projection (``star``: keeping every variable in scope)."""

    items: tuple[Part, ...]
    star: bool = False


@dataclass(frozen=True)
class Column:
    """One column of an aggregating FIND: a grouping key (``func`` None) or an aggregate."""

    var: Var
    value: Fragment
    index: int
    func: str | None = None
    #: An aggregate of the group's ``owner`` alone (the A5 label test of a grouping key): the
    #: pre-grouping pass computes it once per owner, in its second phase, not once per row.
    per_owner: bool = False


@dataclass(frozen=True)
class Group:
    """The implicit GROUP BY of an aggregating FIND, in one ``WITH``: the identity-grouped
    variables ORDER BY reads (``carried``), then the columns. ``owner``: the node whose
    properties are the whole grouping key, when the aggregation may run per node of it first
    (``find._FindLowering.pre_group_owner``; the pre-grouping pass)."""

    carried: tuple[Part, ...]
    columns: tuple[Column, ...]
    owner: Part | None = None


@dataclass(frozen=True)
class Read:
    """A stored value a guard names twice (``CASE WHEN v … ELSE v END``), as one object: the
    read-once pass binds it to ``alias`` once and replaces the object wherever it is used."""

    alias: Internal
    value: Fragment


Step = Union[Distinct, With, Group]


@dataclass(frozen=True)
class FindForm:
    """A FIND between its WHERE and its RETURN (paging and the grounding tail come after)."""

    where: tuple[Fragment, ...]
    distinct: Distinct | With | None
    steps: tuple[Step, ...]
    order: tuple[Fragment, ...]
    returning: tuple[Part, ...]
    reads: tuple[Read, ...] = ()


def step_line(step: Step) -> Fragment:
    """The Cypher line of one step."""
    if isinstance(step, Distinct):
        if not step.items:
            return frag("WITH DISTINCT true AS ", Internal("any"))  # nothing kept: one row per solution existence
        return frag("WITH DISTINCT ", join(", ", step.items))
    if isinstance(step, With):
        return frag("WITH *, " if step.star else "WITH ", join(", ", step.items))
    return frag("WITH ", join(", ", [*step.carried, *(frag(c.value, " AS ", c.var) for c in step.columns)]))


def lines(form: FindForm) -> list[Fragment]:
    """The form's lines up to (not including) paging and RETURN."""
    out = list(form.where)
    if form.distinct is not None:
        out.append(step_line(form.distinct))
    out.extend(step_line(step) for step in form.steps)
    if form.order:
        out.append(frag("ORDER BY ", join(", ", form.order)))
    return out
