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

Both loops share one logic: sans-IO generators (``_steps``: a program in a transaction,
``_retrying``: the retries under the breaker, ``_transacting``: a program retried, ``_operating``:
an operation of the core) yield each I/O call as an ``_Io`` (its synchronous and its awaitable
form); ``_drive`` makes the call, ``_drive_async`` awaits it, and either hands the result (or the
exception) back. Nothing but those calls is written twice.

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
from typing import Any, NamedTuple

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


# ---------------------------------------------------------------------------- one logic, two drivers
class _Io(NamedTuple):
    """An I/O call a step of the loop's logic asks for: ``sync(*args)`` in the synchronous driver,
    ``await aio(*args)`` in the asyncio one. Everything else the loop does — stepping the program,
    budgets, deadlines, retries, the breaker, traces, metrics — is written once, in generators that
    yield these (``_steps``, ``_retrying``, ``_transacting``, ``_operating``)."""

    sync: Callable[..., Any]
    aio: Callable[..., Any]
    args: tuple[Any, ...] = ()


class _Stepping:
    """Steps a generator (a program, an operation of the core, a generator of ``_Io`` calls):
    iterating gives each request it yields; ``reply`` (or ``failure``) set meanwhile goes back in
    — ``call`` / ``call_async`` make an ``_Io`` call and set it —; ``result`` is what it returned."""

    __slots__ = ("steps", "reply", "failure", "result")

    def __init__(self, steps: Generator[Any, Any, Any]) -> None:
        self.steps = steps
        self.reply: Any = None
        self.failure: BaseException | None = None
        self.result: Any = None

    def __iter__(self) -> Iterator[Any]:
        while True:
            try:
                request = self.steps.throw(self.failure) if self.failure is not None else self.steps.send(self.reply)
            except StopIteration as stop:
                self.result = stop.value
                return
            self.reply, self.failure = None, None
            yield request

    def call(self, io: _Io) -> None:
        try:
            self.reply = io.sync(*io.args)
        except BaseException as exc:  # noqa: BLE001 - thrown in: the logic decides what it handles
            self.failure = exc

    async def call_async(self, io: _Io) -> None:
        try:
            self.reply = await io.aio(*io.args)
        except BaseException as exc:  # noqa: BLE001
            self.failure = exc


def _drive(steps: Generator[_Io, Any, Any]) -> Any:
    """Make each I/O call of ``steps`` at once."""
    stepping = _Stepping(steps)
    for io in stepping:
        stepping.call(io)
    return stepping.result


async def _drive_async(steps: Generator[_Io, Any, Any]) -> Any:
    """Await each I/O call of ``steps``."""
    stepping = _Stepping(steps)
    for io in stepping:
        await stepping.call_async(io)
    return stepping.result


# ---------------------------------------------------------------------------- a program in a transaction
def _steps(program: Program, tx: Any, ctx: Context, trace: _Trace) -> Generator[_Io, Any, dict]:
    """Step ``program`` to its response inside the open transaction ``tx``."""
    budget = _Budget(ctx.settings)
    stepping = _Stepping(program)
    for request in stepping:
        ctx.check_deadline()
        if isinstance(request, Run):
            with tracing.statement(ctx.span, request.statement.label):
                rows = yield _Io(_fetch, _fetch_async, (tx, *_prepare(request, ctx.settings, trace), _Rows(budget, request.extra_rows)))
                stepping.reply = _reply(request, rows.taken())
        elif isinstance(request, Explain):
            stepping.reply = yield _Io(_plan, _plan_async, (tx, *_prepare(request, ctx.settings, trace)))
        elif isinstance(request, Embed):
            # A model failure is the program's to handle (the embedding refresh logs it and goes on).
            try:
                stepping.reply = yield _Io(_embed, _embed_async, (_embedder(ctx), list(request.texts)))
            except Exception as exc:  # noqa: BLE001
                stepping.failure = exc
        else:
            raise _unknown(request)
    return stepping.result


def drive_sync(program: Program, tx: Any, ctx: Context, trace: _Trace | None = None) -> dict:
    """Step ``program`` to its response inside the open transaction ``tx`` (the bench drives plans with it)."""
    return _drive(_steps(program, tx, ctx, trace or _Trace()))


class _Budget:
    """What one program may read: ``Settings.max_result_rows`` rows per statement (plus the
    statement's look-ahead rows) and ``Settings.max_result_bytes`` over all its statements,
    counted as the rows stream, so an answer too large to hold is refused before it is held."""

    __slots__ = ("rows", "bytes", "used")

    def __init__(self, settings: Settings) -> None:
        self.rows = settings.max_result_rows
        self.bytes = settings.max_result_bytes
        self.used = 0


