"""A small Cypher builder: the only way lowering code produces Cypher text.

A statement is a sequence of *parts*. A plain ``str`` part is engine-authored
template text (keywords, punctuation, engine-owned names) and is never derived
from user input. Everything that comes from a KIP command goes through a typed
part: ``Ident`` (a label, relationship type or property name — always
backtick-quoted, inner backticks doubled), ``Var`` (a KIP variable) or
``Param`` (a value — always a Cypher parameter). ``build()`` returns
``(text, params)`` with deterministic parameter names ``p0, p1, …`` in order of
first appearance, so the same command always compiles to the same text.
``RuntimeParam`` is a parameter the *caller* binds at run time (a placeholder kept by
``compile(…, keep_placeholders=True)``): rendered ``$name``, absent from ``params``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Union

from ..errors import INVALID_SYNTAX, KipError

_PLAIN = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
_PARAMETER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

# Words Cypher treats specially; a variable spelled like one is quoted to stay unambiguous.
RESERVED = frozenset(
    """ALL AND ANY AS ASC ASCENDING BY CALL CASE CONTAINS COUNT CREATE DELETE DESC DESCENDING DETACH DISTINCT
    ELSE END ENDS EXISTS FALSE FOREACH IN IS LIMIT MATCH MERGE NOT NULL ON OPTIONAL OR ORDER REMOVE RETURN SET
    SKIP STARTS THEN TRUE UNION UNWIND WHEN WHERE WITH XOR YIELD COLLECT""".split()
)


def quote(name: str) -> str:
    """Backtick-quote an identifier: the injection-proof form.

    Inner backticks are doubled, and every backslash is written as the escape ``\\u005c``:
    Cypher decodes Java-style ``\\uXXXX`` escapes *inside* backticks, so a name holding the
    six characters ``\\u0060`` would otherwise close the quoted identifier and let the rest of
    the name run as Cypher (tests/test_reliability_hostile.py).
    """
    return "`" + name.replace("\\", "\\u005c").replace("`", "``") + "`"


def literal(value: str) -> str:
    """An engine-authored constant (an index name, a marker) as a Cypher string literal, control
    characters escaped. Never for user text: user values are ``Param``s."""
    out = []
    for ch in value:
        if ch in "\\'":
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append("\\u%04X" % ord(ch))
        else:
            out.append(ch)
    return "'" + "".join(out) + "'"


@dataclass(frozen=True, slots=True)
class Ident:
    """A label, relationship type or property key; rendered backtick-quoted."""

    name: str


@dataclass(frozen=True, slots=True)
class Var:
    """A KIP variable ``?name`` rendered as a Cypher variable.

    Names starting with ``_`` are reserved for engine-internal variables (see
    ``Internal``), so such KIP variables and reserved words are quoted together
    with their ``?`` and can never collide with anything the engine introduces.
    """

    name: str

    def render(self) -> str:
        if _PLAIN.match(self.name) and self.name.upper() not in RESERVED:
            return self.name
        return quote("?" + self.name)


@dataclass(frozen=True, slots=True)
class Internal:
    """An engine-internal variable (``_n0``, ``_rows`` …); never user text."""

    name: str

    def render(self) -> str:
        return "_" + self.name


@dataclass(frozen=True, slots=True)
class Param:
    """A value sent as a Cypher parameter. ``name`` is optional; otherwise ``p<N>`` is assigned."""

    value: Any
    name: str = ""


@dataclass(frozen=True, slots=True)
class RuntimeParam:
    """A parameter left for the embedding code to bind (``$name``, the KIP placeholder's own
    name); ``offset``: where the placeholder stands in the command, for errors."""

    name: str
    offset: int = -1

    def render(self) -> str:
        return "$" + (self.name if _PARAMETER.match(self.name) else quote(self.name))


Part = Union[str, Ident, Var, Internal, Param, RuntimeParam, "Fragment"]


@dataclass(slots=True)
class Fragment:
    """An ordered list of parts; fragments nest, so expressions compose without string splicing."""

    parts: list[Part] = field(default_factory=list)

    def add(self, *parts: Part) -> Fragment:
        self.parts.extend(parts)
        return self

    def __bool__(self) -> bool:
        return bool(self.parts)


def frag(*parts: Part) -> Fragment:
    return Fragment(list(parts))


def join(separator: str, items: Iterable[Part]) -> Fragment:
    out = Fragment()
    for index, item in enumerate(items):
        if index:
            out.parts.append(separator)
        out.parts.append(item)
    return out


def prop(owner: Var | Internal | str, key: str) -> Fragment:
    """``owner.`key` `` — property access with a quoted key."""
    return frag(owner, ".", Ident(key))


def labels(*names: str) -> Fragment:
    """``:`A`:`B` ``."""
    return Fragment([part for name in names for part in (":", Ident(name))])


#: The column of a statement that returns its rows collected into one record.
COLLECTED = "rows"


def return_collected(columns: Iterable[tuple[str, Part]], column: str = COLLECTED) -> Fragment:
    """``RETURN collect({k: expr, …}) AS rows`` (``column``): all rows in ONE record.

    For statements that answer one row per input row (an UPSERT wave of 100 blocks): a hundred
    Bolt records cost the server and the driver more than the statement's own work (measured in
    docs/performance.md, "Round 3"); one record with a list costs almost nothing."""
    items = join(", ", [frag(Ident(key), ": ", expr) for key, expr in columns])
    return frag("RETURN collect({", items, "}) AS ", column)


class Statement:
    """One Cypher statement built line by line; ``build()`` gives ``(text, params)``.

    ``block`` opens a braced sub-clause whose lines are indented and whose closing brace is
    written by the builder, so no caller ever balances braces across functions::

        with stmt.block("CALL (row)"):
            stmt.line("MATCH (n:", names.concept, " {id: row.id})")
            stmt.line("RETURN n")
    """

    def __init__(self, head: Head | None = None) -> None:
        #: Lines this statement begins with, rendered once for every statement that shares them.
        self.head = head
        self.lines: list[Fragment] = []
        self._depth = 0

    def line(self, *parts: Part) -> Statement:
        self.lines.append(Fragment(["  " * self._depth, *parts] if self._depth else list(parts)))
        return self

    @contextmanager
    def block(self, *head: Part, close: str = "}") -> Iterator[Statement]:
        """``head {`` … ``}`` with the lines added inside indented one level."""
        self.line(*head, " {")
        self._depth += 1
        try:
            yield self
        finally:
            self._depth -= 1
            self.line(close)

    def extend(self, other: Statement) -> Statement:
        self.lines.extend(other.all_lines())
        return self

    def all_lines(self) -> list[Fragment]:
        """The head's lines, then this statement's own."""
        return [*self.head.lines, *self.lines] if self.head is not None else self.lines

    def build(self) -> tuple[str, dict[str, Any]]:
        text, params, _ = self.build_with_runtime()
        return text, params

    def build_with_runtime(self) -> tuple[str, dict[str, Any], tuple[str, ...]]:
        """``build()`` plus the names of the statement's ``RuntimeParam``s (first appearance first).

        One walk in the common case: a statement with ``RuntimeParam``s (only a compile that
        keeps placeholders makes them) is rendered again knowing their names, so no engine
        parameter takes one."""
        head = self.head
        renderer = head.renderer.copy() if head is not None else _Renderer({})
        texts = [*head.texts] if head is not None else []
        texts += [renderer.render(line) for line in self.lines]
        if renderer.seen_runtime:
            renderer = _Renderer(self.runtime_params())
            return renderer.render_lines(self.all_lines()), renderer.params, tuple(renderer.runtime)
        return "\n".join(texts), renderer.params, tuple(renderer.runtime)

    def runtime_params(self) -> dict[str, RuntimeParam]:
        """The ``RuntimeParam``s of the statement by name, in order of first appearance."""
        found: dict[str, RuntimeParam] = {}
        stack: list[Part] = list(reversed(self.all_lines()))
        while stack:
            part = stack.pop()
            if isinstance(part, Fragment):
                stack.extend(reversed(part.parts))
            elif isinstance(part, RuntimeParam):
                found.setdefault(part.name, part)
        return found


class Head:
    """Lines several statements begin with, rendered once (``Statement(head)``): a FIND's query and
    the text its fingerprint digests begin with the same pattern lines, and rendering them twice
    cost ≈ 5 % of a cold compile. A statement built after it continues its parameter numbering,
    so its text and parameters are those of the same lines rendered in one statement."""

    def __init__(self, lines: list[Fragment]) -> None:
        self.lines = lines
        self.renderer = _Renderer({})
        self.texts = [self.renderer.render(line) for line in lines]


class _Renderer:
    def __init__(self, runtime: dict[str, RuntimeParam]) -> None:
        self.params: dict[str, Any] = {}
        self._counter = 0
        #: names the caller binds at run time: no engine parameter may take one
        self.runtime = runtime
        #: whether a ``RuntimeParam`` was rendered (``Statement.build_with_runtime``)
        self.seen_runtime = False

    def copy(self) -> _Renderer:
        """A renderer that goes on from this one's state (a ``Head``'s, for each statement after it)."""
        other = _Renderer(dict(self.runtime))
        other.params = dict(self.params)
        other._counter = self._counter
        other.seen_runtime = self.seen_runtime
        return other

    def _param_name(self, param: Param) -> str:
        if param.name in self.runtime:
            kept = self.runtime[param.name]
            raise KipError(
                INVALID_SYNTAX,
                f"The placeholder :{kept.name} would be the Cypher parameter ${kept.name}, which the compiled statement already uses for a value of its own.",
                f"Rename the placeholder (e.g. :{kept.name}_value) or give its value with --params.",
                offset=kept.offset if kept.offset >= 0 else None,
            )
        if param.name:
            if param.name in self.params and self.params[param.name] is not param.value and self.params[param.name] != param.value:
                raise ValueError(f"parameter {param.name} bound twice to different values")
            return param.name
        name = f"p{self._counter}"
        self._counter += 1
        while name in self.params or name in self.runtime:
            name = f"p{self._counter}"
            self._counter += 1
        return name

    def render_lines(self, lines: list[Fragment]) -> str:
        return "\n".join(self.render(line) for line in lines)

    def render(self, part: Part) -> str:
        """The text of ``part``: an explicit stack instead of recursion (compiling is mostly
        this walk), dispatching on the exact type — parts are never subclassed."""
        out: list[str] = []
        stack: list[Part] = [part]
        while stack:
            item = stack.pop()
            kind = type(item)
            if kind is str:
                out.append(item)  # type: ignore[arg-type]
            elif kind is Fragment:
                stack.extend(reversed(item.parts))  # type: ignore[union-attr]
            elif kind is Ident:
                out.append(quote(item.name))  # type: ignore[union-attr]
            elif kind is Param:
                name = self._param_name(item)  # type: ignore[arg-type]
                self.params[name] = item.value  # type: ignore[union-attr]
                out.append("$" + name)
            elif kind is Var or kind is Internal or kind is RuntimeParam:
                self.seen_runtime = self.seen_runtime or kind is RuntimeParam
                out.append(item.render())  # type: ignore[union-attr]
            elif isinstance(item, str):  # a str subclass (e.g. an enum value)
                out.append(str(item))
            else:
                raise TypeError(f"not a Cypher part: {item!r}")
        return "".join(out)
