"""Loading the synthetic graph THROUGH kip2cypher (UPSERT capsules, batched).

The bulk load uses *parameterized* capsules: one capsule text per shape (concept type and
attribute keys, or predicate and attribute/metadata keys) and batch size, with every value
a ``:placeholder``. The text of each shape is parsed once (the parser's cache) and every
batch after the first only binds new parameters — how an application streams knowledge
into KIP. ``bench.ingest`` separately measures literal capsules (what an agent writes).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from .graph import DOMAIN_OF, Concept, Link, MemoryGraph, kip_value, schema_capsule

BATCH = 500  # elements per capsule


def _chunks(items: list, top: int) -> Iterator[tuple[list, int]]:
    """Chunks of exactly ``min(top, len(items))`` items — one capsule text (one parse) per shape.
    The last chunk overlaps the one before it: re-upserting an element is a no-op in KIP."""
    size = min(top, len(items))
    for start in range(0, len(items), size):
        if start + size <= len(items):
            yield items[start : start + size], size
        else:
            yield items[-size:], len(items) - start


def concept_template(keys: tuple[str, ...], count: int) -> str:
    blocks = []
    for i in range(count):
        attrs = ", ".join(f"{k}: :a{i}_{j}" for j, k in enumerate(keys))
        blocks.append(
            f'CONCEPT {{ {{type: :t, name: :n{i}}} SET ATTRIBUTES {{ {attrs} }} SET PROPOSITIONS {{ ("belongs_to_domain", {{type: "Domain", name: :d}}) }} }}'
        )
    return "UPSERT {\n" + "\n".join(blocks) + '\n}\nWITH METADATA { source: "bench", confidence: 0.9 }'


def concept_params(chunk: list[Concept], keys: tuple[str, ...]) -> dict[str, Any]:
    params: dict[str, Any] = {"t": chunk[0].type, "d": DOMAIN_OF[chunk[0].type]}
    for i, c in enumerate(chunk):
        params[f"n{i}"] = c.name
        for j, k in enumerate(keys):
            params[f"a{i}_{j}"] = c.attributes[k]
    return params


def _endpoint(tag: str, nested: bool) -> str:
    if nested:
        return f'({{type: :{tag}st, name: :{tag}sn}}, "knows", {{type: :{tag}ot, name: :{tag}on}})'
    return f"{{type: :{tag}t, name: :{tag}n}}"


def link_template(predicate: str, attr_keys: tuple[str, ...], meta_keys: tuple[str, ...], nested: bool, count: int) -> str:
    blocks = []
    for i in range(count):
        body = f"({_endpoint(f's{i}', False)}, {kip_value(predicate)}, {_endpoint(f'o{i}', nested)})"
        attrs = (" SET ATTRIBUTES { " + ", ".join(f"{k}: :a{i}_{j}" for j, k in enumerate(attr_keys)) + " }") if attr_keys else ""
        meta = (" WITH METADATA { " + ", ".join(f"{k}: :m{i}_{j}" for j, k in enumerate(meta_keys)) + " }") if meta_keys else ""
        blocks.append(f"PROPOSITION {{ {body}{attrs} }}{meta}")
    return "UPSERT {\n" + "\n".join(blocks) + '\n}\nWITH METADATA { source: "bench" }'


def link_params(graph: MemoryGraph, chunk: list[Link], attr_keys: tuple[str, ...], meta_keys: tuple[str, ...]) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for i, link in enumerate(chunk):
        params[f"s{i}t"], params[f"s{i}n"] = link.subject
        if link.object[0] == "@":
            fact = graph.links[link.object[1]]
            params[f"o{i}st"], params[f"o{i}sn"] = fact.subject
            params[f"o{i}ot"], params[f"o{i}on"] = fact.object
        else:
            params[f"o{i}t"], params[f"o{i}n"] = link.object
        for j, k in enumerate(attr_keys):
            params[f"a{i}_{j}"] = link.attributes[k]
        for j, k in enumerate(meta_keys):
            params[f"m{i}_{j}"] = link.metadata[k]
    return params


@dataclass
class Batch:
    phase: str
    text: str
    params: dict[str, Any]
    elements: int


def plan_batches(graph: MemoryGraph, top: int = BATCH) -> Iterator[Batch]:
    """Every batch that loads ``graph`` (after bootstrap + schema capsule), in dependency order."""
    groups: dict[tuple, list[Concept]] = {}
    for c in graph.concepts:
        groups.setdefault((c.type, tuple(c.attributes)), []).append(c)
    for (_, keys), items in groups.items():
        for chunk, new in _chunks(items, top):
            yield Batch("concepts", concept_template(keys, len(chunk)), concept_params(chunk, keys), new)
    link_groups: dict[tuple, list[Link]] = {}
    for link in graph.links:
        if link.predicate == "belongs_to_domain":
            continue  # written with the concepts
        key = (link.predicate, tuple(link.attributes), tuple(link.metadata), link.object[0] == "@")
        link_groups.setdefault(key, []).append(link)
    for higher_order in (False, True):  # first-order links first: "stated" points at them
        for (predicate, attr_keys, meta_keys, nested), items in link_groups.items():
            if nested != higher_order:
                continue
            for chunk, new in _chunks(items, top):
                size = len(chunk)
                yield Batch(
                    "higher-order" if nested else "propositions",
                    link_template(predicate, attr_keys, meta_keys, nested, size),
                    link_params(graph, chunk, attr_keys, meta_keys),
                    new,
                )


@dataclass
class LoadStats:
    seconds: dict[str, float] = field(default_factory=dict)
    elements: dict[str, int] = field(default_factory=dict)
    batches: int = 0
    compile_s: float = 0.0

    def add(self, phase: str, seconds: float, elements: int) -> None:
        self.seconds[phase] = self.seconds.get(phase, 0.0) + seconds
        self.elements[phase] = self.elements.get(phase, 0) + elements

    def as_dict(self) -> dict[str, Any]:
        total = sum(self.seconds.values())
        return {
            "total_s": round(total, 2),
            "batches": self.batches,
            "compile_s": round(self.compile_s, 2),
            "compile_share": round(self.compile_s / total, 4) if total else None,
            "phases": {
                p: {"s": round(s, 2), "elements": self.elements[p], "per_s": round(self.elements[p] / s) if s else None} for p, s in self.seconds.items()
            },
        }


def wipe(driver, database=None) -> None:
    """Delete every relationship, then every node (schema objects stay), in bounded inner
    transactions. Not ``DETACH DELETE`` per node: a dense node (a Domain with ≈ 150,000
    ``belongs_to_domain`` links at 300k) takes all its relationships into one inner transaction,
    which exceeded the server's transaction memory pool at any batch size (5,000 and 500 nodes)."""
    with driver.session(database=database) as session:  # CALL … IN TRANSACTIONS needs an auto-commit transaction
        session.run("MATCH ()-[r]->() CALL (r) { DELETE r } IN TRANSACTIONS OF 10000 ROWS").consume()
        session.run("MATCH (n) CALL (n) { DELETE n } IN TRANSACTIONS OF 1000 ROWS").consume()


