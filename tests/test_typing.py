"""The public Python face is typed for ``mypy --strict`` users (issue 27 §4): every ```python
example of the README (and of docs/interfaces.md, docs/limits.md) passes ``mypy --strict`` as a
user's script would, and the types say what the API does — ``connect()`` is a ``Nexus``, an
``AsyncNexus`` method an awaitable of the same response, a misspelt keyword an error. No Neo4j:
mypy only reads the code.

kip2cypher is checked the way an installed package is (``follow_imports = silent``: its own
modules' strictness is not the user's business, its public signatures are)."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
from pathlib import Path

import platformdirs

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = ("README.md", "docs/interfaces.md", "docs/limits.md")
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)

CONFIG = """\
[mypy]
strict = True
cache_dir = {cache}

[mypy-kip2cypher.*]
follow_imports = silent
"""

#: What a strict user may rely on, pinned with ``assert_type`` (mypy fails on any other type).
TYPES = """\
import asyncio
from typing import Any, assert_type

import kip2cypher
from kip2cypher import AsyncNexus, KipResponse, Nexus
from kip2cypher.config import Settings


def sync() -> None:
    nexus = kip2cypher.connect("bolt://localhost:7687", auth=("neo4j", "pw"), settings=Settings(max_hops=3), namespace="alice", connection_timeout=5.0)
    assert_type(nexus, Nexus)
    assert_type(nexus.execute_kip("DESCRIBE PRIMER"), KipResponse)
    assert_type(nexus.execute_kip_readonly(commands=["DESCRIBE PRIMER", {"command": "DESCRIBE DOMAINS"}]), KipResponse)
    assert_type(nexus.server_version(), str)
    assert_type(nexus.in_namespace("bob"), Nexus)
    assert_type(Nexus(namespace="bob").bootstrap(), dict[str, Any])


async def asynchronous() -> None:
    nexus = await kip2cypher.connect_async(namespace="alice")
    assert_type(nexus, AsyncNexus)
    assert_type(await nexus.execute_kip("DESCRIBE PRIMER"), KipResponse)
    assert_type(await nexus.server_version(), str)
    assert_type(await nexus.wait_for_embeddings(1.0), bool)
    async with kip2cypher.connect_async() as scoped:
        assert_type(scoped, AsyncNexus)


asyncio.run(asynchronous())
"""

#: Mistakes a strict user must be told about, each with the words mypy's error must contain.
MISTAKES = {
    "kip2cypher.connect(namespce='alice')": 'Unexpected keyword argument "namespce"',
    "kip2cypher.connect(max_connection_poolsize=5)": 'Unexpected keyword argument "max_connection_poolsize"',
    "kip2cypher.connect(database=1)": 'Argument "database" to "connect" has incompatible type "int"',
    "kip2cypher.connect().execute_kip(dryrun=True)": 'Unexpected keyword argument "dryrun"',
    "kip2cypher.connect().server_version().upper(1)": "Too many arguments",
    "len(kip2cypher.connect().namespaces()[0].namespace) + ''": "Unsupported operand types",
}


def examples() -> list[tuple[str, str]]:
    """(name, code) of every ```python block of the documents above."""
    found = []
    for document in DOCUMENTS:
        path = ROOT / document
        if path.exists():
            for number, match in enumerate(BLOCK.finditer(path.read_text(encoding="utf-8")), 1):
                found.append((f"{path.stem.lower()}_{number}", match.group(1)))
    return found


def cache_dir() -> Path:
    """mypy's cache of this checkout, kept between runs (mypy checks each entry against its source):
    warm, the test takes seconds instead of a minute of reading the package and its dependencies."""
    return Path(platformdirs.user_cache_dir("kip2cypher")) / f"mypy-{hashlib.sha256(str(ROOT).encode()).hexdigest()[:12]}"


def mypy(tmp_path: Path, files: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``mypy --strict`` over ``files`` written in ``tmp_path``, kip2cypher found as the source tree."""
    for name, code in files.items():
        (tmp_path / f"{name}.py").write_text(code, encoding="utf-8")
    (tmp_path / "mypy.ini").write_text(CONFIG.format(cache=cache_dir()), encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(tmp_path / "mypy.ini"), *sorted(f"{name}.py" for name in files)],
        cwd=tmp_path,
        env={"MYPYPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_every_python_example_of_the_readme_passes_mypy_strict_and_the_public_types_hold(tmp_path):
    blocks = examples()
    assert len(blocks) >= 5 and any("connect_async" in code for _, code in blocks)
    files = {**{f"example_{name}": code for name, code in blocks}, "public_types": TYPES}
    files.update({f"mistake_{i}": f"import kip2cypher\n\n{line}\n" for i, line in enumerate(MISTAKES)})
    checked = mypy(tmp_path, files)
    errors = [line for line in checked.stdout.splitlines() if ": error:" in line]
    clean = [line for line in errors if not line.startswith("mistake_")]
    assert clean == [], checked.stdout + checked.stderr
    for i, (line, expected) in enumerate(MISTAKES.items()):
        mine = [error for error in errors if error.startswith(f"mistake_{i}.py:")]
        assert any(expected in error for error in mine), f"{line}: expected {expected!r}, mypy said {mine}"
