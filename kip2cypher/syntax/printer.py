"""AST → canonical KIP text, such that ``parse(to_kip(a)) == a`` for every valid command.

Canonical form: one clause per line, two-space indentation inside blocks,
objects and lists on one line, keys unquoted when they are identifiers, strings
as JSON (non-ASCII kept verbatim), and parentheses in FILTER expressions only
where precedence or left-associativity requires them. Used for error echoes,
EXPORT capsules and the parser round-trip tests.
"""

from __future__ import annotations

import json
from typing import Any

from . import ast
from .validate import IDENTIFIER_RE

_INDENT = "  "
# Binding strength in FILTER expressions: || < && < comparison < ! < atoms.
_OR, _AND, _COMPARISON, _NOT, _ATOM = range(1, 6)


def to_kip(node: Any) -> str:
    """Canonical KIP text of a command or of any AST sub-node (value, clause, expression)."""
    return _Printer().node(node)


class _Printer:
    def node(self, node: Any) -> str:
        return getattr(self, type(node).__name__)(node)

    # -- values -----------------------------------------------------------
    def Literal(self, node: ast.Literal) -> str:
        value = node.value
        if value is None:
            return "null"
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, str):
            return json.dumps(value, ensure_ascii=False)
        return repr(value)

    def ListLit(self, node: ast.ListLit) -> str:
        return "[" + ", ".join(self.node(item) for item in node.items) + "]"

    def ObjectLit(self, node: Any) -> str:
        return "{" + ", ".join(f"{key_text(key)}: {self.node(value)}" for key, value in node.entries) + "}"

    Assignments = ObjectLit

    def Placeholder(self, node: ast.Placeholder) -> str:
        return ":" + node.name

    def UpdateCall(self, node: ast.UpdateCall) -> str:
        return f"{node.func}(" + ", ".join(self.node(arg) for arg in node.args) + ")"

    # -- expressions ------------------------------------------------------
    def Var(self, node: ast.Var) -> str:
        return "?" + node.name

    def DotPath(self, node: ast.DotPath) -> str:
        return "?" + ".".join((node.var, *node.path))

    def Aggregate(self, node: ast.Aggregate) -> str:
        return f"{node.func}({'DISTINCT ' if node.distinct else ''}{self.node(node.arg)})"

    def expr(self, node: Any, minimum: int) -> str:
        """``node`` as a FILTER expression, parenthesised if it binds looser than ``minimum``."""
        strength, text = self.binding(node)
        return f"({text})" if strength < minimum else text

    def binding(self, node: Any) -> tuple[int, str]:
        if isinstance(node, ast.BoolOp):  # a chain, flat: the parser rebuilds the same balanced tree
            strength = _OR if node.op == "||" else _AND
            return strength, f" {node.op} ".join(self.expr(item, strength + 1) for item in ast.operands(node, node.op))
        if isinstance(node, ast.Comparison):
            return _COMPARISON, f"{self.expr(node.left, _NOT)} {node.op} {self.expr(node.right, _NOT)}"
        if isinstance(node, ast.NotExpr):
            return _NOT, "!" + self.expr(node.operand, _ATOM)
        return _ATOM, self.node(node)

    def FuncCall(self, node: ast.FuncCall) -> str:
        return f"{node.name}(" + ", ".join(self.node(arg) for arg in node.args) + ")"

    def BoolOp(self, node: Any) -> str:
        return self.expr(node, _OR)

    Comparison = NotExpr = BoolOp

    # -- clauses ----------------------------------------------------------
    def ConceptClause(self, node: ast.ConceptClause) -> str:
        fields = [(key, getattr(node, key)) for key in ("id", "type", "name") if getattr(node, key) is not None]
        body = "{" + ", ".join(f"{key}: {self.node(value)}" for key, value in fields) + "}"
        return f"?{node.var} {body}" if node.var else body

    def PropositionClause(self, node: ast.PropositionClause) -> str:
        if node.id is not None:
            body = f"(id: {self.node(node.id)})"
        else:
            body = f"({self.node(node.subject)}, {self.node(node.predicate)}, {self.node(node.object)})"
        return f"?{node.var} {body}" if node.var else body

    def PredicatePattern(self, node: ast.PredicatePattern) -> str:
        text = " | ".join(self.predicate_name(name) for name in node.names)
        return text + (self.node(node.quantifier) if node.quantifier else "")

    def predicate_name(self, name: ast.PredicateName) -> str:
        return self.node(name) if isinstance(name, ast.Placeholder) else json.dumps(name, ensure_ascii=False)

    def Quantifier(self, node: ast.Quantifier) -> str:
        if node.max is None:
            return f"{{{node.min},}}"
        return f"{{{node.min}}}" if node.min == node.max else f"{{{node.min},{node.max}}}"

    def Filter(self, node: ast.Filter) -> str:
        return f"FILTER({self.expr(node.expr, _OR)})"

    def block(self, keyword: str, items: tuple) -> str:
        """``KEYWORD {`` + one indented line per item + ``}``."""
        lines = [f"{keyword} {{"]
        for item in items:
            lines.extend(_INDENT + line for line in self.node(item).split("\n"))
        return "\n".join(lines + ["}"])

    def NotBlock(self, node: ast.NotBlock) -> str:
        return self.block("NOT", node.items)

    def OptionalBlock(self, node: ast.OptionalBlock) -> str:
        return self.block("OPTIONAL", node.items)

    def UnionBlock(self, node: ast.UnionBlock) -> str:
        return self.block("UNION", node.items)

    def OrderKey(self, node: ast.OrderKey) -> str:
        return self.node(node.expr) + (" DESC" if node.descending else " ASC")

    def modifiers(self, **clauses: Any) -> list[str]:
        """``LIMIT x`` / ``CURSOR y`` … lines for the clauses that are set, in the given order."""
        return [f"{keyword.replace('_', ' ')} {self.node(value)}" for keyword, value in clauses.items() if value is not None]

    # -- KQL --------------------------------------------------------------
    def Find(self, node: ast.Find) -> str:
        lines = ["FIND(" + ", ".join(self.node(p) for p in node.projections) + ")", self.block("WHERE", node.where)]
        if node.order_by:
            lines.append("ORDER BY " + ", ".join(self.node(key) for key in node.order_by))
        return "\n".join(lines + self.modifiers(LIMIT=node.limit, CURSOR=node.cursor))

    # -- KML --------------------------------------------------------------
    def Capsule(self, node: ast.Capsule) -> str:
        return "\n\n".join(self.node(upsert) for upsert in node.upserts)

    def Upsert(self, node: ast.Upsert) -> str:
        return self.block("UPSERT", node.blocks) + self.metadata(node.metadata)

    def metadata(self, metadata: Any) -> str:
        return f"\nWITH METADATA {self.node(metadata)}" if metadata is not None else ""

    def ConceptBlock(self, node: ast.ConceptBlock) -> str:
        return self.kml_block("CONCEPT", node, [self.node(node.identity), *self.guards(node), *self.propositions(node)])

    def PropositionBlock(self, node: ast.PropositionBlock) -> str:
        return self.kml_block("PROPOSITION", node, [self.node(node.identity), *self.guards(node)])

    def kml_block(self, keyword: str, node: Any, lines: list[str]) -> str:
        head = f"{keyword} ?{node.handle} {{" if node.handle else f"{keyword} {{"
        body = [_INDENT + line for text in lines for line in text.split("\n")]
        return "\n".join([head, *body, "}"]) + self.metadata(node.metadata)

    def guards(self, node: Any) -> list[str]:
        return self.modifiers(EXPECT_VERSION=node.expect_version, SET_ATTRIBUTES=node.set_attributes)

    def propositions(self, node: ast.ConceptBlock) -> list[str]:
        if node.set_propositions is None:
            return []
        return [self.block("SET PROPOSITIONS", node.set_propositions)]

    def PropositionEntry(self, node: ast.PropositionEntry) -> str:
        text = f"({self.predicate_name(node.predicate)}, {self.node(node.target)})"
        return text + (f" WITH METADATA {self.node(node.metadata)}" if node.metadata is not None else "")

    def Update(self, node: ast.Update) -> str:
        lines = [f"UPDATE ?{node.target}", *self.modifiers(SET_ATTRIBUTES=node.set_attributes, SET_METADATA=node.set_metadata)]
        return "\n".join(lines + [self.block("WHERE", node.where), *self.modifiers(LIMIT=node.limit)])

    def MergeConcept(self, node: ast.MergeConcept) -> str:
        return f"MERGE CONCEPT ?{node.source} INTO ?{node.target}\n" + self.block("WHERE", node.where)

    def delete_keys(self, what: str, node: Any) -> str:
        keys = ", ".join(json.dumps(key, ensure_ascii=False) for key in node.keys)
        return f"DELETE {what} {{{keys}}} FROM ?{node.target}\n" + self.block("WHERE", node.where)

    def DeleteAttributes(self, node: ast.DeleteAttributes) -> str:
        return self.delete_keys("ATTRIBUTES", node)

    def DeleteMetadata(self, node: ast.DeleteMetadata) -> str:
        return self.delete_keys("METADATA", node)

    def DeletePropositions(self, node: ast.DeletePropositions) -> str:
        return f"DELETE PROPOSITIONS ?{node.target}\n" + self.block("WHERE", node.where)

    def DeleteConcept(self, node: ast.DeleteConcept) -> str:
        return f"DELETE CONCEPT ?{node.target} DETACH\n" + self.block("WHERE", node.where)

    # -- META -------------------------------------------------------------
    def DescribePrimer(self, node: Any) -> str:
        return "DESCRIBE PRIMER"

    def DescribeDomains(self, node: Any) -> str:
        return "DESCRIBE DOMAINS"

    def DescribeConceptTypes(self, node: Any) -> str:
        return " ".join(["DESCRIBE CONCEPT TYPES", *self.modifiers(LIMIT=node.limit, CURSOR=node.cursor)])

    def DescribePropositionTypes(self, node: Any) -> str:
        return " ".join(["DESCRIBE PROPOSITION TYPES", *self.modifiers(LIMIT=node.limit, CURSOR=node.cursor)])

    def DescribeConceptType(self, node: Any) -> str:
        return f"DESCRIBE CONCEPT TYPE {self.node(node.name)}"

    def DescribePropositionType(self, node: Any) -> str:
        return f"DESCRIBE PROPOSITION TYPE {self.node(node.name)}"

    def Search(self, node: ast.Search) -> str:
        options = self.modifiers(WITH_TYPE=node.with_type, MODE=node.mode, THRESHOLD=node.threshold, LIMIT=node.limit)
        return " ".join([f"SEARCH {node.target} {self.node(node.term)}", *options])

    def Export(self, node: ast.Export) -> str:
        lines = [f"EXPORT ?{node.target}", self.block("WHERE", node.where)]
        return "\n".join(lines + self.modifiers(LIMIT=node.limit, CURSOR=node.cursor))


def key_text(key: str) -> str:
    """An object key: bare when it is an identifier, a JSON string otherwise."""
    return key if IDENTIFIER_RE.match(key) else json.dumps(key, ensure_ascii=False)
