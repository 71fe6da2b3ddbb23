"""Helpers for tests that serve `kip2cypher mcp --transport http` as a real process and talk to it
with the official SDK client: start/stop the server, open sessions, and drive mixed traffic."""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from contextlib import contextmanager
from typing import Any

import anyio
import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

RW = "rw-token-0123456789abcdefghij"
RW2 = "rw-token-second-0123456789abc"
RO = "ro-token-0123456789abcdefghij"
TOKENS = f"{RW}:rw,{RW2}:rw,{RO}:ro"
KIP_CODE = re.compile(r"^KIP_[1-4]\d{3}$")
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
}
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def server_env(server, tokens):
    env = {"PATH": os.environ.get("PATH", ""), "NEO4J_URI": server.uri, "HOME": os.environ.get("HOME", "/tmp")}
    if getattr(server, "auth", None):
        env["NEO4J_USERNAME"], env["NEO4J_PASSWORD"] = server.auth
    if getattr(server, "database", None):
        env["NEO4J_DATABASE"] = server.database
    if tokens is not None:
        env["KIP2CYPHER_MCP_TOKENS"] = tokens
    return env


class Served:
    """A running `kip2cypher mcp --transport http` process: its URL and everything it logged."""

    def __init__(self, proc: subprocess.Popen, url: str, log: list[str]) -> None:
        self.proc, self.url, self.log = proc, url, log

    @property
    def health_url(self) -> str:
        return re.sub(r"(https?://[^/]+).*", r"\1/healthz", self.url)

    def health(self) -> dict[str, Any]:
        """The server's /healthz answer (status and open MCP sessions)."""
        return httpx2.get(self.health_url, timeout=10).json()

    def rss_kib(self) -> int:
        """Resident memory of the server process (Linux /proc)."""
        with open(f"/proc/{self.proc.pid}/status", encoding="ascii") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))


@contextmanager
def http_server(server, *args, tokens=TOKENS, env=None, flags=("--transport", "http", "--port", "0")):
    """Serve MCP over HTTP on a free port against ``server`` (anything with ``uri``, ``auth``,
    ``database``); yield a ``Served`` once it announced its URL; terminate it after. ``flags``:
    the transport options on the command line (empty: they come from ``env``)."""
    command = [sys.executable, "-m", "kip2cypher.cli", "mcp", *flags, *args]
    proc = subprocess.Popen(
        command, env={**server_env(server, tokens), **(env or {})}, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL, text=True
    )
    lines: queue.Queue = queue.Queue()
    log: list[str] = []

    def drain():
        for line in proc.stderr:
            log.append(line)
            lines.put(line)
        lines.put(None)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    url = None
    deadline = time.monotonic() + 60
    while url is None and time.monotonic() < deadline:
        try:
            line = lines.get(timeout=1)
        except queue.Empty:
            continue
        if line is None:
            break
        match = re.search(r"listening on (http://\S+)", line)
        url = match.group(1) if match else None
    try:
        assert url, "server did not start:\n" + "".join(log)
        yield Served(proc, url, log)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        reader.join(timeout=30)  # after the block, ``Served.log`` holds everything the server logged


def start_fails(server, *args, tokens=None, env=None) -> str:
    """Run `kip2cypher mcp --transport http` expecting it to refuse to start; its stderr."""
    command = [sys.executable, "-m", "kip2cypher.cli", "mcp", "--transport", "http", *args]
    done = subprocess.run(command, env={**server_env(server, tokens), **(env or {})}, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    return done.stderr


def _client(token):
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=120))


async def open_session(url, token, body):
    """Run ``body(session)`` in one initialized SDK session (closed after)."""
    async with _client(token) as client:
        async with streamable_http_client(url, http_client=client) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await body(session)


def in_session(url, token, body):
    return anyio.run(open_session, url, token, body)


def payload(result):
    """The §6 response of a tool call; text and structured content must agree."""
    data = json.loads(result.content[0].text)
    assert result.structured_content == data and result.is_error == ("error" in data)
    return data


def count(nexus, cypher):
    return nexus.driver.execute_query(cypher, database_=nexus.database).records[0][0]


def leaves(exc):
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in leaves(sub)]
    return [exc]


#: The write of the mixed traffic: a concept and a proposition in one statement, so a half-written
#: request would show as a concept without its link (kml_helpers.integrity, ``MixedTraffic.half_written``).
WRITE = (
    'UPSERT { CONCEPT ?x { {type: "SoakItem", name: :n} SET ATTRIBUTES { i: :i } '
    'SET PROPOSITIONS { ("belongs_to_domain", {type: "Domain", name: "CoreSchema"}) } } }'
)
SOAK_TYPE = 'UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "SoakItem"} SET ATTRIBUTES { description: "load test" } } }'


