"""The two test tiers (tests/conftest.py): a test is in the Neo4j tier exactly when it uses the
server fixture, directly or through other fixtures. Checked by collecting, which starts no server."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import conftest

ROOT = Path(__file__).resolve().parent.parent


def collected(*args: str) -> list[str]:
    """The test ids ``pytest --collect-only`` selects with ``args`` (run from the checkout's root)."""
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stdout + out.stderr
    return [line for line in out.stdout.splitlines() if "::" in line]


def test_this_test_is_offline(request):
    assert request.node.get_closest_marker("neo4j") is None
    assert conftest.SERVER_FIXTURE not in request.fixturenames


def test_the_marker_follows_the_server_fixture_through_other_fixtures():
    """``test_golden`` diffs text (offline); ``test_golden_explain`` uses the server through the
    module's ``explain_driver``; ``test_localneo4j`` through ``private_cfg`` — all by fixture closure."""
    files = ["tests/test_golden.py", "tests/test_localneo4j.py"]
    offline, server = collected("-m", "not neo4j", *files), collected("-m", "neo4j", *files)
    assert offline and server and not set(offline) & set(server)
    assert all("::test_golden[" in t or "::test_golden_files" in t for t in offline), offline
    assert all("::test_golden_explain[" in t or "test_localneo4j.py::" in t for t in server), server


def test_compat_tier_is_the_server_tests_of_its_files():
    """``-m compat`` (run by .ci/run on Neo4j 2026.x) selects the server tests of the COMPAT_TIER
    files, every one of those files contributes, and nothing offline rides along."""
    files = [f"tests/{name}" for name in sorted(conftest.COMPAT_TIER)]
    compat = collected("-m", "compat", *files)
    assert set(compat) == set(collected("-m", "neo4j", *files))
    assert {t.split("::")[0] for t in compat} == set(files)


def test_ci_runs_the_compat_tier_on_2026_after_the_readme_command():
    ci = (ROOT / ".ci" / "run").read_text()
    readme_command = 'pip install -e ".[test]" && python -m pytest\n'
    assert readme_command in (ROOT / "README.md").read_text()
    compat = next(line for line in ci.splitlines() if "-m compat" in line)
    assert ci.index(readme_command) < ci.index(compat)
    assert "KIP2CYPHER_TEST_NEO4J_VERSION=2026." in compat