def load_graph(nexus, graph: MemoryGraph, log=print, top: int = BATCH) -> LoadStats:
    """Bootstrap, apply the schema capsule and load ``graph`` through ``Nexus.execute_kip``."""
    stats = LoadStats()
    start = time.perf_counter()
    nexus.bootstrap()
    _check(nexus.execute_kip(schema_capsule()), "schema capsule")
    stats.add("schema", time.perf_counter() - start, 1)
    last_log = time.perf_counter()
    with _compiles_timed(stats):
        for batch in plan_batches(graph, top):
            t0 = time.perf_counter()
            _check(nexus.execute_kip(batch.text, parameters=batch.params), batch.phase)
            t2 = time.perf_counter()
            stats.add(batch.phase, t2 - t0, batch.elements)
            stats.batches += 1
            if t2 - last_log > 15:
                last_log = t2
                log(f"  … {batch.phase}: {stats.elements[batch.phase]} loaded ({sum(stats.seconds.values()):.0f}s)")
    return stats


@contextmanager
def _compiles_timed(stats: LoadStats) -> Iterator[None]:
    """Add the time of every compile a request makes to ``stats.compile_s``: the request's own
    compile, timed where it happens. (Compiling each batch beforehand to time it compiled it twice:
    a text and parameters over 64 Ki characters are not cached, so the request compiled again.)"""
    from kip2cypher.execution import batch as requests

    compile_plan = requests.compile_plan

    def timed(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return compile_plan(*args, **kwargs)
        finally:
            stats.compile_s += time.perf_counter() - t0

    requests.compile_plan = timed
    try:
        yield
    finally:
        requests.compile_plan = compile_plan


def _check(response: dict[str, Any], what: str) -> None:
    if "error" in response:
        raise RuntimeError(f"{what} failed: {response['error']}")
