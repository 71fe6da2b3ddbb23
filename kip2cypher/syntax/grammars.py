"""The two grammars the parser runs: the reference grammar and the fast grammar.

``GRAMMAR`` is ``grammar/kip.peg`` as written: the definition of the language.
It explains every failure (``parser._syntax_error`` reads which rules failed where).

``FAST_GRAMMAR`` is the same grammar with mechanical substitutions, run first on
every text. Parsimonious creates a node for every token, every run of blanks and
every level of every value, which made large capsules cost 20–70 µs per
character. The fast grammar replaces

- every token rule ``pattern _`` by ONE regex ``(pattern)blank`` (group 1 is the
  token), matched without packrat memoization (re-matching a regex is cheaper than
  the cache);
- the rules ``value`` and ``object`` by a hand-written scanner that matches a whole
  JSON-ish value (strings, numbers, constants, placeholders, objects, lists, update
  calls, dot paths, with blanks and comments between tokens) in one step and builds
  its AST on the way;
- the rule ``upsert_block`` by a *shortcut*: a scanner for the common shapes of
  CONCEPT and PROPOSITION blocks that builds the AST the visitor would build, and
  otherwise declines, so that the grammar's own rule matches the block.

Scanners follow the grammar's rules and use its token regexes. They never report
anything: they match and build, or return ``None``. The contract, checked by
tests/test_parser_fast.py against the reference grammar on fixtures, capsules,
hand-picked shapes and fuzzed text, is one-sided: **whatever the fast path builds
without error, the reference path builds identically** (spans included). Any
failure of the fast path (no match, or an error while building the AST) is
re-run on the reference grammar, which then decides, so syntax errors and errors
found while building keep their exact code, position and order.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

from parsimonious import expressions as _expressions
from parsimonious.expressions import Compound, Expression, Regex, Sequence
from parsimonious.grammar import Grammar
from parsimonious.nodes import Node, RegexNode

from ..errors import KipError
from ..resources import grammar_text
from . import ast, validate

GRAMMAR = Grammar(grammar_text())


def _token_rules(grammar: Grammar) -> frozenset[str]:
    """Rules shaped ``pattern _``: leaves the visitor reads directly instead of descending into."""
    blank = grammar["_"]
    return frozenset(name for name, expr in grammar.items() if isinstance(expr, Sequence) and len(expr.members) == 2 and expr.members[1] is blank)


TOKENS = _token_rules(GRAMMAR)


# ------------------------------------------------------------------ leaves
# Token text → AST, shared by the visitor (both trees) and the scanners. Each
# raises the KipError the visitor reports when the token is not acceptable.
_SURROGATE_RE = re.compile("[\ud800-\udfff]")
CONSTANTS = {"true": True, "false": False, "null": None}


def string_literal(text: str, raw: str, start: int, end: int) -> ast.Literal:
    value = raw[1:-1] if "\\" not in raw else json.loads(raw)  # the grammar admits only JSON strings
    if _SURROGATE_RE.search(value):
        raise validate.error_at(
            text,
            start,
            "The string contains an unpaired UTF-16 surrogate escape.",
            "Write the character itself, or a complete surrogate pair such as \\ud83d\\ude00.",
        )
    return ast.Literal(value, ast.Span(start, end))


def number_literal(text: str, raw: str, start: int, end: int) -> ast.Literal:
    try:
        value = int(raw) if raw.lstrip("-").isdigit() else float(raw)
    except ValueError:  # more digits than int() converts (sys.get_int_max_str_digits)
        value = math.inf
    if isinstance(value, float) and not math.isfinite(value):
        raise validate.error_at(text, start, f"The number {raw} is out of range.", "Use a number within the IEEE-754 double range.")
    return ast.Literal(value, ast.Span(start, end))


def identifier(text: str, name: str, offset: int, what: str) -> str:
    if validate.IDENTIFIER_RE.match(name) is None:
        validate.check_identifier(text, offset, name, what)  # raises
    return name


def dot_path(text: str, raw: str, start: int, end: int) -> ast.DotPath:
    var, *path = raw[1:].split(".")
    offset = start + 1
    for part, what in zip([var, *path], ["variable name"] + ["dot-path segment"] * len(path)):
        identifier(text, part, offset, what)
        offset += len(part) + 1
    return ast.DotPath(var, tuple(path), ast.Span(start, end))


# ------------------------------------------------------------------ fast expressions
class ScannedNode(Node):
    """A stretch matched by a scanner: its AST and where its text ends (before trailing blanks)."""

    __slots__ = ("value", "content_end")


class _FastToken(Regex):
    """A token rule ``pattern _`` as one regex ``(pattern)blank``; group 1 is the token."""

    __slots__ = ()

    def match_core(self, text, pos, cache, error):
        match = self.re.match(text, pos)
        if match is None:
            return None
        node = RegexNode(self, text, pos, match.end())
        node.match = match
        return node


def _scanned(expr: Expression, text: str, pos: int, found: tuple) -> ScannedNode:
    node = ScannedNode(expr, text, pos, found[2])
    node.value, node.content_end = found[0], found[1]
    return node


class _Scanned(Expression):
    """A rule matched by ``scan(text, pos) -> (ast, content_end, end) | None`` alone."""

    __slots__ = ("scan",)

    def __init__(self, scan: Callable, name: str) -> None:
        super().__init__(name)
        self.scan = scan

    def _uncached_match(self, text, pos, cache, error):
        try:
            found = self.scan(text, pos)
        except KipError:  # not acceptable: let the reference path report it
            return None
        return None if found is None else _scanned(self, text, pos, found)

    def _as_rhs(self):
        return "{scanner %s}" % self.scan.__name__


class _Shortcut(Compound):
    """A rule that tries ``scan`` first and, when it declines, matches the grammar's own rule (its member)."""

    __slots__ = ("scan",)

    def __init__(self, scan: Callable, rule: Expression) -> None:
        super().__init__(rule, name=rule.name)
        self.scan = scan

    def _uncached_match(self, text, pos, cache, error):
        try:
            found = self.scan(text, pos)
        except (_Declined, KipError):
            found = None
        if found is None:
            return self.members[0].match_core(text, pos, cache, error)
        return _scanned(self, text, pos, found)

    def _as_rhs(self):
        return "{shortcut %s, else %s}" % (self.scan.__name__, self.members[0]._as_rhs())