class _Rows:
    """One statement's rows as its records stream in (the drivers feed them; ``take`` says when to stop)."""

    __slots__ = ("budget", "extra", "rows", "refusal")

    def __init__(self, budget: _Budget, extra: int) -> None:
        self.budget, self.extra = budget, extra
        self.rows: list[dict[str, Any]] = []
        self.refusal: KipError | None = None

    def take(self, record: Any) -> bool:
        """Keep ``record``; False once past a cap: the driver consumes the rest of the result and stops.
        (A record is a tuple of its values: zipped with its keys it becomes a row in 2 µs, where
        ``dict(record)`` looks each key up again — 5 µs, 1.5 ms of a 300-row answer.)"""
        row = dict(zip(record.keys(), record))
        self.rows.append(row)
        budget = self.budget
        budget.used += row_bytes(row)
        if budget.used > budget.bytes:
            self.refusal = too_many_bytes(budget.bytes)
        elif len(self.rows) > budget.rows + self.extra:
            self.refusal = too_many_rows(budget.rows)
        return self.refusal is None

    def taken(self) -> list[dict[str, Any]]:
        """The rows, or the KIP_4002 of a cap they passed."""
        if self.refusal is not None:
            raise self.refusal
        return self.rows


def _fetch(tx: Any, text: str, params: dict[str, Any], rows: _Rows) -> _Rows:
    result = tx.run(text, params)
    if not all(map(rows.take, result)):
        result.consume()
    return rows


async def _fetch_async(tx: Any, text: str, params: dict[str, Any], rows: _Rows) -> _Rows:
    result = await tx.run(text, params)
    async for record in result:
        if not rows.take(record):
            await result.consume()
            break
    return rows


def _plan(tx: Any, text: str, params: dict[str, Any]) -> Any:
    return tx.run(text, params).consume().plan


async def _plan_async(tx: Any, text: str, params: dict[str, Any]) -> Any:
    return (await (await tx.run(text, params)).consume()).plan


def _embed(embedder: Any, texts: list[str]) -> Any:
    return embedder.embed(texts)


async def _embed_async(embedder: Any, texts: list[str]) -> Any:
    """In a worker thread: model inference never blocks the event loop."""
    return await asyncio.to_thread(embedder.embed, texts)


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


class _AsyncAutoCommit(_AutoCommit):
    """``_AutoCommit`` on an ``AsyncSession``."""

    __slots__ = ()

    async def run(self, text: str, parameters: dict[str, Any]) -> Any:  # type: ignore[override]
        return await self.session.run(self.query(text), parameters)


# ---------------------------------------------------------------------------- retries
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


def _retrying(attempt: Callable[[], Any], max_retry_s: float, breaker: Breaker | None, access: str) -> Generator[_Io, Any, Any]:
    """``attempt()`` (one whole transaction), again after each retryable driver error (cluster
    fail-over, a server briefly unavailable) while ``retry_delays`` allows and the circuit breaker
    (``breaker.Breaker``, shared by every transaction on the driver) stays closed: once Neo4j is
    known unreachable, a call is refused at once instead of waiting out the budget. Each retry is
    counted (``metrics.transient``) under ``access``."""
    with (breaker or Breaker()).attempts(retry_delays(max_retry_s), access) as attempts:
        while True:
            try:
                result = yield _Io(attempt, attempt)
            except DRIVER_ERRORS as exc:
                pause = attempts.failed(exc)
            else:
                attempts.succeeded()
                return result
            yield _Io(time.sleep, asyncio.sleep, (pause,))
            attempts.resume()


def retrying(attempt: Callable[[], Any], max_retry_s: float, breaker: Breaker | None = None, access: str = "READ") -> Any:
    """``_retrying`` of a synchronous ``attempt()``."""
    return _drive(_retrying(attempt, max_retry_s, breaker, access))


async def retrying_async(attempt: Callable[[], Any], max_retry_s: float, breaker: Breaker | None = None, access: str = "READ") -> Any:
    """``_retrying`` of an awaitable ``attempt()``."""
    return await _drive_async(_retrying(attempt, max_retry_s, breaker, access))


# ---------------------------------------------------------------------------- a program, retried
def _attempt(
    session: Any, access: str, start: Callable[[], Program], ctx: Context, metadata: dict[str, Any], trace: _Trace, asynchronous: bool
) -> Callable[[], Any]:
    """One whole attempt at the program ``start()`` builds in ``session``: a WRITE program in one
    managed transaction, a READ or ADMIN program as auto-commit statements (``_AutoCommit``)."""
    drive = _drive_async if asynchronous else _drive
    if access in AUTO_COMMIT:
        statements = (_AsyncAutoCommit if asynchronous else _AutoCommit)(session, ctx, metadata)
        return lambda: drive(_steps(start(), statements, ctx, trace))
    work = neo4j.unit_of_work(timeout=ctx.timeout(), metadata=metadata)(lambda tx: drive(_steps(start(), tx, ctx, trace)))
    return lambda: session.execute_write(work)


