"""The read optimisations, each a pass from a lowered form to a rewritten one.

The FIND lowering (``lower/find.py``) lowers a command in its plain shape and applies
``PASSES`` in order; ``lower_find(…, passes=())`` gives the unoptimised Cypher, which answers
the same. Each pass has its before/after golden (``tests/golden/passes.txt``, whose cases name
the passes they compile with) and keeps what it cannot prove unchanged:

1. ``lean`` (a pass over the ``Where``, before the clause lowering): a subject/object variable
   of a reified proposition clause written once in the whole WHERE and read nowhere after it is
   not expanded to — every proposition node has exactly one subject and one object, so the
   expansion cannot change the rows.
2. ``read_once``: a stored value a guard names twice (``CASE WHEN v = … ELSE v END``) is bound
   once by ``WITH *, v AS _aN`` and the guard reads the variable.
3. ``pre_group``: an aggregation whose grouping key is properties of one node runs per node
   first (a hash on the node, no property read), then combines the partial COUNT / MIN / MAX.
4. ``elide_distinct``: the §3.3 ``WITH DISTINCT`` is left out when the row keys prove the rows
   distinct already (``context.Keys``); a plain ``WITH`` stays where something needs it.

Adding one: a function ``FindForm → FindForm`` (or ``Where → Where``) here, with the fact it
needs recorded in the form by the lowering (``lower/form.py``), its name in ``PASSES`` at its
place in the order, and a before/after pair in ``tests/golden/passes.txt``
(docs/architecture.md, "Passes").
"""

from __future__ import annotations

from collections.abc import Iterable

from ..cypher.builder import Internal, Var, frag
from ..cypher.clauses import substituted
from .context import mention_counts
from .form import Distinct, FindForm, Group, Step, Where, With
from .plan import replaced

#: How the partial aggregate of a pre-grouped column combines into the whole.
COMBINE = {"COUNT": "sum", "MIN": "min", "MAX": "max"}


def lean(where: Where, used: Iterable[str]) -> Where:
    """Mark the variables written once in the WHERE and not in ``used`` (what the command reads
    after it) as ``unread``: the clause lowering does not expand a reified clause to them."""
    counts = mention_counts(where.items)
    outside = set(used)
    return replaced(where, {"unread": frozenset(name for name, count in counts.items() if count == 1 and name not in outside)})


def read_once(form: FindForm) -> FindForm:
    """Bind each twice-read stored value once, ahead of the steps, and read its variable."""
    if not form.reads:
        return form
    aliases = {id(read.value): read.alias for read in form.reads}
    bind = With(tuple(frag(read.value, " AS ", read.alias) for read in form.reads), star=True)
    steps = tuple(_substituted_step(step, aliases) for step in form.steps)
    return replaced(form, {"steps": (bind, *steps), "reads": ()})


def _substituted_step(step: Step, aliases: dict[int, Internal]) -> Step:
    """``step`` with the values of ``aliases`` (by identity) replaced by their variables."""
    if isinstance(step, Group):
        columns = tuple(replaced(column, {"value": substituted(column.value, aliases)}) for column in step.columns)
        return replaced(step, {"columns": columns})
    return replaced(step, {"items": tuple(substituted(item, aliases) for item in step.items)})


def pre_group(form: FindForm) -> FindForm:
    """Two phases for a ``Group`` with an ``owner``: aggregate per node of the owner, then read
    the grouping properties once per node and combine the partials — exact for COUNT, MIN, MAX."""
    steps = []
    for step in form.steps:
        if not isinstance(step, Group) or step.owner is None:
            steps.append(step)
            continue
        partial = [frag(step.owner)]
        items = list(step.carried)
        for column in step.columns:
            if column.func is None or column.per_owner:
                items.append(frag(column.value, " AS ", column.var))
                continue
            part = Internal(f"g{column.index}")
            partial.append(frag(column.value, " AS ", part))
            items.append(frag(COMBINE[column.func], "(", part, ") AS ", column.var))
        steps += [With(tuple(partial)), With(tuple(items))]
    return replaced(form, {"steps": tuple(steps)})


def elide(distinct: Distinct, *, ordered: bool) -> Distinct | With | None:
    """A ``Distinct`` the keys prove redundant, left out: nothing when it keeps only plain
    variables (unless ``ordered``: an ORDER BY follows and needs a ``WITH``), else a plain
    ``WITH`` that still names predicate variables."""
    if not distinct.unique:
        return distinct
    if ordered or not all(isinstance(item, Var) for item in distinct.items):
        return With(distinct.items)
    return None


def elide_distinct(form: FindForm) -> FindForm:
    """``elide`` on the form's DISTINCT (an ORDER BY right after it needs its ``WITH``)."""
    if not isinstance(form.distinct, Distinct):
        return form
    return replaced(form, {"distinct": elide(form.distinct, ordered=bool(form.order) and not form.steps)})


#: The form passes by name, in the order the FIND lowering applies them (``lean`` runs on the
#: WHERE, before them).
FORM_PASSES = {"read_once": read_once, "pre_group": pre_group, "elide_distinct": elide_distinct}
#: Every pass, in order: what ``lower_find`` applies unless told otherwise.
PASSES = ("lean", *FORM_PASSES)


def apply(form: FindForm, chosen: Iterable[str]) -> FindForm:
    """The form after the chosen form passes, in ``PASSES`` order."""
    wanted = set(chosen)
    for name, rewrite in FORM_PASSES.items():
        if name in wanted:
            form = rewrite(form)
    return form
