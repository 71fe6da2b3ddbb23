"""Reading clauses built on the builder: MATCH, OPTIONAL MATCH, WHERE, WITH, subqueries, UNION.

The WHERE lowering (``lower/pattern.py``, ``lower/paths.py``) composes these instead of
writing keywords and braces itself: every ``{`` a subquery opens is closed here, and a body of
several lines is indented under its head. The parts are the builder's (``Fragment``, ``Var``,
``Param`` …), so nothing here ever sees user text as Cypher.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .builder import Fragment, Internal, Part, Var, frag, join

INDENT = "  "


def rebuilt(part: Part, change: Callable[[Part], Part]) -> Part:
    """A copy of ``part`` in which ``change`` has replaced every sub-part it changes (a part it
    returns unchanged is kept, a fragment is then copied and walked); ``part`` is left as it is.

    An explicit stack, not recursion: a UNION after a UNION nests the first one's CALL inside
    the second's, so fragments nest as deep as the command repeats that."""
    changed = change(part)
    if changed is not part or not isinstance(part, Fragment):
        return changed
    root = Fragment()
    stack = [(part, root)]
    while stack:
        source, target = stack.pop()
        for sub in source.parts:
            new = change(sub)
            if new is sub and isinstance(sub, Fragment):
                new = Fragment()
                stack.append((sub, new))
            target.parts.append(new)
    return root


def _indent(part: Part, prefix: str) -> Part:
    """Indent every line of an (engine-authored) multi-line fragment after its first."""
    return rebuilt(part, lambda sub: sub.replace("\n", "\n" + prefix) if isinstance(sub, str) else sub)


def substituted(part: Part, replacements: Mapping[int, Part]) -> Part:
    """A copy of ``part`` with each sub-part whose ``id`` is in ``replacements`` replaced: the
    same object used twice is replaced twice, an equal one elsewhere is left alone."""
    return rebuilt(part, lambda sub: replacements.get(id(sub), sub))


def indent_lines(lines: Iterable[Fragment], prefix: str = INDENT) -> list[Fragment]:
    return [frag(prefix, _indent(line, prefix)) for line in lines]


def block(head: Part, lines: list[Fragment], tail: str = "}") -> Fragment:
    """``head {`` + indented lines + ``}`` as one multi-line fragment (one line if the body is one line).
    ``head`` ends with the opening brace."""
    if len(lines) == 1:
        return frag(head, " ", lines[0], " ", tail)
    body = join("\n", indent_lines(lines))
    return frag(head, "\n", body, "\n", tail)


def variables(part: Any, out: list) -> list:
    """Every Cypher variable (``Var``/``Internal``) appearing in a fragment, in order (an explicit
    stack: fragments nest as deep as the command's blocks, see ``_indent``)."""
    stack = [part]
    while stack:
        item = stack.pop()
        if isinstance(item, (Var, Internal)):
            if item not in out:
                out.append(item)
        elif isinstance(item, Fragment):
            stack.extend(reversed(item.parts))
    return out


def call_head(keyword: str, body: list[Fragment], outer: Iterable[Part]) -> str | Fragment:
    """``CALL (a, _r0) {`` importing exactly the variables of ``outer`` the body uses.

    Explicit imports rather than ``CALL (*)``: inside an ``EXISTS { … }`` Neo4j 5.26 does not
    import the enclosing query's variables with ``*``."""
    found: list = []
    for ref in outer:
        variables(ref, found)
    used = variables(Fragment(list(body)), [])
    imports = [v for v in found if v in used]
    if not imports:
        return keyword + " () {"
    return frag(keyword, " (", join(", ", imports), ") {")


def subquery(keyword: str, body: list[Fragment], outer: Iterable[Part]) -> Fragment:
    """``CALL (…) { body }`` (or ``OPTIONAL CALL``) importing the outer variables the body uses."""
    return block(call_head(keyword, body, outer), body)


def call(imports: Iterable[Part], body: list[Fragment]) -> Fragment:
    """``CALL (a, b) { body }`` with the imports given."""
    return block(frag("CALL (", join(", ", imports), ") {"), body)


def exists(lines: list[Fragment]) -> Fragment:
    """``EXISTS { … }``: whether the lines match for the current row."""
    return block("EXISTS {", lines)


def not_exists(lines: list[Fragment]) -> Fragment:
    return block("NOT EXISTS {", lines)


def exists_pattern(*pattern: Part) -> Fragment:
    """``EXISTS { <pattern> }`` of a one-line pattern."""
    return frag("EXISTS { ", *pattern, " }")


def union(branches: list[list[Fragment]]) -> list[Fragment]:
    """The body of a ``CALL { … }`` that unions the branches (each ends with its ``RETURN``)."""
    return [line for index, lines in enumerate(branches) for line in ([frag("UNION")] if index else []) + lines]


def match(parts: Iterable[Part]) -> Fragment:
    return frag("MATCH ", join(", ", parts))


def optional_match(parts: Iterable[Part]) -> Fragment:
    return frag("OPTIONAL MATCH ", join(", ", parts))


def where(conditions: list[Fragment]) -> Fragment:
    """``WHERE a\\n  AND b``: the conditions of the clause above, one per line."""
    return frag("WHERE ", join("\n  AND ", conditions))


def with_where(conditions: list[Fragment]) -> Fragment:
    """``WITH * WHERE a AND b``: a row filter between clauses."""
    return frag("WITH * WHERE ", join(" AND ", conditions))


def returning(columns: list[Part]) -> Fragment:
    return frag("RETURN ", join(", ", columns))


def aliased(expr: Part, name: Var) -> Part:
    """``expr AS name``, or the variable alone when ``expr`` is it already."""
    return name if expr == name else frag(expr, " AS ", name)


class Clause:
    """One reading clause of a WHERE; a mandatory MATCH can still take WHERE conditions."""

    def __init__(self, head: Fragment, kind: str, conditions: list[Fragment] | None = None) -> None:
        self.head = head
        self.kind = kind  # "match" | "optional" | "call" | "with"
        self.where: list[Fragment] = list(conditions or [])

    def render(self) -> list[Fragment]:
        lines = [self.head]
        if self.where:
            lines.append(where(self.where))
        return lines
