"""The benchmark's own Neo4j: ``NEO4J_URI`` when set, else a local server on port 7699.

The local server (kip2cypher.localneo4j, Maven-resolved Neo4j Community) gets its own
home (``~/.cache/kip2cypher/bench-neo4j``), a 3 GiB heap and 2 GiB of page cache, so a
benchmark never shares data or caches with a test run. The benchmark WIPES its database.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

BENCH_PORT = int(os.environ.get("KIP2CYPHER_BENCH_PORT", "7699"))
BENCH_HOME = Path(os.environ.get("KIP2CYPHER_BENCH_HOME", str(Path.home() / ".cache" / "kip2cypher" / "bench-neo4j")))


def local_config():
    from kip2cypher import localneo4j

    base = localneo4j.LocalConfig.from_env(port=BENCH_PORT, home=str(BENCH_HOME))
    return dataclasses.replace(
        base, heap=os.environ.get("KIP2CYPHER_BENCH_HEAP", "3g"), page_cache_mb=int(os.environ.get("KIP2CYPHER_BENCH_PAGECACHE_MB", "2048"))
    )


def ensure_server(log=print) -> tuple[str, str | None]:
    """(bolt uri, database or None); starts the local bench server when NEO4J_URI is not set."""
    uri = os.environ.get("NEO4J_URI")
    if uri:
        return uri, os.environ.get("NEO4J_DATABASE") or None
    from kip2cypher import localneo4j

    cfg = local_config()
    up, _ = localneo4j.status(cfg)
    if not up:
        log(f"Starting the benchmark Neo4j on {cfg.uri} (home {cfg.home}) …")
        localneo4j.start(cfg, log=log)
    return cfg.uri, None


def stop_server() -> bool:
    from kip2cypher import localneo4j

    return localneo4j.stop(local_config())
