"""The §6 request rules as a sans-IO program, shared by the sync ``Nexus`` and the ``AsyncNexus``.

(Named ``batch`` for what it orders; ``requests`` is the module of what programs yield.)
``request_program`` validates the function-call arguments, compiles every command once (its
kind comes from that compile, or under read-only from the compiler's own cached parse; a
syntax error is never parsed twice), applies the read-only rule (any KML refuses the whole
request before anything runs or compiles) — that CPU work yielded as ``Offload`` pieces the
asyncio face runs in a worker thread —, then yields one ``RunPlan`` per command to run
and receives its response (or the ``KipError`` it raised); a KML *execution* error stops a
batch, syntax and read errors come back inline.
It returns the §6 response dict and never raises.
"""

from __future__ import annotations

import logging
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, Union

from .. import errors
from ..config import Settings
from ..errors import KipError
from ..lower.compile import classify, compile_plan
from ..lower.plan import Plan
from ..models import ExecuteRequest
from ..syntax.ast import READ_WORDS, WRITE_WORDS, listing, writes
from ..syntax.script import sniff_kind
from ..syntax.values import parameters_size
from .requests import Deadline, Offload

log = logging.getLogger("kip2cypher")


@dataclass(frozen=True)
class RunPlan:
    """Run ``plan`` (in its own transaction); the reply is its response dict or the KipError it raised."""

    plan: Plan
    dry_run: bool
    readonly: bool


Reply = Union[dict, KipError]
Program = Generator[RunPlan, Reply, Any]


class Outcome:
    """A single-command response and the facts the batch rules need."""

    __slots__ = ("response", "kind", "ran")

    def __init__(self, response: dict[str, Any], kind: str | None, ran: bool = False) -> None:
        self.response = response
        self.kind = kind
        #: the command was compiled and handed to the executor (its error, if any, is an execution error)
        self.ran = ran

    @property
    def stops_batch(self) -> bool:
        """§6.1: a KML *execution* error halts the batch, whatever its code — Neo4j refusing a
        label at run time answers KIP_1002, and the command did run. Syntax errors (KIP_1xxx
        before it ran: it never executed) and KQL/META errors are returned inline and the batch
        goes on; a KML command the compiler refused for its schema or logic (KIP_2xxx–4xxx)
        halts it too, since what follows may depend on it."""
        error = self.response.get("error")
        return bool(error) and writes(self.kind) and (self.ran or not str(error.get("code", "")).startswith("KIP_1"))


@dataclass(frozen=True)
class _Compiled:
    """One command after compilation: its plan, or the error that stopped it, and its kind."""

    plan: Plan | None
    error: dict[str, Any] | None
    kind: str | None


def _compile(text: str, parameters: dict[str, Any], settings: Settings, checked: bool = False) -> _Compiled:
    """Plan and kind from one compile: a command that parsed but failed later carries its kind on
    the error; one that did not parse is classified by its first word — never parsed again.
    ``checked``: ``request_program`` has already sized and checked the request's parameters."""
    try:
        plan = compile_plan(text, parameters, settings, parameters_checked=checked)
    except KipError as exc:
        return _Compiled(None, exc.to_dict(), exc.command_kind or sniff_kind(text))
    except Exception as exc:  # noqa: BLE001 - a compiler bug must still come back as a KIP error
        log.error("compiler failure: %r", exc, exc_info=True)
        err = KipError(
            errors.INTERNAL_ERROR, f"Internal compiler error: {type(exc).__name__}: {exc}", "This is an engine bug; the command itself may be valid."
        )
        return _Compiled(None, err.to_dict(), sniff_kind(text))
    return _Compiled(plan, None, plan.kind)


def _classified(text: str, settings: Settings) -> tuple[str | None, _Compiled | None]:
    """Read-only, before anything compiles: a command's kind from the compiler's own (cached)
    parse, and its outcome already when it does not parse (its syntax error, kept, not re-parsed)."""
    kind, error = classify(text, settings)
    return kind, (None if error is None else _Compiled(None, error.to_dict(), kind))


