"""KIP text → typed AST (``kip2cypher.syntax.ast``).

The grammar lives in ``grammar/kip.peg``; ``kip2cypher.syntax.grammars`` compiles it
once as written (``GRAMMAR``, the reference) and once as the fast grammar every
text goes through first (``FAST_GRAMMAR``: folded tokens, scanned values and
blocks). A ``NodeVisitor`` turns either parse tree straight into AST nodes with
spans; the AST is then checked by ``validate.validate`` before anyone sees it.
Any failure of the fast path is re-run on the reference grammar, which reports
it: every failure is a ``KipError`` with a 1-based line/column, the offending
line with a caret, what was expected there in words, and a repair hint.

Input size and bracket nesting are bounded *before* parsimonious runs, so a
hostile input can cost neither a RecursionError nor unbounded time.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
import sys
import threading
from collections import defaultdict
from collections.abc import Iterable
from contextlib import contextmanager
from itertools import accumulate
from typing import Any

from parsimonious.exceptions import ParseError
from parsimonious.expressions import Compound, OneOf, Quantifier, Regex, Sequence
from parsimonious.grammar import Grammar
from parsimonious.nodes import Node, NodeVisitor

from ..caching import TextCache, text_cache
from ..errors import INVALID_SYNTAX, RESOURCE_EXHAUSTED, KipError, line_column, snippet
from . import ast, validate
from .grammars import CONSTANTS, FAST_GRAMMAR, GRAMMAR, ScannedNode, dot_path, identifier, number_literal, string_literal
from .grammars import TOKENS as _TOKENS

# Blanks and comments before the first word, as a possessive loop: with a lazy comment body in a
# backtracking loop, ``"/**/" * 40 + "/*"`` took hours inside one C call (holding the GIL).
_FIRST_WORD = re.compile(r"(?:\s+|//[^\n]*|/\*(?:[^*]|\*(?!/))*\*/)*+([A-Za-z]+)")


def first_word(text: str) -> str:
    """The first word of a command (upper-cased), skipping blanks and comments."""
    match = _FIRST_WORD.match(text or "")
    return match.group(1).upper() if match else ""


# ------------------------------------------------------------------ bounds
#: Largest command text accepted, in UTF-8 bytes (KIP_4002 beyond).
MAX_INPUT_BYTES = 256 * 1024
#: Deepest nesting of ``{`` ``[`` ``(`` accepted (KIP_4002 beyond).
MAX_NESTING_DEPTH = 64
#: Parsed commands kept by the text-keyed LRU cache, and the characters of their texts
#: (an AST costs 20–40 bytes per character: ≈ 40 MB at the bound).
CACHE_SIZE = 2048
CACHE_CHARS = 1 << 20
#: Texts longer than this enter the parse cache only when they come again (``_parse_large``; the
#: compiler does not cache their plans at all).
CACHEABLE_CHARS = 64 * 1024
#: The last large texts parsed once, with their ASTs (``_parse_large``): an application streaming
#: one parameterized capsule sends the same text with every batch, and its second batch finds the
#: first batch's parse here. Two 256 KiB texts at most (≈ 20 MB of AST).
RECENT_LARGE = 2

# Parsimonious and the visitor recurse once per grammar level: at the nesting
# bound the deepest inputs need ~800 frames on top of the caller's stack, too
# close to Python's default limit of 1000. Python 3.11 runs Python-to-Python
# calls without growing the C stack, so raising the soft limit is safe; it is
# raised only while a parse runs (``_deep_recursion``), never at import.
_REQUIRED_RECURSION = 5_000
_recursion_lock = threading.Lock()
_recursion_users = 0
_recursion_saved = 0

_SENTINEL = "\x00"  # matched by the grammar's END rule
_BRACKET_RE = re.compile(r'"(?:[^"\\\n]|\\.)*"?|//[^\n]*|/\*[\s\S]*?(?:\*/|$)|[\[\]{}()]')
_OPENERS = {"{": "}", "[": "]", "(": ")"}
# The same strings and comments as _BRACKET_RE skips (strings as an unrolled loop), and a bracket.
_SKIPPED_RE = re.compile(r'"[^"\\\n]*(?:\\.[^"\\\n]*)*"?|//[^\n]*|/\*[\s\S]*?(?:\*/|$)')
_ONE_BRACKET_RE = re.compile(r"[\[\]{}()]")
_DEPTH_STEP = {"{": 1, "[": 1, "(": 1, "}": -1, "]": -1, ")": -1}


# ------------------------------------------------------------------ public API
def parse(text: str, *, max_bytes: int = MAX_INPUT_BYTES, max_depth: int = MAX_NESTING_DEPTH) -> ast.Command:
    """Parse and validate exactly one KIP command (consecutive UPSERTs form one ``Capsule``).

    ``max_bytes`` / ``max_depth`` tighten the built-in bounds (a Nexus passes its ``Settings``);
    they are checked once, before the recursive parser sees the text. Results are cached by
    text and bounds (ASTs are immutable), so re-parsing is a dict lookup.
    """
    _check_type(text)
    bounds = (min(max_bytes, MAX_INPUT_BYTES), min(max_depth, MAX_NESTING_DEPTH))
    if len(text) > CACHEABLE_CHARS:
        return _parse_large(text, bounds)
    return _parse_single(text, bounds)


def parse_script(text: str) -> tuple[ast.Command, ...]:
    """Parse a ``.kip`` script: commands one after another, e.g. a FIND then an UPSERT."""
    _check_type(text)
    if len(text) > CACHEABLE_CHARS:
        return tuple(_parse(text, "script"))
    return _parse_script(text)


def clear_cache() -> None:
    """Forget cached parses (benchmarks measure cold parses with it)."""
    _parse_single.cache_clear()
    _parse_script.cache_clear()
    _LARGE_RECENT.clear()


def _check_type(text: Any) -> None:
    if not isinstance(text, str):
        raise KipError(INVALID_SYNTAX, f"A KIP command must be a string, got {type(text).__name__}.")


#: The last ``RECENT_LARGE`` texts over ``CACHEABLE_CHARS`` parsed once, and their ASTs.
_LARGE_RECENT = TextCache(RECENT_LARGE * MAX_INPUT_BYTES, RECENT_LARGE)


def _parse_large(text: str, bounds: tuple[int, int]) -> ast.Command:
    """A large text enters the parse cache when it comes again: distinct large texts (literal
    capsules) are never repeated, and caching each would evict the small commands. Its first parse
    waits in ``_LARGE_RECENT``, so the second sighting is not parsed again (a 100 KB capsule parses
    in ≈ 50 ms; the bench load sends 17 distinct texts in 94 batches: 17 parses, not 30)."""
    key = (text, bounds)
    cached = _parse_single.cache_get(key)
    if cached is not None:
        return cached
    first = _LARGE_RECENT.get(key)
    if first is not None:
        _parse_single.cache_put(key, first)
        return first
    command = _parse(text, "single", bounds)[0]
    _LARGE_RECENT.put(key, command, len(text))
    return command


@text_cache(CACHE_CHARS, CACHE_SIZE)
def _parse_single(text: str, bounds: tuple[int, int]) -> ast.Command:
    return _parse(text, "single", bounds)[0]


@text_cache(CACHE_CHARS // 8, CACHE_SIZE // 8)
def _parse_script(text: str) -> tuple[ast.Command, ...]:
    return tuple(_parse(text, "script"))


@contextmanager
def _deep_recursion():
    """Raise the recursion limit to ``_REQUIRED_RECURSION`` while any thread parses; restore it after the last."""
    global _recursion_users, _recursion_saved
    with _recursion_lock:
        if _recursion_users == 0:
            _recursion_saved = sys.getrecursionlimit()
            if _recursion_saved < _REQUIRED_RECURSION:
                sys.setrecursionlimit(_REQUIRED_RECURSION)
        _recursion_users += 1
    try:
        yield
    finally:
        with _recursion_lock:
            _recursion_users -= 1
            if _recursion_users == 0:
                sys.setrecursionlimit(_recursion_saved)


def _parse(text: str, rule: str, bounds: tuple[int, int] = (MAX_INPUT_BYTES, MAX_NESTING_DEPTH), grammar: Grammar = FAST_GRAMMAR) -> list[ast.Command]:
    """Parse with the fast grammar; any failure is re-run on the reference grammar, which reports it.

    (``grammar=GRAMMAR`` parses with the reference grammar alone: tests compare both.)
    """
    check_bounds(text, *bounds)
    source = text + _SENTINEL
    commands = None
    with _deep_recursion():
        if grammar is not GRAMMAR:
            try:
                commands = _Builder(text).visit(grammar[rule].parse(source))
            except (ParseError, KipError):
                pass  # the reference path explains every failure, in its own order
        if commands is None:
            log = _FailureLog(source)
            tree = GRAMMAR[rule].match_core(source, 0, defaultdict(dict), log)
            if tree is None:
                raise _syntax_error(source, rule, log)
            commands = _Builder(text).visit(tree)
    if rule == "single":
        commands = [commands]
    for command in commands:
        validate.validate(command, text)
    return commands


# ------------------------------------------------------------------ bounds check
def check_bounds(text: str, max_bytes: int = MAX_INPUT_BYTES, max_depth: int = MAX_NESTING_DEPTH) -> None:
    """Reject oversized or over-nested text cheaply, before the recursive parser sees it."""
    check_size(text, max_bytes)
    nul = text.find(_SENTINEL)
    if nul >= 0:
        raise validate.error_at(text, nul, "A NUL character is not allowed in KIP text.", "Remove the NUL (\\x00) character.")
    depth = _max_depth(text, max_depth)
    if depth is not None and depth <= max_depth:
        return
    depth = 0  # too deep, or closers without openers: scan exactly (and find where it gets too deep)
    for match in _BRACKET_RE.finditer(text):
        char = match.group()
        if char in _OPENERS:
            depth += 1
            if depth > max_depth:
                line, column = line_column(text, match.start())
                raise KipError(
                    RESOURCE_EXHAUSTED,
                    f"Brackets are nested deeper than {max_depth} levels at line {line}, column {column}.\n{snippet(text, match.start())}",
                    "Flatten the structure: nest objects, lists, expressions and propositions less deeply.",
                    line=line,
                    column=column,
                )
        elif len(char) == 1:
            depth = max(depth - 1, 0)


def check_size(text: str, max_bytes: int = MAX_INPUT_BYTES) -> None:
    """KIP_4002 when ``text`` is longer than ``max_bytes`` in UTF-8 (also run by a plan template's
    fill, which skips the parse: ``lower.templates``)."""
    if len(text) > max_bytes or (len(text) * 4 > max_bytes and len(text.encode("utf-8", "surrogatepass")) > max_bytes):
        kib = f" ({max_bytes // 1024} KiB)" if max_bytes >= 1024 else ""
        raise KipError(
            RESOURCE_EXHAUSTED,
            f"The command text exceeds the limit of {max_bytes} bytes{kib}.",
            "Split the work into several smaller commands (e.g. one UPSERT per capsule, batched via `commands`); pass large values as parameters.",
        )


def _max_depth(text: str, max_depth: int) -> int | None:
    """Deepest bracket nesting outside strings and comments, computed in C-level passes.

    ``None`` when a closer comes without an opener (the exact scan clamps depth at 0 there).
    """
    if text.count("{") + text.count("[") + text.count("(") <= max_depth:
        return 0  # cannot be too deep
    brackets = _ONE_BRACKET_RE.findall(_SKIPPED_RE.sub("", text))
    depths = list(accumulate(map(_DEPTH_STEP.__getitem__, brackets)))
    return max(depths, default=0) if min(depths, default=0) >= 0 else None


# ------------------------------------------------------------------ tree → AST
def _token(node: Node) -> str:
    """The text of a token node without its trailing whitespace (reference or fast tree)."""
    return node.children[0].text if node.children else node.match.group(1)


def _token_end(node: Node) -> int:
    return node.children[0].end if node.children else node.match.end(1)


def _token_span(node: Node) -> ast.Span:
    return ast.Span(node.start, _token_end(node))


def _opt(items: list) -> Any:
    """Unwrap an optional (``x?``) visit result."""
    return items[0] if items else None


def _predicate_name(atom: Any) -> ast.PredicateName:
    """A ``predicate_name`` (quoted string or placeholder) as the AST keeps it."""
    return atom.value if isinstance(atom, ast.Literal) else atom


def _joined(first: Any, rest: Iterable[list]) -> list:
    """Items of ``x (SEP x)*``: the first plus the last element of every repetition."""
    return [first, *(group[-1] for group in rest)]


class _Builder(NodeVisitor):
    """Builds AST nodes bottom-up from a tree of either grammar.

    Tokens are converted without visiting their children; a scanned node (fast
    grammar) already holds its AST.
    """

    unwrapped_exceptions = (KipError,)

    def __init__(self, text: str) -> None:
        self.text = text

    # -- dispatch ---------------------------------------------------------
    def visit(self, node: Node) -> Any:
        if type(node) is ScannedNode:
            return node.value
        name = node.expr.name
        method = _VISITS.get(name)
        if name in _TOKENS:
            return method(self, node) if method else node
        children = [self.visit(child) for child in node.children]
        if method is not None:
            return method(self, node, children)
        if name and isinstance(node.expr, OneOf):
            return children[0]  # named alternatives pass their choice through
        return children

    def span(self, node: Node) -> ast.Span:
        """Node span without the whitespace and comments its last token swallowed."""
        last = node
        while True:
            if type(last) is ScannedNode:
                return ast.Span(node.start, last.content_end)
            if last.expr.name in _TOKENS:
                return ast.Span(node.start, _token_end(last))
            last = next((child for child in reversed(last.children) if child.end > child.start), None)
            if last is None:
                return ast.Span(node.start, node.start)

    # -- entry points -----------------------------------------------------
    def visit_single(self, node, children):
        return children[1]

    def visit_script(self, node, children):
        return children[1]

    # -- tokens -----------------------------------------------------------
    def visit_string(self, node):
        return string_literal(self.text, _token(node), node.start, _token_end(node))

    def visit_number(self, node):
        return number_literal(self.text, _token(node), node.start, _token_end(node))

    def visit_CONSTANT(self, node):
        return ast.Literal(CONSTANTS[_token(node)], _token_span(node))

    def visit_placeholder(self, node):
        return ast.Placeholder(identifier(self.text, _token(node)[1:], node.start + 1, "placeholder name"), _token_span(node))

    def visit_var(self, node):
        return ast.Var(identifier(self.text, _token(node)[1:], node.start + 1, "variable name"), _token_span(node))

    def visit_dot_path(self, node):
        return dot_path(self.text, _token(node), node.start, _token_end(node))

    # -- values (the fast grammar scans `value` and `object` whole) --------
    def visit_key(self, node, children):
        """``(name, span)`` of an object key; unquoted keys must be identifiers."""
        key = children[0]
        if isinstance(key, ast.Literal):
            return key.value, key.span
        return identifier(self.text, _token(key), key.start, "object key"), _token_span(key)

    def visit_entry(self, node, children):
        (name, key_span), _, value = children
        return name, key_span, value

    def visit_object(self, node, children):
        body = _opt(children[1])
        entries = _joined(body[0], body[1]) if body else []
        return ast.ObjectLit(
            tuple((name, value) for name, _, value in entries),
            self.span(node),
            key_spans=tuple(key_span for _, key_span, _ in entries),
        )

    def visit_list(self, node, children):
        body = _opt(children[1])
        return ast.ListLit(tuple(_joined(body[0], body[1])) if body else (), self.span(node))

    def visit_update_call(self, node, children):
        return ast.UpdateCall(_token(children[0]), tuple(_joined(children[2], children[3])), self.span(node))

    def visit_key_set(self, node, children):
        return _joined(children[1], children[2])

    # -- KQL --------------------------------------------------------------
    def visit_find(self, node, children):
        _, _, projections, _, where, order_by, limit, cursor = children
        return ast.Find(tuple(projections), where, tuple(_opt(order_by) or ()), _opt(limit), _opt(cursor), self.span(node))

    def visit_projections(self, node, children):
        return _joined(*children)

    def visit_aggregate(self, node, children):
        func, _, distinct, arg, _ = children
        return ast.Aggregate(_token(func), arg, bool(distinct), self.span(node))

    def visit_order_by(self, node, children):
        return _joined(children[2], children[3])

    def visit_order_key(self, node, children):
        expr, direction = children
        descending = bool(direction) and _token(direction[0]) == "DESC"
        return ast.OrderKey(expr, descending, self.span(node))

    def _last(self, node, children):
        """Clauses shaped ``KEYWORD… thing``: the thing."""
        return children[-1]

    visit_limit = visit_cursor = visit_where_block = _last
    visit_with_type = visit_mode = visit_threshold = visit_expect_version = _last
    visit_set_attributes = visit_set_metadata = visit_with_metadata = _last

    def visit_group(self, node, children):
        return tuple(children[1])

    def visit_not_block(self, node, children):
        return ast.NotBlock(children[1], self.span(node))

    def visit_optional_block(self, node, children):
        return ast.OptionalBlock(children[1], self.span(node))

    def visit_union_block(self, node, children):
        return ast.UnionBlock(children[1], self.span(node))

    def visit_concept_clause(self, node, children):
        var = _opt(children[0])
        return validate.concept_clause(self.text, var.name if var else None, children[1], self.span(node))

    def visit_proposition_clause(self, node, children):
        var, _, body, _ = children
        var = _opt(var)
        return ast.PropositionClause(var.name if var else None, span=self.span(node), **body)

    def visit_proposition_id(self, node, children):
        return {"id": children[2]}

    def visit_triple(self, node, children):
        subject, _, predicate, _, obj = children
        return {"subject": subject, "predicate": predicate, "object": obj}

    def visit_predicate(self, node, children):
        atoms = _joined(children[0], children[1])
        quantifier = _opt(children[2])
        validate.check_predicate_atoms(self.text, atoms, quantifier)
        if isinstance(atoms[0], ast.Var):
            return atoms[0]
        return ast.PredicatePattern(tuple(_predicate_name(atom) for atom in atoms), quantifier, self.span(node))

    def visit_quantifier(self, node, children):
        _, low, upper, _ = children
        low = self.integer(low)
        if not upper:
            high: int | None = low
        else:
            bound = upper[0][1]
            high = self.integer(bound[0]) if bound else None
        return ast.Quantifier(low, high, self.span(node))

    def integer(self, node) -> int:
        """An INTEGER token's value (KIP_1001 beyond what int() converts, like any number)."""
        return number_literal(self.text, _token(node), node.start, _token_end(node)).value

    def visit_filter(self, node, children):
        return ast.Filter(children[2], self.span(node))

    def _fold(self, op: str, children: list) -> Any:
        """``x (OP x)*`` as a *balanced* tree of BoolOp nodes over its operands, a parenthesised
        chain of the same operator included (``&&`` and ``||`` are associative): its depth is
        logarithmic in the number of operands, so no walker over the AST recurses thousands of
        levels deep on a long chain (a FILTER of 3,000 ``||`` raised RecursionError)."""
        operands = [leaf for child in (children[0], *(right for _, right in children[1])) for leaf in ast.operands(child, op)]
        return ast.balanced(op, operands)

    def visit_or_expr(self, node, children):
        return self._fold("||", children)

    def visit_and_expr(self, node, children):
        return self._fold("&&", children)

    def visit_comparison(self, node, children):
        left, rest = children
        if not rest:
            return left
        op, right = rest[0]
        return ast.Comparison(_token(op), left, right, self.span(node))

    def visit_unary(self, node, children):
        bang, operand = children
        return ast.NotExpr(operand, self.span(node)) if bang else operand

    def visit_paren_expr(self, node, children):
        return children[1]

    def visit_function_call(self, node, children):
        return ast.FuncCall(_token(children[0]), tuple(_joined(children[2], children[3])), self.span(node))

    # -- KML --------------------------------------------------------------
    def visit_capsule(self, node, children):
        return ast.Capsule(tuple(children), self.span(node))

    def visit_upsert(self, node, children):
        _, _, blocks, _, metadata = children
        return ast.Upsert(tuple(blocks), _opt(metadata), self.span(node))

    def visit_concept_block(self, node, children):
        _, handle, _, identity, version, sets, _, metadata = children
        handle = _opt(handle)
        attributes, propositions = validate.concept_sets(self.text, zip(sets, (n.start for n in node.children[5])))
        return ast.ConceptBlock(
            handle.name if handle else None,
            validate.concept_clause(self.text, None, identity, identity.span),
            _opt(version),
            attributes,
            propositions,
            _opt(metadata),
            self.span(node),
        )

    def visit_proposition_block(self, node, children):
        _, handle, _, identity, version, attributes, _, metadata = children
        handle = _opt(handle)
        return ast.PropositionBlock(handle.name if handle else None, identity, _opt(version), _opt(attributes), _opt(metadata), self.span(node))

    def visit_proposition_identity(self, node, children):
        return ast.PropositionClause(None, span=self.span(node), **children[1])

    def visit_set_propositions(self, node, children):
        return tuple(children[3])

    def visit_proposition_entry(self, node, children):
        _, predicate, _, target, _, metadata, _ = children
        return ast.PropositionEntry(_predicate_name(predicate), target, _opt(metadata), self.span(node))

    def visit_update(self, node, children):
        _, target, attributes, metadata, where, limit = children
        return ast.Update(target.name, _assignments(_opt(attributes)), _assignments(_opt(metadata)), where, _opt(limit), self.span(node))

    def visit_merge(self, node, children):
        _, _, source, _, target, where = children
        return ast.MergeConcept(source.name, target.name, where, self.span(node), source.span, target.span)

    def visit_delete(self, node, children):
        return dataclasses.replace(children[1], span=self.span(node))

    def _delete_keys(self, cls, children):
        _, keys, _, target, where = children
        return cls(tuple(name for name, _ in keys), target.name, where, key_spans=tuple(span for _, span in keys))

    def visit_delete_attributes(self, node, children):
        return self._delete_keys(ast.DeleteAttributes, children)

    def visit_delete_metadata(self, node, children):
        return self._delete_keys(ast.DeleteMetadata, children)

    def visit_delete_propositions(self, node, children):
        return ast.DeletePropositions(children[1].name, children[2])

    def visit_delete_concept(self, node, children):
        return ast.DeleteConcept(children[1].name, children[3])

    # -- META -------------------------------------------------------------
    def visit_describe(self, node, children):
        target = children[1]
        if isinstance(target, Node):
            target = {"PRIMER": ast.DescribePrimer, "DOMAINS": ast.DescribeDomains}[_token(target)]()
        return dataclasses.replace(target, span=self.span(node))

    def visit_concept_types(self, node, children):
        return ast.DescribeConceptTypes(_opt(children[2]), _opt(children[3]))

    def visit_proposition_types(self, node, children):
        return ast.DescribePropositionTypes(_opt(children[2]), _opt(children[3]))

    def visit_concept_type(self, node, children):
        return ast.DescribeConceptType(children[2])

    def visit_proposition_type(self, node, children):
        return ast.DescribePropositionType(children[2])

    def visit_search(self, node, children):
        _, target, term, with_type, mode, threshold, limit = children
        return ast.Search(_token(target), term, _opt(with_type), _opt(mode), _opt(threshold), _opt(limit), self.span(node))

    def visit_export(self, node, children):
        _, target, where, limit, cursor = children
        return ast.Export(target.name, where, _opt(limit), _opt(cursor), self.span(node))


