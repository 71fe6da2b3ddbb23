"""Where ``upsert_attributes``' time goes (issue 29, item 2; docs/performance.md, Round 9).

    python -m bench.write_split [--rounds 40] [--out FILE.json]

Run it on the bench's loaded 10k graph (first ``python -m bench --quick --only upsert_attributes
--skip-ingest --skip-compile``, or any run that leaves the 10k graph; the same
``KIP2CYPHER_BENCH_*`` environment, so it talks to the same server). Each round times, in an
order rotated from round to round (the runner's alternation, for more than two sides), every
variant below on fresh values (the bench's own ``vary``, a new index per variant and round, so no
variant finds its values already written and skips the write):

- ``kip``: ``Nexus.execute_kip`` end to end, as the bench times it;
- ``compile``: ``compile_plan`` of the same text and values (no I/O);
- ``kip_literal`` / ``compile_literal``: the same two with the values written into the text
  as literals (a new text of a known shape every round: a plan-template fill, no lowering);
- ``run_plan``: ``Nexus.run_plan`` of the plan compiled beforehand (the execution layer: the
  program, its transaction, the result budget and shaping, without compile and request);
- ``statement``: the Cypher and parameters KIP's plan issues (recorded from the program, one
  statement for this command), run directly in one managed write transaction;
- ``no_*``: that statement with one guarantee taken out (text edits, each checked to apply);
  ``bare`` with all of them out; ``no_nulls``: the statement with its rows' null entries left out;
- ``hand``: the hand-written Cypher as the bench runs it (``driver.execute_query``); ``hand_tx``
  the same in a managed write transaction as KIP runs its statement; ``hand_kip_params`` that
  with KIP's parameter map (the price of the larger map);
- ``floor``: an empty managed write transaction (``RETURN 1``): the round trips alone.

Reported per variant: median wall ms, its ratio to ``hand`` with the 95 % bootstrap interval over
the rounds (bench/intervals.py), the client process's CPU ms and the Neo4j process's CPU ms per
call (utime + stime from /proc, summed over the rounds: clock ticks are too coarse for one call).
Nothing here asserts a timing; the numbers are for docs/performance.md.
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import os
import re
import statistics
import time
from collections.abc import Callable
from typing import Any

import neo4j

from kip2cypher.execution import programs
from kip2cypher.execution.core import new_context
from kip2cypher.execution.loop import drive_sync
from kip2cypher.lower.compile import compile_plan

from .graph import MemoryGraph
from .intervals import ratio_interval
from .queries import Query, write_queries
from .runner import _ProfilingTx
from .server import ensure_server, local_config

# One guarantee each: (pattern, replacement) applied to the plan's statement text.
LOCK = [
    (r"\n *ON MATCH SET n\.`_kip_lock` = true", ""),
    (r"\n *FOREACH \(_ IN CASE WHEN NOT created THEN \[1\] ELSE \[\] END \| REMOVE n\.`_kip_lock`\)", ""),
]
SKIP = [(r"created OR \(any\(k IN keys\(props\).*\) AS changed", "true AS changed")]
ANSWER = [(r"n\[\$kip_vkey\] AS v0, n\.id AS id", "n[$kip_vkey] AS v0, null AS id"), (r"RETURN collect\(\{`i`: i, .*\}\) AS rows", "RETURN count(*) AS rows")]
RESOLVE = [(r"CALL \(\) \{\n  UNWIND \$refs.*?\nWITH refs, all\(.*?\) AS ok", "WITH [] AS refs, true AS ok")]
EDITS = {"no_lock": LOCK, "no_skip": SKIP, "no_answer": ANSWER, "no_resolve": RESOLVE, "bare": LOCK + SKIP + ANSWER + RESOLVE}


class _Captured(Exception):
    """Stops the program at its first statement, once recorded."""


class _Recorder:
    def __init__(self) -> None:
        self.text, self.params = "", {}

    def run(self, text: str, parameters: dict[str, Any] | None = None, **_: Any) -> Any:
        self.text, self.params = text, dict(parameters or {})
        raise _Captured


def edited(text: str, edits: list[tuple[str, str]]) -> str:
    """``text`` with each edit applied exactly once (a lowering that changed shape fails here, not silently)."""
    for pattern, replacement in edits:
        text, n = re.subn(pattern, replacement, text, count=1, flags=re.S)
        if n != 1:
            raise AssertionError(f"edit {pattern!r} no longer applies to the plan's statement")
    return text


def inlined(text: str, params: dict[str, Any]) -> str:
    """``text`` with each ``:name`` placeholder replaced by its value as a KIP literal: the same
    command as an agent would write it without parameters (a plan-template hit, lower/templates.py)."""
    return re.sub(r":(\w+)\b", lambda m: json.dumps(params[m.group(1)], ensure_ascii=False), text)


class Split:
    """The variants, each a callable of the round's command index."""

    def __init__(self, nexus: Any, database: str | None, q: Query) -> None:
        self.nexus, self.driver, self.database, self.q = nexus, nexus.driver, database, q

    @property
    def settings(self) -> Any:
        """The nexus's settings, completed from its node at its first request (what it compiles with)."""
        return self.nexus.settings

    def statement(self, i: int) -> tuple[str, dict[str, Any]]:
        """The Cypher and parameters KIP's plan issues for command ``i`` (recorded, not run)."""
        text, params, _, _ = self.q.command(i)
        plan = compile_plan(text, params, self.settings)
        ctx = new_context(self.settings, plan, False)
        recorder = _Recorder()
        try:
            drive_sync(programs.start(plan, ctx), recorder, ctx)
        except _Captured:
            return recorder.text, recorder.params
        raise AssertionError("the plan issued no statement")

    def count_statements(self, i: int) -> int:
        """How many statements the plan runs (in a transaction rolled back)."""
        text, params, _, _ = self.q.command(i)
        plan = compile_plan(text, params, self.settings)
        with self.driver.session(database=self.database, default_access_mode=neo4j.WRITE_ACCESS) as session:
            tx = session.begin_transaction()
            try:
                proxy = _ProfilingTx(tx)
                ctx = new_context(self.settings, plan, False)
                drive_sync(programs.start(plan, ctx), proxy, ctx)
                return proxy.statements
            finally:
                tx.rollback()

    def in_write_tx(self, text: str, params: dict[str, Any]) -> int:
        """Run ``text`` in one managed write transaction; the properties it set (the check that a variant still writes)."""

        def work(tx: Any) -> int:
            result = tx.run(text, params)
            list(result)
            return result.consume().counters.properties_set

        with self.driver.session(database=self.database, default_access_mode=neo4j.WRITE_ACCESS) as session:
            return session.execute_write(work)

    def variants(self) -> tuple[dict[str, Callable[[int], Any]], dict[str, Callable[[int], Callable[[], Any]]]]:
        """(variants timed with their preparation, variants prepared outside the timed span)."""

        def kip(i: int) -> None:
            text, params, _, _ = self.q.command(i)
            response = self.nexus.execute_kip(text, parameters=params)
            if "error" in response:
                raise AssertionError(response["error"])

        def compile_only(i: int) -> None:
            text, params, _, _ = self.q.command(i)
            compile_plan(text, params, self.settings)

        def kip_literal(i: int) -> None:
            text, params, _, _ = self.q.command(i)
            response = self.nexus.execute_kip(inlined(text, params))
            if "error" in response:
                raise AssertionError(response["error"])

        def compile_literal(i: int) -> None:
            text, params, _, _ = self.q.command(i)
            compile_plan(inlined(text, params), None, self.settings)

        def hand(i: int) -> None:
            _, _, cypher, params = self.q.command(i)
            self.driver.execute_query(cypher, params, database_=self.database, routing_=neo4j.RoutingControl.WRITE)

        def floor(i: int) -> None:
            self.in_write_tx("RETURN 1 AS one", {})

        def run_plan(i: int) -> Callable[[], None]:
            text, params, _, _ = self.q.command(i)
            plan = compile_plan(text, params, self.settings)
            return lambda: self.nexus.run_plan(plan)

        def no_nulls(i: int) -> Callable[[], int]:
            """KIP's statement with the rows' null entries left out (Cypher reads a missing key as null)."""
            text, params = self.statement(i)
            rows = [{key: value for key, value in row.items() if value is not None} for row in params["rows"]]
            return lambda: self.in_write_tx(text, {**params, "rows": rows})

        def hand_tx(i: int) -> Callable[[], int]:
            _, _, cypher, params = self.q.command(i)
            return lambda: self.in_write_tx(cypher, params)

        def hand_kip_params(i: int) -> Callable[[], int]:
            """The hand-written statement sent KIP's parameter map (its rows carry type, name and props too)."""
            _, params = self.statement(i)
            _, _, cypher, _ = self.q.command(i)
            return lambda: self.in_write_tx(cypher, params)

        def recorded(edits: list[tuple[str, str]]) -> Callable[[int], Callable[[], None]]:
            def prepare(i: int) -> Callable[[], None]:
                text, params = self.statement(i)
                text = edited(text, edits)
                return lambda: self.in_write_tx(text, params)

            return prepare

        timed = {"kip": kip, "compile": compile_only, "kip_literal": kip_literal, "compile_literal": compile_literal, "hand": hand, "floor": floor}
        prepared = {"run_plan": run_plan, "statement": recorded([]), "no_nulls": no_nulls, "hand_tx": hand_tx, "hand_kip_params": hand_kip_params}
        prepared.update({name: recorded(edits) for name, edits in EDITS.items()})
        return timed, prepared


