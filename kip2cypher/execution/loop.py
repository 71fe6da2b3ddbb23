"""The two driver loops: run a program inside one Neo4j transaction, synchronously or with asyncio.

A program (a generator, see ``requests.py``) is stepped until it returns its response:
each ``Run`` goes to ``tx.run`` and its records come back as a list of dicts (at most
``Settings.max_result_rows`` of them, else KIP_4002), each ``Explain`` is planned by Neo4j (the reply is its plan),
each ``Embed`` goes to the context's embedder (in a worker thread under asyncio, so model
inference never blocks the event loop). ``run_sync`` / ``run_async`` run a WRITE program in
one managed transaction and a READ program as auto-commit statements of a READ session (one
round trip each; an ADMIN program likewise, in a WRITE session: schema DDL and the migration's
``CALL { … } IN TRANSACTIONS``, ``AUTO_COMMIT``); both are retried here, the whole program again
after a transient failure, unless the face's circuit breaker (``breaker.Breaker``) knows Neo4j
is unreachable — then the call answers KIP_4003 at once — and map every driver exception
to a KIP error in one place (``neo4j_errors.from_neo4j``), with the statement in flight as
debug information.

The operations of the nexus core (``core.Core``) are driven here too (``operate_sync`` /
``operate_async``): each ``Transact`` runs its program through ``run_sync`` / ``run_async`` in a
session of the face, ``Offload`` is the request's CPU work (in a worker thread under asyncio),
``AwaitEmbeddings`` / ``Refresh`` go to the face's background refresher.

This module is the only code that runs a statement on the neo4j driver
(``tests/test_layers.py`` checks it).
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
import time
from collections.abc import Callable, Generator, Iterator
from typing import Any

import neo4j

from .. import errors, metrics, tracing
from ..config import Settings
from ..cypher import catalog
from ..cypher.builder import COLLECTED
from ..errors import KipError, too_many_bytes, too_many_rows
from ..lower.plan import Compiled
from ..version import __version__
from .breaker import Breaker
from .neo4j_errors import DRIVER_ERRORS, from_neo4j, is_retryable
from .requests import AwaitEmbeddings, Context, Embed, Explain, Offload, Refresh, Run, Transact
from .sizes import row_bytes

log = logging.getLogger("kip2cypher.cypher")

Program = Generator[Any, Any, dict]

#: The accesses whose programs run each statement as an auto-commit transaction: READ (one round
#: trip per read, ``_AutoCommit``) and ADMIN — a WRITE session for administrative programs
#: (schema DDL, the layout migration's ``CALL { … } IN TRANSACTIONS``), whose statements Neo4j
#: runs only outside an explicit transaction. An ADMIN program must be idempotent: a retryable
#: failure runs it again from the start, as a READ program is.
AUTO_COMMIT = ("READ", "ADMIN")


class _Trace:
    """The statement in flight, for the debug field of an error report."""

    __slots__ = ("current", "params")

    def __init__(self) -> None:
        self.current: Compiled | None = None
        #: its parameters: what names the out-of-range integer of an OverflowError
        self.params: dict[str, Any] = {}

    def cypher(self) -> str | None:
        return self.current.text if self.current is not None else None


def statement_text(settings: Settings, text: str) -> str:
    """``Settings.cypher_prefix`` (query options such as ``CYPHER runtime=slotted``) before a statement."""
    return f"{settings.cypher_prefix}\n{text}" if settings.cypher_prefix else text


def _prepare(request: Any, settings: Settings, trace: _Trace) -> tuple[str, dict[str, Any]]:
    trace.current = request.statement
    text = statement_text(settings, request.statement.text)
    if isinstance(request, Explain):
        text = catalog.explain(text)
    params = request.parameters()
    trace.params = params
    if log.isEnabledFor(logging.DEBUG):
        log.debug("%s\n-- params: %r", text, params)
    return text, params


def _embedder(ctx: Context) -> Any:
    if ctx.embedder is None:
        raise KipError(
            errors.INTERNAL_ERROR, "Internal error: a program asked for embeddings but no embedder is configured.", "This is an engine bug; report it."
        )
    return ctx.embedder


def _failure(exc: BaseException, ctx: Context, trace: _Trace, access: str) -> KipError:
    """A driver exception as a KIP error; a timeout that the request's budget cut short says so.
    A retryable one that ends the transaction (the retry budget is spent) is counted, not retried."""
    if is_retryable(exc):
        metrics.transient(access, retried=False)
    error = from_neo4j(exc, trace.cypher(), trace.params)
    if error.code == errors.EXECUTION_TIMEOUT and ctx.deadline is not None and ctx.deadline.expired():
        return ctx.deadline.error(started=True)
    return error


def _unknown(request: Any) -> KipError:
    return KipError(errors.INTERNAL_ERROR, f"Internal error: a program yielded {type(request).__name__}.", "This is an engine bug; report it.")


# ---------------------------------------------------------------------------- synchronous
def drive_sync(program: Program, tx: Any, ctx: Context, trace: _Trace | None = None) -> dict:
    """Step ``program`` to its response inside the open transaction ``tx``."""
    trace = trace or _Trace()
    budget = _Budget(ctx.settings)
    reply: Any = None
    failure: BaseException | None = None
    while True:
        try:
            request = program.throw(failure) if failure is not None else program.send(reply)
        except StopIteration as stop:
            return stop.value
        failure = None
        ctx.check_deadline()
        if isinstance(request, Run):
            with tracing.statement(ctx.span, request.statement.label):
                reply = _reply(request, _rows_sync(tx.run(*_prepare(request, ctx.settings, trace)), budget, request.extra_rows))
        elif isinstance(request, Explain):
            reply = tx.run(*_prepare(request, ctx.settings, trace)).consume().plan
        elif isinstance(request, Embed):
            # A model failure is the program's to handle (the embedding refresh logs it and goes on).
            try:
                reply = _embedder(ctx).embed(list(request.texts))
            except Exception as exc:  # noqa: BLE001
                failure = exc
        else:
            raise _unknown(request)


class _Budget:
    """What one program may read: ``Settings.max_result_rows`` rows per statement (plus the
    statement's look-ahead rows) and ``Settings.max_result_bytes`` over all its statements,
    counted as the rows stream, so an answer too large to hold is refused before it is held."""

    __slots__ = ("rows", "bytes", "used")

    def __init__(self, settings: Settings) -> None:
        self.rows = settings.max_result_rows
        self.bytes = settings.max_result_bytes
        self.used = 0

    def take(self, rows: list[dict[str, Any]], record: Any, extra: int) -> KipError | None:
        """Add ``record`` to ``rows``; the KIP_4002 to raise (after consuming the result) past a cap."""
        row = dict(record)
        rows.append(row)
        self.used += row_bytes(row)
        if self.used > self.bytes:
            return too_many_bytes(self.bytes)
        if len(rows) > self.rows + extra:
            return too_many_rows(self.rows)
        return None


def _rows_sync(result: Any, budget: _Budget, extra: int) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for record in result:
        refusal = budget.take(rows, record, extra)
        if refusal is not None:
            result.consume()
            raise refusal
    return rows


def _reply(request: Run, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows the program sees: a ``collected`` statement's one record unpacked into its list."""
    return rows[0][COLLECTED] if request.statement.collected else rows


class _AutoCommit:
    """What a READ program runs its statements on: each one an auto-commit transaction of the
    READ session, one round trip (RUN + PULL) instead of a managed transaction's three (BEGIN,
    RUN + PULL, COMMIT) — ≈ 0.4 ms of a 1 ms point lookup (docs/performance.md). Nothing is lost:
    Neo4j reads are read-committed inside a transaction too and take no locks, so a program's
    statements see what they would see in one transaction; the READ access mode travels with
    each statement (routing, and Neo4j refuses a write); retries are ``retrying``'s."""

    __slots__ = ("session", "query")

    def __init__(self, session: Any, ctx: Context, metadata: dict[str, Any]) -> None:
        self.session = session
        # Each statement's timeout is taken when it starts: what is left of the request's budget.
        self.query = lambda text: neo4j.Query(text, metadata=metadata, timeout=ctx.timeout())

    def run(self, text: str, parameters: dict[str, Any]) -> Any:
        return self.session.run(self.query(text), parameters)


def retry_delays(max_retry_s: float, uniform: Callable[[float, float], float] | None = None) -> Iterator[float]:
    """The pauses before each retry of a read (the driver's policy for managed transactions:
    1 s doubling, ±20 % jitter) until ``max_retry_s`` would be exceeded. Each pause is cut to
    what is left of the budget: the jitter of the last one may not carry the sum past it (five
    pauses once summed to 30.48 s of a 30 s budget). ``uniform``: the jitter's source (tests;
    default ``random.uniform``, looked up per call)."""
    uniform = uniform or random.uniform
    spent, delay = 0.0, 1.0
    while spent + delay <= max_retry_s:
        pause = min(delay * uniform(0.8, 1.2), max_retry_s - spent)
        while spent + pause > max_retry_s:  # float rounding: the remainder added back may pass the budget by an ulp
            pause = math.nextafter(pause, 0.0)
        spent += pause
        delay *= 2
        yield pause


def retrying(attempt: Callable[[], Any], max_retry_s: float, breaker: Breaker | None = None, access: str = "READ") -> Any:
    """``attempt()`` (one whole transaction), again after each retryable driver error (cluster
    fail-over, a server briefly unavailable) while ``retry_delays`` allows and the circuit breaker
    (``breaker.Breaker``, shared by every transaction on the driver) stays closed: once Neo4j is
    known unreachable, a call is refused at once instead of waiting out the budget. Each retry is
    counted (``metrics.transient``) under ``access``."""
    with (breaker or Breaker()).attempts(retry_delays(max_retry_s), access) as attempts:
        while True:
            try:
                result = attempt()
            except DRIVER_ERRORS as exc:
                pause = attempts.failed(exc)
            else:
                attempts.succeeded()
                return result
            time.sleep(pause)
            attempts.resume()


def run_sync(session: Any, access: str, start: Callable[[], Program], ctx: Context, metadata: dict[str, Any], breaker: Breaker | None = None) -> dict:
    """Run the program ``start()`` builds in ``session``: a WRITE program in one managed
    transaction, a READ or ADMIN program as auto-commit statements (``_AutoCommit``); either
    retried by ``retrying`` (the face opens its sessions without the driver's own retries)."""
    trace = _Trace()

    @neo4j.unit_of_work(timeout=ctx.timeout(), metadata=metadata)
    def work(tx: Any) -> dict:
        return drive_sync(start(), tx, ctx, trace)

    if access in AUTO_COMMIT:
        attempt = lambda: drive_sync(start(), _AutoCommit(session, ctx, metadata), ctx, trace)  # noqa: E731
    else:
        attempt = lambda: session.execute_write(work)  # noqa: E731
    try:
        return retrying(attempt, ctx.settings.max_retry_s, breaker, access)
    except DRIVER_ERRORS as exc:
        raise _failure(exc, ctx, trace, access) from None


# ---------------------------------------------------------------------------- asyncio
async def drive_async(program: Program, tx: Any, ctx: Context, trace: _Trace) -> dict:
    """``drive_sync`` for an ``AsyncManagedTransaction``."""
    budget = _Budget(ctx.settings)
    reply: Any = None
    failure: BaseException | None = None
    while True:
        try:
            request = program.throw(failure) if failure is not None else program.send(reply)
        except StopIteration as stop:
            return stop.value
        failure = None
        ctx.check_deadline()
        if isinstance(request, Run):
            with tracing.statement(ctx.span, request.statement.label):
                reply = _reply(request, await _rows_async(await tx.run(*_prepare(request, ctx.settings, trace)), budget, request.extra_rows))
        elif isinstance(request, Explain):
            reply = (await (await tx.run(*_prepare(request, ctx.settings, trace))).consume()).plan
        elif isinstance(request, Embed):
            try:
                reply = await asyncio.to_thread(_embedder(ctx).embed, list(request.texts))
            except Exception as exc:  # noqa: BLE001
                failure = exc
        else:
            raise _unknown(request)


async def _rows_async(result: Any, budget: _Budget, extra: int) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    async for record in result:
        refusal = budget.take(rows, record, extra)
        if refusal is not None:
            await result.consume()
            raise refusal
    return rows


class _AsyncAutoCommit(_AutoCommit):
    """``_AutoCommit`` on an ``AsyncSession``."""

    __slots__ = ()

    async def run(self, text: str, parameters: dict[str, Any]) -> Any:  # type: ignore[override]
        return await self.session.run(self.query(text), parameters)


async def retrying_async(attempt: Callable[[], Any], max_retry_s: float, breaker: Breaker | None = None, access: str = "READ") -> Any:
    """``retrying`` for an awaitable ``attempt()``."""
    with (breaker or Breaker()).attempts(retry_delays(max_retry_s), access) as attempts:
        while True:
            try:
                result = await attempt()
            except DRIVER_ERRORS as exc:
                pause = attempts.failed(exc)
            else:
                attempts.succeeded()
                return result
            await asyncio.sleep(pause)
            attempts.resume()


async def run_async(session: Any, access: str, start: Callable[[], Program], ctx: Context, metadata: dict[str, Any], breaker: Breaker | None = None) -> dict:
    """``run_sync`` for an ``AsyncSession``."""
    trace = _Trace()

    @neo4j.unit_of_work(timeout=ctx.timeout(), metadata=metadata)
    async def work(tx: Any) -> dict:
        return await drive_async(start(), tx, ctx, trace)

    if access in AUTO_COMMIT:
        attempt = lambda: drive_async(start(), _AsyncAutoCommit(session, ctx, metadata), ctx, trace)  # noqa: E731
    else:
        attempt = lambda: session.execute_write(work)  # noqa: E731
    try:
        return await retrying_async(attempt, ctx.settings.max_retry_s, breaker, access)
    except DRIVER_ERRORS as exc:
        raise _failure(exc, ctx, trace, access) from None


# ---------------------------------------------------------------------------- the nexus core's operations
def _advance(operation: Generator[Any, Any, Any], reply: Any, failure: KipError | None) -> tuple[bool, Any]:
    """Send ``reply`` (or throw ``failure``) into ``operation``: (finished, its next request or its result)."""
    try:
        return False, (operation.throw(failure) if failure is not None else operation.send(reply))
    except StopIteration as stop:
        return True, stop.value


def _internal(exc: BaseException) -> KipError:
    """A failure no KIP error describes: an engine bug, logged with its traceback."""
    log.error("execution failure: %r", exc, exc_info=True)
    return KipError(errors.INTERNAL_ERROR, f"Internal error: {type(exc).__name__}: {exc}", "This is an engine bug; report it with the debug field.")


def _metadata(request: Transact) -> dict[str, Any]:
    """The transaction metadata of a ``Transact`` (by default: the application, the engine's version and the namespace)."""
    settings = request.ctx.settings
    return dict(request.metadata or {"app": settings.app_name, "version": __version__, "namespace": settings.namespace})


def operate_sync(operation: Generator[Any, Any, Any], session: Callable[[str], Any], refresher: Any, breaker: Breaker | None = None) -> Any:
    """Drive an operation of the nexus core: each ``Transact`` in a session of ``session(access)``,
    through the face's circuit ``breaker``; returns its result (a ``KipError`` it raises propagates)."""
    reply: Any = None
    failure: KipError | None = None
    while True:
        done, request = _advance(operation, reply, failure)
        if done:
            return request
        reply, failure = None, None
        try:
            if isinstance(request, Transact):
                with session(request.access) as opened:
                    reply = run_sync(opened, request.access, request.start, request.ctx, _metadata(request), breaker)
            elif isinstance(request, Offload):
                reply = request.work()
            elif isinstance(request, AwaitEmbeddings):
                reply = refresher.wait(request.timeout)
            elif isinstance(request, Refresh):
                refresher.submit(request.ctx)
            else:
                raise _unknown(request)
        except KipError as exc:
            failure = exc
        except Exception as exc:  # noqa: BLE001 - never a traceback to the caller
            failure = _internal(exc)


async def operate_async(operation: Generator[Any, Any, Any], session: Callable[[str], Any], refresher: Any, breaker: Breaker | None = None) -> Any:
    """``operate_sync`` under asyncio: ``Offload`` runs in a worker thread (once per request). An
    operation whose caller stops waiting (the MCP server's request timeout cancels the call) is
    closed at once: its ``finally`` blocks — the call's metrics — run now, not when it is collected."""
    try:
        return await _operate_async(operation, session, refresher, breaker)
    finally:
        operation.close()


async def _operate_async(operation: Generator[Any, Any, Any], session: Callable[[str], Any], refresher: Any, breaker: Breaker | None) -> Any:
    reply: Any = None
    failure: KipError | None = None
    while True:
        done, request = _advance(operation, reply, failure)
        if done:
            return request
        reply, failure = None, None
        try:
            if isinstance(request, Transact):
                async with await session(request.access) as opened:
                    reply = await run_async(opened, request.access, request.start, request.ctx, _metadata(request), breaker)
            elif isinstance(request, Offload):
                reply = await asyncio.to_thread(request.work)
            elif isinstance(request, AwaitEmbeddings):
                reply = await refresher.wait(request.timeout)
            elif isinstance(request, Refresh):
                refresher.submit(request.ctx)
            else:
                raise _unknown(request)
        except KipError as exc:
            failure = exc
        except Exception as exc:  # noqa: BLE001
            failure = _internal(exc)
