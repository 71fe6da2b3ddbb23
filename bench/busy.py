"""A busy machine on demand: the load issue #30 asks the test suite to stay green under.

``python -m bench.busy`` runs, until interrupted (or ``--seconds``):

- ``--cpu N`` processes spinning on pure-Python arithmetic (default 2: as many as the dev
  machine has cores, so every test competes for each core with one of them);
- ``--io`` one process writing and fsyncing 64 MiB files in a temporary directory, so the test
  server's transaction log and page cache compete for the disk;
- ``--neo4j`` a second Neo4j (the benchmark's launcher, on its own port and home: default
  7798 and a temporary directory, a 1 GiB heap) into which the 10k bench graph is loaded through
  KIP again and again — a second database import beside the tests' own server.

It prints the load average once a minute, so a run's report can say how busy the machine was.
It never touches a server it did not start: the second Neo4j has a home of its own, wiped only
there, and is stopped on exit.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import signal
import tempfile
import time
from pathlib import Path


def spin() -> None:
    """Burn one core."""
    x = 0
    while True:
        x = (x * 1103515245 + 12345) % 2147483648


def write_files(folder: str) -> None:
    """Keep the disk busy: write, fsync and delete 64 MiB files."""
    block = os.urandom(1 << 20)
    path = Path(folder) / "busy.bin"
    while True:
        with open(path, "wb") as f:
            for _ in range(64):
                f.write(block)
            f.flush()
            os.fsync(f.fileno())
        path.unlink()


def import_graphs(port: int, home: str) -> None:
    """Load the 10k bench graph through KIP into a Neo4j of our own, over and over."""
    os.environ.update(KIP2CYPHER_BENCH_PORT=str(port), KIP2CYPHER_BENCH_HOME=home, KIP2CYPHER_BENCH_HEAP="1g", KIP2CYPHER_BENCH_PAGECACHE_MB="512")
    os.environ.pop("NEO4J_URI", None)  # never someone else's server
    from kip2cypher import Nexus
    from kip2cypher.config import Settings

    from .graph import MemoryGraph
    from .load import load_graph, wipe
    from .server import ensure_server

    uri, database = ensure_server(print)
    graph = MemoryGraph(10_000)
    with Nexus(uri, database=database, settings=Settings(embedder=False)) as nexus:
        while True:
            wipe(nexus.driver, database)
            stats = load_graph(nexus, graph, log=lambda _m: None)
            print(f"busy: second Neo4j import of 10k in {stats.as_dict()['total_s']:.0f}s", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.busy", description=__doc__.split("\n\n")[0])
    parser.add_argument("--cpu", type=int, default=2, help="spinning processes (default 2)")
    parser.add_argument("--io", action="store_true", help="a disk writer with fsync")
    parser.add_argument("--neo4j", action="store_true", help="a second Neo4j loading the 10k bench graph again and again")
    parser.add_argument("--port", type=int, default=7798, help="the second Neo4j's bolt port (default 7798)")
    parser.add_argument("--seconds", type=float, default=0, help="stop after this long (default: until interrupted)")
    args = parser.parse_args(argv)
    scratch = tempfile.mkdtemp(prefix="kip2cypher-busy-")
    workers = [multiprocessing.Process(target=spin, daemon=True) for _ in range(args.cpu)]
    if args.io:
        workers.append(multiprocessing.Process(target=write_files, args=(scratch,), daemon=True))
    if args.neo4j:
        workers.append(multiprocessing.Process(target=import_graphs, args=(args.port, str(Path(scratch) / "neo4j")), daemon=True))
    for w in workers:
        w.start()
    stop = time.monotonic() + args.seconds if args.seconds else float("inf")
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt))
    try:
        while time.monotonic() < stop:
            print(f"busy: load average {os.getloadavg()[0]:.1f}", flush=True)
            time.sleep(min(60, max(0.1, stop - time.monotonic())))
    except KeyboardInterrupt:
        pass
    finally:
        for w in workers:
            w.terminate()
        if args.neo4j:
            _stop_neo4j(args.port, str(Path(scratch) / "neo4j"))


def _stop_neo4j(port: int, home: str) -> None:
    os.environ.update(KIP2CYPHER_BENCH_PORT=str(port), KIP2CYPHER_BENCH_HOME=home)
    from kip2cypher import localneo4j

    from .server import local_config

    localneo4j.stop(local_config())


if __name__ == "__main__":
    main()
