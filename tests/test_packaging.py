"""The wheel: `python -m build` (sdist, then the wheel built from it) carries every package file,
and — opt-in, it takes minutes — installs in a clean venv and runs `kip2cypher demo` (the bundled
launcher from the wheel), `kip2cypher mcp` over stdio and over HTTP, without a checkout.

    KIP2CYPHER_TEST_WHEEL_INSTALL=1 python -m pytest tests/test_packaging.py -s
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (path,) = out.glob("kip2cypher-*.whl")
    return path


def _expected_files() -> set[str]:
    """Every file the package needs at run time, from the source tree (so a new module or
    subpackage that pyproject.toml forgets to list fails here)."""
    expected = {str(p.relative_to(ROOT)) for p in (ROOT / "kip2cypher").rglob("*.py") if "__pycache__" not in p.parts}
    expected |= {f"kip2cypher/grammar/{p.name}" for p in (ROOT / "grammar").iterdir() if p.suffix in (".peg", ".py")}
    # the official capsule sets, each with its licence beside it (kip2cypher.profiles)
    capsules = ROOT / "capsules"
    expected |= {f"kip2cypher/capsules/{p.relative_to(capsules)}" for p in capsules.rglob("*") if p.suffix in (".kip", ".py") or p.name == "LICENSE"}
    expected |= {"kip2cypher/localneo4j/pom.xml", "kip2cypher/localneo4j/Launcher.java"}
    expected |= {f"kip2cypher/data/{p.name}" for p in (ROOT / "kip2cypher" / "data").glob("*.txt")}
    expected |= {"kip2cypher/py.typed"}  # PEP 561: type checkers read the package's annotations
    return expected


def test_the_wheel_holds_every_package_file_and_the_entry_point(wheel):
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        entry_points = archive.read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
        metadata = archive.read(next(n for n in names if n.endswith("METADATA"))).decode()
    missing = sorted(_expected_files() - names)
    assert not missing, f"missing from the wheel: {missing}"
    assert "kip2cypher = kip2cypher.cli:main" in entry_points
    for requirement in ("neo4j", "pydantic-settings", "mcp", "uvicorn", "starlette", "click", "parsimonious", "pyjwt"):
        assert f"Requires-Dist: {requirement}" in metadata


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.wheel_install
@pytest.mark.skipif(os.environ.get("KIP2CYPHER_TEST_WHEEL_INSTALL") != "1", reason="opt-in (minutes): KIP2CYPHER_TEST_WHEEL_INSTALL=1")
def test_the_wheel_installs_in_a_clean_venv_and_runs_without_a_checkout(wheel, neo4j_server, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python, kip = venv / "bin" / "python", venv / "bin" / "kip2cypher"
    install = subprocess.run([str(python), "-m", "pip", "install", "-q", str(wheel)], capture_output=True, text=True, timeout=900)
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    work = tmp_path / "elsewhere"  # no checkout on sys.path
    work.mkdir()
    base_env = {"PATH": f"{venv / 'bin'}:{os.environ.get('PATH', '')}", "HOME": os.environ.get("HOME", str(tmp_path))}

    def run(*args, env=None, timeout=300, stdin=None):
        return subprocess.run([str(kip), *args], cwd=work, env={**base_env, **(env or {})}, capture_output=True, text=True, timeout=timeout, input=stdin)

    where = run("--version")
    assert where.returncode == 0 and "0.1.0" in where.stdout
    located = subprocess.run([str(python), "-c", "import kip2cypher, sys; print(kip2cypher.__file__)"], cwd=work, capture_output=True, text=True, env=base_env)
    assert str(venv) in located.stdout

    # 1. `kip2cypher demo` on its own local server, started by the launcher shipped in the wheel.
    port, home = _free_port(), tmp_path / "demo-neo4j"
    demo_env = {"KIP2CYPHER_DEMO_PORT": str(port), "KIP2CYPHER_DEMO_HOME": str(home), "KIP2CYPHER_NEO4J_HEAP": "512m", "KIP2CYPHER_NEO4J_PAGECACHE_MB": "64"}
    try:
        demo = run("demo", env=demo_env, timeout=600)
        assert demo.returncode == 0, demo.stdout[-3000:] + demo.stderr[-3000:]
        assert f"bolt://127.0.0.1:{port}" in demo.stdout.splitlines()[0] and "Paracetamol" in demo.stdout
    finally:
        run("neo4j", "stop", "--port", str(port), "--data", str(home), timeout=120)

    # 2. `kip2cypher mcp` over stdio, against the test server.
    neo4j_env = {"NEO4J_URI": neo4j_server.uri}
    if neo4j_server.auth:
        neo4j_env["NEO4J_USERNAME"], neo4j_env["NEO4J_PASSWORD"] = neo4j_server.auth
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    async def call_over_stdio():
        params = StdioServerParameters(command=str(kip), args=["mcp"], env={**base_env, **neo4j_env}, cwd=str(work))
        with open(os.devnull, "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    init = await session.initialize()
                    result = await session.call_tool("execute_kip_readonly", {"command": "DESCRIBE CONCEPT TYPES"})
                    return init.server_info.name, json.loads(result.content[0].text)

    name, response = anyio.run(call_over_stdio)
    assert name == "kip2cypher" and "result" in response, response

    # 3. `kip2cypher mcp --transport http` with a token.
    token = "wheel-test-token-0123456789"
    http_port = _free_port()
    server = subprocess.Popen(
        [str(kip), "mcp", "--transport", "http", "--port", str(http_port)],
        cwd=work,
        env={**base_env, **neo4j_env, "KIP2CYPHER_MCP_TOKENS": f"{token}:ro"},
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert "listening on" in server.stderr.readline()
        import httpx2

        url = f"http://127.0.0.1:{http_port}/mcp"
        headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
        initialize = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
        }
        assert httpx2.post(url, timeout=60, json=initialize, headers=headers).status_code == 401
        assert httpx2.post(url, timeout=60, json=initialize, headers={**headers, "Authorization": f"Bearer {token}"}).status_code == 200
    finally:
        server.terminate()
        server.wait(timeout=30)
