"""How a test run picks its Neo4j slot (``private_neo4j.choose_slot``), without a server.

A second run from another checkout skipped every Neo4j test: its slot's port was answered by
the first run's server ("refusing to use someone else's server") — the two checkouts' slot
locks lived under different cache roots — instead of taking the next free slot."""

from __future__ import annotations

import pytest
from private_neo4j import choose_slot


class Handle:
    def __init__(self, slot: int) -> None:
        self.slot, self.closed = slot, False

    def close(self) -> None:
        self.closed = True


def _lock(held: set[int], handles: list[Handle]):
    def lock(slot: int) -> Handle | None:
        if slot in held:
            return None
        handles.append(Handle(slot))
        return handles[-1]

    return lock


def test_second_checkout_skipped_every_neo4j_test_when_its_slot_port_was_foreign():
    handles: list[Handle] = []
    slot, handle, skipped = choose_slot(range(1, 9), _lock(set(), handles), foreign=lambda s: s in {1, 2})
    assert (slot, skipped) == (3, [1, 2]) and handle is handles[-1] and not handle.closed
    assert [h.closed for h in handles[:2]] == [True, True]  # the foreign slots' locks are released


def test_slot_locked_by_another_run_is_passed_over_and_a_free_one_taken():
    slot, _, skipped = choose_slot(range(1, 9), _lock({1, 2, 3}, []), foreign=lambda s: s == 4)
    assert (slot, skipped) == (5, [4])


def test_no_slot_left_says_why():
    with pytest.raises(RuntimeError, match=r"busy.*foreign servers: \[3, 4\]"):
        choose_slot(range(1, 5), _lock({1, 2}, []), foreign=lambda s: True)