#: ``_Builder``'s ``visit_<rule>`` functions by rule name: looked up once, not by name per node.
_VISITS = {attr.removeprefix("visit_"): getattr(_Builder, attr) for attr in dir(_Builder) if attr.startswith("visit_")}


def _assignments(obj: ast.ObjectLit | None) -> ast.Assignments | None:
    """UPDATE's SET bodies are parsed as objects and re-typed: their values may be update expressions."""
    if obj is None:
        return None
    return ast.Assignments(obj.entries, obj.span, key_spans=obj.key_spans)


# ------------------------------------------------------------------ syntax errors
#: What a failing rule expected, in words. Rules not listed are transparent: their
#: listed sub-rules speak for them. Only the outermost listed rules failing at the
#: furthest offset are reported (see ``_LEADING``).
EXPECTED = {
    "command": f"a command ({ast.listing(ast.command_words(), 'or')})",
    "END": "the end of the command",
    "projection": "a variable, dot path or aggregation such as COUNT(?x)",
    "aggregate_arg": "a variable or dot path",
    "order_by": "ORDER BY",
    "order_key": "a sort key (variable, dot path or aggregation)",
    "DIRECTION": "ASC or DESC",
    "limit": "LIMIT",
    "where_block": "WHERE { … }",
    "cursor": "CURSOR",
    "pattern_clause": "a pattern clause",
    "filter": "FILTER",
    "not_block": "NOT",
    "optional_block": "OPTIONAL",
    "union_block": "UNION",
    "proposition_body": '`id: …` or `subject, "predicate", object`',
    "endpoint": "a subject/object (variable, `{…}` concept clause or `(…)` proposition clause)",
    "predicate": "a predicate (quoted name, :placeholder or variable)",
    "predicate_name": "a predicate (quoted name or :placeholder)",
    "quantifier": "a path quantifier such as {1,3}",
    "PIPE": "`|`",
    "or_expr": "a boolean expression",
    "FUNCTION": "a FILTER function (IN, IS_NULL, IS_NOT_NULL, CONTAINS, STARTS_WITH, ENDS_WITH, REGEX)",
    "operand": "a variable, dot path or value",
    "COMPARE": "a comparison operator (== != < > <= >=)",
    "AND": "`&&`",
    "OR": "`||`",
    "value": "a value (string, number, true/false/null, list, object or :placeholder)",
    "object": "an object `{…}`",
    "entry": "a `key: value` pair",
    "key": "a key",
    "var": "a variable such as ?x",
    "string": "a quoted string",
    "INTEGER": "a non-negative integer",
    "upsert_block": "a CONCEPT or PROPOSITION block",
    "proposition_identity": "a proposition identity `(…)`",
    "expect_version": "EXPECT VERSION",
    "set_attributes": "SET ATTRIBUTES",
    "set_metadata": "SET METADATA",
    "set_propositions": "SET PROPOSITIONS",
    "proposition_entry": 'a `("predicate", target)` entry',
    "with_metadata": "WITH METADATA",
    "delete_target": "ATTRIBUTES, METADATA, PROPOSITIONS or CONCEPT",
    "describe_target": 'PRIMER, DOMAINS, CONCEPT TYPES, CONCEPT TYPE "…", PROPOSITION TYPES or PROPOSITION TYPE "…"',
    "SEARCH_TARGET": "CONCEPT or PROPOSITION",
    "with_type": "WITH TYPE",
    "mode": "MODE",
    "threshold": "THRESHOLD",
    "LBRACE": "`{`",
    "RBRACE": "`}`",
    "LPAREN": "`(`",
    "RPAREN": "`)`",
    "LBRACKET": "`[`",
    "RBRACKET": "`]`",
    "COMMA": "`,`",
    "COLON": "`:`",
}


