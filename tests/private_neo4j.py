"""Helpers around the PRIVATE Neo4j of the fault tests (the ``private`` fixture in conftest.py:
own free port, own data directory — never the shared test server): they SIGKILL it and restart it."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable, Iterable
from typing import Any

from kip2cypher import localneo4j

#: Start/restart durations, for the fault tests' printed figures.
FIGURES: dict[str, Any] = {}

#: The Neo4j release of every server the suite starts for itself (slots, fault tests, launcher
#: tests): KIP2CYPHER_TEST_NEO4J_VERSION, else the launcher's default (docs/neo4j-versions.md).
VERSION = localneo4j.check_version(os.environ.get("KIP2CYPHER_TEST_NEO4J_VERSION") or localneo4j.pinned_version())


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def restart(cfg) -> float:
    """Start the killed server again (Neo4j runs crash recovery); the seconds it took."""
    started = time.monotonic()
    localneo4j.start(cfg)
    return round(time.monotonic() - started, 1)


class Target:
    """What ``mcp_http_helpers.http_server`` needs of a server: its URI, no auth, default database."""

    def __init__(self, cfg, database: str | None = None) -> None:
        self.uri, self.auth, self.database = cfg.uri, None, database


def choose_slot(slots: Iterable[int], lock: Callable[[int], Any], foreign: Callable[[int], bool]) -> tuple[int, Any, list[int]]:
    """The first slot whose lock ``lock(slot)`` takes (a handle, or None when another pytest
    session holds it) and whose port no foreign server answers; returns it, its lock handle and
    the slots skipped for a foreign server. A slot's port answered by a server that this slot's
    data directory did not start (a run from another checkout, whose cache root and so whose
    locks differ, or anyone's Neo4j) is released and the next slot tried — instead of skipping
    every Neo4j test. The choice is apart from the locking and the probing so it can be tested
    without a server."""
    skipped: list[int] = []
    for slot in slots:
        handle = lock(slot)
        if handle is None:
            continue
        if foreign(slot):
            handle.close()
            skipped.append(slot)
            continue
        return slot, handle, skipped
    raise RuntimeError(f"all local Neo4j test slots are busy (held by other test runs{', or answered by foreign servers: ' + str(skipped) if skipped else ''})")
