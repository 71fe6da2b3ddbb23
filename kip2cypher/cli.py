"""The ``kip2cypher`` command line (click), for people.

Every sub-command that talks to Neo4j takes ``--uri --user --password --database``
(defaulting to ``NEO4J_URI`` / ``NEO4J_USERNAME`` / ``NEO4J_PASSWORD`` /
``NEO4J_DATABASE``). KIP errors are printed as the spec's error JSON and give
exit status 1; no Python traceback is ever shown for a KIP-level failure.
"""
from __future__ import annotations

import json
import logging
import os
import sys
import time
from typing import Any, Optional

import click

from .version import __version__


def _dump(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, indent=2, default=str)


def _connect_options(fn):
    fn = click.option("--database", envvar="NEO4J_DATABASE", default=None, help="Neo4j database [env NEO4J_DATABASE; default: the server's default].")(fn)
    fn = click.option("--password", envvar="NEO4J_PASSWORD", default=None, help="Neo4j password [env NEO4J_PASSWORD].")(fn)
    fn = click.option("--user", envvar=["NEO4J_USERNAME", "NEO4J_USER"], default=None, help="Neo4j user [env NEO4J_USERNAME].")(fn)
    fn = click.option("--uri", envvar="NEO4J_URI", default=None, help="bolt://, neo4j://, neo4j+s:// URI [env NEO4J_URI; default: the local server].")(fn)
    return fn


def open_nexus(uri: Optional[str], user: Optional[str], password: Optional[str], database: Optional[str], *, start_local: bool = False):
    """Connect; with ``start_local`` and no URI configured, start the bundled local Neo4j first."""
    from .execute import Nexus

    if uri is None and start_local:
        from . import localneo4j

        try:
            version = localneo4j.start(log=lambda m: click.echo(m, err=True))
        except localneo4j.LocalNeo4jError as exc:
            raise click.ClickException(str(exc))
        click.echo(f"Local Neo4j {version} at {localneo4j.LocalConfig.from_env().uri}", err=True)
    auth = (user, password) if user and password is not None else None
    return Nexus(uri, auth=auth, database=database)


def _verbose_option(fn):
    def enable(ctx, param, value):
        if value:
            handler = logging.StreamHandler(sys.stderr)
            handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
            logger = logging.getLogger("kip2cypher")
            logger.addHandler(handler)
            logger.setLevel(logging.DEBUG)
        return value

    return click.option("-v", "--verbose", is_flag=True, expose_value=False, is_eager=True, callback=enable, help="Log every Cypher statement and its parameters to stderr.")(fn)


