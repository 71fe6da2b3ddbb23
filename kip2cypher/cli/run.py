"""``kip2cypher run``: a script's commands in order under the §6 batch rules, with progress and a summary.

The summary counts what was written from each capsule's AST (``source.write_counts``):
CONCEPT blocks, PROPOSITION blocks and SET PROPOSITIONS links of every capsule that
succeeded. The §6.2.2 UPSERT result lists only top-level block ids ("SET PROPOSITIONS links
are not itemized"), so counting the response would report 20 propositions for a capsule
that wrote 744 links; the database is not queried before/after because other writers would
make that count wrong. A failed capsule counts nothing: its transaction rolled back.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import click
from rich.text import Text

from .. import KipError
from .jsonout import dump, fail
from .output import make_console, result_summary, table, writes_summary
from .progress import RunProgress
from .source import WriteCounts, command_kind, first_line, split_script, write_counts


@dataclass
class Step:
    """One command of the script and what became of it."""

    number: int
    text: str
    line: int
    counts: WriteCounts
    response: dict[str, Any] | None = None

    @property
    def weight(self) -> int:
        """Work units for the bar: the elements a capsule writes, 1 for any other command."""
        return max(1, self.counts.concepts + self.counts.propositions)

    @property
    def first_line(self) -> str:
        return first_line(self.text)

    @property
    def error(self) -> dict[str, Any] | None:
        return (self.response or {}).get("error")


@dataclass
class Totals:
    ran: int = 0
    failed: list[Step] = field(default_factory=list)
    written: WriteCounts = field(default_factory=WriteCounts)
    stopped: bool = False


def run_script(nexus: Any, text: str, label: str, *, parameters: dict[str, Any], dry_run: bool, readonly: bool, fmt: str) -> bool:
    """Run every command; print per ``fmt``; True when any command failed."""
    steps = _steps(text, readonly)
    totals = Totals()
    started = time.monotonic()
    work = sum(s.weight for s in steps)
    upserts = sum(s.counts.upserts for s in steps)
    with RunProgress(label, work=work, commands=len(steps), upserts=upserts) as progress:
        for step in steps:
            progress.running(step.number, step.first_line)
            outcome = nexus.execute_command(step.text, parameters, dry_run=dry_run, readonly=readonly)
            step.response = outcome.response
            totals.ran += 1
            if step.error:
                totals.failed.append(step)
            else:
                totals.written += step.counts
            progress.finished(work=step.weight, upserts=step.counts.upserts)
            if fmt == "text":
                progress.print(_step_text(step, dry_run))
            if outcome.stops_batch:
                totals.stopped = True
                break
    _report(steps, totals, time.monotonic() - started, fmt=fmt, dry_run=dry_run)
    return bool(totals.failed)


def _steps(text: str, readonly: bool) -> list[Step]:
    """The script's commands with their write counts; refuses the whole file under --readonly if it holds KML."""
    try:
        commands = split_script(text)
    except KipError as exc:
        fail(exc.to_dict())
    if readonly:
        kml = [line for command, line in commands if command_kind(command) == "KML"]
        if kml:
            from ..execution.batch import readonly_error

            fail(readonly_error(f"The script contains KML at line(s) {', '.join(map(str, kml[:10]))}").to_dict())
    return [Step(number, command, line, write_counts(command)) for number, (command, line) in enumerate(commands, start=1)]


def _step_text(step: Step, dry_run: bool) -> Text:
    """``[n] line L: <first line>`` and, indented, its outcome (an error in red, with its hint)."""
    text = Text(f"[{step.number}] line {step.line}: {step.first_line}\n")
    if step.error:
        return text + Text(f"    {_outcome(step, dry_run)}\n    hint: {step.error.get('hint', '')}", style="red")
    return text + Text(f"    {_outcome(step, dry_run)}")


def _report(steps: list[Step], totals: Totals, elapsed: float, *, fmt: str, dry_run: bool) -> None:
    """The end of a run: the JSON batch response or the table (stdout), then the summary line."""
    out, err = make_console(), make_console(stderr=True)
    ran = [s for s in steps if s.response is not None]
    if fmt == "json":
        click.echo(dump({"result": [s.response for s in ran]}))
    elif fmt == "table":
        out.print(table(["#", "line", "command", "outcome"], [[s.number, s.line, s.first_line, _outcome(s, dry_run)] for s in ran], console=out, count=False))
    ok = totals.ran - len(totals.failed)
    summary = f"{totals.ran}/{len(steps)} commands run{' (dry run)' if dry_run else ''}: {ok} ok, {len(totals.failed)} failed in {elapsed:.2f}s"
    if totals.written.upserts:
        summary += "; " + writes_summary(totals.written, dry_run=dry_run)
    if totals.stopped:
        summary += f"; stopped at command {totals.ran} (line {totals.failed[-1].line}) on a KML error, {len(steps) - totals.ran} not run"
    (err if fmt == "json" else out).print(summary, soft_wrap=True)


def _outcome(step: Step, dry_run: bool) -> str:
    if step.error:
        return f"{step.error['code']} {step.error['message']}"
    return "ok: " + result_summary(step.text, (step.response or {}).get("result"), dry_run=dry_run)
