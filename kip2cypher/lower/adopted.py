"""Cypher for adopted types and predicates (docs/adopt.md): the team's own nodes and
relationships read as KIP concepts and propositions, never written.

Every label, relationship type and property name here comes from the validated mapping
(``kip2cypher.adoption``) and is emitted as an ``Ident`` (backtick-quoted by the builder);
every value is a ``Param``. Ids are built in Cypher exactly as ``adoption.concept_id`` /
``adoption.proposition_id`` describe, so ``?d.id`` in a FILTER, ``{id: "A:Drug:D001"}`` in a
clause and the ``id`` of a result agree.
"""

from __future__ import annotations

from collections.abc import Sequence

from .. import adoption as adopt
from ..adoption import Adopted, AdoptedPredicate, AdoptedType
from ..cypher.adopted import carried_statement as carried_statement  # FIND reads it through here
from ..cypher.adopted import node
from ..cypher.builder import Fragment, Ident, Param, Part, Statement, frag, join, literal
from ..domain.adopted import LOOKUP_MAX
from ..errors import IMMUTABLE_TARGET, INVALID_SYNTAX, KipError
from .adopted_values import display


def concept_id(ref: Part, t: AdoptedType) -> Fragment:
    """The adopted id of node ``ref`` of type ``t``."""
    element = frag(Param(adopt.ELEMENT_MARK), " + elementId(", ref, ")")
    value = frag("coalesce(toString(", ref, ".", Ident(t.key), "), ", element, ")") if t.key is not None else element
    return frag("CASE WHEN ", ref, " IS NULL THEN null ELSE ", Param(adopt.id_prefix(t.name)), " + ", value, " END")


def proposition_id(ref: Part, p: AdoptedPredicate) -> Fragment:
    return frag("CASE WHEN ", ref, " IS NULL THEN null ELSE ", Param(adopt.id_prefix(p.name) + adopt.ELEMENT_MARK), " + elementId(", ref, ") END")


def attribute_map(ref: Part, pairs: tuple[tuple[str, str], ...]) -> Fragment:
    """``{k: ref.`prop`, …}`` as FIND shows the values (``adopted_values.display``; missing
    properties come back null; the decoder drops them)."""
    if not pairs:
        return frag("{}")
    return frag("{", join(", ", [frag(Ident(key), ": ", display(frag(ref, ".", Ident(prop)))) for key, prop in pairs]), "}")


def metadata_map(what: Adopted) -> Fragment:
    source = "label" if isinstance(what, AdoptedType) else "relationship_type"
    value = what.label if isinstance(what, AdoptedType) else what.rel_type
    return frag("{adopted: true, ", source, ": ", Param(value), "}")


def element(ref: Part, what: Adopted, adoption: adopt.Adoption) -> Fragment:
    """The KIP JSON object of an adopted node / relationship, built in Cypher (null for null)."""
    if isinstance(what, AdoptedType):
        body = frag(
            "{id: ",
            concept_id(ref, what),
            ", type: ",
            Param(what.name),
            ", name: ",
            display(frag(ref, ".", Ident(what.name_property))),
            ", attributes: ",
            attribute_map(ref, what.attributes),
            ", metadata: ",
            metadata_map(what),
            "}",
        )
    else:
        subject, obj = adoption.type(what.subject), adoption.type(what.object)
        body = frag(
            "{id: ",
            proposition_id(ref, what),
            ", subject: ",
            concept_id(frag("startNode(", ref, ")"), subject),
            ", predicate: ",
            Param(what.name),
            ", object: ",
            concept_id(frag("endNode(", ref, ")"), obj),
            ", attributes: ",
            attribute_map(ref, what.attributes),
            ", metadata: ",
            metadata_map(what),
            "}",
        )
    return frag("CASE WHEN ", ref, " IS NULL THEN null ELSE ", body, " END")


def field(ref: Part, what: Adopted, path: tuple[str, ...], adoption: adopt.Adoption) -> Fragment:
    """``?x.<path>`` of an adopted element: the mapped property, or null for what it lacks."""
    head = path[0]
    if head == "attributes":
        if len(path) == 1:
            return attribute_map(ref, what.attributes)
        prop = what.property_of(path[1])
        return frag(ref, ".", Ident(prop)) if prop is not None else frag("null")
    if head == "metadata":
        if len(path) == 1:
            return metadata_map(what)
        return frag("CASE WHEN ", ref, " IS NULL THEN null ELSE true END") if path[1] == "adopted" else frag("null")
    if isinstance(what, AdoptedType):
        if head == "id":
            return concept_id(ref, what)
        if head == "type":
            return frag("CASE WHEN ", ref, " IS NULL THEN null ELSE ", Param(what.name), " END")
        if head == "name":
            return frag(ref, ".", Ident(what.name_property))
        return frag("null")
    if head == "id":
        return proposition_id(ref, what)
    if head == "predicate":
        return frag("CASE WHEN ", ref, " IS NULL THEN null ELSE ", Param(what.name), " END")
    if head == "subject":
        return concept_id(frag("startNode(", ref, ")"), adoption.type(what.subject))
    if head == "object":
        return concept_id(frag("endNode(", ref, ")"), adoption.type(what.object))
    return frag("null")


