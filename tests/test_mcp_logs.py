"""The service's logs (docs/interfaces.md, "Logs"): one access line per MCP tool call — in JSON one
key per field —, the level setting, nothing secret anywhere in a session's log, and one WARNING when
Neo4j becomes unreachable and one INFO when it is back. The offline tests check the pieces (the
JSON formatter, the access fields, the outage classification, the state change); the others serve
`kip2cypher mcp` as a real process against the test Neo4j."""

from __future__ import annotations

import json
import logging
import re
import socket
import sys
import threading
from types import SimpleNamespace

import anyio
import pytest
from click.testing import CliRunner
from mcp_http_helpers import RO, RW, RW2, http_server, in_session, payload
from neo4j.exceptions import AuthError, ServiceUnavailable

from kip2cypher import connection, logs
from kip2cypher.cli import main
from kip2cypher.config import SettingsError
from kip2cypher.errors import INVALID_SYNTAX, KipError
from kip2cypher.execution.calls import Call, Line
from kip2cypher.execution.neo4j_errors import from_neo4j, unavailable

REQUEST_ID = re.compile(r"^[0-9a-f]{16}$")
ACCESS_FIELDS = ["time", "level", "logger", "request_id", "namespace", "client", "tool", "kinds", "statements", "rows", "duration_ms", "outcome"]
#: Words of the commands below that must never reach the log (the command text is not logged).
NEEDLE = "needle-in-the-command-7f3a"


def json_lines(log: list[str]) -> list[dict]:
    """Every log line (the "listening on" announcement aside: it is printed, not logged) as JSON."""
    return [json.loads(line) for line in log if "listening on" not in line]


def access(lines: list[dict]) -> list[dict]:
    return [line for line in lines if line["logger"] == "kip2cypher.access"]


# ---------------------------------------------------------------- offline: the pieces
def test_an_outage_is_told_apart_from_the_other_internal_errors():
    down = ServiceUnavailable("Couldn't connect to 127.0.0.1:1")
    assert unavailable(from_neo4j(down)) and unavailable(connection.unreachable("bolt://u:pw@127.0.0.1:1", down))
    assert not unavailable(from_neo4j(AuthError("wrong password")))
    assert not unavailable(connection.unreachable("bolt://127.0.0.1:1", AuthError("wrong password")))
    assert not unavailable(KipError(INVALID_SYNTAX, "Neo4j is unavailable"))


def test_neo4j_down_and_up_are_logged_once_each_on_change(caplog):
    caplog.set_level(logging.INFO, logger="kip2cypher.neo4j")
    state = connection.Availability()
    for answered in (True, False, False, None, False, True, None, True, False):
        state.seen(answered, "bolt://user:pw-secret@db:7687", "Neo4j is unavailable: refused")
    lines = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert lines == [
        ("WARNING", "Neo4j at bolt://db:7687 is unreachable: Neo4j is unavailable: refused"),
        ("INFO", "Neo4j at bolt://db:7687 answers again"),
        ("WARNING", "Neo4j at bolt://db:7687 is unreachable: Neo4j is unavailable: refused"),
    ]


def test_access_fields_count_a_batch_per_command():
    call = Call("token #2", "execute_kip", "alice", batch=True)
    call.record("KQL", {"result": [1, 2, 3]})
    call.record("KML", {"result": {"upsert_concept_nodes": ["x"]}})
    call.record("KQL", KipError("KIP_2001", "no such type"))
    response = {"result": [{"result": [1, 2, 3]}, {"result": {"upsert_concept_nodes": ["x"]}}, {"error": {"code": "KIP_2001"}}, {"result": []}]}
    fields = call.fields(response)
    assert REQUEST_ID.match(fields.pop("request_id")) and fields.pop("duration_ms") >= 0
    assert fields == {"namespace": "alice", "client": "token #2", "tool": "execute_kip", "kinds": "KQL,KML", "statements": 3, "rows": 4, "outcome": "KIP_2001"}
    assert call.answered is True  # KIP_2001: Neo4j answered
    single = Call("kip2cypher", "execute_kip_readonly")
    single.record("KQL", {"result": [[{"a": 1}, {"b": 2}]]})
    assert (single.fields({"result": [[{"a": 1}, {"b": 2}]]})["rows"], single.fields({"error": {"code": "KIP_4003"}})["outcome"]) == (1, "KIP_4003")


