"""A local Neo4j Community server without Docker: resolved by Maven, run by a tiny Java launcher.

``start`` resolves ``org.neo4j:neo4j`` + ``org.neo4j:neo4j-bolt`` (the version
pinned in ``pom.xml``) into the user's Maven cache — the first run downloads,
later runs reuse the cached classpath without touching the network — and runs
``java -cp <classpath> Launcher.java`` in the background with a pid file.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

JVM_FLAGS = [
    # The flags Neo4j's own neo4j.conf passes to the JVM.
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "-Dio.netty.tryReflectionSetAccessible=true",
    "-XX:+UseG1GC",
    "-XX:-OmitStackTraceInFastThrow",
    "-Djdk.tls.ephemeralDHKeySize=2048",
]


class LocalNeo4jError(RuntimeError):
    """A failure to resolve or start the local server, worded for a person at a terminal."""


def _pom_text() -> str:
    return (resources.files("kip2cypher.localneo4j") / "pom.xml").read_text(encoding="utf-8")


def pinned_version() -> str:
    match = re.search(r"<neo4j.version>([^<]+)</neo4j.version>", _pom_text())
    assert match, "pom.xml pins neo4j.version"
    return match.group(1)


def _cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kip2cypher"


@dataclass(frozen=True)
class LocalConfig:
    """Where and how the local server runs; every field has an environment override."""

    port: int
    home: Path
    heap: str
    page_cache_mb: int
    tx_timeout_s: int

    @classmethod
    def from_env(cls, port: int | None = None, home: str | None = None) -> LocalConfig:
        env = os.environ
        return cls(
            port=int(port or env.get("KIP2CYPHER_NEO4J_PORT", "7687")),
            home=Path(home or env.get("KIP2CYPHER_NEO4J_HOME") or _cache_root() / f"neo4j-{pinned_version()}"),
            # 2 cores / 24 GiB machines: a 2 GiB heap and 1 GiB of page cache leave room for tests and benches.
            heap=env.get("KIP2CYPHER_NEO4J_HEAP", "2g"),
            page_cache_mb=int(env.get("KIP2CYPHER_NEO4J_PAGECACHE_MB", "1024")),
            tx_timeout_s=int(env.get("KIP2CYPHER_NEO4J_TX_TIMEOUT_S", "600")),
        )

    @property
    def uri(self) -> str:
        return f"bolt://127.0.0.1:{self.port}"

    @property
    def pid_file(self) -> Path:
        return self.home / "neo4j.pid"

    @property
    def log_file(self) -> Path:
        return self.home / "launcher.log"


#: Bolt port of the demo's own server (`kip2cypher demo` without NEO4J_URI): not 7687, so the
#: demo never writes into whatever server answers on the default port.
DEMO_PORT = 7697


def demo_config() -> LocalConfig:
    """The demo's own server: KIP2CYPHER_DEMO_PORT (7697) and KIP2CYPHER_DEMO_HOME (a data
    directory of its own under ~/.cache/kip2cypher); heap and page cache as for the local server."""
    env = os.environ
    home = env.get("KIP2CYPHER_DEMO_HOME") or str(_cache_root() / f"demo-neo4j-{pinned_version()}")
    return LocalConfig.from_env(port=int(env.get("KIP2CYPHER_DEMO_PORT", DEMO_PORT)), home=home)


def _require(tool: str) -> str:
    path = shutil.which(tool)
    if not path:
        raise LocalNeo4jError(
            f"`{tool}` was not found on PATH. The local Neo4j needs Java 17+ and Maven "
            "(e.g. `apt-get install openjdk-17-jdk-headless maven`), or set NEO4J_URI to an existing Neo4j."
        )
    return path


def resolve_classpath(log=print) -> str:
    """The Neo4j classpath, resolved once with Maven and cached next to the Maven cache."""
    version = pinned_version()
    work = _cache_root() / "launcher"
    work.mkdir(parents=True, exist_ok=True)
    cp_file = work / f"classpath-{version}.txt"
    if cp_file.exists():
        cp = cp_file.read_text().strip()
        if cp and all(Path(p).exists() for p in cp.split(os.pathsep)):
            return cp
    mvn = _require("mvn")
    (work / "pom.xml").write_text(_pom_text(), encoding="utf-8")
    log(f"Resolving Neo4j {version} with Maven (first run downloads it into ~/.m2)…")
    proc = subprocess.run(
        [mvn, "-q", "-B", "-f", str(work / "pom.xml"), "dependency:build-classpath", f"-Dmdep.outputFile={cp_file}"],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0 or not cp_file.exists():
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-15:]
        raise LocalNeo4jError(f"Maven could not resolve org.neo4j:neo4j:{version}:\n" + "\n".join(tail))
    return cp_file.read_text().strip()


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie is not alive
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split()[2] != "Z"
    except OSError:
        return True


def _read_pid(cfg: LocalConfig) -> int | None:
    try:
        pid = int(cfg.pid_file.read_text().strip())
    except (OSError, ValueError):
        return None
    return pid if _pid_alive(pid) else None


def _bolt_listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def server_version(uri: str, timeout: float = 5.0) -> str | None:
    """The server's version string, or None when Bolt does not answer. A throw-away driver of its
    own, not a Nexus: the launcher asks before any nexus exists, whether the port is its server."""
    from neo4j import GraphDatabase
    from neo4j.exceptions import DriverError, Neo4jError

    from ..cypher import catalog

    try:
        with GraphDatabase.driver(uri, auth=None, connection_timeout=timeout) as driver:
            records, _, _ = driver.execute_query(catalog.SERVER_VERSION)
            return f"{records[0]['v']} {records[0]['e']}"
    except (Neo4jError, DriverError, OSError):
        return None


def status(cfg: LocalConfig | None = None) -> tuple[bool, str | None]:
    cfg = cfg or LocalConfig.from_env()
    if not _bolt_listening(cfg.port):
        return False, None
    version = server_version(cfg.uri)
    return version is not None, version


def start(cfg: LocalConfig | None = None, *, wait_s: float = 240.0, log=print, require_own: bool = False) -> str:
    """Start (or find running) the local server; returns its version string once Bolt answers.

    ``require_own``: a server already answering on the port must be the one this data directory
    started (its pid file names a live process); otherwise it is someone else's server and
    LocalNeo4jError says so, instead of handing it over to a caller that will write into it.
    """
    cfg = cfg or LocalConfig.from_env()
    up, version = status(cfg)
    if up and require_own and _read_pid(cfg) is None:
        raise LocalNeo4jError(
            f"Port {cfg.port} is answered by a Neo4j that was not started from {cfg.home}; "
            "refusing to use someone else's server. Choose another port or stop that server."
        )
    if up:
        return version  # a second start is harmless
    java = _require("java")
    classpath = resolve_classpath(log)
    cfg.home.mkdir(parents=True, exist_ok=True)
    launcher = resources.files("kip2cypher.localneo4j") / "Launcher.java"
    cmd = [
        java,
        "-Xms512m",
        f"-Xmx{cfg.heap}",
        *JVM_FLAGS,
        "-cp",
        classpath,
        str(launcher),
        str(cfg.home),
        str(cfg.port),
        str(cfg.page_cache_mb),
        str(cfg.tx_timeout_s),
    ]
    with open(cfg.log_file, "ab") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    cfg.pid_file.write_text(str(proc.pid))
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = cfg.log_file.read_text(errors="replace").splitlines()[-20:]
            raise LocalNeo4jError("Neo4j exited during start-up:\n" + "\n".join(tail))
        if (cfg.home / "launcher.ready").exists():
            version = server_version(cfg.uri)
            if version:
                return version
        time.sleep(0.5)
    raise LocalNeo4jError(f"Neo4j did not answer on {cfg.uri} within {wait_s:.0f}s; see {cfg.log_file}")


def stop(cfg: LocalConfig | None = None, *, wait_s: float = 90.0) -> bool:
    """Shut the server down cleanly (SIGTERM runs Neo4j's shutdown). Returns True if one was running."""
    cfg = cfg or LocalConfig.from_env()
    pid = _read_pid(cfg)
    if pid is None:
        return False
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline and _pid_alive(pid):
        time.sleep(0.3)
    if _pid_alive(pid):
        os.kill(pid, signal.SIGKILL)
    cfg.pid_file.unlink(missing_ok=True)
    return True


def kill(cfg: LocalConfig | None = None) -> bool:
    """SIGKILL the server (fault-injection tests): no clean shutdown, recovery on next start."""
    cfg = cfg or LocalConfig.from_env()
    pid = _read_pid(cfg)
    if pid is None:
        return False
    os.kill(pid, signal.SIGKILL)
    while _pid_alive(pid):
        time.sleep(0.1)
    cfg.pid_file.unlink(missing_ok=True)
    return True


if __name__ == "__main__":  # pragma: no cover - manual use
    print(start())
    sys.exit(0)