class _Declined(Exception):
    """A shortcut scanner met a shape it does not handle; the grammar rule takes over."""


def _add_shortcut(grammar: Grammar, name: str, scan: Callable) -> None:
    """Put a shortcut in front of rule ``name``: every reference to the rule now goes through it."""
    rule = grammar[name]
    shortcut = _Shortcut(scan, rule)
    seen: set[int] = set()
    stack = list(grammar.values())
    while stack:
        expr = stack.pop()
        if id(expr) in seen or not isinstance(expr, Compound) or expr is shortcut:
            continue
        seen.add(id(expr))
        expr.members = tuple(shortcut if member is rule else member for member in expr.members)
        stack.extend(expr.members)
    grammar[name] = shortcut


def _token_pattern(name: str) -> str:
    """The reference token rule ``name`` (``pattern _``) as one regex ``(pattern)blank``."""
    member, blank = GRAMMAR[name].members[0], GRAMMAR["_"]
    default_flags = _expressions.re.compile("").flags
    if isinstance(member, Regex):
        if member.re.flags != default_flags or blank.re.flags != default_flags:
            raise ValueError(f"token rule {name} uses regex flags; the fast grammar cannot fold it")
        pattern = member.re.pattern
    else:
        pattern = re.escape(member.literal)
    return "(" + pattern + ")" + blank.re.pattern


#: The white space of the ``regex`` module's ``\s`` (Unicode White_Space), which
#: parsimonious compiles the grammar with; Python's ``re`` adds U+001C–U+001F.
#: tests/test_parser_fast.py checks it against every code point.
WHITE_SPACE = r"\t-\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
_ESCAPE_RE = re.compile(r"\\(.)", re.S)


def _compile(pattern: str):
    r"""Compile a grammar regex for the fast grammar.

    Python's ``re`` matches the patterns of strings, blanks and punctuation 2–3×
    faster than the ``regex`` module, and means the same by them once ``\s`` (only
    ever used as ``[\s…]``) is spelled out as :data:`WHITE_SPACE`. Patterns with
    ``\w`` (names, keywords, numbers) stay with the ``regex`` module, as in the
    reference grammar: the engines disagree on which non-ASCII characters are word
    characters.
    """
    escapes = {match.group(1) for match in _ESCAPE_RE.finditer(pattern)}
    if escapes & set("wWdDbBSAZ") or pattern.count("\\s") != pattern.count("[\\s"):
        return _expressions.re.compile(pattern)
    return re.compile(pattern.replace("[\\s", "[" + WHITE_SPACE))


def _matcher(name: str) -> Callable:
    return _compile(_token_pattern(name)).match