class _Group(click.Group):
    """Every sub-command's failure is printed as a KIP error object (exit 1), never a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        from neo4j.exceptions import DriverError, Neo4jError

        from . import errors
        from .execution.neo4j_errors import from_neo4j

        try:
            return super().invoke(ctx)
        except errors.KipError as exc:
            _fail(exc.to_dict(), err=True)
        except (Neo4jError, DriverError) as exc:
            _fail(from_neo4j(exc).to_dict(), err=True)
        except (click.exceptions.Exit, click.ClickException, click.Abort, SystemExit, KeyboardInterrupt):
            raise
        except Exception as exc:  # noqa: BLE001
            if os.environ.get("KIP2CYPHER_DEBUG") == "1":
                raise
            _fail(errors.KipError(errors.INTERNAL_ERROR, f"Internal error: {type(exc).__name__}: {exc}", "Set KIP2CYPHER_DEBUG=1 to see the traceback.").to_dict(), err=True)


@click.group(cls=_Group)
@click.version_option(__version__, prog_name="kip2cypher")
def main() -> None:
    """KIP (Knowledge Interaction Protocol) on Neo4j."""


# ---------------------------------------------------------------- neo4j
@main.group()
def neo4j() -> None:
    """Manage the local Neo4j Community server (no Docker needed)."""


@neo4j.command("start")
@click.option("--port", type=int, default=None, help="Bolt port (default 7687 or KIP2CYPHER_NEO4J_PORT).")
@click.option("--data", "home", default=None, help="Data directory (default under ~/.cache/kip2cypher).")
def neo4j_start(port: Optional[int], home: Optional[str]) -> None:
    """Start Neo4j in the background and wait until Bolt answers."""
    from . import localneo4j

    cfg = localneo4j.LocalConfig.from_env(port, home)
    try:
        version = localneo4j.start(cfg, log=lambda m: click.echo(m, err=True))
    except localneo4j.LocalNeo4jError as exc:
        raise click.ClickException(str(exc))
    click.echo(f"Neo4j {version} up at {cfg.uri} (data: {cfg.home})")


@neo4j.command("stop")
@click.option("--port", type=int, default=None)
@click.option("--data", "home", default=None)
def neo4j_stop(port: Optional[int], home: Optional[str]) -> None:
    """Shut the local Neo4j down cleanly."""
    from . import localneo4j

    cfg = localneo4j.LocalConfig.from_env(port, home)
    click.echo("stopped" if localneo4j.stop(cfg) else "not running")


@neo4j.command("status")
@click.option("--port", type=int, default=None)
@click.option("--data", "home", default=None)
def neo4j_status(port: Optional[int], home: Optional[str]) -> None:
    """Say whether the local Neo4j is up, and its version."""
    from . import localneo4j

    cfg = localneo4j.LocalConfig.from_env(port, home)
    up, version = localneo4j.status(cfg)
    click.echo(f"up {cfg.uri} Neo4j {version}" if up else f"down ({cfg.uri})")
    sys.exit(0 if up else 3)


# ---------------------------------------------------------------- helpers
def _read_source(source: str) -> str:
    if source == "-":
        return sys.stdin.read()
    try:
        with open(source, encoding="utf-8") as fh:
            return fh.read()
    except OSError as exc:
        raise click.BadParameter(f"cannot read {source}: {exc.strerror}")


def _parse_params(params: Optional[str]) -> dict[str, Any]:
    if not params:
        return {}
    try:
        value = json.loads(params)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"--params is not JSON: {exc}")
    if not isinstance(value, dict):
        raise click.BadParameter("--params must be a JSON object")
    return value


def _fail(error: dict[str, Any], *, err: bool = False) -> None:
    click.echo(_dump({"error": error}), err=err)
    sys.exit(1)


def _command_texts(text: str) -> list[tuple[str, int]]:
    """One command, or the commands of a script; raises KipError (the single-command error)."""
    from .errors import KipError
    from .syntax.script import split_script
    from .syntax.parser import parse

    try:
        parse(text)
        return [(text, 1)]
    except KipError as single_error:
        try:
            return split_script(text)
        except KipError:
            raise single_error from None


# ---------------------------------------------------------------- language
@main.command("parse")
@click.argument("source", default="-")
def parse_cmd(source: str) -> None:
    """Print the AST of a KIP command (or of each command of a script) as JSON."""
    from .errors import KipError
    from .syntax.parser import parse
    from .syntax.serialize import ast_to_json

    text = _read_source(source)
    try:
        commands = _command_texts(text)
        trees = [ast_to_json(parse(command)) for command, _ in commands]
    except KipError as exc:
        _fail(exc.to_dict())
    click.echo(_dump(trees[0] if len(trees) == 1 else trees))


@main.command("compile")
@click.argument("source", default="-")
@click.option("--params", default=None, help="Parameters as a JSON object.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--explain", is_flag=True, help="Run EXPLAIN on the configured Neo4j and print each statement's plan.")
@_connect_options
def compile_cmd(source: str, params: Optional[str], fmt: str, explain: bool, uri, user, password, database) -> None:
    """Print the Cypher (and parameters) a KIP command — or each command of a script — compiles to."""
    from .lower.compile import compile_command
    from .errors import KipError

    parameters = _parse_params(params)
    text = _read_source(source)
    try:
        commands = _command_texts(text)
        if explain:
            with open_nexus(uri, user, password, database) as nexus:
                compiled = [nexus.explain(command, parameters) for command, _ in commands]
        else:
            compiled = [compile_command(command, parameters) for command, _ in commands]
    except KipError as exc:
        _fail(exc.to_dict())
    if fmt == "json":
        click.echo(_dump(compiled[0] if len(compiled) == 1 else compiled))
        return
    for number, ((command, line), statements) in enumerate(zip(commands, compiled), start=1):
        if len(commands) > 1:
            click.echo(f"// ===== command {number} (line {line}): {command.strip().splitlines()[0][:60]}")
        for index, statement in enumerate(statements):
            if len(statements) > 1:
                click.echo(f"// statement {index + 1}{': ' + statement['label'] if statement.get('label') else ''}")
            click.echo(statement["cypher"])
            click.echo(f"// parameters: {json.dumps(statement['parameters'], ensure_ascii=False, default=str)}")
            if "plan" in statement:
                click.echo("// plan:\n" + "\n".join(f"//   {line_}" for line_ in statement["plan"].splitlines()))


# ---------------------------------------------------------------- execution
@main.command("call")
@click.option("--request", "request_file", default=None, help="Read the request JSON from FILE (default: stdin).")
@click.option("--readonly", is_flag=True, help="Use execute_kip_readonly.")
@_verbose_option
@_connect_options
def call_cmd(request_file: Optional[str], readonly: bool, uri, user, password, database) -> None:
    """Function-call JSON in, response JSON out (spec §6).

    The request is the arguments object {"command"|"commands", "parameters", "dry_run"},
    or the spec's full envelope {"function": {"name": "execute_kip[_readonly]", "arguments": {...}}}.
    Exit status 1 when the response has a top-level error.
    """
    from .errors import INVALID_SYNTAX, KipError

    raw = _read_source(request_file or "-")
    try:
        arguments = json.loads(raw)
    except ValueError as exc:
        _fail(KipError(INVALID_SYNTAX, f"The request is not JSON: {exc}", 'Send {"command": "<KIP>"}.').to_dict())
    if isinstance(arguments, dict) and isinstance(arguments.get("function"), dict) and set(arguments) == {"function"}:
        function = arguments["function"]
        name = function.get("name")
        if name not in ("execute_kip", "execute_kip_readonly"):
            _fail(KipError(INVALID_SYNTAX, f"Unknown function {name!r}.", "Use execute_kip or execute_kip_readonly.").to_dict())
        readonly = readonly or name == "execute_kip_readonly"
        arguments = function.get("arguments", {})
        if isinstance(arguments, str):  # some clients send arguments as a JSON string
            try:
                arguments = json.loads(arguments)
            except ValueError as exc:
                _fail(KipError(INVALID_SYNTAX, f"function.arguments is not JSON: {exc}").to_dict())
    with open_nexus(uri, user, password, database) as nexus:
        response = nexus.execute(arguments, readonly=readonly)
    click.echo(_dump(response))
    sys.exit(1 if "error" in response else 0)


def _summary_of(result: Any) -> str:
    """A short human description of one command's result."""
    if isinstance(result, dict):
        if "upsert_concept_nodes" in result:
            return f"upserted {len(result['upsert_concept_nodes'])} concepts, {len(result['upsert_proposition_links'])} propositions in {result.get('blocks', '?')} blocks"
        if "capsule" in result:
            return f"exported {result.get('concepts', '?')} concepts, {result.get('propositions', '?')} propositions"
        return ", ".join(f"{k}={v}" for k, v in result.items() if isinstance(v, (int, float, bool, str)))[:120] or "ok"
    if isinstance(result, list):
        return f"{len(result)} rows"
    return json.dumps(result, ensure_ascii=False, default=str)[:120]


