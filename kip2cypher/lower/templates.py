"""Plan templates: a command that differs from a compiled one only in its literal values reuses
that command's plan, with the new values put where the old ones were (docs/performance.md,
"Plan templates").

An agent's memory loop sends the same UPSERT / UPDATE / FIND shapes over and over with fresh
values; a cold compile (parse + lowering) costs ≈ 1 ms, a template fill a few µs.

- **Shape** (``shape``): a tokenizer pass over the text turns each literal value token — a
  string, a number, ``true`` / ``false`` — into a *slot*, unless its position shapes the
  statement (a type, a predicate, an object key, an ``id``, LIMIT, MODE, a REGEX pattern, a
  quantifier: those stay part of the key). Each slot's value is decoded with the parser's own
  ``string_literal`` / ``number_literal`` (same checks, same located errors); a slot whose
  value is not *plain* (``value_class``) stays part of the key too. The key is the text around
  the slots, each slot's class, which slots are equal and how the numbers order. A command
  with a CURSOR has no shape (its decoding is bound to the values).
- **Template** (``build``): on the second sighting of a shape, the command is lowered a second
  time with *sentinel* values — other values of the same classes, in the same equality and
  order pattern, each token longer than the original so every later offset moves. The two
  plans must be identical except at leaves that hold exactly the literal (original vs sentinel:
  a slot; when several equal slots hold it, the first: the key keeps them equal) or an offset
  into the text moved by exactly the sentinels' extra length (an offset).
  Anything else (the value pasted into Cypher, hashed, encoded, or deciding a plan fact) and
  the shape is never templated — correctness over hit rate.
- **Fill** (``fill``): the template's plan with the new values at the slots, the offsets
  moved by the new tokens' lengths, ``fingerprint`` recomputed from ``fingerprint_parts``.

Why values of the same class pass the lowering's checks as the original did: every check the
lowering makes on a value either looks only at what the class fixes (JSON type, sign, zero /
one, magnitude, a plain printable string that is not engine-reserved, not empty, not an id,
within 256 characters, equality and order with the other values) or rejects the sentinel too,
so the shape is never templated (an enum such as MODE, a name KIP reserves).
"""

from __future__ import annotations

import bisect
import dataclasses
import math
import re
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, NamedTuple

from .. import cursor
from ..caching import TextCache
from ..syntax.grammars import number_literal, string_literal
from ..syntax.placeholders import EMBEDDED_RE
from .plan import replaced
from .surprises import text_read_as_typed

# A comment, a string, a word (keyword, name, ?var, ?dot.path, :placeholder, true/false/null),
# a number, or any other character. Numbers follow words, so digits inside names stay names.
_TOKEN = re.compile(
    r"(?P<c>//[^\n]*|/\*[\s\S]*?(?:\*/|\Z))"  # unterminated: one match to the end (as ``_LITERAL``)
    r'|(?P<s>"[^"\\\x00-\x1f]*(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\x00-\x1f]*)*"?)'
    r"|(?P<w>[?:$]?[^\W\d]\w*(?:\.\w+)*)"
    r"|(?P<n>-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?(?![\w.]))"
    r"|(?P<o>\S)"
)
#: Words after which a literal shapes the statement (LIMIT, CURSOR, MODE, a type name …).
_KEYED_AFTER = frozenset({"LIMIT", "CURSOR", "MODE", "TYPE", "type", "id", "REGEX"})
#: Characters a plain string never holds: control characters, quotes, and the ones KIP's names
#: reserve (a namespace separator, a backtick, a pipe, ``$`` of the meta types).
_PLAIN_STRING = re.compile(r"[^\x00-\x1f\x7f-\x9f\"\\`|/$_][^\x00-\x1f\x7f-\x9f\"\\`|/$]{0,255}")
_LARGEST = 2**50


class Slot(NamedTuple):
    start: int
    end: int
    value: Any


class Shape(NamedTuple):
    """A command's shape: ``key`` (hashable) and its slots in text order."""

    key: tuple
    slots: tuple[Slot, ...]