def _skip_blank(text: str, at: int) -> int:
    """The position after the blanks (rule ``_``) at ``at``.

    Most punctuation is followed by nothing or by one space: those cases are told
    apart without a regex, as a blank can only start with white space (a subset of
    ``str.isspace``, which tests check), a BOM or ``/``.
    """
    char = text[at]
    if char == " ":
        char = text[at + 1]
        if not char.isspace() and char != "/" and char != "\ufeff":
            return at + 1
    elif not char.isspace() and char != "/" and char != "\ufeff":
        return at
    return _BLANK(text, at).end()


# ------------------------------------------------------------------ value scanner
# Every scan function takes (text, pos) and returns (ast, content_end, end) or
# None; ``end`` is past the trailing blanks. ``text`` ends with the NUL sentinel,
# which no token or blank consumes, so ``text[at]`` is safe wherever a scanner
# looks after a successful match.
_BLANK = _compile(GRAMMAR["_"].re.pattern).match
_STRING = _matcher("string")
_NUMBER = _matcher("number")
_NAME = _matcher("NAME")
_CONSTANT = _matcher("CONSTANT")
_PLACEHOLDER = _matcher("placeholder")
_DOT_PATH = _matcher("dot_path")
_UPDATE_FUNCTION = _matcher("UPDATE_FUNCTION")


def _scan_value(text: str, pos: int) -> tuple | None:
    """``value``: string / number / object / list / CONSTANT / placeholder / update_call / dot_path.

    The alternatives start with distinct characters, so the first one decides.
    """
    scan = _VALUE_STARTS.get(text[pos : pos + 1])
    return scan(text, pos) if scan is not None else None


def _scan_string(text, pos):
    match = _STRING(text, pos)
    if match is None:
        return None
    end = match.end(1)
    return string_literal(text, match.group(1), pos, end), end, match.end()


def _scan_number(text, pos):
    match = _NUMBER(text, pos)
    if match is None:
        return None
    end = match.end(1)
    return number_literal(text, match.group(1), pos, end), end, match.end()


def _scan_constant(text, pos):
    match = _CONSTANT(text, pos)
    if match is None:
        return None
    end = match.end(1)
    return ast.Literal(CONSTANTS[match.group(1)], ast.Span(pos, end)), end, match.end()


def _scan_placeholder(text, pos):
    match = _PLACEHOLDER(text, pos)
    if match is None:
        return None
    end = match.end(1)
    return ast.Placeholder(identifier(text, match.group(1)[1:], pos + 1, "placeholder name"), ast.Span(pos, end)), end, match.end()


def _scan_dot_path(text, pos):
    match = _DOT_PATH(text, pos)
    if match is None:
        return None
    end = match.end(1)
    return dot_path(text, match.group(1), pos, end), end, match.end()


def _scan_object(text, pos):
    """``object``: ``{`` (entry (``,`` entry)* ``,``?)? ``}``; entry = key ``:`` value; key = string / NAME."""
    if text[pos : pos + 1] != "{":
        return None
    at = _skip_blank(text, pos + 1)
    entries = []
    key_spans = []
    if text[at] != "}":
        while True:
            if text[at] == '"':
                match = _STRING(text, at)
                if match is None:
                    return None
                key_end = match.end(1)
                key = string_literal(text, match.group(1), at, key_end).value
            else:
                match = _NAME(text, at)
                if match is None:
                    return None
                key_end = match.end(1)
                key = identifier(text, match.group(1), at, "object key")
            key_spans.append(ast.Span(at, key_end))
            at = match.end()
            if text[at] != ":":
                return None
            found = _scan_value(text, _skip_blank(text, at + 1))
            if found is None:
                return None
            entries.append((key, found[0]))
            at = found[2]
            if text[at] == ",":
                at = _skip_blank(text, at + 1)
                if text[at] == "}":
                    break
            elif text[at] == "}":
                break
            else:
                return None
    end = at + 1
    return ast.ObjectLit(tuple(entries), ast.Span(pos, end), key_spans=tuple(key_spans)), end, _skip_blank(text, end)


def _scan_list(text, pos):
    """``list``: ``[`` (value (``,`` value)* ``,``?)? ``]``."""
    at = _skip_blank(text, pos + 1)
    items = []
    if text[at] != "]":
        while True:
            found = _scan_value(text, at)
            if found is None:
                return None
            items.append(found[0])
            at = found[2]
            if text[at] == ",":
                at = _skip_blank(text, at + 1)
                if text[at] == "]":
                    break
            elif text[at] == "]":
                break
            else:
                return None
    end = at + 1
    return ast.ListLit(tuple(items), ast.Span(pos, end)), end, _skip_blank(text, end)


