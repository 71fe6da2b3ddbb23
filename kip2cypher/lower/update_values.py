"""UPDATE's value expressions (spec §4.3: ADD/MUL/CLAMP/COALESCE, dot paths of the element
itself): each value position of a SET lowered into a Cypher expression over the element's
properties as read after its write lock (``lower/update.py`` builds the statement around them)."""

from __future__ import annotations

from typing import Any

from .. import errors
from ..cypher import storage
from ..cypher.builder import Fragment, Ident, Internal, Param, frag
from ..errors import KipError
from ..syntax import ast
from ..syntax.values import describe, resolve
from . import filters

#: A Cypher test that a value is a number.
NUMERIC = " IS :: INTEGER | FLOAT"


class Expr:
    """Lowers one UPDATE value position into a Cypher expression over ``cur`` (the element's properties)."""

    def __init__(self, target: str, parameters: dict[str, Any]) -> None:
        self.target = target
        self.parameters = parameters
        #: the stored keys the expressions read (``cur.<key>``)
        self.reads: list[str] = []
        self._fresh = 0

    @staticmethod
    def computes(value: Any) -> bool:
        """Whether a value position is an update expression (else a plain JSON value)."""
        return isinstance(value, (ast.DotPath, ast.UpdateCall))

    def path(self, value: ast.DotPath) -> Fragment:
        if value.var != self.target:
            raise KipError(
                errors.REFERENCE_ERROR,
                f"An update expression can only read ?{self.target} itself, not ?{value.var}.",
                f"Each element's new value must come from its own state: use ?{self.target}.attributes.… / ?{self.target}.metadata.….",
                offset=value.span.start,
            )
        if len(value.path) != 2 or value.path[0] not in ("attributes", "metadata"):
            raise KipError(
                errors.INVALID_SYNTAX,
                f"?{value.var}.{'.'.join(value.path)} is not a numeric operand.",
                f"Update expressions read ?{self.target}.attributes.<key> or ?{self.target}.metadata.<key>.",
                offset=value.span.start,
            )
        prefix = storage.ATTR_PREFIX if value.path[0] == "attributes" else storage.META_PREFIX
        self.reads.append(prefix + value.path[1])
        return frag(Internal("cur"), ".", Ident(prefix + value.path[1]))

    def numeric(self, value: Any) -> Fragment:
        """A number-or-null expression (null when the operand is null or not a number)."""
        if isinstance(value, ast.DotPath):
            raw = self.path(value)
            return frag("CASE WHEN ", raw, NUMERIC, " THEN ", raw, " END")
        if isinstance(value, ast.UpdateCall):
            return self.call(value)
        v = resolve(value, self.parameters)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise KipError(
                errors.INVALID_VALUE_TYPE,
                f"Update expression operands must be numbers, got {describe(v)}.",
                "Use number literals, :placeholders bound to numbers, ?target.… paths or nested ADD/MUL/CLAMP/COALESCE.",
                offset=value.span.start,
            )
        return frag(Param(v))

    def check_interval(self, call: ast.UpdateCall) -> None:
        """CLAMP(x, lo, hi) with bounds known now and lo > hi asks nothing answerable: KIP_1001.
        Bounds known only when it runs skip the key instead, as a null result does
        (docs/interop.md A12; the reference engine yields null there too)."""
        lo, hi = call.args[1:]
        if isinstance(lo, (ast.Literal, ast.Placeholder)) and isinstance(hi, (ast.Literal, ast.Placeholder)):
            low, high = resolve(lo, self.parameters), resolve(hi, self.parameters)
            numbers = all(isinstance(b, (int, float)) and not isinstance(b, bool) for b in (low, high))
            if numbers and low > high:
                raise KipError(
                    errors.INVALID_SYNTAX,
                    f"CLAMP(x, lo, hi) needs lo ≤ hi, got lo = {low} and hi = {high}: no value lies in that interval.",
                    f"Swap the bounds: CLAMP(x, {high}, {low}).",
                    offset=call.span.start,
                )

    def call(self, call: ast.UpdateCall) -> Fragment:
        f = call.func
        if f == "ADD":
            return frag("(", self.numeric(call.args[0]), " + ", self.numeric(call.args[1]), ")")
        if f == "MUL":
            return frag("(", self.numeric(call.args[0]), " * ", self.numeric(call.args[1]), ")")
        if f == "CLAMP":
            # The operands are bound once (a one-item list comprehension): each may be a nested
            # expression, which writing it out in every branch would repeat.
            self.check_interval(call)
            v = Internal(f"v{self._fresh}")
            self._fresh += 1
            x, lo, hi = (self.numeric(a) for a in call.args)
            return frag(
                "[",
                v,
                " IN [[",
                x,
                ", ",
                lo,
                ", ",
                hi,
                "]] | CASE WHEN ",
                v,
                "[0] IS NULL OR ",
                v,
                "[1] IS NULL OR ",
                v,
                "[2] IS NULL OR ",
                v,
                "[1] > ",
                v,
                "[2] THEN null WHEN ",
                v,
                "[0] < ",
                v,
                "[1] THEN ",
                v,
                "[1] WHEN ",
                v,
                "[0] > ",
                v,
                "[2] THEN ",
                v,
                "[2] ELSE ",
                v,
                "[0] END][0]",
            )
        if f == "COALESCE":
            first, default = call.args
            d = self.numeric(default)
            if isinstance(first, ast.DotPath):
                raw = self.path(first)
                return frag(
                    "CASE WHEN ",
                    raw,
                    " IS NULL OR ",
                    raw,
                    " = ",
                    filters.JSON_NULL_LITERAL,
                    " THEN ",
                    d,
                    " WHEN ",
                    raw,
                    NUMERIC,
                    " THEN ",
                    raw,
                    " END",
                )
            return frag("coalesce(", self.numeric(first), ", ", d, ")")
        raise KipError(errors.INVALID_SYNTAX, f"Unknown update function {f}.", "Use ADD, MUL, CLAMP or COALESCE.")

    def plain(self, value: Any) -> Fragment:
        """A plain JSON value, stored as is (encoded)."""
        return frag(Param(storage.encode(resolve(value, self.parameters))))