def _transacting(attempt: Callable[[], Any], ctx: Context, trace: _Trace, access: str, breaker: Breaker | None) -> Generator[_Io, Any, dict]:
    """The attempts, retried by ``_retrying`` (the face opens its sessions without the driver's
    own retries); a driver exception that ends them is mapped to a KIP error."""
    try:
        return (yield from _retrying(attempt, ctx.settings.max_retry_s, breaker, access))
    except DRIVER_ERRORS as exc:
        raise _failure(exc, ctx, trace, access) from None


def run_sync(session: Any, access: str, start: Callable[[], Program], ctx: Context, metadata: dict[str, Any], breaker: Breaker | None = None) -> dict:
    """Run the program ``start()`` builds in ``session`` (``_attempt``), retried (``_transacting``)."""
    trace = _Trace()
    return _drive(_transacting(_attempt(session, access, start, ctx, metadata, trace, False), ctx, trace, access, breaker))


async def run_async(session: Any, access: str, start: Callable[[], Program], ctx: Context, metadata: dict[str, Any], breaker: Breaker | None = None) -> dict:
    """``run_sync`` for an ``AsyncSession``."""
    trace = _Trace()
    return await _drive_async(_transacting(_attempt(session, access, start, ctx, metadata, trace, True), ctx, trace, access, breaker))


# ---------------------------------------------------------------------------- the nexus core's operations
def _internal(exc: BaseException) -> KipError:
    """A failure no KIP error describes: an engine bug, logged with its traceback."""
    log.error("execution failure: %r", exc, exc_info=True)
    return KipError(errors.INTERNAL_ERROR, f"Internal error: {type(exc).__name__}: {exc}", "This is an engine bug; report it with the debug field.")


def _metadata(request: Transact) -> dict[str, Any]:
    """The transaction metadata of a ``Transact`` (by default: the application, the engine's version and the namespace)."""
    settings = request.ctx.settings
    return dict(request.metadata or {"app": settings.app_name, "version": __version__, "namespace": settings.namespace})


def _transact(session: Callable[[str], Any], request: Transact, breaker: Breaker | None) -> dict:
    with session(request.access) as opened:
        return run_sync(opened, request.access, request.start, request.ctx, _metadata(request), breaker)


async def _transact_async(session: Callable[[str], Any], request: Transact, breaker: Breaker | None) -> dict:
    async with await session(request.access) as opened:
        return await run_async(opened, request.access, request.start, request.ctx, _metadata(request), breaker)


def _call(work: Callable[[], Any]) -> Any:
    return work()


def _operating(operation: Generator[Any, Any, Any], session: Callable[[str], Any], refresher: Any, breaker: Breaker | None) -> Generator[_Io, Any, Any]:
    """Drive an operation of the nexus core: each ``Transact`` in a session of ``session(access)``,
    through the face's circuit ``breaker``, ``Offload`` (the request's CPU work) in a worker thread
    under asyncio; returns its result (a ``KipError`` it raises propagates)."""
    stepping = _Stepping(operation)
    for request in stepping:
        try:
            if isinstance(request, Transact):
                stepping.reply = yield _Io(_transact, _transact_async, (session, request, breaker))
            elif isinstance(request, Offload):
                stepping.reply = yield _Io(_call, asyncio.to_thread, (request.work,))
            elif isinstance(request, AwaitEmbeddings):
                stepping.reply = yield _Io(refresher.wait, refresher.wait, (request.timeout,))
            elif isinstance(request, Refresh):
                refresher.submit(request.ctx)
            else:
                raise _unknown(request)
        except KipError as exc:
            stepping.failure = exc
        except Exception as exc:  # noqa: BLE001 - never a traceback to the caller
            stepping.failure = _internal(exc)
    return stepping.result


def operate_sync(operation: Generator[Any, Any, Any], session: Callable[[str], Any], refresher: Any, breaker: Breaker | None = None) -> Any:
    """``_operating``, synchronously."""
    return _drive(_operating(operation, session, refresher, breaker))


async def operate_async(operation: Generator[Any, Any, Any], session: Callable[[str], Any], refresher: Any, breaker: Breaker | None = None) -> Any:
    """``_operating`` under asyncio. An operation whose caller stops waiting (the MCP server's
    request timeout cancels the call) is closed at once: its ``finally`` blocks — the call's
    metrics — run now, not when it is collected."""
    try:
        return await _drive_async(_operating(operation, session, refresher, breaker))
    finally:
        operation.close()