def value_class(value: Any) -> str | None:
    """The class of a literal value a template may stand for, or ``None`` (keyed verbatim)."""
    if isinstance(value, bool):
        return "b"
    if isinstance(value, str):
        # Not plain: what a name check refuses (empty, blank, control characters, KIP's reserved
        # names and characters), what the quoted-placeholder rule reads (":name") and text that
        # reads as a number or an instant (its compile-time warning depends on the value).
        if (
            _PLAIN_STRING.fullmatch(value) is None
            or value.isspace()
            or value[:3].lower() == "kip"
            or (":" in value and EMBEDDED_RE.search(value))
            or text_read_as_typed(value)
        ):
            return None
        return "s"
    if isinstance(value, int):
        return ("i-" if value < 0 else "i+") if 2 <= abs(value) < _LARGEST else None
    if isinstance(value, float):
        sign = "-" if value < 0 else "+"
        if 0 < abs(value) < 1 and abs(value) >= 1e-4:
            return "fu" + sign
        if 1 < abs(value) < 1e15:
            return "fl" + sign
    return None


# Only the literal tokens (and the comments that may hold look-alikes): the fast pass. Every match
# begins with one character of a set, so the regex engine skips to the next such character in C
# (a leading lookahead made it try a match at every position: ≈ 15 % of a template hit); each
# alternative then tests that character by a lookbehind, and ends with an empty group naming its
# kind (``lastgroup``; a comment has none).
# A string or a comment never fails once opened: its closing quote (``*/``) is optional, so an
# unterminated one is one match to its end (kind ``u``) — not a failed match retried from every
# later quote (40 KB of ``\"`` took 65 s). Such a token does not decode (a string) or leaves a
# skeleton no valid command has (a comment): the cold compile answers it.
_LITERAL = re.compile(
    r'[/"0-9tf-](?:'
    r"(?<=/)(?:/[^\n]*|\*[\s\S]*?(?:\*/|\Z))"
    r'|(?<=")[^"\\\x00-\x1f]*(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\x00-\x1f]*)*(?:"(?P<s>)|(?P<u>))'
    r"|(?<![\w.].)(?:(?<=-)(?:0|[1-9][0-9]*)|(?<=0)|(?<=[1-9])[0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?(?![\w.])(?P<n>)"
    r"|(?<![\w.?:$].)(?:(?<=t)rue|(?<=f)alse)(?!\w)(?P<b>))"
)
_LITERAL_WORDS = frozenset({"true", "false"})
#: Which literals of a skeleton (the text without its literal tokens) shape the statement.
_masks = TextCache(1 << 20, 4096)


def shape(text: str) -> Shape | None:
    """The shape of ``text``, or ``None`` when it has none (a CURSOR, a literal that does not decode:
    a cold compile answers it)."""
    if "CURSOR" in text:
        return None
    pieces, kinds, spans, last = [], [], [], 0
    for m in _LITERAL.finditer(text):
        kind = m.lastgroup
        if kind is None:
            continue  # a comment
        if kind == "u":
            return None  # an unterminated string: the cold compile's error
        start, end = m.span()
        pieces.append(text[last:start])
        kinds.append(kind)
        spans.append((start, end))
        last = end
    pieces.append(text[last:])
    skeleton = (tuple(pieces), tuple(kinds))
    mask = _masks.get(skeleton)
    if mask is None:
        mask = _mask(text, [start for start, _ in spans])
        _masks.put(skeleton, mask, len(text))
    slots, classes, keyed = [], [], []
    for (start, end), kind, shapes_statement in zip(spans, kinds, mask):
        token = text[start:end]
        # A literal that shapes the statement is keyed verbatim, not decoded: a template exists
        # only for a key whose text compiled, so the same token decodes as it did then.
        cls = None if shapes_statement else value_class(value := _value(text, token, kind, start, end))
        if cls is None:
            keyed.append(token)
        else:
            slots.append(Slot(start, end, value))
            classes.append(cls)
    values = [s.value for s in slots]
    if keyed and any(isinstance(v, str) and f'"{v}"' in keyed for v in values):
        return None  # a value equal to a name the statement uses: not worth the doubt
    key = (skeleton, mask, tuple(keyed), tuple(classes), _equalities(values), _order(values))
    return Shape(key, tuple(slots))


