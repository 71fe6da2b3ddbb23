"""DESCRIBE (spec §5.1, §6.2.2): PRIMER, DOMAINS, CONCEPT TYPES, PROPOSITION TYPES and … TYPE "X".

Every DESCRIBE is a read: a plan of one or two statements whose program
(``kip2cypher.execution.programs.describe``) shapes the rows into the response. The
behaviour and the choices the spec leaves to the engine are documented in docs/meta.md.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from .. import cursor
from ..config import Settings
from ..cypher import storage
from ..cypher.builder import Ident, Param, Statement
from ..domain.capabilities import DESCRIBE_DEFAULT_LIMIT
from ..syntax import ast
from ..syntax.values import resolve, resolve_int, resolve_str
from . import grounding
from .plan import Compiled, Plan

#: Key concepts and key predicates listed per domain in DESCRIBE PRIMER.
PRIMER_KEY_CONCEPTS = 10
PRIMER_KEY_PROPOSITIONS = 10


# ------------------------------------------------------------------ plans
@dataclass(frozen=True)
class TypeListPlan(Plan):
    """DESCRIBE CONCEPT TYPES / PROPOSITION TYPES: one page of defined names (``limit`` + 1
    fetched to know whether a ``next_cursor`` is due; the cursor carries the last name)."""

    query: Compiled
    limit: int
    fingerprint: str

    def steps(self) -> tuple[Compiled, ...]:
        return (self.query,)


@dataclass(frozen=True)
class TypeDefinitionPlan(Plan):
    """DESCRIBE CONCEPT TYPE / PROPOSITION TYPE "name": the definition node; when there is none,
    the defined names of ``meta_type`` for the did-you-mean hint of KIP_3002."""

    query: Compiled
    meta_type: str
    what: str  # "concept type" | "proposition type"
    name: str

    def steps(self) -> tuple[Compiled, ...]:
        return (self.query, grounding.defined_names(self.names).with_params(meta=self.meta_type))


@dataclass(frozen=True)
class DomainsPlan(Plan):
    """DESCRIBE DOMAINS: every Domain with its member count."""

    query: Compiled

    def steps(self) -> tuple[Compiled, ...]:
        return (self.query,)


@dataclass(frozen=True)
class PrimerPlan(Plan):
    """DESCRIBE PRIMER: the ``$self`` node (identity layer) and the domain map."""

    self_query: Compiled
    domains: Compiled

    def steps(self) -> tuple[Compiled, ...]:
        return (self.self_query, self.domains)


# ------------------------------------------------------------------ DESCRIBE … TYPES
def _lower_type_list(command: Any, parameters: dict[str, Any], settings: Settings, meta_type: str, what: str) -> TypeListPlan:
    limit = resolve_int(command.limit, parameters, "LIMIT") if command.limit is not None else DESCRIBE_DEFAULT_LIMIT
    fingerprint = cursor.fingerprint(what)
    after = cursor.decode(settings, fingerprint, resolve(command.cursor, parameters)) if command.cursor is not None else None
    stmt = Statement()
    stmt.line("MATCH (t:", Ident(storage.names(settings.namespace).concept), " {type: ", Param(meta_type, "meta_type"), "})")
    stmt.line("WHERE ", Param(after, "after"), " IS NULL OR t.name > ", Param(after, "after"))
    stmt.line("RETURN t.name AS name ORDER BY name LIMIT ", Param(limit + 1, "limit"))
    return TypeListPlan(query=Compiled.of(stmt, what), limit=limit, fingerprint=fingerprint)


def lower_describe_concept_types(command: ast.DescribeConceptTypes, parameters: dict[str, Any], settings: Settings) -> TypeListPlan:
    return _lower_type_list(command, parameters, settings, storage.CONCEPT_TYPE, "DESCRIBE CONCEPT TYPES")


def lower_describe_proposition_types(command: ast.DescribePropositionTypes, parameters: dict[str, Any], settings: Settings) -> TypeListPlan:
    return _lower_type_list(command, parameters, settings, storage.PROPOSITION_TYPE, "DESCRIBE PROPOSITION TYPES")


# ------------------------------------------------------------------ DESCRIBE … TYPE "X"
def _lower_type_definition(command: Any, parameters: dict[str, Any], settings: Settings, meta_type: str, what: str) -> TypeDefinitionPlan:
    name = resolve_str(command.name, parameters, f"DESCRIBE {what.upper()}")
    stmt = Statement()
    stmt.line("MATCH (t:", Ident(storage.names(settings.namespace).concept), " {type: ", Param(meta_type, "meta_type"), ", name: ", Param(name, "name"), "})")
    stmt.line("RETURN ", storage.node_projection("t"), " AS t")
    return TypeDefinitionPlan(query=Compiled.of(stmt, f"the {meta_type} node {name!r}"), meta_type=meta_type, what=what, name=name)


def lower_describe_concept_type(command: ast.DescribeConceptType, parameters: dict[str, Any], settings: Settings) -> TypeDefinitionPlan:
    return _lower_type_definition(command, parameters, settings, storage.CONCEPT_TYPE, "concept type")


def lower_describe_proposition_type(command: ast.DescribePropositionType, parameters: dict[str, Any], settings: Settings) -> TypeDefinitionPlan:
    return _lower_type_definition(command, parameters, settings, storage.PROPOSITION_TYPE, "proposition type")


# ------------------------------------------------------------------ DOMAINS and PRIMER
def _domains_statement(names: storage.Names, key_concepts: int, key_propositions: int) -> Compiled:
    """Every Domain with its member count, its key concepts and its key predicates.

    Members are the concepts with a ``belongs_to_domain`` link to the domain. A member's
    weight is its degree: the number of propositions (other than domain membership) in
    which it is subject or object. Key concepts are the members of highest degree; key
    predicates are the predicates used most by propositions touching a member.
    """
    btd = Param(storage.BELONGS_TO_DOMAIN, "btd")
    concept, proposition, links = Ident(names.concept), Ident(names.proposition), (Ident(names.subject_rel), "|", Ident(names.object_rel))
    stmt = Statement()
    stmt.line("MATCH (d:", concept, " {type: ", Param(storage.DOMAIN, "domain"), "})")
    stmt.line("OPTIONAL MATCH (m:", concept, ")-[:", Ident(names.rel(storage.BELONGS_TO_DOMAIN)), "]->(d)")
    stmt.line(
        "WITH d, m, CASE WHEN m IS NULL THEN 0 ELSE COUNT { (m)<-[:",
        *links,
        "]-(p:",
        proposition,
        ") WHERE p.predicate <> ",
        btd,
        " } END AS degree",
    )
    stmt.line("ORDER BY degree DESC, m.type, m.name")
    stmt.line(
        "WITH d, count(m) AS members, collect(CASE WHEN m IS NULL THEN null ELSE {type: m.type, name: m.name} END)[..",
        Param(key_concepts, "key_concepts"),
        "] AS key_concepts, collect(m) AS ms",
    )
    stmt.line(
        "WITH d, members, key_concepts, COLLECT { UNWIND ms AS m MATCH (m)<-[:",
        *links,
        "]-(p:",
        proposition,
        ") WHERE p.predicate <> ",
        btd,
        " WITH p.predicate AS predicate, count(DISTINCT p) AS uses ORDER BY uses DESC, predicate LIMIT ",
        Param(key_propositions, "key_propositions"),
        " RETURN predicate } AS key_propositions",
    )
    stmt.line("RETURN ", storage.node_projection("d"), " AS d, members, key_concepts, key_propositions")
    stmt.line("ORDER BY members DESC, d.name")
    return Compiled.of(stmt, "domains with members, key concepts and key predicates")


def _domain_counts_statement(names: storage.Names) -> Compiled:
    stmt = Statement()
    stmt.line("MATCH (d:", Ident(names.concept), " {type: ", Param(storage.DOMAIN, "domain"), "})")
    stmt.line(
        "RETURN ",
        storage.node_projection("d"),
        " AS d, COUNT { (:",
        Ident(names.concept),
        ")-[:",
        Ident(names.rel(storage.BELONGS_TO_DOMAIN)),
        "]->(d) } AS members",
    )
    stmt.line("ORDER BY members DESC, d.name")
    return Compiled.of(stmt, "domains with member counts")


def _self_statement(names: storage.Names) -> Compiled:
    """The ``$self`` node (null when absent) and the profile the nexus was bootstrapped with
    (``profiles``; null when none is recorded): one row always."""
    stmt = Statement()
    stmt.line("OPTIONAL MATCH (n:", Ident(storage.NEXUS), " {namespace: ", Param(names.namespace, "namespace"), "})")
    stmt.line("OPTIONAL MATCH (s:", Ident(names.concept), " {type: ", Param("Person", "person"), ", name: ", Param("$self", "self"), "})")
    stmt.line("RETURN ", storage.node_projection("s"), " AS s, n.", Ident(storage.PROFILE_KEY), " AS profile")
    return Compiled.of(stmt, "the $self node and the nexus's profile")


@functools.lru_cache(maxsize=64)
def _domains_plan(names: storage.Names) -> DomainsPlan:
    return DomainsPlan(query=_domain_counts_statement(names))


@functools.lru_cache(maxsize=64)
def _primer_plan(names: storage.Names) -> PrimerPlan:
    return PrimerPlan(self_query=_self_statement(names), domains=_domains_statement(names, PRIMER_KEY_CONCEPTS, PRIMER_KEY_PROPOSITIONS))


def lower_describe_domains(command: ast.DescribeDomains, parameters: dict[str, Any], settings: Settings) -> DomainsPlan:
    """The same plan for every request of a namespace."""
    return _domains_plan(storage.names(settings.namespace))


def lower_describe_primer(command: ast.DescribePrimer, parameters: dict[str, Any], settings: Settings) -> PrimerPlan:
    """The same plan for every request of a namespace."""
    return _primer_plan(storage.names(settings.namespace))