def _server_ticks() -> int:
    """utime + stime of this bench's Neo4j (its pid file), in clock ticks; 0 when it is not ours."""
    try:
        pid = int(local_config().pid_file.read_text().strip())
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    except (OSError, ValueError):
        return 0
    return int(fields[11]) + int(fields[12])


def check_writes(split: Split, index: int) -> dict[str, int]:
    """Properties each statement variant sets on fresh values: 3 attributes, the version and
    the time on each of the 100 concepts at least (an edit that stopped the write would time nothing)."""
    _, prepared = split.variants()
    written = {}
    for name, prepare in prepared.items():
        if name == "run_plan":
            continue
        index += 1
        written[name] = prepare(index)()
        if written[name] < 500:
            raise AssertionError(f"{name} set {written[name]} properties, not the 500 of the command")
    return written


def measure(split: Split, rounds: int, warmup: int = 3) -> dict[str, Any]:
    """Time every variant once per round, the order rotated each round; the prepared variants
    (compiled and recorded beforehand) are timed without their preparation."""
    timed, prepared = split.variants()
    names = [*timed, *prepared]
    wall: dict[str, list[float]] = {n: [] for n in names}
    client: dict[str, float] = dict.fromkeys(names, 0.0)
    server: dict[str, int] = dict.fromkeys(names, 0)
    index = 10_000
    for r in range(-warmup, rounds):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            index += 1
            run = prepared[name](index) if name in prepared else functools.partial(timed[name], index)
            ticks, cpu, start = _server_ticks(), time.process_time(), time.perf_counter()
            run()
            elapsed = time.perf_counter() - start
            if r >= 0:
                wall[name].append(elapsed)
                client[name] += time.process_time() - cpu
                server[name] += _server_ticks() - ticks
    tick_ms = 1000.0 / os.sysconf("SC_CLK_TCK")
    hand = wall["hand"]
    out = {}
    for name in names:
        ci = ratio_interval(wall[name], hand)
        out[name] = {
            "median_ms": round(statistics.median(wall[name]) * 1e3, 3),
            "ratio": round(statistics.median(wall[name]) / statistics.median(hand), 3),
            "ratio_ci": None if ci is None else [round(v, 3) for v in ci],
            "client_cpu_ms": round(client[name] / rounds * 1e3, 3),
            "server_cpu_ms": round(server[name] * tick_ms / rounds, 3),
        }
    return out