def _mask(text: str, starts: list[int]) -> tuple[bool, ...]:
    """For each literal token (by where it starts), whether its position shapes the statement (by
    the tokens around it)."""
    keyed_at: dict[int, bool] = {}
    # The innermost open bracket and whether it holds no slots (REGEX arguments, a quantifier).
    stack: list[tuple[str, bool]] = []
    prev = prev2 = ""  # the two previous significant tokens (or their kind)
    tokens = [m for m in _TOKEN.finditer(text) if m.lastgroup != "c"]
    for index, m in enumerate(tokens):
        kind, token = m.lastgroup, m.group()
        if kind == "o":
            if token in "([{":
                stack.append((token, token == "(" and prev == "REGEX" or token == "{" and prev == "s" or bool(stack and stack[-1][1])))
            elif token in ")]}" and stack:
                stack.pop()
        if kind in "sn" or token in _LITERAL_WORDS:
            following = tokens[index + 1].group() if index + 1 < len(tokens) else ""
            keyed_at[m.start()] = bool(
                prev in _KEYED_AFTER
                or (prev == ":" and prev2 in _KEYED_AFTER)
                or (stack and stack[-1][1])
                or following in (":", "|", "{")
                or prev == "|"
                or (kind == "s" and following == "," and prev in (",", "(") and stack and stack[-1][0] == "(")
            )
        prev2, prev = prev, (token if kind in "wo" else kind)
    # Both passes must see the same literals; if not, every literal is keyed (no slot).
    if starts != sorted(keyed_at):
        return (True,) * len(starts)
    return tuple(keyed_at[start] for start in starts)


def _value(text: str, token: str, kind: str, start: int, end: int) -> Any:
    """The decoded value of a literal token (the parser's own functions: same checks, same
    errors); a literal that does not decode raises. The commonest tokens — an ASCII string
    without escapes, a short integer — are read directly: what the parser's functions decode
    them to, without building an AST node (every hit pays this)."""
    if kind == "s":
        if token.isascii() and "\\" not in token:
            return token[1:-1]
        return string_literal(text, token, start, end).value
    if kind == "n":
        if len(token) < 19 and token.isdigit():
            return int(token)
        return number_literal(text, token, start, end).value
    return token == "true"


def _equalities(values: list[Any]) -> tuple[int, ...]:
    """For each value, the first slot holding the same value (of the same type)."""
    first: dict[tuple[type, Any], int] = {}
    return tuple(first.setdefault((type(v), v), i) for i, v in enumerate(values))


def _order(values: list[Any]) -> tuple[int, ...]:
    """The rank of each number among the numbers (booleans and strings excluded); ``()`` for fewer
    than two numbers, whose ranks the slots' classes already fix (most commands: no work)."""
    numbers = sorted({v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)})
    if len(numbers) < 2:
        return ()
    rank = {v: i for i, v in enumerate(numbers)}
    return tuple(rank.get(v, -1) if not isinstance(v, bool) else -1 for v in values)


