"""The Nexus: a connection to Neo4j that executes KIP requests (spec §6), synchronously.

Each command runs in one transaction (a managed write transaction for KML, auto-commit reads
of a READ session for KQL/META) so the driver retries transient failures and deadlocks, routes
reads and writes on clusters, and one KML statement is atomic. A caller only ever receives the
response dict — never an exception. What it does is the nexus core's (``execution.core``) and
written once for both faces (``face.Face``); this face only waits for it on the calling thread.
"""

from __future__ import annotations

from typing import Any

import neo4j
from neo4j import GraphDatabase

from . import connection
from .execution import background, loop
from .face import BlockingFace, Waiting


class Nexus(BlockingFace):
    """A Cognitive Nexus stored in one Neo4j database."""

    _waiting = Waiting(connection.open_driver, connection.ReachabilityCheck, GraphDatabase.bookmark_manager, background.Refresher, loop.operate_sync)

    def session(self, access: str = "WRITE", *, retries: bool = True) -> neo4j.Session:
        """A session on this Nexus's database; the first one proves the server answers (KIP_4003 fast if not).
        ``retries=False``: without the driver's retries of managed transactions (``Face._session``)."""
        self._reachable.ensure()
        return self._session(access, retries)

    def check_reachable(self) -> None:
        """Prove the server answers before working on ``self.driver`` directly (KIP_4003 within
        seconds, naming the URI without credentials, when it does not)."""
        self._reachable.ensure()

    def wait_for_embeddings(self, timeout: float | None = None) -> bool:
        """Wait until the SEARCH embeddings of every write this nexus committed are written
        (what a semantic SEARCH does first); False if ``timeout`` seconds passed first."""
        return self._refresher.wait(timeout)

    def close(self) -> None:
        """Finish the background embedding refresh of the last writes (up to
        ``Settings.embedding_wait_s``), then close the driver this Nexus opened; an
        application's driver stays open (it owns it)."""
        self._refresher.close(self.settings.embedding_wait_s)
        if self._owns_driver:
            self._driver.close()

    def __enter__(self) -> Nexus:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