def _nullable(expr, memo: dict[int, bool]) -> bool:
    """Can ``expr`` match the empty string? (Recursive rules count as non-nullable while in progress.)"""
    key = id(expr)
    if key not in memo:
        memo[key] = False
        if isinstance(expr, Regex):
            result = expr.re.match("") is not None
        elif isinstance(expr, Sequence):
            result = all(_nullable(m, memo) for m in expr.members)
        elif isinstance(expr, OneOf):
            result = any(_nullable(m, memo) for m in expr.members)
        elif isinstance(expr, Quantifier):
            result = expr.min == 0 or _nullable(expr.members[0], memo)
        elif isinstance(expr, Compound):  # lookahead
            result = True
        else:
            result = getattr(expr, "literal", None) == ""
        memo[key] = result
    return memo[key]


def _starters(expr, memo: dict[int, bool]) -> list:
    """Sub-expressions that may be tried at the very offset where ``expr`` starts."""
    if isinstance(expr, Sequence):
        out = []
        for member in expr.members:
            out.append(member)
            if not _nullable(member, memo):
                break
        return out
    if isinstance(expr, Compound):
        return list(expr.members)
    return []


def _leading_rules(grammar: Grammar) -> dict[str, frozenset[str]]:
    """For every rule, the named rules it may try at its own start offset (transitively).

    A failure of rule B at offset p is already explained by a failure of rule A at p
    when B is in A's leading set, so only A is worth reporting.
    """
    memo: dict[int, bool] = {}
    leading = {}
    for name, expr in grammar.items():
        seen: set[int] = {id(expr)}
        names: set[str] = set()
        stack = _starters(expr, memo)
        while stack:
            sub = stack.pop()
            if id(sub) in seen:
                continue
            seen.add(id(sub))
            if sub.name:
                names.add(sub.name)
            stack.extend(_starters(sub, memo))
        leading[name] = frozenset(names)
    return leading