@main.command("run")
@click.argument("source")
@click.option("--params", default=None, help="Shared parameters as a JSON object.")
@click.option("--dry-run", is_flag=True, help="Validate every command against the live schema without writing.")
@click.option("--readonly", is_flag=True, help="Refuse KML: run the script as execute_kip_readonly would.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True, help="json prints the §6.2.3 batch response.")
@_verbose_option
@_connect_options
def run_cmd(source: str, params: Optional[str], dry_run: bool, readonly: bool, fmt: str, uri, user, password, database) -> None:
    """Execute a .kip file: a capsule or a script of several commands, in order.

    Follows the batch rules of spec §6: a KML execution error stops the run; read
    errors are reported and the run goes on. Prints a summary at the end; exit 1
    when any command failed.
    """
    from .errors import KipError
    from .syntax.script import command_kind_of, split_script

    parameters = _parse_params(params)
    text = _read_source(source)
    try:
        commands = split_script(text)
    except KipError as exc:
        _fail(exc.to_dict())
    if readonly:
        kml = [line for command, line in commands if command_kind_of(command) == "KML"]
        if kml:
            from .execution.request import readonly_error

            _fail(readonly_error(f"The script contains KML at line(s) {', '.join(map(str, kml[:10]))}").to_dict())
    started = time.monotonic()
    responses: list[dict[str, Any]] = []
    failures: list[tuple[int, int, dict[str, Any]]] = []
    stopped = False
    echo_lines = fmt == "text"
    with open_nexus(uri, user, password, database) as nexus:
        with click.progressbar(length=len(commands), label=f"{source}: {len(commands)} commands", file=sys.stderr, show_pos=True) as bar:
            for number, (command, line) in enumerate(commands, start=1):
                outcome = nexus.execute_command(command, parameters, dry_run=dry_run, readonly=readonly)
                responses.append(outcome.response)
                bar.update(1)
                first = command.strip().splitlines()[0][:50]
                if "error" in outcome.response:
                    failures.append((number, line, outcome.response["error"]))
                    if echo_lines:
                        err = outcome.response["error"]
                        click.echo(f"[{number}] line {line}: {first}\n    {err['code']} {err['message']}\n    hint: {err.get('hint', '')}")
                elif echo_lines:
                    click.echo(f"[{number}] line {line}: {first}\n    ok: {_summary_of(outcome.response.get('result'))}")
                if outcome.stops_batch:
                    stopped = True
                    break
    elapsed = time.monotonic() - started
    if fmt == "json":
        click.echo(_dump({"result": responses}))
    ran = len(responses)
    summary = f"{ran}/{len(commands)} commands run{' (dry run)' if dry_run else ''}: {ran - len(failures)} ok, {len(failures)} failed in {elapsed:.2f}s"
    if stopped:
        summary += f"; stopped at command {ran} (line {failures[-1][1]}) on a KML error, {len(commands) - ran} not run"
    click.echo(summary, err=fmt == "json")
    sys.exit(1 if failures else 0)


@main.command("export")
@click.argument("pattern")
@click.option("--target", default="?n", show_default=True, help="The WHERE variable to export.")
@click.option("--limit", type=int, default=500, show_default=True, help="Elements per page.")
@click.option("--params", default=None, help="Parameters for placeholders in PATTERN, as a JSON object.")
@click.option("--max-pages", type=int, default=0, help="Stop after this many pages (0: follow next_cursor to the end).")
@_connect_options
def export_cmd(pattern: str, target: str, limit: int, params: Optional[str], max_pages: int, uri, user, password, database) -> None:
    """Export the elements matched by a WHERE pattern as a capsule (.kip) on stdout.

    PATTERN is the body of an EXPORT's WHERE block, e.g.
    '(?n, "belongs_to_domain", {type: "Domain", name: "Medical"})'. Pages are
    followed through next_cursor; each page is an idempotent capsule and applying
    the file (`kip2cypher run file.kip`) reproduces the subgraph.
    """
    parameters = _parse_params(params)
    target = target if target.startswith("?") else f"?{target}"
    base = f"EXPORT {target}\nWHERE {{\n  {pattern.strip()}\n}}\nLIMIT {int(limit)}"
    cursor: Optional[str] = None
    pages = concepts = propositions = 0
    with open_nexus(uri, user, password, database) as nexus:
        while True:
            command = base + (f"\nCURSOR {json.dumps(cursor)}" if cursor else "")
            response = nexus.execute_kip_readonly(command, parameters=parameters or None)
            if "error" in response:
                click.echo(f"export failed on page {pages + 1}:", err=True)
                _fail(response["error"], err=True)
            result = response.get("result") or {}
            pages += 1
            concepts += int(result.get("concepts") or 0)
            propositions += int(result.get("propositions") or 0)
            capsule = (result.get("capsule") or "").strip()
            if capsule:
                click.echo(f"// kip2cypher export, page {pages}: {result.get('concepts', 0)} concepts, {result.get('propositions', 0)} propositions")
                click.echo(capsule + "\n")
            cursor = response.get("next_cursor")
            if not cursor or (max_pages and pages >= max_pages):
                break
    more = " (more pages remain: raise --max-pages)" if cursor else ""
    click.echo(f"exported {concepts} concepts and {propositions} propositions in {pages} page(s){more}", err=True)


@main.command("shell")
@click.option("--readonly", is_flag=True, help="Start with writes refused (toggle with :readonly off).")
@click.option("--cypher/--no-cypher", "show_cypher", default=False, help="Show each command's Cypher (toggle with :cypher on|off).")
@click.option("--history", "history_file", default=None, envvar="KIP2CYPHER_HISTORY", help="History file [default ~/.kip2cypher_history].")
@_connect_options
def shell_cmd(readonly: bool, show_cypher: bool, history_file: Optional[str], uri, user, password, database) -> None:
    """Interactive KIP: end a command with a blank line or `;`. Type :help for the colon commands."""
    from .shell import Shell

    with open_nexus(uri, user, password, database) as nexus:
        Shell(nexus, readonly=readonly, show_cypher=show_cypher, history_file=history_file).loop()


@main.command("mcp")
@click.option("--readonly", is_flag=True, help="Expose only execute_kip_readonly.")
@click.option("--bootstrap", is_flag=True, help="Create the schema objects and apply Genesis before serving (idempotent).")
@click.option("--with-capsules", is_flag=True, help="With --bootstrap: also apply the standard capsules ($self, Person, Event, …).")
@click.option("--start-local", is_flag=True, help="Start the bundled local Neo4j when no --uri / NEO4J_URI is set.")
@_connect_options
def mcp_cmd(readonly: bool, bootstrap: bool, with_capsules: bool, start_local: bool, uri, user, password, database) -> None:
    """Serve execute_kip and execute_kip_readonly over MCP on stdin/stdout.

    stdout carries only the protocol; logs go to stderr.
    """
    from . import mcp_server

    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(name)s: %(message)s")
    mcp_server.run(lambda: open_nexus(uri, user, password, database, start_local=start_local), readonly=readonly, bootstrap=bootstrap, capsules=with_capsules)


@main.command("bootstrap")
@click.option("--with-capsules", is_flag=True, help="Also apply the standard capsules (Event, Person, $self, …).")
@_connect_options
def bootstrap_cmd(with_capsules: bool, uri, user, password, database) -> None:
    """Create the schema objects and apply the Genesis capsule (idempotent)."""
    from .errors import KipError

    with open_nexus(uri, user, password, database, start_local=True) as nexus:
        try:
            applied = nexus.bootstrap(capsules=with_capsules)
        except KipError as exc:
            click.echo(_dump({"error": exc.to_dict()}))
            sys.exit(1)
    for name, result in applied.items():
        click.echo(f"applied {name}: {json.dumps(result, ensure_ascii=False)}")


@main.command("demo")
@_connect_options
def demo_cmd(uri, user, password, database) -> None:
    """Start the local Neo4j if none is configured, bootstrap, load an example capsule and run queries."""
    from .demo import run_demo

    with open_nexus(uri, user, password, database, start_local=True) as nexus:
        run_demo(nexus, click.echo)


if __name__ == "__main__":  # pragma: no cover
    main()