def _run(compiled: _Compiled, dry_run: bool, readonly: bool) -> Generator[RunPlan, Reply, Outcome]:
    if compiled.plan is None:
        return Outcome({"error": compiled.error}, compiled.kind)
    if readonly and writes(compiled.kind):  # refused before; a second lock on the door
        return Outcome({"error": readonly_error("This is a KML command").to_dict()}, compiled.kind)
    reply = yield RunPlan(compiled.plan, dry_run, readonly)
    if isinstance(reply, KipError):
        return Outcome({"error": reply.to_dict()}, compiled.kind, ran=True)
    return Outcome(clean_response(reply), compiled.kind, ran=True)


def command_program(
    text: str, parameters: dict[str, Any], *, dry_run: bool, readonly: bool, settings: Settings, deadline: Deadline | None = None
) -> Generator[RunPlan | Offload, Any, Outcome]:
    """One command text → its ``Outcome`` (for callers that drive their own loop: ``kip2cypher run``, the shell)."""
    compiled = yield Offload(lambda: _command(text, parameters, readonly, settings, deadline))
    if isinstance(compiled, Outcome):  # answered before it could run
        return compiled
    try:
        return (yield from _run(compiled, dry_run, readonly))
    except Exception as exc:  # noqa: BLE001
        return Outcome({"error": _internal("command", exc).to_dict()}, compiled.kind)


def _command(text: str, parameters: dict[str, Any], readonly: bool, settings: Settings, deadline: Deadline | None) -> _Compiled | Outcome:
    """``command_program``'s CPU work, in one piece: the read-only check and the compile."""
    try:
        _check(deadline)
        kind, known = _classified(text, settings) if readonly else (None, None)
        if writes(kind):
            return Outcome({"error": readonly_error("This is a KML command").to_dict()}, kind)
        return known or _compile(text, parameters, settings)
    except KipError as exc:
        return Outcome({"error": exc.to_dict()}, sniff_kind(text))
    except Exception as exc:  # noqa: BLE001
        return Outcome({"error": _internal("command", exc).to_dict()}, sniff_kind(text))


def request_program(
    arguments: Any, *, readonly: bool, settings: Settings, deadline: Deadline | None = None, outcomes: list[Outcome] | None = None
) -> Generator[RunPlan | Offload, Any, dict]:
    """One function call (its raw JSON arguments) → the §6 response dict.

    Its CPU work — validating the arguments, the read-only check, compiling the commands — is
    done in ``Offload`` pieces (the asyncio face runs each in a worker thread): one before
    anything runs, which compiles every command up to the first KML one, then one more after
    each KML command that ran without stopping the batch. A command after one that stops the
    batch is never compiled. ``deadline`` (the request's time budget, ``Settings.max_request_s``)
    is checked before each command is classified, compiled and run: once it has passed, the
    remaining commands answer KIP_4001 without being compiled or run. ``outcomes``: receives the
    ``Outcome`` of each command answered, in order (what the metrics count per command kind)."""
    answered = outcomes if outcomes is not None else []
    prepared = yield Offload(lambda: _prepare(arguments, readonly, settings, deadline))
    if isinstance(prepared, dict):  # the request's error
        return prepared
    batch, dry_run, items, compiled = prepared
    try:
        if not batch:
            outcome = yield from _run(compiled[0], dry_run, readonly)
            answered.append(outcome)
            return outcome.response
        results = []
        for index, (text, params) in enumerate(items):
            failed = compiled[index] is not None and compiled[index].plan is None  # its compile error: nothing to run
            if not failed and deadline is not None and deadline.expired():
                answered.append(Outcome({"error": deadline.error().to_dict()}, compiled[index] and compiled[index].kind))  # not run
                results.append(answered[-1].response)
                continue
            if compiled[index] is None:
                yield Offload(lambda index=index: _compile_until_write(items, compiled, index, settings, deadline))
            outcome = yield from _run(compiled[index] or _expired(deadline), dry_run, readonly)
            answered.append(outcome)
            results.append(outcome.response)
            if outcome.stops_batch:
                _say_stopped(outcome.response["error"], index, len(items))
                break
        return {"result": results}
    except Exception as exc:  # noqa: BLE001 - no traceback ever reaches a caller
        return {"error": _internal("request", exc).to_dict()}


