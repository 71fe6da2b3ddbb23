"""An agent's memory loop (issue 29, item 5): several clients, each at a fixed rate, replaying
the spec's agent cycle on the bench graph — KIP against the same operations written by hand.

The cycle (spec §3.6 / §4, the "memory loop"), drawn per operation with these weights:

==============  ======  =====================================================================
operation       weight  KIP (new literal values each time, as an agent writes them)
==============  ======  =====================================================================
recall_self       30    FIND the people ``self`` (a bench Person) knows
recall_events     20    FIND the most salient Events above a salience threshold
formation         25    UPSERT a new Event with a summary, salience, time and metadata
consolidation     15    UPDATE the confidence of one of the client's recent Events (decay)
merge              5    MERGE a duplicate Event (formed just before) into the original
describe           5    DESCRIBE PRIMER
==============  ======  =====================================================================

The hand-written side: the same reads and writes in the storage model's Cypher (bench/writer.py's
MERGE for a formation, a SET with the version bump for a consolidation, a property copy and
DETACH DELETE for a merge — the duplicate has no propositions), and for DESCRIBE PRIMER the
primer's own two statements (``_describe``): the aggregation is the same by hand.

Each client runs its schedule open-loop at ``rate`` operations per second (a late operation
starts at once; latency is measured from its start). The KIP side sends text with literal values
(plan templates make a new text of a known shape cheap); the hand-written side runs fixed Cypher
with driver parameters. Phases alternate KIP / Cypher / KIP / Cypher, so drift on a shared
machine falls on both. Reported: throughput, p50 / p95 / p99 latency per side and per operation,
and the compile-cache answers of the KIP phases (exact text, template, cold).
"""

from __future__ import annotations

import functools
import random
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

from kip2cypher.lower import compile as compiler

from . import namespaced, writer
from .graph import MemoryGraph

WEIGHTS = {"recall_self": 30, "recall_events": 20, "formation": 25, "consolidation": 15, "merge": 5, "describe": 5}

RECALL_SELF = "MATCH (p:Person {name: $name})-[:knows]->(o) RETURN o.name AS name LIMIT 10"
RECALL_EVENTS = "MATCH (e:Event) WHERE e.`attr.salience` > $x RETURN e.name AS name ORDER BY e.`attr.salience` DESC LIMIT 5"
CONSOLIDATE = (
    "MATCH (e:Event {name: $name}) "
    "SET e.`meta.confidence` = CASE WHEN e.`meta.confidence` * $f > 1.0 THEN 1.0 WHEN e.`meta.confidence` * $f < 0.0 THEN 0.0 "
    "ELSE e.`meta.confidence` * $f END, e.`meta._version` = e.`meta._version` + 1, e.`meta._updated_at` = $now RETURN count(e) AS n"
)
MERGE = (
    "MATCH (d:Event {name: $dup}) MATCH (k:Event {name: $keep}) "
    "WITH d, k, properties(d) AS p SET k.`attr.summary` = coalesce(k.`attr.summary`, p.`attr.summary`), "
    "k.`meta._version` = k.`meta._version` + 1, k.`meta._updated_at` = $now DETACH DELETE d RETURN count(k) AS n"
)


@functools.cache
def _describe() -> list[dict[str, Any]]:
    """DESCRIBE PRIMER's own statements ($self and the domain summary: members, key concepts by
    degree, key predicates). A hand-written primer is the same aggregation over the whole graph,
    so the Cypher side runs these statements with their parameters, without KIP around them."""
    return compiler.compile_command("DESCRIBE PRIMER")


class Client:
    """One agent: its random stream, its own Events, and the two ways to run an operation."""

    def __init__(self, graph: MemoryGraph, index: int, side: str, phase: int) -> None:
        self.graph, self.side = graph, side
        self.rnd = random.Random(f"{index}-{phase // 2}")  # phases 0 / 1 and 2 / 3 (KIP / Cypher) draw the same operations
        self.prefix = f"agent-{side}{phase}-{index}"
        self.formed: list[str] = []
        self.count = 0

    def draw(self) -> tuple[str, dict[str, Any]]:
        """The next operation and its values."""
        op = self.rnd.choices(list(WEIGHTS), weights=list(WEIGHTS.values()))[0]
        if op in ("consolidation", "merge") and not self.formed:
            op = "formation"
        rnd = self.rnd
        self.count += 1
        if op == "recall_self":
            return op, {"name": self.graph.person(rnd.randrange(2000))}
        if op == "recall_events":
            return op, {"x": round(rnd.uniform(0.5, 0.99), 3)}
        if op == "formation":
            name = f"{self.prefix}-ev{self.count}"
            self.formed.append(name)
            return op, {
                "name": name,
                "summary": f"talked with {self.graph.person(rnd.randrange(2000))} about topic {rnd.randrange(500)}",
                "salience": round(rnd.uniform(0.05, 0.95), 4),
                "at": f"2026-12-{1 + rnd.randrange(28):02d}T{rnd.randrange(24):02d}:{rnd.randrange(60):02d}:00Z",
                "confidence": round(rnd.uniform(0.6, 0.95), 3),
            }
        if op == "consolidation":
            return op, {"name": rnd.choice(self.formed[-20:]), "f": round(rnd.uniform(0.9, 0.99), 4)}
        if op == "merge":
            keep = self.formed.pop()
            return op, {"keep": keep, "dup": f"{keep}-dup"}
        return op, {}


