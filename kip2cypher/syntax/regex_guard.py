"""REGEX safe by construction: a documented subset of Java regex, priced before Neo4j runs it.

Neo4j evaluates ``v =~ pattern`` with ``java.util.regex``, a backtracking matcher that ignores
thread interruption; Neo4j checks the transaction timeout only between rows. One evaluation
on one long value therefore holds a worker for as long as the match takes — minutes for
``(a+)+$`` or ``.*.*.*x`` (docs/reliability.md). A *non-deterministic* repeated group
(``(?:foo|bar)+``) also recurses once per iteration and overflows the worker's stack on a
few thousand repetitions, which kills the Bolt connection.

So a pattern is parsed here (the subset is listed in docs/kql.md; anything outside it is
KIP_1001) and priced with an upper bound of the steps Java's matcher can take on a value of
N characters — a polynomial in N (``_cost``). KIP REGEX is a search: the engine sends
``(?s:.*?)(?:p)(?s:.*)`` (or ``(?:p)(?s:.*)`` when every alternative starts with ``^``/``\\A``), and
the lazy prefix tries every start position, so the price includes that factor. From the
price follows the pattern's *reach*: the longest value it can examine within the step
budget (``Settings.max_regex_steps``, shared by the REGEX of one command). A pattern whose
reach is below ``MIN_REACH`` is refused (KIP_4001); a longer value met at run time stops the
command with KIP_4001 instead of being searched (``pattern.py`` guards ``=~`` with the
reach; ``neo4j_errors`` maps the marker below).

Rewrites that keep the answer and remove work: in a search, a greedy or lazy repetition at
the very start or end of an alternative only needs its minimum (``.*foo.*`` → ``foo``,
``(foo|bar)+`` → ``(foo|bar)``, ``\\w+@`` → ``\\w@``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, fields, is_dataclass, replace
from typing import Any, Union

from ..errors import EXECUTION_TIMEOUT, INVALID_SYNTAX, RESOURCE_EXHAUSTED, KipError
from . import ast

#: Longest REGEX pattern, in characters (KIP_4002 beyond): pricing is linear in it.
MAX_PATTERN_CHARS = 2048
#: A pattern that cannot examine values at least this long within its budget is refused.
MIN_REACH = 1000
#: Values are never longer than this (Java strings): a linear pattern's reach is capped here.
MAX_REACH = 2**31 - 1
#: Iterations of a repeated group Java matches by recursion (alternatives, optional or
#: variable parts inside), and the estimated stack frames one match may use.
MAX_LOOP = 100
MAX_DEPTH = 1000
#: Deepest nesting of groups (KIP_4002 beyond): the parser and the pricing recurse on it.
MAX_GROUP_DEPTH = 32
#: Bounded quantifiers up to this are priced as constants, larger ones like unbounded ones.
_SMALL = 1000
#: Marker of the invalid pattern the guarded ``=~`` uses to stop at a value beyond the reach.
REACH_MARKER = "KIP_REGEX_REACH"

_FLAGS = set("idmsuU")
_CLASS_ESCAPES = {"d": ((48, 57),), "w": ((48, 57), (65, 90), (95, 95), (97, 122)), "s": ((9, 13), (32, 32))}
_CHAR_ESCAPES = {"t": 9, "n": 10, "r": 13, "f": 12, "a": 7, "e": 27}
_CASE_SPECIALS = ((0x130, 0x131), (0x17F, 0x17F), (0x212A, 0x212A))  # İ ı ſ K: case partners of ASCII letters


@dataclass(frozen=True)
class SearchRegex:
    """What ``=~`` receives for a KIP REGEX, and the longest value it may examine."""

    pattern: str
    reach: int

    def refusal(self) -> str:
        """An invalid Java pattern carrying the reach: the guarded ``=~`` uses it beyond the reach."""
        return f"{REACH_MARKER} {self.reach} ("


def compile_search(pattern: str, budget: float) -> SearchRegex:
    """The Java pattern for a KIP REGEX search and its reach; KipError when refused (module doc)."""
    if len(pattern) > MAX_PATTERN_CHARS:
        raise KipError(
            RESOURCE_EXHAUSTED,
            f"The REGEX pattern has {len(pattern)} characters; at most {MAX_PATTERN_CHARS} are allowed.",
            "Shorten the pattern; to test membership in many values use IN(?x, [...]) or several CONTAINS.",
        )
    tree = _Parser(pattern).parse()
    branches = [_strip(branch) for branch in tree.branches]
    anchored = all(_anchored(branch) for branch in branches)
    core = _Alt(branches)
    if _depth(core) > MAX_DEPTH:
        raise _refuse(pattern, "it nests too deeply for the database's matcher")
    try:
        steps, ways = _cost(core, None)
    except _Refusal as refusal:
        raise _refuse(pattern, refusal.why) from None
    price = _add(steps, ways)
    # The lazy prefix tries p at every start; the trailing .* and the size check read the value once.
    total = _add(price if anchored else _mul(price, _add(ONE, N)), {1: 2.0})
    reach = _reach(total, budget)
    if reach < MIN_REACH:
        raise _refuse(pattern, f"on a value of {MIN_REACH} characters it could take more than {budget:.0e} steps (nested or chained quantifiers)")
    text = "|".join(_text(branch) for branch in branches)
    # DOTALL only for the wrapper's own ``.*``: in the agent's pattern ``.`` stops at a line break,
    # as in every dialect an agent knows (docs/interop.md A8).
    return SearchRegex(("(?:" if anchored else "(?s:.*?)(?:") + text + ")(?s:.*)", reach)


def regex_calls(node: Any) -> int:
    """How many REGEX calls a (part of a) command holds: they share one step budget per row.
    (One walk per WHERE on every cold compile: iterative, each class's field names read once.)"""
    count = 0
    stack = [node]
    while stack:
        item = stack.pop()
        names = _children(type(item))
        if names is _ITEMS:
            stack.extend(item)
        elif names:
            count += isinstance(item, ast.FuncCall) and item.name == "REGEX"
            stack.extend(getattr(item, name) for name in names)
    return count


_ITEMS = ("",)  # a tuple's children are its items


@functools.cache
def _children(cls: type) -> tuple[str, ...]:
    """What ``regex_calls`` walks into, by type (decided once per type, not per node): a tuple's
    items (``_ITEMS``), an AST node's fields, nothing for a span or a leaf."""
    if issubclass(cls, tuple):
        return _ITEMS
    if is_dataclass(cls) and not issubclass(cls, ast.Span):
        return tuple(f.name for f in fields(cls))
    return ()


def reach_error(message: str) -> KipError | None:
    """The KIP error for Neo4j's report of the refusal pattern (``SearchRegex.refusal``), if it is one."""
    at = message.find(REACH_MARKER + " ")
    if at < 0:
        return None
    reach = message[at + len(REACH_MARKER) + 1 :].split(" ", 1)[0]
    return KipError(
        EXECUTION_TIMEOUT,
        f"A REGEX met a value longer than {reach} characters, the longest its pattern may examine within the time budget; the command was stopped.",
        "Use a pattern without * + or {n,} in its middle (they make the search slower on long values), "
        "or CONTAINS / STARTS_WITH / ENDS_WITH, which have no such limit.",
    )


def _refuse(pattern: str, why: str) -> KipError:
    return KipError(
        EXECUTION_TIMEOUT,
        f"REGEX {pattern!r} was refused before running: {why}; such a pattern can backtrack for longer than any query time limit.",
        "Simplify the regular expression: avoid nested quantifiers like (a+)+, back-references, and chains of .* — "
        "or use CONTAINS / STARTS_WITH / ENDS_WITH, which cannot backtrack.",
    )


def _unsupported(pattern: str, what: str) -> KipError:
    return KipError(
        INVALID_SYNTAX,
        f"Invalid REGEX pattern {pattern!r}: {what}.",
        "REGEX accepts a subset of Java regex (docs/kql.md): literals, escapes, . classes [...], \\d \\w \\s \\p{..}, "
        "anchors ^ $ \\b \\A \\z, groups (...) (?:...) (?<name>...) (?>...), lookahead (?=...) (?!...), "
        "flags (?i) (?s) (?m) (?u), alternation | and quantifiers * + ? {n,m} (lazy ? or possessive +). "
        "Escape literal ( ) [ ] { } . * + ? with a backslash.",
    )


# ---------------------------------------------------------------------------- the tree
@dataclass(frozen=True)
class _Chars:
    """A set of code points: sorted ranges, or their complement."""

    ranges: tuple[tuple[int, int], ...]
    negated: bool = False


ANY = _Chars((), True)


@dataclass(frozen=True)
class _Atom:
    """One character: a literal, ``.``, a class or a class escape (``chars`` None = unknown set)."""

    text: str
    chars: _Chars | None
    literal: bool = False


@dataclass(frozen=True)
class _Assert:
    """A zero-width test: ``^ $ \\b \\B \\A \\z \\Z``; ``anchor`` when it pins the match to the start."""

    text: str
    anchor: bool = False


@dataclass(frozen=True)
class _Flags:
    text: str


@dataclass(frozen=True)
class _Group:
    """``(…)`` of ``kind`` capture, plain, atomic or ahead (both lookaheads)."""

    text: str
    kind: str
    body: _Alt


@dataclass(frozen=True)
class _Repeat:
    text: str
    item: Node
    lo: int
    hi: int | None
    mode: str  # greedy, lazy, possessive


@dataclass(frozen=True)
class _Seq:
    items: tuple[Node, ...]


@dataclass(frozen=True)
class _Alt:
    branches: tuple[_Seq, ...]


Node = Union[_Atom, _Assert, _Flags, _Group, _Repeat]


class _Parser:
    """Recursive descent over the subset; every other construct is refused (KIP_1001 / KIP_4001)."""

    def __init__(self, pattern: str) -> None:
        self.src = pattern
        self.i = 0
        self.flags: set[str] = set()
        self.depth = 0

    def parse(self) -> _Alt:
        tree = self.alternation()
        if self.i < len(self.src):
            raise _unsupported(self.src, f"unbalanced ')' at index {self.i}")
        return tree

    def peek(self, k: int = 0) -> str:
        return self.src[self.i + k : self.i + k + 1]

    def alternation(self) -> _Alt:
        branches = [self.sequence()]
        while self.peek() == "|":
            self.i += 1
            branches.append(self.sequence())
        return _Alt(tuple(branches))

    def sequence(self) -> _Seq:
        items: list[Node] = []
        while self.i < len(self.src) and self.peek() not in "|)":
            start = self.i
            item = self.atom()
            items.append(self.quantified(item, start))
        return _Seq(tuple(items))

    def atom(self) -> Node:
        char = self.peek()
        start = self.i
        self.i += 1
        if char == "(":
            return self.group(start)
        if char == "[":
            chars = self.char_class()
            return _Atom(self.src[start : self.i], self.fold(chars))
        if char == ".":
            return _Atom(".", ANY)
        if char in "^$":
            return _Assert(char, anchor=char == "^" and "m" not in self.flags)
        if char == "\\":
            return self.escape(start)
        if char in "*+?{":
            raise _unsupported(self.src, f"{char!r} at index {start} has nothing to repeat (escape it as \\{char} for the character itself)")
        return _Atom(char, self.fold(_Chars(((ord(char), ord(char)),))), literal=True)

    def quantified(self, item: Node, start: int) -> Node:
        char = self.peek()
        if char in ("*", "+", "?"):
            self.i += 1
            lo, hi = {"*": (0, None), "+": (1, None), "?": (0, 1)}[char]
        elif char == "{":
            lo, hi = self.bounds()
        else:
            return item
        if not isinstance(item, (_Atom, _Group)) or isinstance(item, _Group) and item.kind == "ahead":
            raise _unsupported(self.src, f"the quantifier at index {self.i - 1} has nothing to repeat")
        mode = "greedy"
        if self.peek() in ("?", "+"):
            mode = "lazy" if self.peek() == "?" else "possessive"
            self.i += 1
        if self.peek() and self.peek() in "*+?{":
            raise _unsupported(self.src, f"two quantifiers in a row at index {self.i}")
        return _Repeat(self.src[start : self.i], item, lo, hi, mode)

    def bounds(self) -> tuple[int, int | None]:
        end = self.src.find("}", self.i)
        body = self.src[self.i + 1 : end] if end > 0 else ""
        low, comma, high = body.partition(",")
        if not (low.isdigit() and low.isascii() and (not high or high.isdigit() and high.isascii()) and len(low) <= 9 and len(high) <= 9):
            raise _unsupported(self.src, f"'{{' at index {self.i} is not a quantifier {{n}}, {{n,}} or {{n,m}} (write \\{{ for the character)")
        lo, hi = int(low), (int(high) if high else (None if comma else int(low)))
        if hi is not None and hi < lo:
            raise _unsupported(self.src, f"the quantifier {{{body}}} has its bounds reversed")
        self.i = end + 1
        return lo, hi

    def group(self, start: int) -> Node:
        kind, saved = "capture", set(self.flags)
        if self.peek() == "?":
            kind = self.group_kind(start)
            if kind == "flags":
                return _Flags(self.src[start : self.i])
        self.depth += 1
        if self.depth > MAX_GROUP_DEPTH:
            raise KipError(
                RESOURCE_EXHAUSTED,
                f"The REGEX pattern nests groups more than {MAX_GROUP_DEPTH} deep.",
                "Flatten the pattern: most nested groups can be written side by side.",
            )
        body = self.alternation()
        if self.peek() != ")":
            raise _unsupported(self.src, f"the group opened at index {start} is not closed")
        self.i += 1
        self.flags = saved
        self.depth -= 1
        return _Group(self.src[start : self.i], kind, body)

    def group_kind(self, start: int) -> str:
        """After ``(?``: the group's kind; inline flags apply to the rest of the enclosing group."""
        self.i += 1
        char = self.peek()
        self.i += 1
        if char == ":":
            return "plain"
        if char == ">":
            return "atomic"
        if char in "=!":
            return "ahead"
        if char == "<":
            if self.peek() in ("=", "!"):
                raise _unsupported(self.src, "lookbehind (?<= / (?<! is not supported")
            name_end = self.src.find(">", self.i)
            name = self.src[self.i : name_end] if name_end > 0 else ""
            if not (name[:1].isascii() and name[:1].isalpha() and name.isascii() and name.isalnum()):
                raise _unsupported(self.src, f"bad group name at index {start}")
            self.i = name_end + 1
            return "capture"
        self.i -= 1
        on, off, target = set(), set(), None
        target = on
        while self.peek() and self.peek() not in ":)":
            flag = self.peek()
            if flag == "-":
                target = off
            elif flag in _FLAGS:
                target.add(flag)
            else:
                raise _unsupported(
                    self.src, f"unsupported group or flag (?{flag} at index {start}" + (" (comments mode is not supported)" if flag == "x" else "")
                )
            self.i += 1
        if not self.peek():
            raise _unsupported(self.src, f"the group opened at index {start} is not closed")
        self.flags = (self.flags | on) - off
        if self.peek() == ")":
            self.i += 1
            return "flags"
        self.i += 1
        return "plain"

    def escape(self, start: int) -> Node:
        char = self.peek()
        if not char:
            raise _unsupported(self.src, "the pattern ends with a lone backslash")
        self.i += 1
        if char.isdigit() and char != "0" or char == "k":
            raise _refuse(self.src, "it uses a back-reference")
        if char in "bB":
            if self.peek() == "{":
                raise _unsupported(self.src, "\\b{…} boundaries are not supported")
            return _Assert("\\" + char)
        if char in "AzZ":
            return _Assert("\\" + char, anchor=char == "A")
        if char.lower() in _CLASS_ESCAPES or char in "pPhHvV":
            chars = self.class_escape(char)
            return _Atom(self.src[start : self.i], self.fold(chars))
        code = self.char_escape(char)
        return _Atom(self.src[start : self.i], self.fold(_Chars(((code, code),))), literal=True)

    def class_escape(self, char: str) -> _Chars | None:
        """``\\d \\w \\s`` and their negations, ``\\p{…}`` (an unknown set), ``\\h \\v``."""
        if char in "pP":
            if self.peek() == "{":
                end = self.src.find("}", self.i)
                if end < 0:
                    raise _unsupported(self.src, "\\p{ is not closed")
                self.i = end + 1
            elif self.peek().isalpha():
                self.i += 1
            else:
                raise _unsupported(self.src, "\\p needs a property name")
            return None
        if char in "hHvV" or "U" in self.flags:
            return None
        return _Chars(_CLASS_ESCAPES[char.lower()], char.isupper())

    def char_escape(self, char: str) -> int:
        """The code point of a single-character escape (``\\n``, ``\\x41``, ``\\u00e9``, ``\\.`` …)."""
        if char in _CHAR_ESCAPES:
            return _CHAR_ESCAPES[char]
        if char == "0":
            digits = ""
            while len(digits) < 3 and self.peek() in tuple("01234567") and self.peek():
                digits += self.peek()
                self.i += 1
            if not digits:
                raise _unsupported(self.src, "\\0 needs octal digits")
            return int(digits, 8)
        if char in "xu":
            if char == "x" and self.peek() == "{":
                end = self.src.find("}", self.i)
                digits = self.src[self.i + 1 : end] if end > 0 else ""
                self.i = end + 1
            else:
                width = 2 if char == "x" else 4
                digits = self.src[self.i : self.i + width]
                self.i += width
                digits = digits if len(digits) == width else ""
            try:
                code = int(digits, 16)
            except ValueError:
                raise _unsupported(self.src, f"bad \\{char} escape") from None
            if code > 0x10FFFF:
                raise _unsupported(self.src, f"bad \\{char} escape")
            return code
        if char == "c" and self.peek():
            self.i += 1
            return ord(self.src[self.i - 1]) ^ 64
        if char.isalnum():
            raise _unsupported(self.src, f"\\{char} is not a supported escape")
        return ord(char)

    def char_class(self) -> _Chars | None:
        """``[…]`` after the ``[``: ranges, single characters and class escapes; no nesting, no ``&&``."""
        negated = self.peek() == "^"
        if negated:
            self.i += 1
        if self.peek() == "]":
            raise _unsupported(self.src, "write \\] for a ] at the start of a character class")
        ranges: list[tuple[int, int]] = []
        known = True
        while True:
            char = self.peek()
            if not char:
                raise _unsupported(self.src, "a character class is not closed")
            self.i += 1
            if char == "]":
                break
            if char == "[" or char == "&" and self.peek() == "&":
                raise _unsupported(self.src, "nested classes and && inside [...] are not supported (escape [ as \\[)")
            if char == "\\":
                esc = self.peek()
                if not esc:
                    raise _unsupported(self.src, "a character class is not closed")
                self.i += 1
                if esc.lower() in _CLASS_ESCAPES or esc in "pPhHvV":
                    sub = self.class_escape(esc)
                    if sub is None or sub.negated:
                        known = False
                    else:
                        ranges.extend(sub.ranges)
                    continue
                if esc.isdigit() and esc != "0" or esc in "bBAzZkQERXGN":
                    raise _unsupported(self.src, f"\\{esc} is not supported inside a character class")
                low = self.char_escape(esc)
            else:
                low = ord(char)
            if self.peek() == "-" and self.peek(1) not in ("]", ""):
                self.i += 1
                high_char = self.peek()
                self.i += 1
                if high_char == "\\":
                    esc = self.peek()
                    self.i += 1
                    if esc.lower() in _CLASS_ESCAPES or esc in "pPhHvV" or not esc:
                        raise _unsupported(self.src, "a character range must end with a single character")
                    high = self.char_escape(esc)
                elif high_char == "[":
                    raise _unsupported(self.src, "nested classes inside [...] are not supported (escape [ as \\[)")
                else:
                    high = ord(high_char)
                if high < low:
                    raise _unsupported(self.src, "a character range is reversed")
                ranges.append((low, high))
            else:
                ranges.append((low, low))
        return _Chars(tuple(sorted(ranges)), negated) if known else None

    def fold(self, chars: _Chars | None) -> _Chars | None:
        """Under ``(?i)``, add the case partners (ASCII letters; any other letter makes the set unknown)."""
        if chars is None or "i" not in self.flags:
            return chars
        extra: list[tuple[int, int]] = []
        for low, high in chars.ranges:
            if any(chr(c).isalpha() and c > 127 for c in range(low, min(high, low + 512) + 1)) or high - low > 512 and high > 127:
                return None
            for a, b, delta in ((65, 90, 32), (97, 122, -32)):
                lo, hi = max(low, a), min(high, b)
                if lo <= hi:
                    extra.append((lo + delta, hi + delta))
                    extra.extend(_CASE_SPECIALS)
        return _Chars(tuple(sorted(chars.ranges + tuple(extra))), chars.negated)


# ---------------------------------------------------------------------------- rewrites
def _strip(branch: _Seq) -> _Seq:
    """A search needs only the minimum of a greedy/lazy repetition at either end of an alternative."""
    items = list(branch.items)
    first = next((k for k, item in enumerate(items) if not isinstance(item, _Flags)), len(items))
    while first < len(items) and _trimmable(items[first]):
        items[first : first + 1] = _minimum(items[first])
    while items and _trimmable(items[-1]):
        items[-1:] = _minimum(items[-1])
    return _Seq(tuple(items))


def _trimmable(item: Node) -> bool:
    return isinstance(item, _Repeat) and item.mode != "possessive" and item.hi != item.lo


def _minimum(item: _Repeat) -> list[Node]:
    """``X{lo,…}`` → ``X{lo}`` (``X`` for 1, nothing for 0)."""
    if item.lo == 0:
        return []
    inner = item.item
    if item.lo == 1:
        return [inner]
    return [replace(item, text=inner.text + f"{{{item.lo}}}", hi=item.lo, mode="greedy")]


def _anchored(branch: _Seq) -> bool:
    head = next((item for item in branch.items if not isinstance(item, _Flags)), None)
    return isinstance(head, _Assert) and head.anchor


def _text(branch: _Seq) -> str:
    return "".join(item.text for item in branch.items)


# ---------------------------------------------------------------------------- pricing
# A cost is a polynomial in N (the value's length) with non-negative coefficients, {degree: c}.
Poly = dict[int, float]
ONE: Poly = {0: 1.0}
N: Poly = {1: 1.0}
_MAX_DEGREE = 8


def _add(a: Poly, b: Poly) -> Poly:
    out = dict(a)
    for d, c in b.items():
        out[d] = out.get(d, 0.0) + c
    return out


def _mul(a: Poly, b: Poly) -> Poly:
    out: Poly = {}
    for d1, c1 in a.items():
        for d2, c2 in b.items():
            if c1 and c2:
                d = min(d1 + d2, _MAX_DEGREE)
                out[d] = out.get(d, 0.0) + (c1 * c2 if d1 + d2 <= _MAX_DEGREE else float("inf"))
    return out


def _max(a: Poly, b: Poly) -> Poly:
    return {d: max(a.get(d, 0.0), b.get(d, 0.0)) for d in set(a) | set(b)}


def _const(c: float) -> Poly:
    return {0: float(c)}


def _is_one(p: Poly) -> bool:
    return all(c == 0 for d, c in p.items() if d) and p.get(0, 0.0) <= 1.0


def _eval(p: Poly, n: float) -> float:
    return sum(c * n**d for d, c in p.items() if c)


def _reach(total: Poly, budget: float) -> int:
    """The largest N with total(N) ≤ budget (binary search; total grows with N)."""
    if _eval(total, MAX_REACH) <= budget:
        return MAX_REACH
    low, high = 0, MAX_REACH
    while low < high:
        mid = (low + high + 1) // 2
        if _eval(total, mid) <= budget:
            low = mid
        else:
            high = mid - 1
    return low


Cost = tuple[Poly, Poly]  # (S: steps of the node itself, M: times it hands over to what follows)


def _cost(node: Node | _Seq | _Alt, follow: Node | None) -> Cost:
    """Upper bound of Java's work on ``node`` from one position, ``follow`` being the next item."""
    if isinstance(node, _Alt):
        costs = [_cost(branch, follow) for branch in node.branches]
        if len(costs) > 1 and _disjoint_heads(node.branches):
            # At most one alternative gets past its first character: the others cost one step.
            steps, ways = _const(0), _const(0)
            for s, m in costs:
                steps, ways = _max(steps, s), _max(ways, m)
            return _add(steps, _const(len(costs))), ways
        steps, ways = _const(0), _const(0)
        for s, m in costs:
            steps, ways = _add(steps, s), _add(ways, m)
        return steps, ways
    if isinstance(node, _Seq):
        steps, ways = _const(0), ONE
        for k, item in enumerate(node.items):
            s, m = _cost(item, node.items[k + 1] if k + 1 < len(node.items) else follow)
            steps, ways = _add(steps, _mul(ways, s)), _mul(ways, m)
        return steps, ways
    if isinstance(node, (_Atom, _Assert)):
        return ONE, ONE
    if isinstance(node, _Flags):
        return _const(0), ONE
    if isinstance(node, _Group):
        steps, ways = _cost(node.body, follow if node.kind in ("capture", "plain") else None)
        if node.kind in ("atomic", "ahead"):
            return _add(steps, ways), ONE
        return steps, ways
    return _repeat_cost(node, follow)


def _repeat_cost(node: _Repeat, follow: Node | None) -> Cost:
    times = N if node.hi is None or node.hi > _SMALL else _const(node.hi)
    choices = N if node.hi is None or node.hi - node.lo > _SMALL else _const(node.hi - node.lo + 1)
    item = node.item
    if isinstance(item, _Atom):
        if node.mode == "possessive":
            return _add(times, ONE), ONE
        # Backing off one character at a time; when the next item can never match a character
        # this repetition takes, only the longest (greedy) / the one stop (lazy) hands over.
        ways = ONE if _disjoint(item.chars, _head(follow)) else choices
        return _add(_mul(_const(2), times), ONE), ways
    if _min_width(item) == 0 and (node.hi is None or node.hi > 1):
        raise _refuse_node(node, "a repeated group can match the empty string")
    steps, ways = _cost(item, None)
    if node.mode == "possessive":
        return _add(_mul(times, steps), ONE), ONE
    if node.hi is not None and node.hi <= 1:  # X? : once or not
        return _add(steps, ONE), _add(ways, ONE)
    if not _deterministic(item) and (node.hi is None or node.hi > MAX_LOOP):
        # Java repeats such a group by recursion: a long value overflows the worker's stack.
        raise _refuse_node(
            node,
            f"a group with alternatives or optional parts may repeat at most {MAX_LOOP} times "
            "(write a class [ab] for (a|b), or make the repetition possessive: (...)*+",
        )
    if _is_one(ways):
        return _add(_mul(times, _add(steps, ONE)), ONE), choices
    # Several ways through each iteration: the ways multiply (nested quantifiers).
    total_ways, total_steps, power = _const(0), _const(0), ONE
    for count in range(node.hi + 1):
        if count >= node.lo:
            total_ways = _add(total_ways, power)
        if count < node.hi:
            total_steps = _add(total_steps, _mul(power, steps))
        power = _mul(power, ways)
    return _add(total_steps, ONE), total_ways


class _Refusal(Exception):
    def __init__(self, why: str) -> None:
        self.why = why


def _refuse_node(node: _Repeat, why: str) -> Exception:
    return _Refusal(f"{why} ({node.text})")


def _head(node: Node | None) -> _Chars | None:
    """The characters ``node`` must start with when it cannot match empty (else None: unknown)."""
    if isinstance(node, _Atom):
        return node.chars
    if isinstance(node, _Repeat) and node.lo >= 1:
        return _head(node.item)
    if isinstance(node, _Group) and node.kind in ("capture", "plain", "atomic") and len(node.body.branches) == 1:
        items = node.body.branches[0].items
        return _head(items[0]) if items else None
    return None


def _disjoint(a: _Chars | None, b: _Chars | None) -> bool:
    if a is None or b is None or a.negated and b.negated:
        return False
    if a.negated:
        a, b = b, a
    if b.negated:  # a ⊆ the ranges b excludes
        return all(any(lo <= x_lo and x_hi <= hi for lo, hi in b.ranges) for x_lo, x_hi in a.ranges)
    return not any(x_lo <= hi and lo <= x_hi for x_lo, x_hi in a.ranges for lo, hi in b.ranges)


def _disjoint_heads(branches: tuple[_Seq, ...]) -> bool:
    heads = [_head(branch.items[0]) if branch.items else None for branch in branches]
    return all(h is not None for h in heads) and all(_disjoint(heads[i], heads[j]) for i in range(len(heads)) for j in range(i))


def _min_width(node: Node | _Seq | _Alt) -> int:
    if isinstance(node, _Alt):
        return min(_min_width(b) for b in node.branches)
    if isinstance(node, _Seq):
        return sum(_min_width(item) for item in node.items)
    if isinstance(node, _Atom):
        return 1
    if isinstance(node, _Group):
        return 0 if node.kind == "ahead" else _min_width(node.body)
    if isinstance(node, _Repeat):
        return node.lo * _min_width(node.item)
    return 0


def _deterministic(node: Node | _Seq | _Alt) -> bool:
    """Whether Java repeats a group holding ``node`` iteratively (its GroupCurly: no alternatives,
    no optional or variable parts) rather than by one recursion per iteration."""
    if isinstance(node, _Alt):
        return len(node.branches) == 1 and _deterministic(node.branches[0])
    if isinstance(node, _Seq):
        return all(_deterministic(item) for item in node.items)
    if isinstance(node, (_Atom, _Flags)):
        return True
    if isinstance(node, _Group):
        return node.kind in ("capture", "plain") and _deterministic(node.body)
    if isinstance(node, _Repeat):
        return node.lo == node.hi and node.mode == "greedy" and _deterministic(node.item)
    return False


def _depth(node: Node | _Seq | _Alt) -> float:
    """Estimated stack frames of one match: Java recurses along the sequence and per iteration of a
    non-deterministic repeated group."""
    if isinstance(node, _Alt):
        return 1 + max(_depth(b) for b in node.branches)
    if isinstance(node, _Seq):
        total, literal_run = 0.0, False
        for item in node.items:
            run = isinstance(item, _Atom) and item.literal
            total += 0 if run and literal_run else _depth(item)
            literal_run = run
        return total
    if isinstance(node, _Group):
        return 2 + _depth(node.body)
    if isinstance(node, _Repeat):
        if isinstance(node.item, _Atom) or node.mode == "possessive" or _deterministic(node.item) or node.hi is not None and node.hi <= 1:
            return 1 + _depth(node.item)
        return (node.hi or MAX_LOOP + 1) * (3 + _depth(node.item))
    return 1
