"""The embedding refresh after a KML write, run in the background (docs/meta.md, "Keeping vectors fresh").

Why not inside the write transaction: the model costs ≈ 0.3–1.5 ms per element on a CPU, so a
1,000-block capsule spent seconds embedding while holding its locks — a valid write could
even time out because of embedding time. Instead the executor *submits* each committed KML
command (its timestamp ``ctx.now`` and its embedder) here and answers the caller at once; one
worker per nexus runs ``programs.embeddings.refresh_touched`` in a write transaction of its
own, coalescing every command submitted meanwhile into one pass (one model batch per page of
elements they touched; unchanged grounding texts are skipped by their hash). Each statement of
that program runs in a short transaction of its own (``step``): the pages and grounding texts
are read, the model runs *outside* any transaction, and the vectors are written with the
version guard — a transaction that waited for the model would hold its locks for seconds and
hit the query timeout on a large capsule.

Consistency rule (docs/meta.md): keyword SEARCH never depends on it; a semantic or hybrid
SEARCH through a nexus first waits until every write that nexus committed before the SEARCH
started is embedded (``Settings.embedding_wait_s``; past it, it answers from the vectors that
exist and says so in ``warnings``). A vector is only written if its element still has the
version whose text was embedded (``domain.embeddings.statements(…).write``), so a slow refresh never
overwrites the vector of a newer text. Writes of other processes are embedded by their own
nexus; ``sync_embeddings`` back-fills anything a stopped process left behind.

``Pending`` is the bookkeeping both workers share; ``Refresher`` is the thread of the sync
``Nexus``, ``AsyncRefresher`` the task of the ``AsyncNexus``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass, replace
from typing import Any

from .. import metrics
from ..domain.embeddings import KINDS, statements
from .programs.embeddings import refresh_touched
from .requests import Context, Embed, Run

log = logging.getLogger("kip2cypher")

#: Runs a program in a write transaction: ``run(access, start, ctx)`` (``Nexus.run_program``).
RunProgram = Callable[[str, Callable[[], Any], Context], Any]


@dataclass
class _Job:
    ctx: Context  # the embedder, the settings and the oldest command timestamp still to refresh


class Pending:
    """Commands committed but not yet embedded, one job per embedder (oldest timestamp wins)."""

    def __init__(self) -> None:
        self.jobs: dict[int, _Job] = {}
        self.running = False
        #: commands submitted since the last ``take`` / handed out by it (``metrics.EMBEDDING_BACKLOG``)
        self.waiting = self.taken = 0

    def add(self, ctx: Context) -> None:
        key = id(ctx.embedder)
        job = self.jobs.get(key)
        if job is None or ctx.now < job.ctx.now:
            self.jobs[key] = _Job(replace(ctx, dry_run=False, engine=False, span=None))
        self.waiting += 1
        metrics.EMBEDDING_BACKLOG.inc()

    def take(self) -> list[_Job]:
        jobs, self.jobs = list(self.jobs.values()), {}
        self.running = bool(jobs)
        self.taken, self.waiting = self.waiting, 0
        return jobs

    def done(self) -> None:
        """The pass over what ``take`` handed out finished: those commands leave the backlog."""
        self.running = False
        metrics.EMBEDDING_BACKLOG.dec(self.taken)
        self.taken = 0

    @property
    def idle(self) -> bool:
        return not self.jobs and not self.running


def _one(request: Run) -> Any:
    """A program of one statement: its rows."""
    rows = yield request
    return rows


@dataclass(frozen=True)
class _Failed:
    """The model raised: thrown into the refresh program, which logs it and stops."""

    error: BaseException


def _transactions(ctx: Context) -> Generator[tuple[str, Any], Any, None]:
    """``refresh_touched`` split into its steps: yields ("embed", texts) — run the model outside
    any transaction — or (access, one-statement program) — run it in a short transaction of
    its own; receives the step's result (or ``_Failed`` from the model)."""
    program = refresh_touched(ctx)
    reply: Any = None
    while True:
        try:
            request = program.throw(reply.error) if isinstance(reply, _Failed) else program.send(reply)
        except StopIteration:
            return
        if isinstance(request, Embed):
            reply = yield "embed", list(request.texts)
        else:
            writes = any(request.statement is statements(ctx.names, kind).write for kind in KINDS)
            reply = yield ("WRITE" if writes else "READ"), (lambda request=request: _one(request))