def test_the_json_formatter_writes_fields_as_keys_and_the_text_line_as_key_value():
    call = Call("token #1", "execute_kip_readonly")
    fields = call.fields({"result": []})
    record = logging.LogRecord("kip2cypher.access", logging.INFO, __file__, 1, "%s", (Line(fields),), None)
    record.kip = fields
    line = json.loads(logs.JsonFormatter().format(record))
    assert list(line) == ACCESS_FIELDS and line["client"] == "token #1" and line["level"] == "INFO"
    assert record.getMessage().startswith(f'request_id={fields["request_id"]} namespace="" client="token #1" tool=execute_kip_readonly kinds=""')
    plain = logging.LogRecord("kip2cypher.neo4j", logging.WARNING, __file__, 1, "Neo4j at %s is unreachable", ("bolt://db:7687",), None)
    assert json.loads(logs.JsonFormatter().format(plain))["message"] == "Neo4j at bolt://db:7687 is unreachable"
    try:
        raise ValueError("boom")
    except ValueError:
        failed = logging.LogRecord("kip2cypher.mcp", logging.ERROR, __file__, 1, "tool call failed", (), sys.exc_info())
    assert "ValueError: boom" in json.loads(logs.JsonFormatter().format(failed))["exception"]


def test_a_bad_log_setting_is_refused_naming_the_variable(monkeypatch):
    monkeypatch.setenv("KIP2CYPHER_LOG_LEVEL", "LOUD")
    with pytest.raises(SettingsError, match="KIP2CYPHER_LOG_LEVEL='LOUD' must be one of DEBUG, INFO"):
        logs.configure()
    monkeypatch.setenv("KIP2CYPHER_LOG_LEVEL", "info")
    monkeypatch.setenv("KIP2CYPHER_LOG_FORMAT", "yaml")
    with pytest.raises(SettingsError, match="KIP2CYPHER_LOG_FORMAT='yaml' must be one of text, json"):
        logs.configure()


# ---------------------------------------------------------------- the MCP server on Neo4j
def credential_uri(server) -> tuple[SimpleNamespace, str]:
    """The test server behind a URI carrying user and password (its own, or made-up ones a server
    without authentication ignores), and that password."""
    user, password = server.auth or ("neo4j", "pw-in-the-uri-5c1d9e")
    scheme, _, rest = server.uri.partition("://")
    return SimpleNamespace(uri=f"{scheme}://{user}:{password}@{rest}", auth=None, database=server.database), password


def test_the_json_access_log_has_one_line_per_tool_call_with_its_fields_and_nothing_secret(genesis, neo4j_server):
    served_by, password = credential_uri(neo4j_server)
    find = 'FIND(?t.name) WHERE { ?t {type: "$ConceptType"} FILTER(?t.name != :needle) } LIMIT 3'

    async def rw(session):
        answers = [payload(await session.call_tool("execute_kip_readonly", {"command": "DESCRIBE PRIMER"}))]
        answers.append(payload(await session.call_tool("execute_kip_readonly", {"command": find, "parameters": {"needle": NEEDLE}})))
        batch = ["DESCRIBE PRIMER", {"command": find, "parameters": {"needle": NEEDLE}}, f"FIND(?x) WHERE {{ {NEEDLE} "]
        answers.append(payload(await session.call_tool("execute_kip", {"commands": batch})))
        return answers

    async def ro(session):
        return payload(await session.call_tool("execute_kip", {"command": f'UPSERT {{ CONCEPT ?x {{ {{type: "Thing", name: "{NEEDLE}"}} }} }}'}))

    with http_server(served_by, env={"KIP2CYPHER_LOG_FORMAT": "json"}) as served:
        primer, found, batch = in_session(served.url, RW, rw)
        refused = in_session(served.url, RO, ro)
    assert "error" not in primer and len(found["result"]) == 3 and batch["result"][2]["error"]["code"] == "KIP_1001"
    assert refused["error"]["code"] == "KIP_3004"
    lines = json_lines(served.log)
    calls = access(lines)
    assert len(calls) == 4, served.log
    for line in calls:
        assert list(line) == ACCESS_FIELDS and REQUEST_ID.match(line["request_id"]) and line["level"] == "INFO"
        assert isinstance(line["duration_ms"], float) and line["duration_ms"] >= 0 and line["namespace"] == ""
    assert len({line["request_id"] for line in calls}) == 4
    shown = [{k: line[k] for k in ("client", "tool", "kinds", "statements", "rows", "outcome")} for line in calls]
    assert shown == [
        {"client": "token #1", "tool": "execute_kip_readonly", "kinds": "META", "statements": 1, "rows": 1, "outcome": "ok"},
        {"client": "token #1", "tool": "execute_kip_readonly", "kinds": "KQL", "statements": 1, "rows": 3, "outcome": "ok"},
        {"client": "token #1", "tool": "execute_kip", "kinds": "META,KQL", "statements": 2, "rows": 4, "outcome": "KIP_1001"},
        {"client": "token #3", "tool": "execute_kip", "kinds": "", "statements": 0, "rows": 0, "outcome": "KIP_3004"},
    ]
    whole = "".join(served.log)
    for secret in (RW, RW2, RO, password, served_by.uri, f":{password}@", NEEDLE):
        assert secret not in whole