def _scan_update_call(text, pos):
    """``update_call``: UPDATE_FUNCTION ``(`` value (``,`` value)* ``)`` (no trailing comma)."""
    match = _UPDATE_FUNCTION(text, pos)
    if match is None or text[match.end()] != "(":
        return None
    args = []
    at = _skip_blank(text, match.end() + 1)
    while True:
        found = _scan_value(text, at)
        if found is None:
            return None
        args.append(found[0])
        at = found[2]
        if text[at] == ",":
            at = _skip_blank(text, at + 1)
        elif text[at] == ")":
            break
        else:
            return None
    end = at + 1
    return ast.UpdateCall(match.group(1), tuple(args), ast.Span(pos, end)), end, _skip_blank(text, end)


_VALUE_STARTS = {
    '"': _scan_string,
    "{": _scan_object,
    "[": _scan_list,
    ":": _scan_placeholder,
    "?": _scan_dot_path,
    **dict.fromkeys("-0123456789", _scan_number),
    **dict.fromkeys("tfn", _scan_constant),
    **dict.fromkeys("AMC", _scan_update_call),
}


# ------------------------------------------------------------------ block shortcut
# A capsule is mostly CONCEPT and PROPOSITION blocks. The shortcut handles the
# common shapes and declines (raises _Declined) at anything else: clauses that bind
# a variable where an endpoint is expected, predicate alternatives, quantifiers or
# variables, a SET clause twice, WITH not followed by METADATA… Each function
# mirrors the grammar rule named in its docstring and builds what the visitor builds.
_KW = {
    name: _matcher(name)
    for name in (
        "CONCEPT",
        "PROPOSITION",
        "EXPECT",
        "VERSION",
        "SET",
        "ATTRIBUTES",
        "PROPOSITIONS",
        "WITH",
        "METADATA",
        "ID",
        "var",
    )
}


def _object_at(text, at):
    found = _scan_object(text, at)
    if found is None:
        raise _Declined
    return found


def _after(text, at, char):
    """Position after ``char`` (which must be at ``at``) and its trailing blanks."""
    if text[at] != char:
        raise _Declined
    return _skip_blank(text, at + 1)


def _with_metadata(text, at):
    """``with_metadata?``: ``(object, content_end, end)``, or ``None`` when absent."""
    match = _KW["WITH"](text, at)
    if match is None:
        return None
    match = _KW["METADATA"](text, match.end())
    if match is None:
        raise _Declined
    return _object_at(text, match.end())


def _endpoint(text, at):
    """``endpoint``: a handle, a concept clause or a proposition clause, none binding a variable."""
    char = text[at]
    if char == "?":
        match = _KW["var"](text, at)
        if match is None or text[match.end()] in "({":
            raise _Declined
        end = match.end(1)
        return ast.Var(identifier(text, match.group(1)[1:], at + 1, "variable name"), ast.Span(at, end)), end, match.end()
    if char == "{":
        obj, end, after = _object_at(text, at)
        return validate.concept_clause(text, None, obj, obj.span), end, after
    if char == "(":
        return _proposition_clause(text, at)
    raise _Declined


def _predicate_name(text, at):
    """``predicate_name``: a quoted name or a placeholder, as ``(name, span, end)``."""
    match = _STRING(text, at)
    if match is not None:
        literal = string_literal(text, match.group(1), at, match.end(1))
        return literal.value, literal.span, match.end()
    found = _scan_placeholder(text, at)
    if found is None:
        raise _Declined
    return found[0], found[0].span, found[2]


def _proposition_clause(text, start):
    """``proposition_clause`` without a variable: ``( id: value )`` or ``( endpoint, "predicate", endpoint )``."""
    at = _after(text, start, "(")
    match = _KW["ID"](text, at)
    if match is not None:
        found = _scan_value(text, _after(text, match.end(), ":"))
        if found is None:
            raise _Declined
        body = {"id": found[0]}
    else:
        subject, _, at = _endpoint(text, at)
        predicate, span, at = _predicate_name(text, _after(text, at, ","))
        found = _endpoint(text, _after(text, at, ","))
        body = {"subject": subject, "predicate": ast.PredicatePattern((predicate,), None, span), "object": found[0]}
    at = found[2]
    if text[at] != ")":
        raise _Declined
    end = at + 1
    return ast.PropositionClause(None, span=ast.Span(start, end), **body), end, _skip_blank(text, end)


