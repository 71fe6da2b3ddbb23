"""Checks that the grammar alone cannot express, run on every freshly parsed command.

The grammar is deliberately permissive where a precise message helps more than
"unexpected token" (e.g. it accepts any ``\\w+`` as a name so ``?1abc`` can be
reported as KIP_1002, and any value after LIMIT so ``LIMIT "x"`` can say what
LIMIT wants). Everything here raises ``KipError`` positioned at the offending
node. The few helpers used while building the AST (``concept_clause``,
``check_predicate_atoms``, ``concept_sets``, ``check_identifier``) cover facts
the AST cannot represent, such as an unknown key in a concept clause.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from ..errors import INVALID_IDENTIFIER, INVALID_SYNTAX, KipError, line_column, snippet
from . import ast
from .values import describe

IDENTIFIER_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
SEARCH_MODES = ("keyword", "semantic", "hybrid")
CONCEPT_KEYS = ("id", "type", "name")
SCALAR_FIELDS = ("id", "type", "name", "subject", "predicate", "object")
MAP_FIELDS = ("attributes", "metadata")
FILTER_USAGE = {
    "IN": 'IN(?x, ["a", "b"])',
    "IS_NULL": "IS_NULL(?x)",
    "IS_NOT_NULL": "IS_NOT_NULL(?x)",
    "CONTAINS": 'CONTAINS(?x, "sub")',
    "STARTS_WITH": 'STARTS_WITH(?x, "prefix")',
    "ENDS_WITH": 'ENDS_WITH(?x, "suffix")',
    "REGEX": 'REGEX(?x, "pattern")',
}
FILTER_ARITY = {"IN": 2, "IS_NULL": 1, "IS_NOT_NULL": 1, "CONTAINS": 2, "STARTS_WITH": 2, "ENDS_WITH": 2, "REGEX": 2}
UPDATE_ARITY = {"ADD": 2, "MUL": 2, "CLAMP": 3, "COALESCE": 2}


def error_at(text: str, offset: int, message: str, hint: str, code: str = INVALID_SYNTAX) -> KipError:
    """A positioned KipError whose message ends with the offending line and a caret."""
    line, column = line_column(text, offset)
    return KipError(code, f"{message} (line {line}, column {column})\n{snippet(text, offset)}", hint, line=line, column=column)


def check_identifier(text: str, offset: int, name: str, what: str) -> None:
    if not IDENTIFIER_RE.match(name):
        raise error_at(
            text,
            offset,
            f"Invalid {what} `{name}`.",
            "Identifiers must match [a-zA-Z_][a-zA-Z0-9_]*: start with a letter or `_`, then letters, digits or `_`.",
            INVALID_IDENTIFIER,
        )


# ---------------------------------------------------------------- build-time checks
def concept_clause(text: str, var: str | None, obj: ast.ObjectLit, span: ast.Span) -> ast.ConceptClause:
    """Turn ``{id|type|name: …}`` into a ConceptClause, rejecting unknown, duplicate or mixed keys."""
    fields: dict[str, ast.Value] = {}
    for (key, value), key_span in zip(obj.entries, obj.key_spans):
        if key not in CONCEPT_KEYS:
            raise error_at(
                text,
                key_span.start,
                f"Unknown key `{key}` in a concept clause.",
                "A concept clause matches by `id`, or by `type` and/or `name` — nothing else; filter other fields with FILTER.",
            )
        if key in fields:
            raise error_at(text, key_span.start, f"Duplicate key `{key}` in a concept clause.", "Give each of id, type, name at most once.")
        if not (isinstance(value, ast.Placeholder) or (isinstance(value, ast.Literal) and isinstance(value.value, str))):
            raise error_at(text, value.span.start, f"A concept clause's `{key}` must be a string or a :placeholder, got {_shown(value)}.", f'Write {key}: "…".')
        fields[key] = value
    if not fields:
        raise error_at(
            text, span.start, "An empty concept clause `{}` matches nothing specific.", 'Write {id: "…"}, {type: "…", name: "…"}, {type: "…"} or {name: "…"}.'
        )
    if "id" in fields and len(fields) > 1:
        raise error_at(text, span.start, "A concept clause cannot combine `id` with `type`/`name`.", 'Match by {id: "…"} alone, or by type and/or name.')
    return ast.ConceptClause(var, fields.get("id"), fields.get("type"), fields.get("name"), span)


def check_predicate_atoms(text: str, atoms: list, quantifier: ast.Quantifier | None) -> None:
    """A predicate variable stands alone: no path quantifier, no alternatives (spec §3.4.2)."""
    variables = [atom for atom in atoms if isinstance(atom, ast.Var)]
    if variables and (len(atoms) > 1 or quantifier is not None):
        raise error_at(
            text,
            variables[0].span.start,
            f"The predicate variable ?{variables[0].name} cannot carry path quantifiers or alternatives.",
            'Use literal predicates for paths and alternatives ("follows"{1,3}, "a" | "b"), or a lone ?p and FILTER on it.',
        )


def concept_sets(text: str, sets: Iterable[tuple[Any, int]]) -> tuple[ast.ObjectLit | None, tuple | None]:
    """Split a CONCEPT block's SET clauses (any order) into attributes and propositions, each at most once."""
    attributes = propositions = None
    for body, offset in sets:
        if isinstance(body, ast.ObjectLit):
            if attributes is not None:
                raise error_at(text, offset, "SET ATTRIBUTES appears twice in one CONCEPT block.", "Merge both into a single SET ATTRIBUTES { … }.")
            attributes = body
        else:
            if propositions is not None:
                raise error_at(text, offset, "SET PROPOSITIONS appears twice in one CONCEPT block.", "Merge both into a single SET PROPOSITIONS { … }.")
            propositions = body
    return attributes, propositions