def table(results: dict[str, Any]) -> str:
    lines = ["| variant | median ms | ratio to hand | 95 % interval | client CPU ms | Neo4j CPU ms |", "|---|---|---|---|---|---|"]
    for name, v in results.items():
        ci = v["ratio_ci"]
        interval = "–" if ci is None else f"{ci[0]:.2f}–{ci[1]:.2f}"
        lines.append(f"| `{name}` | {v['median_ms']:.2f} | {v['ratio']:.2f} | {interval} | {v['client_cpu_ms']:.2f} | {v['server_cpu_ms']:.2f} |")
    return "\n".join(lines)


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--rounds", type=int, default=40)
    options.add_argument("--out", help="write the results as JSON here")
    args = options.parse_args()

    from kip2cypher import Nexus
    from kip2cypher.config import Settings

    graph = MemoryGraph(10_000)
    gc.freeze()  # the bench graph's objects are not the code under measurement (as in bench/__main__.py)
    uri, database = ensure_server()
    nexus = Nexus(uri, database=database, settings=Settings(embedder=False))
    (q,) = [q for q in write_queries(graph) if q.name == "upsert_attributes"]
    split = Split(nexus, database, q)
    load_start = os.getloadavg()
    text, params = split.statement(1)
    _, kip_params, _, hand_params = q.command(1)
    facts = {
        "statements_per_command": split.count_statements(1),
        "statement_params_bytes": len(json.dumps(params, default=str)),
        "kip_params_bytes": len(json.dumps(kip_params)),
        "hand_params_bytes": len(json.dumps(hand_params)),
        "statement_chars": len(text),
        "properties_set": check_writes(split, 5000),
    }
    results = measure(split, args.rounds)
    report = {"rounds": args.rounds, "load_average": [round(load_start[0], 2), round(os.getloadavg()[0], 2)], **facts, "variants": results}
    print(json.dumps({k: v for k, v in report.items() if k != "variants"}))
    print(table(results))
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(report, fh, indent=1)


if __name__ == "__main__":
    main()
