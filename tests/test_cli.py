"""The `kip2cypher` CLI through click's CliRunner against the real Neo4j (the shell on a terminal: test_shell_terminal.py)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from click.testing import CliRunner
from interface_helpers import fingerprint, shape_checked
from kml_helpers import ok

from kip2cypher.cli import main
from kip2cypher.cli.demo import DEMO_DATA, DEMO_SCHEMA


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
    request.write_text(
        json.dumps(
            {
                "function": {
                    "name": "execute_kip_readonly",
                    "arguments": {"commands": ["DESCRIBE CONCEPT TYPES", 'UPSERT { CONCEPT ?x { {type: "Drug", name: "X"} } }']},
                }
            }
        )
    )
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
SCRIPT = (
    DEMO_SCHEMA
    + DEMO_DATA
    + """
// reads
FIND(?d.name) WHERE { ?d {type: "Drug"} } ORDER BY ?d.name
FIND(?d.name) WHERE { ?d {type: "drug"} }
DESCRIBE CONCEPT TYPE "Drug"
"""
)


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
            ':params {"n": "Aspirin"}',
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


@pytest.mark.parametrize("args", [["bootstrap"], ["demo"], ["compile", "-", "--explain"], ["export", '?n {type: "Drug"}'], ["call"], ["shell"]])
def test_unreachable_neo4j_never_shows_a_traceback(args):
    runner = CliRunner()
    stdin = {"call": '{"command": "DESCRIBE PRIMER"}', "shell": 'FIND(?d) WHERE { ?d {type: "Drug"} };\n'}.get(args[0], 'FIND(?d) WHERE { ?d {type: "Drug"} }')
    out = runner.invoke(main, [*args, "--uri", "bolt://127.0.0.1:9"], input=stdin, env={"KIP2CYPHER_MAX_RETRY_S": "0.5"})
    assert "Traceback" not in out.output and (out.exception is None or isinstance(out.exception, SystemExit))
    assert "KIP_4003" in out.output and "unavailable" in out.output


# ---------------------------------------------------------------- issue 15: output, summaries, formats
def _links_capsule(drugs: int, symptoms: int) -> str:
    """One capsule of ``drugs`` UPSERT blocks, each drug treating every symptom through SET PROPOSITIONS."""
    head = "UPSERT {\n" + "\n".join(f'  CONCEPT ?s{j} {{ {{type: "Symptom", name: "S{j}"}} }}' for j in range(symptoms)) + "\n}\n"
    links = " ".join(f'("treats", {{type: "Symptom", name: "S{j}"}})' for j in range(symptoms))
    return head + "".join(f'UPSERT {{ CONCEPT ?d {{ {{type: "Drug", name: "D{i}"}} SET PROPOSITIONS {{ {links} }} }} }}\n' for i in range(drugs))


def test_run_summary_counts_set_propositions_links(cli, medical, tmp_path):
    """Regression: the summary said "20 propositions" for a capsule that wrote 744 links (it counted top-level block ids)."""
    path = tmp_path / "links.kip"
    path.write_text(_links_capsule(drugs=12, symptoms=6))
    out = cli("run", str(path))
    assert out.exit_code == 0, out.output
    assert "upserted 18 concepts and 72 propositions (72 via SET PROPOSITIONS) in 13 UPSERT blocks" in out.output
    written = medical.driver.execute_query(
        "MATCH (:KipConcept {type: 'Drug'})-[r:`kip:treats`]->(s:KipConcept {type: 'Symptom'}) WHERE s.name STARTS WITH 'S' RETURN count(r) AS n"
    ).records[0]["n"]
    assert written == 72
    out = cli("run", str(path), "--dry-run")
    assert "validated (dry run, nothing written) 18 concepts and 72 propositions" in out.output


def test_run_output_is_plain_when_not_a_terminal_and_table_on_request(cli, medical, tmp_path):
    path = tmp_path / "s.kip"
    path.write_text(_links_capsule(drugs=2, symptoms=2) + 'FIND(?d.name) WHERE { ?d {type: "Drugg"} }\n')
    out = cli("run", str(path))
    assert "\x1b" not in out.output and "━" not in out.output  # no live bar, no colour codes in a pipe
    assert "[1] line 1: UPSERT {" in out.output and "[2] line" in out.output and "KIP_2001" in out.output
    out = cli("run", str(path), "--format", "table")
    assert out.exit_code == 1
    assert re.search(r"\| # +\| line +\| command +\| outcome", out.stdout)
    assert "ok: upserted 4 concepts and 4 propositions (4 via SET PROPOSITIONS) in 3 UPSERT blocks" in out.stdout
    assert "KIP_2001" in out.stdout and "[1] line" not in out.stdout
    assert "2/2 commands run: 1 ok, 1 failed" in out.stdout


def test_call_takes_a_kip_command_as_an_argument_and_prints_tables(cli, medical):
    out = cli("call", FIND_DRUGS)
    assert out.exit_code == 0 and json.loads(out.stdout) == {"result": [["Aspirin", "Paracetamol"], [2, 1]]}
    out = cli("call", 'FIND(?d.attributes.risk_level) WHERE { ?d {type: "Drug", name: :n} }', "--params", '{"n": "Aspirin"}')
    assert json.loads(out.stdout) == {"result": [2]}
    out = cli("call", FIND_DRUGS, "--format", "table")
    assert re.search(r"\| \?d\.name +\| \?d\.attributes\.risk_level +\|", out.stdout) and "(2 rows)" in out.stdout
    out = cli("call", json.dumps({"commands": ["DESCRIBE PROPOSITION TYPES", "FIND(?x WHERE"]}), "--format", "table")
    assert "[0] DESCRIBE PROPOSITION TYPES" in out.stdout and "treats" in out.stdout and "error KIP_1001" in out.stdout
    out = cli("call", 'UPSERT { CONCEPT ?x { {type: "Drug", name: "Ibuprofen"} } }', "--readonly")
    assert out.exit_code == 1 and json.loads(out.stdout)["error"]["code"] == "KIP_3004"


def test_readonly_environment_variable_refuses_writes_in_call_run_and_shell(cli, medical, tmp_path):
    """KIP2CYPHER_READONLY=1 is the env form of --readonly for every command that has the flag."""
    upsert = 'UPSERT { CONCEPT ?x { {type: "Drug", name: "EnvReadonly"} } }'
    readonly = {"KIP2CYPHER_READONLY": "1"}
    out = cli("call", upsert, env=readonly)
    assert out.exit_code == 1 and json.loads(out.stdout)["error"]["code"] == "KIP_3004"
    script = tmp_path / "write.kip"
    script.write_text(upsert + "\n")
    out = cli("run", str(script), env=readonly)
    assert out.exit_code == 1 and json.loads(out.stdout)["error"]["code"] == "KIP_3004"
    out = cli("shell", input=upsert + ";\n", env=readonly)
    assert "KIP_3004" in out.output
    assert ok(medical.execute_kip('FIND(COUNT(?d)) WHERE { ?d {type: "Drug", name: "EnvReadonly"} }')) == 0


def test_bootstrap_prints_counts_and_ids_only_with_verbose(cli, nexus):
    out = cli("bootstrap")
    assert out.exit_code == 0, out.output
    assert re.search(r"applied Genesis: upserted \d+ concepts and \d+ propositions .*in 2 UPSERT blocks", out.stdout)
    assert "C:" not in out.stdout  # no wall of element ids
    out = cli("bootstrap", "-v")
    assert "Genesis ids:" in out.stdout and "C:" in out.stdout
    out = cli("bootstrap", "--format", "json")
    assert json.loads(out.stdout)["Genesis"]["blocks"] == 2
    out = cli("bootstrap", "--format", "table")
    assert re.search(r"\| Genesis +\| 2 +\|", out.stdout)


def test_explain_keeps_multiline_operator_details_indented(cli, genesis):
    """Regression: Neo4j's multi-line details (CASE … END) started at column 0, outside the operator tree."""
    out = cli("compile", "--explain", 'UPSERT { CONCEPT ?x { {type: "Person", name: "X"} } }')
    assert out.exit_code == 0, out.output
    plan_lines = [line[len("//   ") :] for line in out.stdout.splitlines() if line.startswith("//   ")]
    continuation = 0
    operator_indent = 0
    for line in plan_lines:
        indent = len(line) - len(line.lstrip())
        if line.lstrip().startswith("+"):
            operator_indent = indent
        else:
            continuation += 1
            assert indent > operator_indent, line
    assert continuation, "the plan had no multi-line details to check"