def name_value(ref: Part, what: Adopted) -> Fragment:
    """What ORDER BY ?x sorts an adopted element on (its name; a relationship: its id)."""
    if isinstance(what, AdoptedType):
        return frag(ref, ".", Ident(what.name_property))
    return proposition_id(ref, what)


def read_only(what: Adopted, action: str, offset: int | None = None) -> KipError:
    """KIP_3004 for a write that would change the team's graph (refused at compile time)."""
    kind = (
        f"concept type {what.name!r} (Neo4j label {what.label!r})"
        if isinstance(what, AdoptedType)
        else f"predicate {what.name!r} (Neo4j relationship type {what.rel_type!r})"
    )
    return KipError(
        IMMUTABLE_TARGET,
        f"{action} would change the {kind}, which is adopted from the team's own graph: adopted data is read-only for KIP.",
        "Change it in the team's application or database instead; KIP only reads it (docs/adopt.md). "
        "Store your own knowledge about it as memory concepts and propositions of non-adopted types.",
        offset=offset,
    )


def link_refused(t: AdoptedType, offset: int | None = None) -> KipError:
    """KIP_3004 for a memory proposition pointing at an adopted concept while the mapping's
    ``link_memory`` option is off (today's read-only message, with the option in the hint)."""
    error = read_only(t, "This UPSERT", offset)
    error.hint = (
        "A memory proposition may have an adopted concept as subject or object only when the mapping sets "
        '[options] link_memory = true (docs/adopt.md, "link_memory"); ask whoever runs `kip2cypher adopt`. ' + error.hint
    )
    return error


def lookup_statement(refs: Sequence[tuple[AdoptedType, str | None, str | None]]) -> Statement:
    """The nodes of adopted endpoints ``(type, name, id value)`` (link_memory): per ref ``i``, the
    element ids and adopted ids of at most ``LOOKUP_MAX`` matching nodes. The UPSERT links a ref
    only when exactly one node matches (names need not be unique in the team's graph)."""
    n = frag("n")
    stmt = Statement()
    with stmt.block("CALL ()"):
        for i, (t, name, value) in enumerate(refs):
            if i:
                stmt.line("UNION ALL")
            stmt.line("MATCH ", node(n, t, Param(name) if name is not None else None, value))
            stmt.line("WITH collect(n)[..", str(LOOKUP_MAX), "] AS found")
            stmt.line("RETURN ", str(i), " AS i, [n IN found | elementId(n)] AS elements, [n IN found | ", concept_id(n, t), "] AS ids")
    stmt.line("RETURN i, elements, ids")
    return stmt


def unsupported(what: str, offset: int | None = None) -> KipError:
    return KipError(
        INVALID_SYNTAX,
        f"{what} is not supported over adopted predicates.",
        "docs/adopt.md lists what KQL can do over adopted data; split the query.",
        offset=offset,
    )


def search_statement(adoption: adopt.Adoption, index: str, with_type: AdoptedType | None) -> Statement:
    """Keyword SEARCH CONCEPT over the adopted full-text index: per hit ``[object, name, [other
    text values]]`` — the KIP object, and what the lexical score reads. A node carrying several
    adopted labels is read as the first of its types in the mapping (or as ``with_type``)."""
    node = frag("node")
    types = [with_type] if with_type is not None else [t for t in adoption.types if t.text]
    stmt = Statement()
    stmt.line("CALL db.index.fulltext.queryNodes(", literal(index), ", ", Param(None, "query"), ") YIELD node")
    if with_type is not None:
        stmt.line("WHERE node:", Ident(with_type.label))
    stmt.line("WITH node LIMIT ", Param(None, "pool"))
    cases = []
    for t in types:
        texts = [frag("node.", Ident(p)) for p in t.text if p != t.name_property]
        hit = frag("[", element(node, t, adoption), ", node.", Ident(t.name_property), ", [x IN [", join(", ", texts), "] WHERE x IS NOT NULL]]")
        cases.append(frag("WHEN node:", Ident(t.label), " THEN ", hit))
    stmt.line("RETURN CASE ", join(" ", cases), " END AS hit")
    return stmt


def nested_refused(offset: int | None = None) -> KipError:
    """An adopted relationship has no proposition node: it cannot be another proposition's end."""
    return unsupported("An adopted proposition as the subject or object of another proposition", offset)
