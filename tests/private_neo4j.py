"""Helpers around the PRIVATE Neo4j of the fault tests (the ``private`` fixture in conftest.py:
own free port, own data directory — never the shared test server): they SIGKILL it and restart it."""

from __future__ import annotations

import dataclasses
import fcntl
import os
import re
import socket
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any

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


#: File in a launcher slot's data directory: this server belongs to the test suite.
SLOT_MARKER = ".kip2cypher-test-slot"


def slot_numbers(text: str | None = None) -> range:
    """KIP2CYPHER_TEST_SLOTS, ``first-last`` (default ``1-8``: ports 7688–7695): the slots a run may
    take, slot i being a server on port KIP2CYPHER_NEO4J_PORT (7687) + i. A range of spare ports
    keeps a run (or the slot tests) away from the slots other runs on the machine use."""
    text = text or os.environ.get("KIP2CYPHER_TEST_SLOTS") or "1-8"
    match = re.fullmatch(r"(\d+)-(\d+)", text.strip())
    if not match or not 1 <= int(match.group(1)) <= int(match.group(2)):
        raise ValueError(f"KIP2CYPHER_TEST_SLOTS must be first-last slot numbers (e.g. 33-36, ports 7720–7723), not {text!r}")
    return range(int(match.group(1)), int(match.group(2)) + 1)


@dataclasses.dataclass(frozen=True)
class Slots:
    """The private Neo4j servers test runs on one machine take, one per run: slot i listens on
    ``base.port + i`` with the data directory ``<base home>-slot<i>`` (per Neo4j version), locked
    by the run for its whole session (a file lock under ``locks``) and kept running for reuse."""

    numbers: range
    base: localneo4j.LocalConfig
    locks: Path

    @classmethod
    def from_env(cls, version: str = VERSION) -> Slots:
        return cls(slot_numbers(), localneo4j.LocalConfig.from_env(version=version), localneo4j._cache_root() / "test-slots")

    def config(self, slot: int) -> localneo4j.LocalConfig:
        base = self.base
        return dataclasses.replace(base, port=base.port + slot, home=base.home.parent / f"{base.home.name}-slot{slot}", heap="1g", page_cache_mb=256)

    def lock(self, slot: int) -> IO[str] | None:
        """The slot's lock, or None when another run holds it."""
        self.locks.mkdir(parents=True, exist_ok=True)
        handle = open(self.locks / f"slot-{slot}.lock", "w")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            return None
        return handle

    def stale(self, slot: int) -> list[localneo4j.LocalConfig]:
        """Servers of this suite left on the slot's port by earlier runs of another Neo4j version
        (or another data directory): a marked slot data directory beside this slot's whose live
        launcher serves this port. Only asked under the slot's lock: no live run uses them."""
        cfg = self.config(slot)
        homes = [marker.parent for marker in cfg.home.parent.glob(f"*/{SLOT_MARKER}") if marker.parent != cfg.home]
        return [other for other in (dataclasses.replace(cfg, home=home) for home in homes) if localneo4j.serving_port(other) == cfg.port]

    def foreign(self, slot: int) -> bool:
        """Whether the slot's port is answered by a server that is not this suite's: this slot's own
        server is reused, a stale one of this suite stopped; anyone else's is never touched."""
        cfg = self.config(slot)
        if not localneo4j._bolt_listening(cfg.port) or localneo4j.serving_port(cfg) == cfg.port:
            return False
        for other in self.stale(slot):
            localneo4j.stop(other)
        return localneo4j._bolt_listening(cfg.port)

    def claim(self) -> tuple[int, IO[str], list[int]]:
        """The first free slot (``choose_slot``), its lock handle and the slots skipped as foreign."""
        return choose_slot(self.numbers, self.lock, self.foreign)

    def start(self, slot: int) -> str:
        """Start (or reuse) the slot's server and mark its data directory as the suite's; its version.
        ``require_own``: a port answered by a server this data directory did not start is refused."""
        cfg = self.config(slot)
        version = localneo4j.start(cfg, require_own=True)
        (cfg.home / SLOT_MARKER).write_text("This Neo4j data directory belongs to the kip2cypher test suite, which wipes it.\n")
        return version