@pytest.fixture()
def package_level():
    """The CLI run below sets the ``kip2cypher`` loggers to DEBUG in this process: back to inheriting after."""
    yield
    logging.getLogger("kip2cypher").setLevel(logging.NOTSET)


def test_the_log_level_setting_is_respected_by_the_server_and_the_library(genesis, neo4j_server, package_level):
    with http_server(neo4j_server, env={"KIP2CYPHER_LOG_LEVEL": "WARNING"}) as served:
        answer = in_session(served.url, RW, lambda s: s.call_tool("execute_kip_readonly", {"command": "DESCRIBE PRIMER"}))
    assert "error" not in payload(answer)
    assert not [line for line in served.log if "kip2cypher.access" in line], served.log  # text format, nothing under WARNING

    # The library logs its own access line at DEBUG (``kip2cypher call`` runs Nexus.execute).
    env = {"NEO4J_URI": neo4j_server.uri, "KIP2CYPHER_LOG_FORMAT": "json"}
    if neo4j_server.auth:
        env["NEO4J_USERNAME"], env["NEO4J_PASSWORD"] = neo4j_server.auth
    if neo4j_server.database:
        env["NEO4J_DATABASE"] = neo4j_server.database
    quiet = CliRunner().invoke(main, ["call", "DESCRIBE PRIMER"], env=env)
    loud = CliRunner().invoke(main, ["call", "DESCRIBE PRIMER"], env={**env, "KIP2CYPHER_LOG_LEVEL": "debug"})
    assert quiet.exit_code == loud.exit_code == 0
    assert "kip2cypher.access" not in quiet.stderr
    library = access([json.loads(line) for line in loud.stderr.splitlines() if line.startswith("{")])
    assert [(line["client"], line["tool"], line["kinds"], line["level"]) for line in library] == [("kip2cypher", "execute_kip", "META", "DEBUG")]


class Proxy:
    """A TCP forwarder from a local port to the test Neo4j: ``stop`` closes the port and every
    connection through it (Neo4j, as the server sees it, is gone), ``start`` opens it again."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target, self.port = target, 0
        self.listener: socket.socket | None = None
        self.open: list[socket.socket] = []

    def start(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", self.port))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, args=(self.listener,), daemon=True).start()

    def stop(self) -> None:
        self.listener.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread: a bare close leaves the port listening
        self.listener.close()
        for sock in self.open:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()
        self.open.clear()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            self.open += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass


def test_an_outage_logs_one_warning_and_the_recovery_one_info(genesis, neo4j_server):
    scheme, _, rest = neo4j_server.uri.partition("://")
    host, _, port = rest.rpartition(":")
    proxy = Proxy((host.strip("[]"), int(port)))
    proxy.start()
    through = SimpleNamespace(uri=f"{scheme}://127.0.0.1:{proxy.port}", auth=neo4j_server.auth, database=neo4j_server.database)
    read = {"command": 'FIND(COUNT(?t)) WHERE { ?t {type: "$ConceptType"} }'}

    async def session(s):
        answers = [payload(await s.call_tool("execute_kip_readonly", read))]
        proxy.stop()
        for _ in range(3):
            answers.append(payload(await s.call_tool("execute_kip_readonly", read)))
        answers.append(payload(await s.call_tool("execute_kip", {"command": 'UPSERT { CONCEPT ?x { {type: "$ConceptType", name: "Outage"} } }'})))
        proxy.start()
        # The first calls after the port opens again may still meet a closed pooled connection, or
        # the circuit breaker, which lets one trial through per second: ask until one is served.
        for _ in range(60):
            answers.append(payload(await s.call_tool("execute_kip_readonly", read)))
            if "error" not in answers[-1]:
                break
            await anyio.sleep(0.5)
        answers.append(payload(await s.call_tool("execute_kip_readonly", read)))
        return answers

    try:
        with http_server(through, env={"KIP2CYPHER_LOG_FORMAT": "json", "KIP2CYPHER_MAX_RETRY_S": "1"}) as served:
            answers = in_session(served.url, RW, session)
    finally:
        proxy.stop()
    assert "error" not in answers[0] and "error" not in answers[-1] and "error" not in answers[-2]
    assert [a["error"]["code"] for a in answers[1:5]] == ["KIP_4003"] * 4
    lines = json_lines(served.log)
    changes = [(line["level"], line["message"]) for line in lines if line["logger"] == "kip2cypher.neo4j"]
    where = f"Neo4j at {through.uri}"
    assert (
        len(changes) == 2
        and changes[0][0] == "WARNING"
        and changes[0][1].startswith(f"{where} is unreachable: ")
        and changes[1] == ("INFO", f"{where} answers again")
    ), changes
    outcomes = [line["outcome"] for line in access(lines)]
    assert outcomes[:5] == ["ok", "KIP_4003", "KIP_4003", "KIP_4003", "KIP_4003"] and outcomes[-1] == "ok"