# ------------------------------------------------------------------ the KIP side
def kip_formation(v: dict[str, Any], name: str | None = None) -> str:
    return (
        f'UPSERT {{ CONCEPT ?e {{ {{type: "Event", name: "{name or v["name"]}"}} '
        f'SET ATTRIBUTES {{ summary: "{v["summary"]}", salience: {v["salience"]}, start_time: "{v["at"]}", event_class: "Memory" }} }} '
        f'WITH METADATA {{ source: "agent-loop", confidence: {v["confidence"]} }} }}'
    )


def kip_texts(op: str, v: dict[str, Any]) -> list[str]:
    """The KIP commands of one operation, values written into the text as an agent writes them."""
    if op == "recall_self":
        return [f'FIND(?o.name) WHERE {{ ?p {{type: "Person", name: "{v["name"]}"}} (?p, "knows", ?o) }} LIMIT 10']
    if op == "recall_events":
        return [f'FIND(?e.name) WHERE {{ ?e {{type: "Event"}} FILTER(?e.attributes.salience > {v["x"]}) }} ORDER BY ?e.attributes.salience DESC LIMIT 5']
    if op == "formation":
        return [kip_formation(v)]
    if op == "consolidation":
        return [
            f"UPDATE ?e SET METADATA {{ confidence: CLAMP(MUL(?e.metadata.confidence, {v['f']}), 0.0, 1.0) }} "
            f'WHERE {{ ?e {{type: "Event", name: "{v["name"]}"}} }}'
        ]
    if op == "merge":
        return [
            _duplicate_kip(v),
            f'MERGE CONCEPT ?dup INTO ?keep WHERE {{ ?dup {{type: "Event", name: "{v["dup"]}"}} ?keep {{type: "Event", name: "{v["keep"]}"}} }}',
        ]
    return ["DESCRIBE PRIMER"]


def run_kip(nexus: Any, op: str, v: dict[str, Any]) -> None:
    for text in kip_texts(op, v):
        _answer(nexus.execute_kip(text))


def stream(graph: MemoryGraph, n: int, clients: int = 4) -> list[str]:
    """``n`` operations' KIP texts, interleaved from ``clients`` agents (the compile bench's stream)."""
    agents = [Client(graph, i, "kip", 0) for i in range(clients)]
    return [text for k in range(n) for text in kip_texts(*agents[k % clients].draw())]


def _duplicate_kip(v: dict[str, Any]) -> str:
    return f'UPSERT {{ CONCEPT ?d {{ {{type: "Event", name: "{v["dup"]}"}} SET ATTRIBUTES {{ summary: "a duplicate of {v["keep"]}" }} }} }}'


def _answer(response: dict[str, Any]) -> None:
    if "error" in response:
        raise RuntimeError(f"KIP error in the agent loop: {response['error']}")


# ------------------------------------------------------------------ the hand-written side
def run_cypher(driver: Any, database: str | None, op: str, v: dict[str, Any]) -> None:
    q = namespaced.cypher
    if op == "describe":
        with driver.session(database=database) as session:
            session.execute_read(lambda tx: [list(tx.run(s["cypher"], s["parameters"])) for s in _describe()])
        return
    if op in ("recall_self", "recall_events"):
        statement = RECALL_SELF if op == "recall_self" else RECALL_EVENTS
        with driver.session(database=database) as session:
            session.execute_read(lambda tx: list(tx.run(q(statement), **v)))
        return
    now = writer.now_iso()
    with driver.session(database=database) as session:
        if op == "formation":
            row = writer.concept_row(
                "Event",
                v["name"],
                {"summary": v["summary"], "salience": v["salience"], "start_time": v["at"], "event_class": "Memory"},
                {"source": "agent-loop", "confidence": v["confidence"]},
            )
            session.execute_write(lambda tx: list(tx.run(q(writer.CONCEPTS), rows=[row], now=now)))
        elif op == "consolidation":
            session.execute_write(lambda tx: list(tx.run(q(CONSOLIDATE), name=v["name"], f=v["f"], now=now)))
        else:
            row = writer.concept_row("Event", v["dup"], {"summary": f"a duplicate of {v['keep']}"}, {})
            session.execute_write(lambda tx: list(tx.run(q(writer.CONCEPTS), rows=[row], now=now)))
            session.execute_write(lambda tx: list(tx.run(q(MERGE), dup=v["dup"], keep=v["keep"], now=now)))