def _shown(value: Any) -> str:
    if isinstance(value, ast.Literal):
        return describe(value.value)
    return {
        ast.ListLit: "a list",
        ast.ObjectLit: "an object",
        ast.UpdateCall: "an update expression",
        ast.DotPath: "a dot path",
        ast.Placeholder: "a placeholder",
    }.get(type(value), type(value).__name__)


# ---------------------------------------------------------------- AST pass
def validate(command: ast.Command, text: str) -> None:
    """Raise KipError for the first semantic-syntax problem in ``command``."""
    _Validator(text).command(command)


class _Validator:
    def __init__(self, text: str) -> None:
        self.text = text

    def fail(self, node: Any, message: str, hint: str, code: str = INVALID_SYNTAX) -> KipError:
        return error_at(self.text, node.span.start, message, hint, code)

    def command(self, command: ast.Command) -> None:
        getattr(self, "cmd_" + type(command).__name__)(command)

    # -- KQL ---------------------------------------------------------------
    def cmd_Find(self, find: ast.Find) -> None:
        for projection in find.projections:
            self.projection(projection)
        self.where(find.where)
        for key in find.order_by:
            self.projection(key.expr)
        self.limit(find.limit)
        self.string_value(find.cursor, "CURSOR")

    def projection(self, projection: ast.Projection) -> None:
        if isinstance(projection, ast.Aggregate):
            if projection.distinct and projection.func != "COUNT":
                raise self.fail(projection, f"DISTINCT is only valid in COUNT, not {projection.func}.", "Write COUNT(DISTINCT ?x), or drop DISTINCT.")
            projection = projection.arg
        if isinstance(projection, ast.DotPath):
            self.dot_path(projection)

    def dot_path(self, path: ast.DotPath) -> None:
        head, rest = path.path[0], path.path[1:]
        if head in SCALAR_FIELDS and not rest or head in MAP_FIELDS and len(rest) <= 1:
            return
        raise self.fail(
            path,
            f"`?{path.var}.{'.'.join(path.path)}` is not a valid dot path.",
            "Use ?x.id, ?x.type, ?x.name, ?x.subject, ?x.predicate, ?x.object, ?x.attributes[.key] or ?x.metadata[.key].",
        )

    def where(self, items: tuple) -> None:
        for item in items:
            if isinstance(item, ast.ConceptClause):
                if item.var is None:
                    raise self.fail(
                        item,
                        "A concept clause in WHERE needs a variable.",
                        'Bind it: ?x {type: "…", name: "…"}; inline clauses without a variable belong inside a proposition clause.',
                    )
            elif isinstance(item, ast.PropositionClause):
                self.proposition(item)
            elif isinstance(item, ast.Filter):
                self.boolean(item.expr)
            else:
                self.where(item.items)

    def proposition(self, clause: ast.PropositionClause) -> None:
        if clause.id is not None:
            self.string_value(clause.id, "A proposition clause's `id`")
            return
        for endpoint in (clause.subject, clause.object):
            self.endpoint(endpoint)
        if isinstance(clause.predicate, ast.PredicatePattern) and clause.predicate.quantifier is not None:
            quantifier = clause.predicate.quantifier
            if quantifier.max is not None and quantifier.min > quantifier.max:
                raise self.fail(
                    quantifier, f"The path quantifier {{{quantifier.min},{quantifier.max}}} has min > max.", "Write {min,max} with min ≤ max, e.g. {1,3}."
                )

    def endpoint(self, endpoint: ast.Endpoint) -> None:
        if isinstance(endpoint, ast.Var):
            return
        if endpoint.var is not None:
            raise self.fail(
                endpoint,
                f"A clause used as a subject or object cannot bind a variable (?{endpoint.var}).",
                f"Bind it as its own clause (?{endpoint.var} {{…}} or ?{endpoint.var} (…)) and use ?{endpoint.var} as the endpoint.",
            )
        if isinstance(endpoint, ast.PropositionClause):
            self.proposition(endpoint)

    def boolean(self, expr: Any) -> None:
        if isinstance(expr, ast.BoolOp):
            self.boolean(expr.left)
            self.boolean(expr.right)
        elif isinstance(expr, ast.NotExpr):
            self.boolean(expr.operand)
        elif isinstance(expr, ast.Comparison):
            self.boolean(expr.left)
            self.boolean(expr.right)
        elif isinstance(expr, ast.FuncCall):
            self.function(expr)
        else:
            self.operand(expr)

    def function(self, call: ast.FuncCall) -> None:
        arity = FILTER_ARITY[call.name]
        if len(call.args) != arity:
            raise self.fail(call, f"{call.name} takes {arity} argument{'s' * (arity > 1)}, got {len(call.args)}.", f"Write {FILTER_USAGE[call.name]}.")
        for index, arg in enumerate(call.args):
            if call.name == "IN" and index == 1 and isinstance(arg, ast.ListLit):
                self.plain_value(arg)
            else:
                self.operand(arg)

    def operand(self, operand: Any) -> None:
        if isinstance(operand, ast.DotPath):
            self.dot_path(operand)
        elif isinstance(operand, (ast.ListLit, ast.ObjectLit)):
            raise self.fail(
                operand,
                f"FILTER compares primitive values; {_shown(operand)} is only allowed as the list of IN(?x, […]).",
                "Compare strings, numbers, booleans or null; test membership with IN.",
            )
        elif not isinstance(operand, (ast.Var, ast.Literal, ast.Placeholder)):
            self.plain_value(operand)  # raises: update expressions are not FILTER operands

    # -- values --------------------------------------------------------------
    def plain_value(self, value: Any) -> None:
        """A JSON value: no update expressions, no dot paths, no duplicate keys."""
        if isinstance(value, ast.ListLit):
            for item in value.items:
                self.plain_value(item)
        elif isinstance(value, ast.ObjectLit):
            self.object_keys(value, identifiers=False)
            for _, item in value.entries:
                self.plain_value(item)
        elif isinstance(value, ast.UpdateCall):
            raise self.fail(
                value,
                f"The update expression {value.func}(…) is only valid in UPDATE … SET ATTRIBUTES/SET METADATA.",
                "Write a plain JSON value here; UPSERT values are never computed.",
            )
        elif isinstance(value, ast.DotPath):
            raise self.fail(
                value,
                f"The dot path ?{value.var}.{'.'.join(value.path)} is not a value.",
                "Dot paths belong in FIND, FILTER, ORDER BY and UPDATE expressions; write a JSON value or a :placeholder here.",
            )

    def object_keys(self, obj: Any, identifiers: bool) -> None:
        seen: set[str] = set()
        for (key, _), key_span in zip(obj.entries, obj.key_spans):
            if key in seen:
                raise error_at(self.text, key_span.start, f"Duplicate key `{key}` in an object.", "Give each key once.")
            seen.add(key)
            if identifiers and not IDENTIFIER_RE.match(key):
                check_identifier(self.text, key_span.start, key, "attribute or metadata key")

    def key_map(self, obj: ast.ObjectLit | None) -> None:
        """SET ATTRIBUTES / WITH METADATA bodies: identifier keys, plain values."""
        if obj is not None:
            self.object_keys(obj, identifiers=True)
            for _, value in obj.entries:
                self.plain_value(value)

    def limit(self, value: ast.Value | None, what: str = "LIMIT") -> None:
        if value is None or isinstance(value, ast.Placeholder):
            return
        literal = value.value if isinstance(value, ast.Literal) else None
        if not isinstance(value, ast.Literal) or isinstance(literal, bool) or not isinstance(literal, int) or literal < 1:
            raise self.fail(
                value, f"{what} expects a positive integer, got {_shown(value)}.", f"Write {what} followed by a whole number ≥ 1, or a :placeholder."
            )

    def string_value(self, value: ast.Value | None, what: str) -> None:
        if value is None or isinstance(value, ast.Placeholder):
            return
        if not (isinstance(value, ast.Literal) and isinstance(value.value, str)):
            raise self.fail(value, f"{what} expects a string, got {_shown(value)}.", 'Write a double-quoted string ("…") or a :placeholder here.')

    # -- KML -----------------------------------------------------------------
    def cmd_Capsule(self, capsule: ast.Capsule) -> None:
        for upsert in capsule.upserts:
            self.key_map(upsert.metadata)
            for block in upsert.blocks:
                self.key_map(block.metadata)
                self.key_map(block.set_attributes)
                self.version(block.expect_version)
                if isinstance(block, ast.ConceptBlock):
                    self.kml_concept(block.identity)
                    for entry in block.set_propositions or ():
                        self.kml_target(entry.target)
                        self.key_map(entry.metadata)
                else:
                    self.kml_proposition(block.identity)

    def version(self, value: ast.Value | None) -> None:
        if value is None or isinstance(value, ast.Placeholder):
            return
        literal = value.value if isinstance(value, ast.Literal) else None
        if not isinstance(value, ast.Literal) or isinstance(literal, bool) or not isinstance(literal, int) or literal < 0:
            raise self.fail(
                value,
                f"EXPECT VERSION expects a non-negative integer, got {_shown(value)}.",
                "Write EXPECT VERSION 0 (create-only), the element's current _version, or a :placeholder.",
            )

    def kml_concept(self, clause: ast.ConceptClause) -> None:
        if clause.id is None and (clause.type is None or clause.name is None):
            raise self.fail(
                clause,
                'A concept identity in KML must be {type: "…", name: "…"} or {id: "…"}.',
                "Give both type and name (creates or matches one node), or the id of an existing node.",
            )

    def kml_proposition(self, clause: ast.PropositionClause) -> None:
        if clause.id is not None:
            self.string_value(clause.id, "A proposition clause's `id`")
            return
        predicate = clause.predicate
        if not isinstance(predicate, ast.PredicatePattern) or len(predicate.names) != 1 or predicate.quantifier is not None:
            raise self.fail(
                predicate,
                "A proposition identity in KML needs one predicate name.",
                'Write (subject, "predicate", object) or (subject, :predicate, object): no predicate variable, path quantifier or alternatives.',
            )
        for endpoint in (clause.subject, clause.object):
            self.kml_target(endpoint)

    def kml_target(self, target: ast.Endpoint) -> None:
        """A handle, a concept identity or a proposition identity (recursively)."""
        if isinstance(target, ast.Var):
            return
        self.endpoint(target)
        if isinstance(target, ast.ConceptClause):
            self.kml_concept(target)
        else:
            self.kml_proposition(target)

    def cmd_Update(self, update: ast.Update) -> None:
        if update.set_attributes is None and update.set_metadata is None:
            raise self.fail(
                update,
                "UPDATE needs SET ATTRIBUTES { … } and/or SET METADATA { … }.",
                f"Write UPDATE ?{update.target} SET ATTRIBUTES {{ key: value }} WHERE {{ … }}.",
            )
        for body in (update.set_attributes, update.set_metadata):
            if body is not None:
                self.object_keys(body, identifiers=True)
                for _, value in body.entries:
                    self.update_value(value, update.target)
        self.where(update.where)
        self.limit(update.limit)

    def update_value(self, value: Any, target: str, numeric: bool = False) -> None:
        if isinstance(value, ast.DotPath):
            if value.var != target:
                raise self.fail(
                    value,
                    f"An update expression can only read ?{target} itself, not ?{value.var}.",
                    f"Each element's new value must come from its own state: use ?{target}.attributes.… / ?{target}.metadata.…, a literal or a :placeholder.",
                )
            self.dot_path(value)
        elif isinstance(value, ast.UpdateCall):
            arity = UPDATE_ARITY[value.func]
            if len(value.args) != arity:
                raise self.fail(
                    value, f"{value.func} takes {arity} arguments, got {len(value.args)}.", "ADD(a, b), MUL(a, b), CLAMP(x, lo, hi), COALESCE(x, default)."
                )
            for index, arg in enumerate(value.args):
                self.update_value(arg, target, numeric=value.func != "COALESCE" or index == 0)
        elif (
            numeric
            and not isinstance(value, ast.Placeholder)
            and not (isinstance(value, ast.Literal) and isinstance(value.value, (int, float)) and not isinstance(value.value, bool))
        ):
            raise self.fail(
                value,
                f"Update expression operands must be numeric, got {_shown(value)}.",
                f"Use number literals, :placeholders, ?{target}.… paths or nested ADD/MUL/CLAMP/COALESCE.",
            )
        else:
            self.plain_value(value)

    def cmd_MergeConcept(self, merge: ast.MergeConcept) -> None:
        self.where(merge.where)

    def cmd_DeleteAttributes(self, delete: Any) -> None:
        seen: set[str] = set()
        for key, key_span in zip(delete.keys, delete.key_spans):
            check_identifier(self.text, key_span.start, key, "attribute or metadata key")
            if key in seen:
                raise error_at(self.text, key_span.start, f"Duplicate key `{key}`.", "List each key once.")
            seen.add(key)
        self.where(delete.where)

    cmd_DeleteMetadata = cmd_DeleteAttributes

    def cmd_DeletePropositions(self, delete: Any) -> None:
        self.where(delete.where)

    cmd_DeleteConcept = cmd_DeletePropositions

    # -- META ----------------------------------------------------------------
    def cmd_DescribePrimer(self, describe_: Any) -> None:
        pass

    cmd_DescribeDomains = cmd_DescribePrimer

    def cmd_DescribeConceptTypes(self, describe_: Any) -> None:
        self.limit(describe_.limit)
        self.string_value(describe_.cursor, "CURSOR")

    cmd_DescribePropositionTypes = cmd_DescribeConceptTypes

    def cmd_DescribeConceptType(self, describe_: Any) -> None:
        self.string_value(describe_.name, "DESCRIBE … TYPE")

    cmd_DescribePropositionType = cmd_DescribeConceptType

    def cmd_Search(self, search: ast.Search) -> None:
        self.string_value(search.term, f"SEARCH {search.target}")
        self.string_value(search.with_type, "WITH TYPE")
        self.string_value(search.mode, "MODE")
        if isinstance(search.mode, ast.Literal) and search.mode.value not in SEARCH_MODES:
            raise self.fail(search.mode, f"Unknown search MODE {search.mode.value!r}.", 'MODE is "keyword", "semantic" or "hybrid".')
        self.threshold(search.threshold)
        self.limit(search.limit)

    def threshold(self, value: ast.Value | None) -> None:
        if value is None or isinstance(value, ast.Placeholder):
            return
        literal = value.value if isinstance(value, ast.Literal) else None
        if isinstance(literal, bool) or not isinstance(literal, (int, float)) or not 0 <= literal <= 1:
            raise self.fail(value, f"THRESHOLD expects a number between 0 and 1, got {_shown(value)}.", "Write THRESHOLD 0.75 (a relevance score in [0, 1]).")

    def cmd_Export(self, export: ast.Export) -> None:
        self.where(export.where)
        self.limit(export.limit)
        self.string_value(export.cursor, "CURSOR")
