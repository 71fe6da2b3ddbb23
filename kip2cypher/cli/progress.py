"""``kip2cypher run``'s progress: a rich live bar on a terminal, nothing but plain lines otherwise.

What moves the bar. A capsule (consecutive UPSERT statements) is ONE command and runs in one
transaction (spec §1: UPSERT writes are atomic transactions), and its Cypher covers all of its UPSERT
blocks at once, so nothing can be observed between two blocks of the same capsule without
breaking that atomicity. The bar therefore measures *work*: each command weighs the
elements it writes (CONCEPT blocks + PROPOSITION blocks + SET PROPOSITIONS links, read from
the parsed AST; 1 for any other command), and when a command finishes the bar advances by
its weight and the counters by its commands and UPSERT blocks — a 13-block capsule adds
13 to "UPSERT blocks" when its transaction commits. While a command runs, the spinner,
the elapsed time and the command's first line keep the display alive. The ETA is rich's
extrapolation of the work rate over the last 30 s; it shows ``-:--:--`` until two commands
have finished (a rate needs two measurements), instead of a guess.

Per-command lines are printed above the live bar (through its console), never through it.
"""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TaskProgressColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.text import Text

from .output import make_console


class RunProgress:
    """The live display of one ``run``; ``live`` is False when stderr is not a terminal."""

    def __init__(self, label: str, *, work: int, commands: int, upserts: int) -> None:
        self._err = make_console(stderr=True)
        self._out = make_console()
        self.live = self._err.is_terminal
        self._progress: Progress | None = None
        self._task = None
        if self.live:
            self._progress = Progress(
                SpinnerColumn(),
                TextColumn("{task.description}", style="cyan", markup=False),
                BarColumn(),
                TaskProgressColumn(),
                TextColumn(f"{{task.fields[commands]}}/{commands} commands"),
                TextColumn(f"{{task.fields[upserts]}}/{upserts} UPSERT blocks"),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
                console=self._err,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self._task = self._progress.add_task(label, total=max(work, 1), commands=0, upserts=0)
            self._label = label

    def __enter__(self) -> RunProgress:
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()

    def running(self, number: int, first_line: str) -> None:
        """Show which command is in flight."""
        if self._progress is not None:
            self._progress.update(self._task, description=f"{self._label} [{number}] {first_line[:40]}")

    def finished(self, *, work: int, upserts: int) -> None:
        """A command is done: advance by its weight, count it and its UPSERT blocks."""
        if self._progress is not None:
            task = self._progress.tasks[0]
            self._progress.update(
                self._task, advance=work, commands=task.fields["commands"] + 1, upserts=task.fields["upserts"] + upserts, description=self._label
            )

    def print(self, text: Text | str) -> None:
        """A line for stdout; on a shared terminal it goes above the live bar."""
        console: Console = self._err if (self.live and self._out.is_terminal) else self._out
        console.print(text)
