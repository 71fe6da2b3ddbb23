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


def value_bytes(value: Any) -> int:
    """The weight of one value of a Neo4j record (see the module docstring)."""
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
    return sum(value_bytes(value) for value in row.values())