# ------------------------------------------------------------------ driving
def _phase(
    graph: MemoryGraph, side: str, phase: int, clients: int, rate: float, duration_s: float, run: Callable[[str, dict[str, Any]], None]
) -> dict[str, Any]:
    """``clients`` threads, each issuing ``rate`` operations per second for ``duration_s``."""
    latencies: dict[str, list[float]] = {op: [] for op in WEIGHTS}
    errors: list[str] = []
    lock = threading.Lock()

    def client(index: int) -> None:
        me = Client(graph, index, side, phase)
        start = time.perf_counter() + index / (clients * rate)  # spread the clients' first operations
        k = 0
        while True:
            due = start + k / rate
            if due - start > duration_s:
                return
            pause = due - time.perf_counter()
            if pause > 0:
                time.sleep(pause)
            op, values = me.draw()
            t0 = time.perf_counter()
            try:
                run(op, values)
            except Exception as exc:  # reported, never hidden: the phase's answer counts it
                with lock:
                    errors.append(f"{op}: {exc}"[:300])
                return
            with lock:
                latencies[op].append(time.perf_counter() - t0)
            k += 1

    began = time.perf_counter()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {"latencies": latencies, "wall_s": time.perf_counter() - began, "errors": errors}


def _percentiles(samples: list[float]) -> dict[str, float]:
    if not samples:
        return {}
    ordered = sorted(samples)

    def at(p: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(p * len(ordered)))] * 1e3, 3)

    return {"n": len(ordered), "p50_ms": at(0.50), "p95_ms": at(0.95), "p99_ms": at(0.99), "mean_ms": round(statistics.fmean(ordered) * 1e3, 3)}


def run(
    nexus: Any, database: str | None, graph: MemoryGraph, log: Callable[..., None], clients: int = 4, rate: float = 10.0, duration_s: float = 20.0
) -> dict[str, Any]:
    """Alternating KIP / Cypher phases (two each); the report of issue 29's agent-loop target."""
    driver = nexus.driver
    merged: dict[str, dict[str, list[float]]] = {"kip": {op: [] for op in WEIGHTS}, "cypher": {op: [] for op in WEIGHTS}}
    wall = {"kip": 0.0, "cypher": 0.0}
    errors: list[str] = []
    before = compiler.cache_stats()
    for phase in range(4):
        side = "kip" if phase % 2 == 0 else "cypher"
        if side == "kip":
            result = _phase(graph, side, phase, clients, rate, duration_s, lambda op, v: run_kip(nexus, op, v))
        else:
            result = _phase(graph, side, phase, clients, rate, duration_s, lambda op, v: run_cypher(driver, database, op, v))
        for op, samples in result["latencies"].items():
            merged[side][op] += samples
        wall[side] += result["wall_s"]
        errors += result["errors"]
        done = sum(len(s) for s in result["latencies"].values())
        log(f"  phase {phase + 1}/4 ({side}): {done} operations in {result['wall_s']:.1f}s, {len(result['errors'])} errors")
    after = compiler.cache_stats()
    compiles = {k: after[k] - before[k] for k in after}
    report: dict[str, Any] = {"clients": clients, "rate_per_client": rate, "phase_s": duration_s, "errors": errors[:10]}
    for side in ("kip", "cypher"):
        every = [x for samples in merged[side].values() for x in samples]
        report[side] = {
            "throughput_ops_s": round(len(every) / wall[side], 2) if wall[side] else None,
            **_percentiles(every),
            "without_describe": _percentiles([x for op, samples in merged[side].items() if op != "describe" for x in samples]),
            "by_operation": {op: _percentiles(samples) for op, samples in merged[side].items()},
        }
    exact = compiles["calls"] - compiles["template"] - compiles["cold"]
    report["compile"] = {
        **compiles,
        "exact": exact,
        "hit_rate": round((exact + compiles["template"]) / compiles["calls"], 3) if compiles["calls"] else None,
    }
    if report["kip"].get("p99_ms") and report["cypher"].get("p99_ms"):
        report["p99_ratio"] = round(report["kip"]["p99_ms"] / report["cypher"]["p99_ms"], 3)
        report["p50_ratio"] = round(report["kip"]["p50_ms"] / report["cypher"]["p50_ms"], 3)
        kip, cypher = report["kip"]["without_describe"], report["cypher"]["without_describe"]
        report["p99_ratio_without_describe"] = round(kip["p99_ms"] / cypher["p99_ms"], 3)
    return report


def cleanup(driver: Any, database: str | None) -> None:
    """Remove what the loop formed (its Events are named ``agent-…``), so the graph is the bench's again."""
    with driver.session(database=database) as session:
        session.run(namespaced.cypher("MATCH (e:Event) WHERE e.name STARTS WITH 'agent-' CALL (e) { DETACH DELETE e } IN TRANSACTIONS OF 1000 ROWS")).consume()