# ------------------------------------------------------------------ sentinels
def _sentinel(value: Any, index: int) -> Any:
    """Another value of ``value``'s class; numbers by a map that keeps sign, class and order."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, str):
        return f"Zq{index}w{'x' * (len(value) % 7)}"
    if isinstance(value, int):
        return value * 10 + (3 if value > 0 else -3)
    if abs(value) < 1:
        return math.copysign(value * value, value)
    return value * 2 + 1


def sentinel_text(text: str, slots: tuple[Slot, ...]) -> tuple[str, tuple[Slot, ...]]:
    """``text`` with every slot's token replaced by a sentinel's, padded with blanks so that each
    token grows by at least 7 characters (every offset after a slot moves)."""
    pieces, out, last, shift = [], [], 0, 0
    chosen: dict[tuple[type, Any], Any] = {}
    for i, slot in enumerate(slots):
        value = chosen.setdefault((type(slot.value), slot.value), _sentinel(slot.value, i))
        token = _token_of(value)
        pad = max(1, slot.end - slot.start + 7 - len(token))
        pieces += [text[last : slot.start], token, " " * pad]
        start = slot.start + shift
        out.append(Slot(start, start + len(token) + pad, value))  # the blanks count as the token's
        shift += len(token) + pad - (slot.end - slot.start)
        last = slot.end
    pieces.append(text[last:])
    return "".join(pieces), tuple(out)


def _token_of(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value + '"'
    return repr(value)


# ------------------------------------------------------------------ templates
#: A hole of a template: slot ``i``'s value (an int ``i`` ≥ 0), or ``_OFFSET``: an offset into the text.
_OFFSET = -1
#: How ``_fill`` copies a node with holes below it (decided once, when the template is built).
_OBJECT, _SLOTTED, _DICT, _PROXY, _SEQUENCE = range(5)


@dataclass(frozen=True)
class Template:
    plan: Any
    #: ``(how, ((field / key / index, hole or node), …))`` from the plan's root: only the nodes on
    #: the path to a hole, each with how it is copied (``_diff``).
    holes: tuple
    ends: tuple[int, ...]  # where each slot's token ends in the template's text
    lengths: tuple[int, ...]
    #: When a hole is in ``fingerprint_parts``: how many parts lead without one, and the digest
    #: of those (``cursor.fingerprint_head``); ``None``: the fingerprint is the template's.
    digest: tuple[int, Any] | None = None


class _NotATemplate(Exception):
    pass


def build(plan: Any, slots: tuple[Slot, ...], variant: Any, variant_slots: tuple[Slot, ...]) -> Template | None:
    """The template of ``plan`` (lowered from the slots' values) checked against ``variant`` (the
    same shape lowered from ``variant_slots``, ``sentinel_text``), or ``None`` when they differ
    anywhere else."""
    if not hasattr(plan, "__dict__"):
        return None  # ``fill`` copies the root with ``replaced``
    values = [s.value for s in slots]
    sentinels = [s.value for s in variant_slots]
    ends = tuple(s.end for s in slots)
    moves = tuple(v.end - s.end for s, v in zip(slots, variant_slots))
    try:
        holes = _diff(plan, variant, values, sentinels, ends, moves)
    except _NotATemplate:
        return None
    holes = holes or (_OBJECT, ())
    template = Template(plan, holes, ends, tuple(s.end - s.start for s in slots), _digest(plan, holes))
    # Filled with the sentinels, the template must give back the variant (offsets moved, the
    # fingerprint recomputed from its parts) — compared field by field, fingerprint included.
    return template if fill(template, variant_slots, variant.command_text) == variant else None


def _diff(a: Any, b: Any, values: list[Any], sentinels: list[Any], ends: tuple[int, ...], moves: tuple[int, ...]) -> Any:
    """Where ``a`` and ``b`` differ: ``None`` (nowhere), a hole, or a node ``(how, entries)``."""
    if type(a) is not type(b):
        raise _NotATemplate
    if dataclasses.is_dataclass(a):
        derived = {"command_text", "fingerprint"} if getattr(a, "fingerprint_parts", ()) else {"command_text"}
        names = [f.name for f in dataclasses.fields(a) if f.name not in derived]
        entries = tuple((k, sub) for k in names if (sub := _diff(getattr(a, k), getattr(b, k), values, sentinels, ends, moves)) is not None)
        return (_OBJECT if hasattr(a, "__dict__") else _SLOTTED, entries) if entries else None
    if type(a) in (dict, MappingProxyType):  # the containers ``_fill`` rebuilds; anything else is a leaf
        if list(a) != list(b):
            raise _NotATemplate
        entries = tuple((k, sub) for k in a if (sub := _diff(a[k], b[k], values, sentinels, ends, moves)) is not None)
        return (_DICT if type(a) is dict else _PROXY, entries) if entries else None
    if type(a) in (tuple, list):
        if len(a) != len(b):
            raise _NotATemplate
        entries = tuple((i, sub) for i, (x, y) in enumerate(zip(a, b)) if (sub := _diff(x, y, values, sentinels, ends, moves)) is not None)
        return (_SEQUENCE, entries) if entries else None
    if a == b:
        return None
    slots = [i for i, (v, s) in enumerate(zip(values, sentinels)) if type(v) is type(a) and v == a and s == b]
    offset = type(a) is int and b == a + _moved(a, ends, moves)
    if slots and not offset:
        # Several slots hold this value (one attribute value or source on many blocks): the key's
        # equalities keep them equal in every text of the shape, so the first one fills it.
        return slots[0]
    if offset and not slots:
        return _OFFSET
    raise _NotATemplate


def _digest(plan: Any, holes: tuple) -> tuple[int, Any] | None:
    """``Template.digest``: the parts of a FIND's fingerprint before its first hole, digested once."""
    parts = dict(holes[1]).get("fingerprint_parts") if getattr(plan, "fingerprint_parts", ()) else None
    if parts is None:
        return None
    fixed = min(index for index, _ in parts[1])
    return fixed, cursor.fingerprint_head(*plan.fingerprint_parts[:fixed])


