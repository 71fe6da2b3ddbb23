"""Refuse REGEX patterns that can backtrack catastrophically, before Neo4j runs them.

Java's regex engine ignores thread interruption and Neo4j checks the transaction timeout
only between rows, so one evaluation of ``(a+)+$`` or ``.*.*.*.*.*x`` against one long
value can keep a CPU busy for minutes past the query timeout (measured: 67 s past a 3 s
timeout; > 7 min on 2,000 characters). The query timeout cannot stop that, so such
patterns are refused up front with KIP_4001 — the code whose recovery hint already says
"reduce regex". The rules (docs/limits.md):

- no back-references (``\\1``, ``\\k<name>``): matching them is exponential in general;
- no repeated group (any quantifier but ``?``) that contains an unbounded quantifier
  (``(a+)+``, ``(x*y)*``, ``(\\w+\\s?){2,}``) unless the inner one is possessive (``a++``);
- at most ``MAX_UNBOUNDED`` unbounded quantifiers (``*``, ``+``, ``{n,}``) in the whole
  pattern: each one multiplies the work by the length of the value.
"""
from __future__ import annotations

from ..errors import EXECUTION_TIMEOUT, KipError

MAX_UNBOUNDED = 3


def _refuse(pattern: str, why: str) -> KipError:
    return KipError(
        EXECUTION_TIMEOUT,
        f"REGEX {pattern!r} was refused before running: {why}; such a pattern can backtrack for longer than any query time limit.",
        "Simplify the regular expression: avoid nested quantifiers like (a+)+, back-references, and chains of .* — "
        "or use CONTAINS / STARTS_WITH / ENDS_WITH, which cannot backtrack.",
    )


def _quantifier_at(pattern: str, i: int) -> tuple[int, bool]:
    """Length and unboundedness of a quantifier starting at ``i`` (0 when there is none)."""
    char = pattern[i] if i < len(pattern) else ""
    if char in "*+":
        return 1, True
    if char == "?":
        return 1, False
    if char == "{":
        end = pattern.find("}", i)
        body = pattern[i + 1 : end] if end > 0 else ""
        if body and all(c.isdigit() or c == "," for c in body) and body[0].isdigit():
            return end - i + 1, body.endswith(",")
    return 0, False


def check_backtracking(pattern: str) -> None:
    """Raise KIP_4001 for a pattern that can backtrack catastrophically; see the module doc."""
    groups: list[bool] = []  # per open group: does it contain an unbounded, backtracking quantifier?
    unbounded = 0
    i, n = 0, len(pattern)
    just_closed: bool | None = None  # after ")": whether that group contained a quantifier
    while i < n:
        char = pattern[i]
        if char == "\\":
            nxt = pattern[i + 1 : i + 2]
            if nxt.isdigit() and nxt != "0" or nxt == "k":
                raise _refuse(pattern, "it uses a back-reference")
            i += 2
            just_closed = None
        elif char == "[":
            i = _skip_class(pattern, i)
            just_closed = None
        elif char == "(":
            groups.append(False)
            i = _skip_group_prefix(pattern, i + 1)
            just_closed = None
        elif char == ")":
            inner = groups.pop() if groups else False
            i += 1
            just_closed = inner
            if groups and inner:
                groups[-1] = True
        else:
            size, is_unbounded = _quantifier_at(pattern, i)
            if size:
                possessive = pattern[i + size : i + size + 1] == "+"
                if just_closed and not possessive and pattern[i] != "?":
                    raise _refuse(pattern, "a quantified group contains another quantifier (nested quantifiers)")
                if is_unbounded and not possessive:
                    unbounded += 1
                    if unbounded > MAX_UNBOUNDED:
                        raise _refuse(pattern, f"it has more than {MAX_UNBOUNDED} unbounded quantifiers (*, +, {{n,}})")
                if groups and is_unbounded and not possessive:
                    groups[-1] = True
                i += size + (1 if pattern[i + size : i + size + 1] in ("?", "+") else 0)
            else:
                i += 1
            just_closed = None


def _skip_group_prefix(pattern: str, i: int) -> int:
    """Skip ``?:``, ``?=``, ``?!``, ``?<=``, ``?<!``, ``?<name>`` and inline flags after ``(``."""
    if pattern[i : i + 1] != "?":
        return i
    i += 1
    if pattern[i : i + 1] == "<" and pattern[i + 1 : i + 2] not in ("=", "!"):
        end = pattern.find(">", i)
        return end + 1 if end > 0 else len(pattern)
    while i < len(pattern) and (pattern[i].isalpha() or pattern[i] == "-"):
        i += 1  # inline flags such as (?i) or (?s-m:
    if pattern[i : i + 1] == "<":
        i += 1
    if pattern[i : i + 1] in (":", "=", "!", ">"):
        i += 1
    return i


def _skip_class(pattern: str, i: int) -> int:
    """Index just after the character class starting at ``pattern[i] == '['``."""
    i += 1
    if pattern[i : i + 1] == "^":
        i += 1
    if pattern[i : i + 1] == "]":
        i += 1
    depth = 1
    while i < len(pattern) and depth:
        char = pattern[i]
        if char == "\\":
            i += 2
            continue
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        i += 1
    return i
