"""Timing KIP against hand-written Cypher: same process, same driver, alternating, warm.

For each query: one verified run of each side (answers compared — a mismatch aborts the
benchmark), warm-up runs, then ``reps`` timed pairs whose order alternates (KIP first on
even pairs, Cypher first on odd ones) so drift on a noisy machine hits both sides alike.
KIP is timed end to end through ``Nexus.execute_kip`` (compile-cache lookup, transaction,
result shaping); the hand-written query through ``driver.execute_query`` on the same
driver with the same access mode. PROFILE db hits are taken in transactions that are
rolled back: for KIP every statement the plan runs (``compile_plan`` + a profiling
transaction wrapper), for Cypher the hand-written statement(s).
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Any

import neo4j

from kip2cypher.execution import programs
from kip2cypher.execution.core import new_context
from kip2cypher.execution.loop import drive_sync
from kip2cypher.lower.compile import _compile_cached, compile_plan
from kip2cypher.syntax import parser as kparser

from .intervals import ratio_interval
from .queries import Query


def db_hits(profile: dict[str, Any] | None) -> int:
    if not profile:
        return 0
    return int(profile.get("dbHits", 0)) + sum(db_hits(child) for child in profile.get("children", []))


class _ProfilingTx:
    """A neo4j transaction stand-in that PROFILEs every statement and adds up the db hits."""

    def __init__(self, tx: Any) -> None:
        self.tx = tx
        self.hits = 0
        self.statements = 0

    def run(self, text: str, parameters: dict[str, Any] | None = None, **kwargs: Any) -> list[Any]:
        params = dict(parameters or {})
        params.update(kwargs)
        result = self.tx.run("PROFILE " + text, params)
        records = list(result)
        summary = result.consume()
        self.hits += db_hits(summary.profile)
        self.statements += 1
        return records


@dataclass
class Measurement:
    query: Query
    kip_samples: list[float] = field(default_factory=list)
    cypher_samples: list[float] = field(default_factory=list)
    alt_samples: list[float] = field(default_factory=list)
    kip_db_hits: int | None = None
    cypher_db_hits: int | None = None
    kip_statements: int | None = None
    compile_cold_ms: float | None = None
    compile_cached_us: float | None = None
    rows: int = 0
    error: str | None = None

    @property
    def kip_ms(self) -> float | None:
        return statistics.median(self.kip_samples) * 1e3 if self.kip_samples else None

    @property
    def cypher_ms(self) -> float | None:
        return statistics.median(self.cypher_samples) * 1e3 if self.cypher_samples else None

    @property
    def ratio_min(self) -> float | None:
        if not self.kip_samples or not self.cypher_samples:
            return None
        return min(self.kip_samples) / min(self.cypher_samples)

    @property
    def ratio(self) -> float | None:
        if not self.kip_samples or not self.cypher_samples:
            return None
        return self.kip_ms / self.cypher_ms

    @property
    def ratio_ci(self) -> tuple[float, float] | None:
        """The 95 % bootstrap interval of ``ratio`` over the timed pairs (bench/intervals.py)."""
        return ratio_interval(self.kip_samples, self.cypher_samples)

    def as_dict(self) -> dict[str, Any]:
        q = self.query
        r = lambda v, n=3: None if v is None else round(v, n)  # noqa: E731
        ci = self.ratio_ci
        return {
            "name": q.name,
            "feature": q.feature,
            "kip_ms": r(self.kip_ms),
            "cypher_ms": r(self.cypher_ms),
            "ratio": r(self.ratio),
            "ratio_ci": None if ci is None else [r(v) for v in ci],
            "ratio_of_minima": r(self.ratio_min),
            "kip_db_hits": self.kip_db_hits,
            "cypher_db_hits": self.cypher_db_hits,
            "kip_statements": self.kip_statements,
            "compile_cold_ms": r(self.compile_cold_ms),
            "compile_cached_us": r(self.compile_cached_us, 2),
            "kip_min_ms": r(min(self.kip_samples) * 1e3) if self.kip_samples else None,
            "cypher_min_ms": r(min(self.cypher_samples) * 1e3) if self.cypher_samples else None,
            "samples": len(self.kip_samples),
            **({"cypher_alt_ms": r(statistics.median(self.alt_samples) * 1e3), "cypher_alt": q.alt_cypher} if self.alt_samples else {}),
            "rows": self.rows,
            # the pairs themselves (ms), in timing order: the intervals of a report can be recomputed
            "kip_samples_ms": [round(v * 1e3, 4) for v in self.kip_samples],
            "cypher_samples_ms": [round(v * 1e3, 4) for v in self.cypher_samples],
            "kind": "path" if q.path else "search" if q.search else "write" if q.write else "read",
            "kip": q.kip if q.vary is None else q.command(0)[0][:400],
            "cypher": q.cypher,
            "note": q.note,
            **({"error": self.error} if self.error else {}),
        }


class Runner:
    def __init__(self, nexus: Any, database: str | None, log=print, semantic_nexus: Any = None) -> None:
        self.nexus = nexus
        self.semantic_nexus = semantic_nexus  # the same server, with the bench embedder (semantic / hybrid SEARCH)
        self.driver = nexus.driver
        self.database = database
        self.log = log

    def nexus_for(self, q: Query) -> Any:
        return self.semantic_nexus if q.semantic else self.nexus

    # ------------------------------------------------------------------ one side
    def run_kip(self, text: str, params: dict[str, Any], q: Query | None = None) -> dict[str, Any]:
        return (self.nexus_for(q) if q is not None else self.nexus).execute_kip(text, parameters=params or None)

    def run_cypher(self, q: Query, text: str, params: dict[str, Any], post: bool = True) -> list[Any]:
        if q.cypher_run is not None:
            with self.driver.session(database=self.database, default_access_mode=neo4j.WRITE_ACCESS) as session:
                return session.execute_write(lambda tx: q.cypher_run(tx, params))
        routing = neo4j.RoutingControl.WRITE if q.write else neo4j.RoutingControl.READ
        records, _, _ = self.driver.execute_query(text, params, database_=self.database, routing_=routing)
        return q.cypher_post(records) if post and q.cypher_post is not None else records

    def _setup(self, q: Query) -> None:
        if q.setup is not None:
            q.setup(self.driver, self.database)

    # ------------------------------------------------------------------ the protocol
    def verify(self, q: Query) -> int:
        """Run both sides once and compare the answers; returns the row count."""
        kip_text, kip_params, cypher_text, cypher_params = q.command(0)
        self._setup(q)
        kip = q.kip_answer(self.run_kip(kip_text, kip_params, q))
        self._setup(q)
        cypher = q.cypher_answer(self.run_cypher(q, q.verify_cypher or cypher_text, cypher_params, post=False))
        if not q.same(kip, cypher):
            raise AssertionError(
                f"{q.name}: KIP and hand-written Cypher disagree ({len(kip)} vs {len(cypher)} rows)\n"
                f"  KIP   : {sorted(kip, key=repr)[:5]}\n  Cypher: {sorted(cypher, key=repr)[:5]}"
            )
        if q.check is not None:
            q.check(self.driver, self.database)
        return len(kip)

    def measure(self, q: Query, reps: int, warmup: int, budget_s: float = 0.0, max_reps: int = 0, write_reps: int = 0) -> Measurement:
        """``reps`` timed pairs at least (``write_reps`` for a write: enough pairs for its interval
        to decide its target, even in a quick run); then more (up to ``max_reps``) while the
        query's time stays under ``budget_s`` — cheap queries get many samples on a noisy machine."""
        m = Measurement(q)
        if q.write:
            reps = max(reps, write_reps)
        try:
            m.rows = self.verify(q)
        except AssertionError as exc:
            m.error = str(exc)
            self.log(f"  !! {exc}")
            return m
        for i in range(1, warmup + 1):
            self._timed_pair(q, i, kip_first=True, record=None)
        start = time.perf_counter()
        rep = 0
        while rep < reps or (rep < max_reps and time.perf_counter() - start < budget_s):
            self._timed_pair(q, warmup + 1 + rep, kip_first=rep % 2 == 0, record=m)
            rep += 1
        self.profile(q, m)
        self.compile_times(q, m)
        return m

    def _timed_pair(self, q: Query, i: int, kip_first: bool, record: Measurement | None) -> None:
        kip_text, kip_params, cypher_text, cypher_params = q.command(i)

        def kip() -> None:
            self._setup(q)
            start = time.perf_counter()
            response = self.run_kip(kip_text, kip_params, q)
            elapsed = time.perf_counter() - start
            if "error" in response:
                raise AssertionError(f"{q.name}: KIP error during timing: {response['error']}")
            if record is not None:
                record.kip_samples.append(elapsed)

        def cypher() -> None:
            self._setup(q)
            start = time.perf_counter()
            self.run_cypher(q, cypher_text, cypher_params)
            elapsed = time.perf_counter() - start
            if record is not None:
                record.cypher_samples.append(elapsed)

        def alt() -> None:
            start = time.perf_counter()
            self.run_cypher(q, q.alt_cypher, q.alt_params)
            if record is not None:
                record.alt_samples.append(time.perf_counter() - start)

        sides = [kip, cypher] if kip_first else [cypher, kip]
        if q.alt_cypher is not None:
            sides.append(alt)
        for side in sides:
            side()

    # ------------------------------------------------------------------ PROFILE
    def profile(self, q: Query, m: Measurement) -> None:
        kip_text, kip_params, cypher_text, cypher_params = q.command(10_000)
        settings = self.nexus_for(q).settings
        plan = compile_plan(kip_text, kip_params or None, settings)
        access = neo4j.WRITE_ACCESS if q.write else neo4j.READ_ACCESS
        self._setup(q)
        with self.driver.session(database=self.database, default_access_mode=access) as session:
            tx = session.begin_transaction()
            try:
                proxy = _ProfilingTx(tx)
                ctx = new_context(settings, plan, False)
                drive_sync(programs.start(plan, ctx), proxy, ctx)
                m.kip_db_hits, m.kip_statements = proxy.hits, proxy.statements
            finally:
                tx.rollback()
        self._setup(q)
        with self.driver.session(database=self.database, default_access_mode=access) as session:
            tx = session.begin_transaction()
            try:
                proxy = _ProfilingTx(tx)
                if q.cypher_run is not None:
                    q.cypher_run(proxy, cypher_params)
                else:
                    proxy.run(cypher_text, cypher_params)
                m.cypher_db_hits = proxy.hits
            finally:
                tx.rollback()

    # ------------------------------------------------------------------ compile
    def compile_times(self, q: Query, m: Measurement, repeat: int = 7) -> None:
        kip_text, kip_params, _, _ = q.command(20_000)
        m.compile_cold_ms = compile_cold(kip_text, kip_params, self.nexus.settings, repeat) * 1e3
        m.compile_cached_us = compile_cached(kip_text, kip_params, self.nexus.settings, repeat * 20) * 1e6


def compile_cold(text: str, params: dict[str, Any], settings: Any, repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        _compile_cached.cache_clear()
        kparser.clear_cache()
        start = time.perf_counter()
        compile_plan(text, params or None, settings)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def compile_cached(text: str, params: dict[str, Any], settings: Any, repeat: int) -> float:
    compile_plan(text, params or None, settings)
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        compile_plan(text, params or None, settings)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)