def _keywords_by_token(grammar: Grammar) -> dict[str, frozenset[str]]:
    """The upper-case keywords each keyword token accepts (for case and typo hints)."""
    keywords = {}
    for name in _TOKENS:
        member = grammar[name].members[0]
        if name.isupper() and isinstance(member, Regex):
            keywords[name] = frozenset(re.findall(r"[A-Z][A-Z_]+", member.re.pattern))
    return keywords


_LEADING = _leading_rules(GRAMMAR)
_KEYWORDS_BY_TOKEN = _keywords_by_token(GRAMMAR)
_KEYWORDS = frozenset().union(*_KEYWORDS_BY_TOKEN.values())
_COMMAND_KEYWORDS = frozenset().union(*(_KEYWORDS_BY_TOKEN.get(name, ()) for name in _LEADING["command"]))
_STRING_RE = re.compile(r'"(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"')
_FOUND_RE = re.compile(r'-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?\w*|\w+|"[^"\n]{0,24}"?|/\*|[\s\S]')


class _FailureLog(ParseError):
    """A ParseError that remembers every named rule failing at the furthest offset.

    Parsimonious sets ``error.expr`` and then ``error.pos`` for each failure at or
    beyond the furthest offset so far; intercepting ``pos`` collects them all.
    """

    def __init__(self, text: str) -> None:
        self.expr = None
        self._pos = -1
        self.names: list[str] = []
        super().__init__(text)

    @property
    def pos(self) -> int:
        return self._pos

    @pos.setter
    def pos(self, value: int) -> None:
        if value > self._pos:
            self.names = []
        self._pos = value
        name = getattr(self.expr, "name", "")
        if name and name not in self.names:
            self.names.append(name)


