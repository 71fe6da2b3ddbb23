"""The byte measure of ``Settings.max_result_bytes`` (execution/sizes.py): each kind of value
weighs what the module docstring says, on the fast paths by exact type and on the general path
alike (the fast paths were added for speed, docs/performance.md Round 9; the measure must not move)."""

from __future__ import annotations

import datetime

import neo4j.time

from kip2cypher.execution.sizes import SCALAR, row_bytes, value_bytes


class _Text(str):
    """A ``str`` subclass: the general path."""


def test_strings_weigh_their_utf8_bytes_on_both_paths():
    for text, size in (("", 0), ("abc", 3), ("é", 2), ("日本", 6), ("\ud800", 3), ("a😀", 5)):
        assert value_bytes(text) == size
        assert value_bytes(_Text(text)) == size


def test_scalars_weigh_the_same_whatever_their_type():
    values = (0, -(2**63), 1.5, float("nan"), True, False, None, neo4j.time.DateTime(2026, 1, 1), datetime.date(2026, 1, 1))
    assert [value_bytes(v) for v in values] == [SCALAR] * len(values)


def test_containers_sum_their_items_maps_their_keys_lists_their_length():
    assert value_bytes(b"\x00\x01\x02") == 3
    assert value_bytes([]) == 0 and value_bytes({}) == 0
    assert value_bytes(["ab", 1]) == 2 + SCALAR + 2
    assert value_bytes(("ab", 1)) == value_bytes(["ab", 1])
    assert value_bytes({"key": "é", "n": None}) == 3 + 2 + 1 + SCALAR
    nested = {"rows": [{"i": 0, "id": "C:x", "created": False}, {"i": 1, "id": "C:é", "created": True}]}
    inner = [1 + SCALAR + 2 + 3 + 7 + SCALAR, 1 + SCALAR + 2 + 4 + 7 + SCALAR]
    assert value_bytes(nested) == 4 + sum(inner) + 2
    assert row_bytes({"refs": [], "rows": nested["rows"]}) == 0 + sum(inner) + 2


def test_a_mapping_that_is_not_a_dict_weighs_its_items():
    class Node:
        def items(self):
            return [("name", "Ann"), ("age", 3)]

    assert value_bytes(Node()) == 4 + 3 + 3 + SCALAR