def _proposition_entry(text, start):
    """``proposition_entry``: ``( "predicate", endpoint ) with_metadata? ,?`` as ``(entry, end)``."""
    predicate, _, at = _predicate_name(text, _after(text, start, "("))
    target, _, at = _endpoint(text, _after(text, at, ","))
    if text[at] != ")":
        raise _Declined
    end = at + 1
    at = _skip_blank(text, end)
    metadata = _with_metadata(text, at)
    if metadata is not None:
        metadata, end, at = metadata
    if text[at] == ",":
        end = at + 1
        at = _skip_blank(text, end)
    return ast.PropositionEntry(predicate, target, metadata, ast.Span(start, end)), at


def _block_head(text, at):
    """``var? {`` after CONCEPT / PROPOSITION: ``(handle, position after the brace)``."""
    handle = None
    if text[at] == "?":
        match = _KW["var"](text, at)
        if match is None:
            raise _Declined
        handle = identifier(text, match.group(1)[1:], at + 1, "variable name")
        at = match.end()
    return handle, _after(text, at, "{")


def _expect_version(text, at):
    """``expect_version?``: ``(value or None, position after it)``."""
    match = _KW["EXPECT"](text, at)
    if match is None:
        return None, at
    match = _KW["VERSION"](text, match.end())
    found = _scan_value(text, match.end()) if match is not None else None
    if found is None:
        raise _Declined
    return found[0], found[2]


def _block_tail(text, at):
    """``} with_metadata?``: ``(metadata, content_end, end)``."""
    if text[at] != "}":
        raise _Declined
    end = at + 1
    at = _skip_blank(text, end)
    metadata = _with_metadata(text, at)
    return metadata if metadata is not None else (None, end, at)


def _concept_block(text, start, at):
    """``concept_block``: CONCEPT var? { object expect_version? concept_set* } with_metadata?"""
    handle, at = _block_head(text, at)
    identity, _, at = _object_at(text, at)
    identity = validate.concept_clause(text, None, identity, identity.span)
    version, at = _expect_version(text, at)
    attributes = propositions = None
    while True:
        match = _KW["SET"](text, at)
        if match is None:
            break
        at = match.end()
        match = _KW["ATTRIBUTES"](text, at)
        if match is not None and attributes is None:
            attributes, _, at = _object_at(text, match.end())
            continue
        match = _KW["PROPOSITIONS"](text, at)
        if match is None or propositions is not None:
            raise _Declined  # SET METADATA, or a SET clause twice: the visitor explains
        at = _after(text, match.end(), "{")
        entries = []
        while text[at] == "(":
            entry, at = _proposition_entry(text, at)
            entries.append(entry)
        at = _after(text, at, "}")
        propositions = tuple(entries)
    metadata, end, at = _block_tail(text, at)
    return ast.ConceptBlock(handle, identity, version, attributes, propositions, metadata, ast.Span(start, end)), end, at


def _proposition_block(text, start, at):
    """``proposition_block``: PROPOSITION var? { ( body ) expect_version? set_attributes? } with_metadata?"""
    handle, at = _block_head(text, at)
    identity, _, at = _proposition_clause(text, at)
    version, at = _expect_version(text, at)
    attributes = None
    match = _KW["SET"](text, at)
    if match is not None:
        match = _KW["ATTRIBUTES"](text, match.end())
        if match is None:
            raise _Declined
        attributes, _, at = _object_at(text, match.end())
    metadata, end, at = _block_tail(text, at)
    return ast.PropositionBlock(handle, identity, version, attributes, metadata, ast.Span(start, end)), end, at


def scan_upsert_block(text: str, pos: int) -> tuple | None:
    """``upsert_block`` = concept_block / proposition_block, as ``(ast, content_end, end)``; raises to decline."""
    match = _KW["CONCEPT"](text, pos)
    if match is not None:
        return _concept_block(text, pos, match.end())
    match = _KW["PROPOSITION"](text, pos)
    return None if match is None else _proposition_block(text, pos, match.end())


def _fast_grammar() -> Grammar:
    rules: dict[str, Any] = {}
    for name in TOKENS:
        rules[name] = _FastToken("", name=name)
        rules[name].re = _compile(_token_pattern(name))
    rules["value"] = _Scanned(_scan_value, "value")
    rules["object"] = _Scanned(_scan_object, "object")
    grammar = Grammar(grammar_text(), **rules)
    _add_shortcut(grammar, "upsert_block", scan_upsert_block)
    return grammar


FAST_GRAMMAR = _fast_grammar()
