"""Helpers around the PRIVATE Neo4j of the fault tests (the ``private`` fixture in conftest.py:
own free port, own data directory — never the shared test server): they SIGKILL it and restart it."""

from __future__ import annotations

import socket
import time
from typing import Any

from kip2cypher import localneo4j

#: Start/restart durations, for the fault tests' printed figures.
FIGURES: dict[str, Any] = {}


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
