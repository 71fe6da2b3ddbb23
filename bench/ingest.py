"""Capsule ingest: 1,000 concepts + 2,000 propositions, KIP vs hand-written UNWIND + MERGE.

Every run starts from a wiped database (then ``Nexus.bootstrap()`` and the schema capsule,
untimed). Three timings, alternated:

- ``kip_s``       the literal capsule through ``Nexus.execute_kip``, cold (parse + compile + run),
                  as an agent sends it;
- ``kip_exec_s``  the same capsule with its plan already compiled (execution only: the
                  generated Cypher and the Python runner);
- ``cypher_s``    ``bench.writer``: two UNWIND + MERGE statements in one write transaction
                  writing the same nodes, properties and relationships;
- ``kip_embed_s`` (with ``embedder``) the cold capsule through a second nexus with the bundled
                  model on, until the write answers; ``embed_drain_s`` is how long its background
                  refresh then needs until every element has its vector (``wait_for_embeddings``).
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import neo4j

from kip2cypher.lower.compile import _compile_cached, compile_plan
from kip2cypher.syntax import parser as kparser

from . import writer
from .capsule import ingest_capsule
from .graph import schema_capsule
from .load import _check, wipe

COUNT_NODES = "MATCH (n) RETURN count(n) AS n"
COUNT_RELS = "MATCH ()-[r]->() RETURN count(r) AS n"


def _fresh(nexus: Any, database: str | None) -> None:
    wipe(nexus.driver, database)
    nexus.bootstrap()
    _check(nexus.execute_kip(schema_capsule()), "schema capsule")


def _counts(nexus: Any, database: str | None) -> tuple[int, int]:
    nodes = nexus.driver.execute_query(COUNT_NODES, database_=database).records[0]["n"]
    rels = nexus.driver.execute_query(COUNT_RELS, database_=database).records[0]["n"]
    return nodes, rels


def run(nexus: Any, database: str | None, reps: int, log=print, embedder: Any = None) -> dict[str, Any]:
    capsule = ingest_capsule()
    embed_s: list[float] = []
    drain_s: list[float] = []
    kip_s: list[float] = []
    exec_s: list[float] = []
    cypher_s: list[float] = []
    parse_s: list[float] = []
    compile_s: list[float] = []
    shapes: dict[str, tuple[int, int]] = {}

    def kip(cold: bool) -> None:
        _fresh(nexus, database)
        if cold:
            _compile_cached.cache_clear()
            kparser.clear_cache()
            t0 = time.perf_counter()
            kparser.parse(capsule.text)
            parse_s.append(time.perf_counter() - t0)
            kparser.clear_cache()
            _compile_cached.cache_clear()
        else:
            t0 = time.perf_counter()
            compile_plan(capsule.text, None, nexus.settings)
            compile_s.append(time.perf_counter() - t0)
        start = time.perf_counter()
        response = nexus.execute_kip(capsule.text)
        elapsed = time.perf_counter() - start
        _check(response, "ingest capsule")
        (kip_s if cold else exec_s).append(elapsed)
        shapes["kip"] = _counts(nexus, database)

    def kip_embedded() -> None:
        _fresh(nexus, database)
        _compile_cached.cache_clear()
        kparser.clear_cache()
        start = time.perf_counter()
        response = embedded.execute_kip(capsule.text)
        embed_s.append(time.perf_counter() - start)
        _check(response, "ingest capsule (embeddings on)")
        assert embedded.wait_for_embeddings(600)
        drain_s.append(time.perf_counter() - start - embed_s[-1])
        shapes["kip_embedded"] = _counts(nexus, database)

    def cypher() -> None:
        _fresh(nexus, database)
        start = time.perf_counter()
        with nexus.driver.session(database=database, default_access_mode=neo4j.WRITE_ACCESS) as session:
            session.execute_write(lambda tx: writer.write(tx, capsule.concept_rows, capsule.link_rows))
        cypher_s.append(time.perf_counter() - start)
        shapes["cypher"] = _counts(nexus, database)

    from kip2cypher import Nexus

    embedded = Nexus(nexus.uri, database=database, settings=nexus.settings.replace(embedder=embedder)) if embedder is not None else None
    # warm-up: one of each (Neo4j plans both sides' statements once, the model is loaded), then forget those samples
    kip(False)
    cypher()
    if embedded is not None:
        kip_embedded()
    for samples in (exec_s, cypher_s, compile_s, embed_s, drain_s):
        samples.clear()
    for rep in range(reps):
        order = [lambda: kip(True), lambda: kip(False), cypher] + ([kip_embedded] if embedded is not None else [])
        for step in order if rep % 2 == 0 else order[::-1]:
            step()
        log(
            f"  ingest rep {rep + 1}/{reps}: kip {kip_s[-1]:.2f}s (exec {exec_s[-1]:.2f}s), cypher {cypher_s[-1]:.2f}s"
            + (f", kip with embeddings {embed_s[-1]:.2f}s (+{drain_s[-1]:.2f}s background)" if embed_s else "")
        )
    if embedded is not None:
        embedded.close()
    if len(set(shapes.values())) != 1:
        raise AssertionError(f"ingest: KIP and the hand-written MERGE wrote different (nodes, relationships): {shapes}")
    kip_med, exec_med, cy_med = statistics.median(kip_s), statistics.median(exec_s), statistics.median(cypher_s)
    embedding = (
        {}
        if not embed_s
        else {
            "embedder": embedder.name,
            "kip_embed_s": round(statistics.median(embed_s), 3),
            "embed_drain_s": round(statistics.median(drain_s), 3),
            "embed_ratio": round(statistics.median(embed_s) / kip_med, 3),
            "embed_total_ratio": round(statistics.median([a + b for a, b in zip(embed_s, drain_s)]) / kip_med, 3),
        }
    )
    return {
        **embedding,
        "concepts": capsule.concepts,
        "propositions": capsule.propositions,
        "capsule_chars": len(capsule.text),
        "kip_s": round(kip_med, 3),
        "kip_exec_s": round(exec_med, 3),
        "cypher_s": round(cy_med, 3),
        "ratio": round(kip_med / cy_med, 3),
        "exec_ratio": round(exec_med / cy_med, 3),
        "parse_s": round(statistics.median(parse_s), 3) if parse_s else None,
        "compile_s": round(statistics.median(compile_s), 3) if compile_s else None,
        "nodes_relationships": list(shapes["kip"]),
        "reps": reps,
    }
