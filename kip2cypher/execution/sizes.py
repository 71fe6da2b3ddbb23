"""What a row weighs: the byte measure behind ``Settings.max_result_bytes``.

The measure is the size of the values an answer carries, not of Python's objects: a string
counts its UTF-8 bytes, a byte string its length, every scalar (number, boolean, null, a
temporal or spatial value) 8, a list or map the sum of its items (and a map its keys), a
node or relationship its properties. It is cheap (one walk of each row as it streams) and
close to the size of the JSON the caller receives, which is what must fit in memory and in
an MCP message.
"""

from __future__ import annotations

from typing import Any

#: What a scalar counts: a number, boolean, null, temporal or spatial value.
SCALAR = 8


#: The exact types of the scalars a record holds most (every one counts ``SCALAR``).
_SCALAR_TYPES = frozenset({int, float, bool, type(None)})


def value_bytes(value: Any) -> int:
    """The weight of one value of a Neo4j record (see the module docstring).

    It runs on every value of every row a program reads, so the common exact types (``str``,
    the scalars, ``dict``, ``list``) are tried first by type and summed in loops: a collected
    answer of 100 maps weighed in ≈ 0.5 ms with ``isinstance`` chains and generators (docs/
    performance.md, Round 9). Any other type takes the general path, which defines the measure."""
    kind = type(value)
    if kind is str:
        return len(value) if value.isascii() else len(value.encode("utf-8", "surrogatepass"))
    if kind in _SCALAR_TYPES:
        return SCALAR
    if kind is dict:
        total = 0
        for key, item in value.items():
            total += len(key) + value_bytes(item)
        return total
    if kind is list:
        total = len(value)
        for item in value:
            total += value_bytes(item)
        return total
    return _other_bytes(value)


def _other_bytes(value: Any) -> int:
    """``value_bytes`` of any type (subclasses, bytes, tuples, driver graph types, temporals)."""
    if isinstance(value, str):
        return len(value.encode("utf-8", "surrogatepass"))
    if isinstance(value, (bytes, bytearray)):
        return len(value)
    if isinstance(value, dict):
        return sum(len(key) + value_bytes(item) for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return sum(value_bytes(item) for item in value) + len(value)
    items = getattr(value, "items", None)  # a driver Node or Relationship: its properties
    if callable(items):
        return sum(len(key) + value_bytes(item) for key, item in items())
    nodes = getattr(value, "nodes", None)  # a driver Path
    if nodes is not None:
        return value_bytes(list(nodes)) + value_bytes(list(value.relationships))
    return SCALAR


def row_bytes(row: dict[str, Any]) -> int:
    """The weight of one row: its values (column names are the plan's, not the data's)."""
    total = 0
    for value in row.values():  # a loop, not a generator: it runs once per row read
        total += value_bytes(value)
    return total