def _embed(ctx: Context, texts: list[str]) -> Any:
    """The model's vectors for ``texts``, or ``_Failed``."""
    try:
        return ctx.embedder.embed(texts)
    except Exception as exc:  # noqa: BLE001 - the program logs a model failure and stops
        return _Failed(exc)


def _refresh(run: RunProgram, ctx: Context) -> None:
    """Drive ``_transactions`` on the thread's driver loop."""
    steps = _transactions(ctx)
    with contextlib.suppress(StopIteration):
        kind, what = next(steps)
        while True:
            kind, what = steps.send(_embed(ctx, what) if kind == "embed" else run(kind, what, ctx))


async def _refresh_async(run: Callable[[str, Callable[[], Any], Context], Awaitable[Any]], ctx: Context) -> None:
    """``_refresh`` for the asyncio loop (the model in a worker thread)."""
    steps = _transactions(ctx)
    with contextlib.suppress(StopIteration):
        kind, what = next(steps)
        while True:
            kind, what = steps.send(await asyncio.to_thread(_embed, ctx, what) if kind == "embed" else await run(kind, what, ctx))


def _failed(exc: BaseException) -> None:
    metrics.EMBEDDING_FAILURES.inc()
    log.warning("background embedding refresh failed (%s); the writes stand — run kip2cypher.embedding.sync_embeddings to back-fill", exc)


#: Every live sync refresher of the process (``wait_all``).
_LIVE: weakref.WeakSet[Refresher] = weakref.WeakSet()


def wait_all(timeout: float | None = None) -> bool:
    """Block until every sync ``Nexus`` of this process has embedded all it committed — for a
    caller that reads the graph around the nexus (a backup, a test's fingerprint) and wants the
    derived vectors settled first; False when ``timeout`` seconds passed first."""
    deadline = None if timeout is None else time.monotonic() + timeout
    for refresher in list(_LIVE):
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        if not refresher.wait(left):
            return False
    return True


class Refresher:
    """One daemon thread per sync ``Nexus``, started at the first submitted write."""

    def __init__(self, run: RunProgram) -> None:
        self._run = run
        self._pending = Pending()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False
        _LIVE.add(self)

    def submit(self, ctx: Context) -> None:
        """Queue the refresh of what the command at ``ctx.now`` wrote (after its commit)."""
        with self._cond:
            self._pending.add(ctx)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._work, name="kip2cypher-embeddings", daemon=True)
                self._thread.start()
            self._cond.notify_all()

    def wait(self, timeout: float | None) -> bool:
        """Block until every submitted write is embedded; False when ``timeout`` seconds passed first."""
        with self._cond:
            return self._cond.wait_for(lambda: self._pending.idle, timeout)

    def close(self, timeout: float | None) -> None:
        """Finish the queued refreshes (up to ``timeout`` seconds), then stop the thread."""
        self.wait(timeout)
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def _work(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._pending.jobs or self._closed)
                if not self._pending.jobs:
                    return
                jobs = self._pending.take()
            for job in jobs:
                try:
                    _refresh(self._run, job.ctx)
                except Exception as exc:  # noqa: BLE001 - the worker must survive anything
                    _failed(exc)
            with self._cond:
                self._pending.done()
                self._cond.notify_all()


class AsyncRefresher:
    """``Refresher`` for an ``AsyncNexus``: one asyncio task at a time, started by ``submit``."""

    def __init__(self, run: Callable[[str, Callable[[], Any], Context], Awaitable[Any]]) -> None:
        self._run = run
        self._pending = Pending()
        self._task: asyncio.Task | None = None
        self._changed: asyncio.Condition | None = None

    def _condition(self) -> asyncio.Condition:
        if self._changed is None:
            self._changed = asyncio.Condition()
        return self._changed

    def submit(self, ctx: Context) -> None:
        self._pending.add(ctx)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._work(), name="kip2cypher-embeddings")

    async def wait(self, timeout: float | None) -> bool:
        changed = self._condition()
        try:
            async with changed:
                await asyncio.wait_for(changed.wait_for(lambda: self._pending.idle), timeout)
            return True
        except TimeoutError:
            return False

    async def close(self, timeout: float | None) -> None:
        if not await self.wait(timeout) and self._task is not None:
            self._task.cancel()

    async def _work(self) -> None:
        changed = self._condition()
        while True:
            jobs = self._pending.take()
            if not jobs:
                break
            for job in jobs:
                try:
                    await _refresh_async(self._run, job.ctx)
                except Exception as exc:  # noqa: BLE001
                    _failed(exc)
            self._pending.done()
        async with changed:
            changed.notify_all()