def _syntax_error(source: str, rule: str, log: _FailureLog) -> KipError:
    """Explain the furthest failure of a parse that recorded its failures in ``log``."""
    text = source[:-1]
    offset = min(max(log.pos, 0), len(text))
    expected = _expected_words(log.names)
    found = _found(text, offset)
    line, column = line_column(text, offset)
    message = f"Invalid syntax at line {line}, column {column}: expected {expected}, but found {found}.\n{snippet(text, offset)}"
    return KipError(INVALID_SYNTAX, message, _hint(text, offset, log.names, rule), line=line, column=column)


def _expected_words(names: list[str]) -> str:
    worded = [name for name in names if name in EXPECTED]
    outermost = [name for name in worded if not any(name in _LEADING[other] for other in worded if other != name)]
    words = list(dict.fromkeys(EXPECTED[name] for name in outermost)) or names or ["something else"]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def _found(text: str, offset: int) -> str:
    if offset >= len(text):
        return "the end of the command"
    token = _FOUND_RE.match(text, offset).group()
    return f"`{token}`" if token.isprintable() else f"the character U+{ord(token[0]):04X}"


def _hint(text: str, offset: int, names: list[str], rule: str) -> str:
    """The most specific repair advice for a syntax error at ``offset``."""
    word = _FOUND_RE.match(text, offset).group() if offset < len(text) else ""
    tried = set(names).union(*(_LEADING[name] for name in names))
    keywords = sorted(frozenset().union(*(_KEYWORDS_BY_TOKEN.get(name, ()) for name in tried)))
    if word.upper() in _KEYWORDS and word != word.upper():
        return f"KIP keywords are upper-case and case-sensitive: write `{word.upper()}`, not `{word}`."
    if "DETACH" in names:
        return "DETACH is mandatory in DELETE CONCEPT as a safety confirmation: write `DELETE CONCEPT ?x DETACH WHERE { … }`."
    guess = difflib.get_close_matches(word.upper(), keywords, n=1, cutoff=0.7) if word[:1].isalpha() else []
    if guess:
        return f"Did you mean `{guess[0]}`? Keywords must be spelled exactly, in upper case."
    if word.startswith('"') and not _STRING_RE.match(text, offset):
        return 'This string is not valid JSON: close it with `"` on the same line, escape inner quotes as \\" and line breaks as \\n.'
    if word == "'":
        return 'Strings use double quotes: "like this".'
    if word == "=" and "COMPARE" in tried:
        return "Use `==` to test equality."
    if word in ("and", "AND", "or", "OR", "&", "|") and "AND" in tried:
        return "FILTER uses `&&` for AND, `||` for OR and `!` for NOT."
    if word == "/*":
        return "Close the block comment with `*/`."
    if word == ";":
        return "KIP commands have no `;` terminator; send several commands through the batch `commands` array."
    if rule == "single" and "END" in names and word in _COMMAND_KEYWORDS:
        return "A command text holds one command (consecutive UPSERT statements form one); send several commands through the batch `commands` array."
    function = _function_hint(text, offset, word)
    if function:
        return function
    unclosed = _unclosed_bracket(text)
    if offset >= len(text) and unclosed is not None:
        line, column = line_column(text, unclosed)
        return f"The command ends early: the `{text[unclosed]}` at line {line}, column {column} is never closed."
    return f"Check bracket matching and keyword spelling; {_SHAPES.get(first_word(text), _SHAPES['FIND'])}. Values must be valid JSON."