class MixedTraffic:
    """Many SDK sessions at once — ¾ read-write (alternating two rw tokens), ¼ read-only — each
    looping over writes (single commands and batches), counts, pages and DESCRIBE until a
    deadline (each at least one round). Every answer must be a result or a KIP error object; anything else (a transport
    failure, a non-KIP error) is recorded in ``failures``. ``acknowledged`` holds the names whose
    write answered success, ``attempted`` every name a write was sent for."""

    def __init__(self, url: str, sessions: int = 16) -> None:
        self.url, self.sessions = url, sessions
        self.acknowledged: set[str] = set()
        self.attempted: set[str] = set()
        self.failures: list[str] = []
        self.errors: Counter = Counter()
        self.counts: Counter = Counter()
        self._deadline = 0.0

    def check(self, response: dict[str, Any], what: str) -> bool:
        self.counts["calls"] += 1
        error = response.get("error")
        if error is not None:
            self.errors[str(error.get("code"))] += 1
            if not KIP_CODE.match(str(error.get("code"))):
                self.failures.append(f"{what}: not a KIP error: {error}")
        return error is None

    async def _writer(self, session, sid: int) -> None:
        i = 0
        while i == 0 or time.monotonic() < self._deadline:  # at least one round, however slow the machine
            name = f"s{sid}-{i}"
            self.attempted.add(name)
            item = {"command": WRITE, "parameters": {"n": name, "i": i}}
            if i % 5 == 4:  # a batch: one write and one read
                response = payload(await session.call_tool("execute_kip", {"commands": [item, "DESCRIBE CONCEPT TYPES"]}))
                if self.check(response, name) and "error" not in response["result"][0]:
                    self.acknowledged.add(name)
            elif self.check(payload(await session.call_tool("execute_kip", item)), name):
                self.acknowledged.add(name)
            self.counts["writes"] += 1
            self.check(payload(await session.call_tool("execute_kip_readonly", {"command": 'FIND(COUNT(?x)) WHERE { ?x {type: "SoakItem"} }'})), "count")
            self.counts["reads"] += 1
            i += 1

    async def _reader(self, session, sid: int) -> None:
        refused = payload(await session.call_tool("execute_kip", {"command": 'UPSERT { CONCEPT ?x { {type: "SoakItem", name: "ro-write"} } }'}))
        if refused.get("error", {}).get("code") != "KIP_3004":
            self.failures.append(f"ro session {sid} was not refused: {refused}")
        rounds = 0
        while rounds == 0 or time.monotonic() < self._deadline:
            rounds += 1
            self.check(
                payload(
                    await session.call_tool("execute_kip_readonly", {"command": 'FIND(?x.name) WHERE { ?x {type: "SoakItem"} } ORDER BY ?x.name LIMIT 20'})
                ),
                "find",
            )
            self.check(payload(await session.call_tool("execute_kip_readonly", {"command": "DESCRIBE PRIMER"})), "primer")
            self.counts["reads"] += 2

    async def _one(self, sid: int) -> None:
        rw = sid % 4 != 3
        token = (RW if sid % 2 else RW2) if rw else RO
        try:
            await open_session(self.url, token, lambda s: (self._writer if rw else self._reader)(s, sid))
        except BaseException as exc:  # noqa: BLE001 - any transport/protocol failure fails the test
            self.failures.append(f"session {sid}: {type(exc).__name__}: {[str(leaf) for leaf in leaves(exc)]}")

    def finish_in(self, seconds: float) -> None:
        """Move the deadline: every session stops its loop ``seconds`` from now."""
        self._deadline = time.monotonic() + seconds

    def run(self, seconds: float, *, beside: Callable[[], None] | None = None) -> float:
        """Drive the sessions for ``seconds``; ``beside`` runs in a thread meanwhile (e.g. a fault).
        Returns the elapsed time."""

        async def all_sessions():
            self._deadline = time.monotonic() + seconds
            async with anyio.create_task_group() as group:
                for sid in range(self.sessions):
                    group.start_soon(self._one, sid)
                if beside is not None:
                    group.start_soon(anyio.to_thread.run_sync, beside)

        started = time.monotonic()
        anyio.run(all_sessions)
        return time.monotonic() - started

    def stored(self, nexus) -> set[str]:
        records = nexus.driver.execute_query("MATCH (n:KipConcept {type: 'SoakItem'}) RETURN n.name AS name", database_=nexus.database).records
        return {r["name"] for r in records} - {"ro-write"}

    def half_written(self, nexus) -> list[str]:
        """Stored items whose link (written in the same statement) is missing."""
        records = nexus.driver.execute_query(
            "MATCH (n:KipConcept {type: 'SoakItem'}) WHERE NOT (n)-[:`kip:belongs_to_domain`]->(:KipConcept {type: 'Domain', name: 'CoreSchema'}) "
            "RETURN n.name AS name",
            database_=nexus.database,
        ).records
        return [r["name"] for r in records]

    def summary(self, elapsed: float) -> str:
        return (
            f"{self.sessions} sessions, {elapsed:.1f} s: {self.counts['calls']} calls ({self.counts['calls'] / max(elapsed, 1e-9):.0f}/s), "
            f"{len(self.acknowledged)} writes acknowledged of {len(self.attempted)}, errors {dict(self.errors)}"
        )