def _prepare(arguments: Any, readonly: bool, settings: Settings, deadline: Deadline | None) -> tuple[bool, bool, list, list[_Compiled | None]] | dict:
    """``request_program``'s first piece of CPU work: (batch?, dry run?, the commands' texts and
    parameters, those compiled so far — every one up to the first KML command), or the request's
    error response."""
    try:
        request = ExecuteRequest.parse(arguments, max_batch=settings.max_batch)
        if request.is_batch:
            items = [item.text_and_parameters(request.parameters) for item in request.items()]
        else:
            items = [(request.command or "", request.parameters or {})]
        parameters_size([params for _, params in items], settings.max_parameter_bytes, settings.max_nesting_depth)
        # A command's outcome known before it compiles: its syntax error, found by the read-only check.
        compiled: list[_Compiled | None] = [None] * len(items)
        if readonly:
            # Before anything runs or compiles: the kinds come from the compiler's own parses
            # (cached: compiling a command later does not parse it again); a syntax error is kept.
            kinds = []
            for i, (text, _) in enumerate(items):
                _check(deadline)
                kind, compiled[i] = _classified(text, settings)
                kinds.append(kind)
            _refuse_kml(kinds, request.is_batch)
        if not request.is_batch:
            _check(deadline)
        _compile_until_write(items, compiled, 0, settings, deadline)
        return request.is_batch, request.dry_run, items, compiled
    except KipError as exc:
        return {"error": exc.to_dict()}
    except Exception as exc:  # noqa: BLE001 - no traceback ever reaches a caller
        return {"error": _internal("request", exc).to_dict()}


def _compile_until_write(items: list, compiled: list[_Compiled | None], start: int, settings: Settings, deadline: Deadline | None) -> None:
    """Compile ``items[start:]`` into ``compiled`` (each once) up to and including the first KML
    command — the first that may stop the batch — or until the request's budget is spent."""
    for i in range(start, len(items)):
        if i > start and deadline is not None and deadline.expired():
            return
        compiled[i] = compiled[i] or _compile(*items[i], settings, checked=True)
        if writes(compiled[i].kind):
            return


def _expired(deadline: Deadline | None) -> _Compiled:
    """A command the request's budget ran out before: it answers KIP_4001, not compiled."""
    error = deadline.error() if deadline is not None else KipError(errors.INTERNAL_ERROR, "Internal error: a command was not compiled.")
    return _Compiled(None, error.to_dict(), None)


def _internal(what: str, exc: BaseException) -> KipError:
    log.error("%s failure: %r", what, exc, exc_info=True)
    return KipError(errors.INTERNAL_ERROR, f"Internal error: {type(exc).__name__}: {exc}", f"This is an engine bug; the {what} itself may be valid.")


def _say_stopped(error: dict[str, Any], index: int, total: int) -> None:
    """Tell the agent that this error stopped the batch, and what did not run (§6.1, §6.2.3)."""
    left = total - index - 1
    if left:
        error["message"] += (
            f" This KML error at commands[{index}] stopped the batch: the {left} command{'s' if left > 1 else ''} after it"
            f" (commands[{index + 1}]{f'…commands[{total - 1}]' if left > 1 else ''}) did not run."
        )


def _check(deadline: Deadline | None) -> None:
    """KIP_4001 for the whole request when its budget is spent before anything ran."""
    if deadline is not None and deadline.expired():
        raise deadline.error(request=True)


def _refuse_kml(kinds: list[str | None], batch: bool) -> None:
    """Readonly: refuse the whole request, before anything runs, if any command is KML."""
    kml = [i for i, kind in enumerate(kinds) if writes(kind)]
    if not kml:
        return
    if not batch:
        raise readonly_error("This is a KML command")
    where = ", ".join(f"commands[{i}]" for i in kml[:10]) + (" …" if len(kml) > 10 else "")
    raise readonly_error(f"The batch contains KML at {where}")


def readonly_error(what: str) -> KipError:
    return KipError(
        errors.IMMUTABLE_TARGET,
        f"execute_kip_readonly only runs {listing(READ_WORDS)}. {what} ({'/'.join(WRITE_WORDS)}); nothing was executed.",
        "Send write commands through execute_kip. Reads may stay on execute_kip_readonly.",
    )


def clean_response(response: Any) -> dict[str, Any]:
    """Only the §6.2.1 keys leave the executor — result / error / next_cursor — and the additive
    ``warnings`` (docs/interfaces.md)."""
    if not isinstance(response, dict):
        return {"result": response}
    out = {k: response[k] for k in ("result", "error", "next_cursor", "warnings") if k in response and response[k] is not None}
    if "result" in response and "result" not in out and "error" not in out:
        out["result"] = None
    return out