def _moved(offset: int, ends: tuple[int, ...], moves: tuple[int, ...]) -> int:
    """How far an offset of the template's text moves: the growth of every slot ending at or
    before it (``moves`` is cumulative and ``ends`` ascending, so a bisection finds it: a scan
    made a fill of 400 slots quadratic, docs/performance.md Round 9)."""
    before = bisect.bisect_right(ends, offset)
    return moves[before - 1] if before else 0


def fill(template: Template, slots: tuple[Slot, ...], text: str) -> Any:
    """The template's plan for ``text``, whose slots are ``slots``: one copy of the root, with its
    filled fields and the derived ones (the text; a fingerprint under which a value changed)."""
    moves, total = [], 0
    for slot, length in zip(slots, template.lengths):
        total += (slot.end - slot.start) - length
        moves.append(total)
    values, ends, plan = [s.value for s in slots], template.ends, template.plan
    changes = {name: _at(getattr(plan, name), sub, values, ends, tuple(moves)) for name, sub in template.holes[1]}
    if template.digest is not None:
        fixed, head = template.digest
        changes["fingerprint"] = cursor.fingerprint_tail(head, *changes["fingerprint_parts"][fixed:])
    changes["command_text"] = text
    return replaced(plan, changes)


def _fill(obj: Any, node: tuple, values: list[Any], ends: tuple[int, ...], moves: tuple[int, ...]) -> Any:
    """A copy of ``obj`` with the holes below ``node`` filled; what no hole is under is shared."""
    how, entries = node
    if how == _OBJECT:
        return replaced(obj, {name: _at(getattr(obj, name), sub, values, ends, moves) for name, sub in entries})
    if how == _SLOTTED:
        return dataclasses.replace(obj, **{name: _at(getattr(obj, name), sub, values, ends, moves) for name, sub in entries})
    if how == _SEQUENCE:
        items = list(obj)
        for i, sub in entries:
            items[i] = _at(items[i], sub, values, ends, moves)
        return type(obj)(items)
    filled = dict(obj)
    for key, sub in entries:
        filled[key] = _at(filled[key], sub, values, ends, moves)
    return filled if how == _DICT else MappingProxyType(filled)


def _at(old: Any, sub: Any, values: list[Any], ends: tuple[int, ...], moves: tuple[int, ...]) -> Any:
    """What replaces ``old`` in a fill: a slot's value, an offset moved, or a node filled."""
    if type(sub) is not int:
        return _fill(old, sub, values, ends, moves)
    return values[sub] if sub >= 0 else old + _moved(old, ends, moves)
