"""The `kip2cypher` CLI (click's CliRunner, and a pty for the interactive shell) against the real Neo4j."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from click.testing import CliRunner

from kip2cypher.cli import main
from kip2cypher.demo import DEMO_DATA, DEMO_SCHEMA

from interface_helpers import shape_checked, fingerprint


@pytest.fixture(autouse=True)
def _responses_have_the_spec_shape(monkeypatch):
    shape_checked(monkeypatch)

FIND_DRUGS = 'FIND(?d.name, ?d.attributes.risk_level) WHERE { ?d {type: "Drug"} } ORDER BY ?d.name'


def _env(server):
    env = {"NEO4J_URI": server.uri, "NEO4J_USERNAME": None, "NEO4J_PASSWORD": None, "NEO4J_DATABASE": server.database}
    if server.auth:
        env["NEO4J_USERNAME"], env["NEO4J_PASSWORD"] = server.auth
    return env


@pytest.fixture()
def cli(neo4j_server):
    runner = CliRunner()

    def invoke(*args, input=None, env=None):
        return runner.invoke(main, list(args), input=input, env={**_env(neo4j_server), **(env or {})}, catch_exceptions=False)

    return invoke


@pytest.fixture()
def medical(genesis):
    for capsule in (DEMO_SCHEMA, DEMO_DATA):
        assert "result" in genesis.execute_kip(capsule)
    return genesis


# ---------------------------------------------------------------- parse / compile (offline)
def test_parse_prints_the_ast_and_errors_as_kip_json(cli, tmp_path):
    out = cli("parse", "-", input='FIND(?d.name) WHERE { ?d {type: "Drug"} }')
    assert out.exit_code == 0 and json.loads(out.stdout)["node"] == "Find"
    script = tmp_path / "s.kip"
    script.write_text('DESCRIBE PRIMER\nFIND(?x) WHERE { ?x {type: "A"} }\n')
    out = cli("parse", str(script))
    assert [t["node"] for t in json.loads(out.stdout)] == ["DescribePrimer", "Find"]
    out = cli("parse", "-", input="FIND(?d.name WHERE {")
    assert out.exit_code == 1
    error = json.loads(out.stdout)["error"]
    assert error["code"] == "KIP_1001" and error["line"] == 1


def test_compile_text_json_params_and_scripts(cli, tmp_path):
    out = cli("compile", "-", "--params", '{"s": "Headache"}', input='FIND(?d.name) WHERE { (?d, "treats", {name: :s}) }')
    assert out.exit_code == 0, out.output
    assert "MATCH" in out.output and '"Headache"' in out.output and "// parameters:" in out.output
    out = cli("compile", "-", "--format", "json", input='FIND(?d.name) WHERE { ?d {type: "Drug"} }')
    statements = json.loads(out.stdout)
    assert statements[0]["cypher"].startswith("MATCH") and "parameters" in statements[0]
    script = tmp_path / "s.kip"
    script.write_text('FIND(?d) WHERE { ?d {type: "Drug"} }\nDESCRIBE CONCEPT TYPES\n')
    out = cli("compile", str(script))
    assert out.output.count("// ===== command") == 2
    out = cli("compile", "-", "--params", "[1]", input="DESCRIBE PRIMER")
    assert out.exit_code == 2 and "JSON object" in out.output
    out = cli("compile", "-", input="FIND(")
    assert out.exit_code == 1 and json.loads(out.stdout)["error"]["code"] == "KIP_1001"


def test_compile_explain_prints_neo4j_plans(cli, genesis):
    out = cli("compile", "-", "--explain", input='FIND(?d.name) WHERE { ?d {type: "Drug"} }')
    assert out.exit_code == 0, out.output
    assert "// plan:" in out.output and "+ProduceResults" in out.output
    out = cli("compile", "-", "--explain", "--format", "json", input="DESCRIBE CONCEPT TYPES")
    assert all("plan" in s for s in json.loads(out.stdout))


# ---------------------------------------------------------------- call
def test_call_arguments_envelope_and_exit_status(cli, medical, tmp_path):
    out = cli("call", input=json.dumps({"command": FIND_DRUGS}))
    assert out.exit_code == 0 and json.loads(out.stdout) == {"result": [["Aspirin", "Paracetamol"], [2, 1]]}
    request = tmp_path / "req.json"
    request.write_text(json.dumps({"function": {"name": "execute_kip_readonly", "arguments": {"commands": ["DESCRIBE CONCEPT TYPES", 'UPSERT { CONCEPT ?x { {type: "Drug", name: "X"} } }']}}}))
    out = cli("call", "--request", str(request))
    assert out.exit_code == 1 and json.loads(out.stdout)["error"]["code"] == "KIP_3004"
    out = cli("call", input=json.dumps({"function": {"name": "execute_kip", "arguments": json.dumps({"command": "DESCRIBE CONCEPT TYPES"})}}))
    assert out.exit_code == 0 and "Drug" in json.loads(out.stdout)["result"]
    out = cli("call", input=json.dumps({"function": {"name": "rm_rf", "arguments": {}}}))
    assert out.exit_code == 1 and json.loads(out.stdout)["error"]["code"] == "KIP_1001"
    out = cli("call", input='{"commands": ["FIND(", "DESCRIBE CONCEPT TYPES"]}')
    body = json.loads(out.stdout)
    assert out.exit_code == 0 and body["result"][0]["error"]["code"] == "KIP_1001" and "result" in body["result"][1]


def test_call_verbose_logs_cypher_to_stderr(neo4j_server, medical):
    proc = subprocess.run(
        [sys.executable, "-m", "kip2cypher.cli", "call", "-v"],
        input=json.dumps({"command": FIND_DRUGS}),
        capture_output=True,
        text=True,
        env={**os.environ, **{k: v for k, v in _env(neo4j_server).items() if v}},
        timeout=120,
    )
    assert proc.returncode == 0
    assert "kip2cypher.cypher: MATCH" in proc.stderr and "-- params" in proc.stderr
    assert json.loads(proc.stdout)["result"][0] == ["Aspirin", "Paracetamol"]


def test_connection_options_override_the_environment(cli, medical, neo4j_server):
    out = cli("call", "--uri", neo4j_server.uri, input=json.dumps({"command": FIND_DRUGS}), env={"NEO4J_URI": "bolt://127.0.0.1:9"})
    assert out.exit_code == 0
    out = cli("call", input=json.dumps({"command": FIND_DRUGS}), env={"NEO4J_URI": "bolt://127.0.0.1:9", "KIP2CYPHER_MAX_RETRY_S": "0.5"})
    assert out.exit_code == 1 and json.loads(out.stdout)["error"]["code"] == "KIP_4003"


# ---------------------------------------------------------------- run
SCRIPT = DEMO_SCHEMA + DEMO_DATA + """
// reads
FIND(?d.name) WHERE { ?d {type: "Drug"} } ORDER BY ?d.name
FIND(?d.name) WHERE { ?d {type: "drug"} }
DESCRIBE CONCEPT TYPE "Drug"
"""


def test_run_executes_a_script_in_order_and_summarises(cli, genesis, tmp_path):
    path = tmp_path / "medical.kip"
    path.write_text(SCRIPT)
    out = cli("run", str(path))
    assert out.exit_code == 1, out.output  # one FIND failed
    assert "5/5 commands run" not in out.output  # schema + data form one capsule: 4 commands
    assert "4/4 commands run: 3 ok, 1 failed" in out.output
    assert "KIP_2001" in out.output and "upserted" in out.output
    out = cli("run", str(path), "--format", "json")
    body = json.loads(out.stdout)
    assert [("error" in r) for r in body["result"]] == [False, False, True, False]


def test_run_stops_at_a_kml_error_and_dry_run_and_readonly_write_nothing(cli, genesis, tmp_path):
    path = tmp_path / "bad.kip"
    path.write_text(DEMO_SCHEMA + '\nDESCRIBE PRIMER\nUPSERT { CONCEPT ?x { {type: "Drugg", name: "A"} } }\nFIND(?d.name) WHERE { ?d {type: "Drug"} }\n')
    before = fingerprint(genesis.driver)
    out = cli("run", str(path), "--dry-run")
    assert "stopped at command 3" in out.output and "(dry run)" in out.output
    assert fingerprint(genesis.driver) == before
    out = cli("run", str(path), "--readonly")
    assert out.exit_code == 1 and json.loads(out.stdout)["error"]["code"] == "KIP_3004"
    assert fingerprint(genesis.driver) == before
    out = cli("run", str(path))
    assert "3/4 commands run" in out.output and "stopped at command 3 (line" in out.output and "1 not run" in out.output
    path.write_text("DESCRIBE PRIMER\nFIND(?x WHERE {\n")
    out = cli("run", str(path))
    assert out.exit_code == 1 and json.loads(out.stdout)["error"]["line"] == 2


# ---------------------------------------------------------------- export → run round trip
def test_export_pages_to_a_capsule_file_that_run_restores(cli, medical, tmp_path, neo4j_server):
    out = cli("export", '?n {type: "Drug"}', "--limit", "1")
    assert out.exit_code == 0, out.output
    capsule = out.stdout
    assert capsule.count("// kip2cypher export, page") == 2
    assert "exported 2 concepts" in out.stderr
    path = tmp_path / "drugs.kip"
    path.write_text(capsule)
    medical.driver.execute_query("MATCH (d:KipConcept {type: 'Drug'}) DETACH DELETE d")
    out = cli("run", str(path))
    assert out.exit_code == 0, out.output
    out = cli("call", input=json.dumps({"command": FIND_DRUGS}))
    assert json.loads(out.stdout)["result"] == [["Aspirin", "Paracetamol"], [2, 1]]
    out = cli("export", "?n {type: }")
    assert out.exit_code == 1 and "KIP_1001" in out.stderr and out.stdout == ""


# ---------------------------------------------------------------- shell
def test_shell_over_stdin_tables_cypher_switch_and_colon_commands(cli, medical):
    session = "\n".join(
        [
            ":help",
            FIND_DRUGS + ";",
            ":cypher on",
            "FIND(COUNT(?d))",
            'WHERE { ?d {type: "Drug"} }',
            "",
            ":cypher off",
            ":params {\"n\": \"Aspirin\"}",
            'FIND(?d) WHERE { ?d {type: "Drug", name: :n} };',
            'UPSERT { CONCEPT ?x { {type: "Drug", name: "Ibuprofen"} } };',
            ":readonly on",
            'UPSERT { CONCEPT ?x { {type: "Drug", name: "Naproxen"} } };',
            "FIND(?d.name WHERE;",
            ":json on",
            "DESCRIBE CONCEPT TYPES;",
            ":bogus",
            ":quit",
            "DESCRIBE PRIMER;",
        ]
    )
    out = cli("shell", input=session + "\n")
    text = out.output
    assert out.exit_code == 0, text
    assert ":cypher on|off" in text  # help
    assert re.search(r"\?d\.name +\| \?d\.attributes\.risk_level", text) and "Aspirin" in text and "(2 rows)" in text
    assert "-- Cypher" in text and "count(" in text.lower()
    assert text.count("-- Cypher: FIND") == 1  # only while :cypher on
    assert "Drug:Aspirin" in text
    assert "upsert_concept_nodes" in text
    assert "error KIP_3004" in text and "error KIP_1001" in text and "line 1, column 14" in text
    assert '"Drug"' in text  # raw JSON after :json on
    assert "unknown shell command :bogus" in text
    assert "identity" not in text  # nothing runs after :quit
    names = {r["n"] for r in medical.driver.execute_query("MATCH (d:KipConcept {type: 'Drug'}) RETURN d.name AS n").records}
    assert "Ibuprofen" in names and "Naproxen" not in names


def test_shell_interactive_on_a_pty_with_prompts_and_history(neo4j_server, medical, tmp_path):
    import pty
    import select
    import time

    history = tmp_path / "history"
    env = {**os.environ, **{k: v for k, v in _env(neo4j_server).items() if v}, "KIP2CYPHER_HISTORY": str(history), "TERM": "dumb"}
    pid, fd = pty.fork()
    if pid == 0:  # child: the shell on a terminal
        os.execvpe(sys.executable, [sys.executable, "-m", "kip2cypher.cli", "shell"], env)
    output = b""

    def read_until(marker: bytes, timeout: float = 60) -> bytes:
        nonlocal output
        deadline = time.monotonic() + timeout
        while marker not in output and time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.5)
            if ready:
                try:
                    output += os.read(fd, 65536)
                except OSError:
                    break
        return output

    try:
        assert b"kip> " in read_until(b"kip> ")
        os.write(fd, b"FIND(?d.name)\r")
        assert b"...> " in read_until(b"...> ")
        os.write(fd, b'WHERE { ?d {type: "Drug"} } ORDER BY ?d.name\r\r')
        assert b"(2 rows)" in read_until(b"(2 rows)")
        os.write(fd, b":quit\r")
        read_until(b"\x00", timeout=10)
    finally:
        os.close(fd)
        os.waitpid(pid, 0)
    text = output.decode("utf-8", "replace")
    assert "Paracetamol" in text
    assert "FIND(?d.name)" in history.read_text()


# ---------------------------------------------------------------- demo
def test_demo_runs_against_the_configured_neo4j(cli, nexus):
    out = cli("demo")
    assert out.exit_code == 0, out.output
    text = out.output
    assert "Bootstrapped Genesis: upserted" in text
    assert "-- Cypher (FIND)" in text and "Paracetamol | 1" in text
    queries, batch = text.split("== A batch", 1)
    assert '"error"' not in queries, queries
    assert '-- [0] {"error": {"code": "KIP_1001"' in batch and '-- [2] {"result": [2]}' in batch
    assert '-- [3] {"error": {"code": "KIP_2001"' in batch and "-- [4]" not in batch
    assert '"KIP_3004"' in batch and '"upsert_concept_nodes": []' in batch
    assert "Traceback" not in text


def test_run_handles_a_script_larger_than_the_parser_bound(cli, genesis, tmp_path):
    from kip2cypher.syntax.parser import MAX_INPUT_BYTES

    padding = "x" * 200
    lines = [DEMO_SCHEMA] + [f'UPSERT {{ CONCEPT ?c {{ {{type: "Symptom", name: "s{i} {padding}"}} }} }}' for i in range(1300)]
    lines.append('FIND(COUNT(?s)) WHERE { ?s {type: "Symptom"} }')
    text = "\n".join(lines) + "\n"
    assert len(text.encode()) > MAX_INPUT_BYTES
    path = tmp_path / "big.kip"
    path.write_text(text)
    out = cli("run", str(path), "--format", "json")
    assert out.exit_code == 0, out.output[-2000:]
    results = json.loads(out.stdout)["result"]
    assert results[-1] == {"result": 1300}
    assert len(results) >= 3  # cut into pieces at command boundaries
    path.write_text(text + "FIND(?x WHERE\n")
    out = cli("run", str(path))
    assert out.exit_code == 1 and json.loads(out.stdout)["error"]["line"] == text.count("\n") + 1


@pytest.mark.parametrize("args", [["bootstrap"], ["demo"], ["compile", "-", "--explain"], ["export", "?n {type: \"Drug\"}"], ["call"], ["shell"]])
def test_unreachable_neo4j_never_shows_a_traceback(args):
    runner = CliRunner()
    stdin = {"call": '{"command": "DESCRIBE PRIMER"}', "shell": 'FIND(?d) WHERE { ?d {type: "Drug"} };\n'}.get(args[0], 'FIND(?d) WHERE { ?d {type: "Drug"} }')
    out = runner.invoke(main, [*args, "--uri", "bolt://127.0.0.1:9"], input=stdin, env={"KIP2CYPHER_MAX_RETRY_S": "0.5"})
    assert "Traceback" not in out.output and out.exception is None or isinstance(out.exception, SystemExit)
    assert "KIP_4003" in out.output and "unavailable" in out.output