#: The clause order of each command, for the generic hint of a syntax error.
_SHAPES = {
    "FIND": 'a FIND reads FIND(?x, …) WHERE { … } [ORDER BY …] [LIMIT n] [CURSOR "…"]',
    "UPSERT": (
        'an UPSERT reads UPSERT { CONCEPT ?h { {type: "T", name: "N"} [SET ATTRIBUTES { … }] [SET PROPOSITIONS { ("predicate", target) }] } '
        'PROPOSITION ?p { (subject, "predicate", object) } } [WITH METADATA { … }]'
    ),
    "UPDATE": "an UPDATE reads UPDATE ?x [SET ATTRIBUTES { key: value }] [SET METADATA { … }] WHERE { … } [LIMIT n]",
    "MERGE": "a MERGE reads MERGE CONCEPT ?source INTO ?target WHERE { … }",
    "DELETE": (
        "a DELETE reads DELETE CONCEPT ?x DETACH WHERE { … }, DELETE PROPOSITIONS ?l WHERE { … }, "
        'DELETE ATTRIBUTES {"key"} FROM ?x WHERE { … } or DELETE METADATA {"key"} FROM ?x WHERE { … }'
    ),
    "DESCRIBE": (
        'a DESCRIBE reads DESCRIBE PRIMER, DESCRIBE DOMAINS, DESCRIBE CONCEPT TYPES [LIMIT n] [CURSOR c], DESCRIBE CONCEPT TYPE "T", '
        'DESCRIBE PROPOSITION TYPES or DESCRIBE PROPOSITION TYPE "p"'
    ),
    "SEARCH": 'a SEARCH reads SEARCH CONCEPT|PROPOSITION "term" [WITH TYPE "T"] [MODE "keyword"|"semantic"|"hybrid"] [THRESHOLD 0.5] [LIMIT n]',
    "EXPORT": 'an EXPORT reads EXPORT ?x WHERE { … } [LIMIT n] [CURSOR "…"]',
}
#: Every function KIP has, by where it may stand, and the names LLMs reach for instead.
_FUNCTIONS = {
    "FILTER function": ("IN", "IS_NULL", "IS_NOT_NULL", "CONTAINS", "STARTS_WITH", "ENDS_WITH", "REGEX"),
    "aggregation": ("COUNT", "SUM", "AVG", "MIN", "MAX"),
    "update function": ("ADD", "MUL", "CLAMP", "COALESCE"),
}
_FUNCTION_ALIASES = {
    "AVERAGE": "AVG",
    "MEAN": "AVG",
    "CNT": "COUNT",
    "TOTAL": "SUM",
    "MINIMUM": "MIN",
    "MAXIMUM": "MAX",
    "INCREMENT": "ADD",
    "INC": "ADD",
    "PLUS": "ADD",
    "SUBTRACT": "ADD",
    "MULTIPLY": "MUL",
    "TIMES": "MUL",
    "LIMIT": "CLAMP",
    "BOUND": "CLAMP",
    "IFNULL": "COALESCE",
    "NVL": "COALESCE",
    "ISNULL": "IS_NULL",
    "EXISTS": "IS_NOT_NULL",
    "NOTNULL": "IS_NOT_NULL",
    "HAS": "IS_NOT_NULL",
    "STARTSWITH": "STARTS_WITH",
    "ENDSWITH": "ENDS_WITH",
    "MATCH": "REGEX",
    "MATCHES": "REGEX",
    "LIKE": "REGEX",
    "INCLUDES": "CONTAINS",
    "ANY": "IN",
    "ONE_OF": "IN",
}


def _function_hint(text: str, offset: int, word: str) -> str:
    """For ``NAME(`` that is not a KIP function: the function the author most likely meant."""
    if not word[:1].isalpha() or not text[offset + len(word) :].lstrip().startswith("("):
        return ""
    name = word.upper()
    known = [f for group in _FUNCTIONS.values() for f in group]
    if name in known:
        return ""
    guess = _FUNCTION_ALIASES.get(name) or next(iter(difflib.get_close_matches(name, known, n=1, cutoff=0.6)), None)
    listing = "; ".join(f"{kind}s: {', '.join(names)}" for kind, names in _FUNCTIONS.items())
    if guess:
        return f"`{word}` is not a KIP function; did you mean `{guess}`? ({listing})."
    return f"`{word}` is not a KIP function. KIP has these: {listing}."


def _unclosed_bracket(text: str) -> int | None:
    """Offset of the innermost bracket left open at the end of the text, if any."""
    stack: list[int] = []
    for match in _BRACKET_RE.finditer(text):
        char = match.group()
        if char in _OPENERS:
            stack.append(match.start())
        elif len(char) == 1 and stack and _OPENERS[text[stack[-1]]] == char:
            stack.pop()
    return stack[-1] if stack else None
