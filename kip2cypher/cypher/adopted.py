"""How the team's own elements are matched in Cypher (docs/adopt.md): a node of an adopted type,
its adopted id, a node that is not one of KIP's, the properties the team's elements carry.

These pieces depend only on the adoption mapping and the builder, so the lowering of KQL over
adopted data (``lower.adopted``) and the ``kip2cypher adopt`` program (``execution.programs.adopt``)
share them. Every label, relationship type and property name comes from the validated mapping
and is emitted as an ``Ident``; every value is a ``Param``.
"""

from __future__ import annotations

from collections.abc import Sequence

from .. import adoption as adopt
from ..adoption import Adopted, AdoptedType
from . import storage
from .builder import Fragment, Ident, Internal, Param, Part, Statement, frag, join, literal


def not_engine(ref: Part) -> Fragment:
    """``ref`` is one of the team's nodes, not one of KIP's (it carries no engine label): what a
    memory proposition's endpoint relationship reaches when it links an adopted concept. A node
    of an adopted type needs no such test: memory concepts carry their type's label in KIP's
    label space (``kip:Drug``), never a team label (docs/storage-model.md, "Label space")."""
    label = Internal("label")
    tests = [frag(label, " = ", literal(stem), " OR ", label, " STARTS WITH ", literal(stem + "__")) for stem in storage.RESERVED_LABEL_STEMS]
    return frag("none(", label, " IN labels(", ref, ") WHERE ", join(" OR ", tests), ")")


def node(ref: Part, t: AdoptedType, name: Part | None = None, id_value: str | None = None) -> Fragment:
    """``(ref:`Label` {`name_prop`: $name} WHERE …)``: a node of adopted type ``t`` (``name``: the
    name's parameter)."""
    out = frag("(", ref, ":", Ident(t.label))
    if name is not None:
        out.add(" {", Ident(t.name_property), ": ", name, "}")
    if id_value is not None:
        out.add(" WHERE ", id_test(ref, t, id_value))
    out.add(")")
    return out


def id_test(ref: Part, t: AdoptedType, value: str) -> Fragment:
    """``ref`` has the adopted id ``A:<Type>:<value>``: ``@<elementId>`` or the ``key`` value (a
    string, or an integer written in decimal)."""
    tests: list[Fragment] = []
    if value.startswith(adopt.ELEMENT_MARK):
        tests.append(frag("elementId(", ref, ") = ", Param(value[len(adopt.ELEMENT_MARK) :])))
    if t.key is not None:
        tests.append(frag(ref, ".", Ident(t.key), " IN ", Param(adopt.key_candidates(value))))
    if not tests:
        return frag("false")
    return tests[0] if len(tests) == 1 else frag("(", join(" OR ", tests), ")")


#: How many of an adopted type's nodes (or a predicate's relationships) show which properties the
#: team's graph uses (the did-you-mean of an unmapped attribute in ``warnings``).
PROPERTY_SAMPLE = 1000


def carried_statement(targets: Sequence[Adopted], sample: int | None = PROPERTY_SAMPLE) -> Statement:
    """Per target ``i``: the property keys carried by up to ``sample`` (None: all) of its team's
    nodes (a type) or relationships (a predicate of that relationship type) — the names an
    unmapped attribute key was likely meant to be."""
    n = frag("n")
    stmt = Statement()
    with stmt.block("CALL ()"):
        for i, what in enumerate(targets):
            if i:
                stmt.line("UNION ALL")
            stmt.line("MATCH ", node(n, what) if isinstance(what, AdoptedType) else frag("()-[", n, ":", Ident(what.rel_type), "]->()"))
            if sample is not None:
                stmt.line("WITH n LIMIT ", str(sample))
            stmt.line("UNWIND keys(n) AS k")
            stmt.line("RETURN ", str(i), " AS i, collect(DISTINCT k) AS keys")
    stmt.line("RETURN i, keys")
    return stmt
