"""The ``kip2cypher`` command line (click), for people.

Every sub-command that talks to Neo4j takes ``--uri --user --password --database``
(defaulting to ``NEO4J_URI`` / ``NEO4J_USERNAME`` / ``NEO4J_PASSWORD`` /
``NEO4J_DATABASE``). KIP errors are printed as the spec's error JSON and give
exit status 1; no Python traceback is ever shown for a KIP-level failure.

Imports are lazy: ``parse`` and ``compile`` never load the neo4j driver, rich or
prompt_toolkit (``tests/test_cli_offline.py`` checks the driver stays out).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import os
import sys
from dataclasses import dataclass
from typing import Any

import click

from .. import KipError, __version__, logs
from ..config import check_sources, lookup
from .jsonout import dump
from .jsonout import fail as _fail


@dataclass(frozen=True)
class Connect:
    """Where a command connects: the ``--uri --user --password --database --namespace`` options."""

    uri: str | None
    user: str | None
    password: str | None
    database: str | None
    namespace: str | None

    def open(self, *, start_local: bool = False, asynchronous: bool = False):
        """Connect (an ``AsyncNexus`` with ``asynchronous``); with ``start_local`` and no URI
        configured, start the bundled local Neo4j first."""
        from ..nexus import Nexus

        if self.uri is None and start_local:
            from .. import localneo4j

            try:
                version = localneo4j.start(log=lambda m: click.echo(m, err=True))
            except localneo4j.LocalNeo4jError as exc:
                raise click.ClickException(str(exc))
            click.echo(f"Local Neo4j {version} at {localneo4j.LocalConfig.from_env().uri}", err=True)
        auth = (self.user, self.password) if self.user and self.password is not None else None
        if asynchronous:
            from ..async_nexus import AsyncNexus

            return AsyncNexus(self.uri, auth=auth, database=self.database, namespace=self.namespace)
        return Nexus(self.uri, auth=auth, database=self.database, namespace=self.namespace)


class _EnvOption(click.Option):
    """An option with environment variables: when none is set, the same names are looked up in
    ``.env`` and ``kip2cypher.toml`` (``config.lookup``), and a bad value names the variable
    too (it may have come from there)."""

    def resolve_envvar_value(self, ctx: click.Context) -> str | None:
        from ..config import lookup

        found = super().resolve_envvar_value(ctx)
        for name in self._envvars() if found is None else ():
            found = lookup(name)
            if found is not None:
                break
        return found

    def _envvars(self) -> list[str]:
        return [self.envvar] if isinstance(self.envvar, str) else list(self.envvar or [])

    def get_error_hint(self, ctx: click.Context) -> str:
        envvars = self._envvars()
        return super().get_error_hint(ctx) + (f" (env {' / '.join(envvars)})" if envvars else "")


_CONNECT_OPTIONS = (
    click.option(
        "--uri", cls=_EnvOption, envvar="NEO4J_URI", default=None, help="bolt://, neo4j://, neo4j+s:// URI [env NEO4J_URI; default: the local server]."
    ),
    click.option("--user", cls=_EnvOption, envvar=["NEO4J_USERNAME", "NEO4J_USER"], default=None, help="Neo4j user [env NEO4J_USERNAME]."),
    click.option("--password", cls=_EnvOption, envvar="NEO4J_PASSWORD", default=None, help="Neo4j password [env NEO4J_PASSWORD]."),
    click.option(
        "--database", cls=_EnvOption, envvar="NEO4J_DATABASE", default=None, help="Neo4j database [env NEO4J_DATABASE; default: the server's default]."
    ),
    click.option(
        "--namespace",
        cls=_EnvOption,
        envvar="KIP2CYPHER_NAMESPACE",
        default=None,
        help="The nexus inside the database (docs/namespaces.md) [env KIP2CYPHER_NAMESPACE; default: the default namespace].",
    ),
)


def _connect_options(fn=None, *, namespace: bool = True):
    """The connection options, handed to the command as one ``conn: Connect`` (without
    ``--namespace`` for commands about the whole database)."""

    def decorate(fn):
        @functools.wraps(fn)
        def command(*args, uri, user, password, database, namespace=None, **kwargs):
            return fn(*args, conn=Connect(uri, user, password, database, namespace), **kwargs)

        for option in reversed(_CONNECT_OPTIONS if namespace else _CONNECT_OPTIONS[:-1]):
            command = option(command)
        return command

    return decorate(fn) if fn is not None else decorate


def _verbose_option(fn):
    def enable(ctx, param, value):
        if value:
            logging.getLogger("kip2cypher").setLevel(logging.DEBUG)  # through the handler of logs.configure
        return value

    return click.option(
        "-v", "--verbose", is_flag=True, expose_value=False, is_eager=True, callback=enable, help="Log every Cypher statement and its parameters to stderr."
    )(fn)


class _Group(click.Group):
    """Every sub-command's failure is printed as a KIP error object (exit 1), never a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        from .. import errors

        try:
            return super().invoke(ctx)
        except errors.KipError as exc:
            _fail(exc.to_dict(), err=True)
        except BrokenPipeError:
            _reader_gone()
        except (click.exceptions.Exit, click.ClickException, click.Abort, SystemExit, KeyboardInterrupt):
            raise
        except Exception as exc:  # noqa: BLE001
            if _is_driver_error(exc):
                from ..execution.neo4j_errors import from_neo4j

                _fail(from_neo4j(exc).to_dict(), err=True)
            if lookup("KIP2CYPHER_DEBUG") == "1":
                raise
            _fail(
                errors.KipError(
                    errors.INTERNAL_ERROR, f"Internal error: {type(exc).__name__}: {exc}", "Set KIP2CYPHER_DEBUG=1 to see the traceback."
                ).to_dict(),
                err=True,
            )


def _reader_gone() -> None:
    """The reader of stdout went away (``kip2cypher compile … | head``): stop quietly with the
    SIGPIPE status (141) as Unix tools do — no error object to a pipe nobody reads, no
    "Internal error". stdout is pointed at /dev/null first so the exit flush cannot fail again
    (the Python docs' recipe). The driver reports a broken Neo4j socket as its own exceptions."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    sys.exit(141)


def _is_driver_error(exc: Exception) -> bool:
    """A neo4j driver exception — checked without importing the driver (a command that never
    connected cannot raise one)."""
    driver_errors = sys.modules.get("neo4j.exceptions")
    return driver_errors is not None and isinstance(exc, (driver_errors.Neo4jError, driver_errors.DriverError))


@click.group(cls=_Group)
@click.version_option(__version__, prog_name="kip2cypher")
def main() -> None:
    """KIP (Knowledge Interaction Protocol) on Neo4j."""
    # Every command's log records go to stderr (KIP2CYPHER_LOG_LEVEL, default WARNING; ``-v``:
    # DEBUG; tracebacks only with KIP2CYPHER_DEBUG=1); ``mcp`` replaces this with its server logging.
    # Configured for each command: an earlier -v of the same process (CliRunner) must not leak
    # its Cypher log into the next command's output.
    logs.configure("WARNING")
    check_sources()  # a misspelt KIP2CYPHER_* variable (or .env / toml entry) is an error, not ignored


# ---------------------------------------------------------------- neo4j
@main.group()
def neo4j() -> None:
    """Manage the local Neo4j Community server (no Docker needed)."""


def _local_options(command):
    """``--port --data --version``: which local server (the data directory's default depends on the version)."""
    command = click.option(
        "--version",
        "version",
        default=None,
        help="Neo4j release, e.g. 5.26.30 or 2026.08.1 (default: KIP2CYPHER_NEO4J_VERSION, else the pinned 5.26.x).",
    )(command)
    command = click.option("--data", "home", default=None, help="Data directory (default under ~/.cache/kip2cypher, one per version).")(command)
    return click.option("--port", type=int, default=None, help="Bolt port (default 7687 or KIP2CYPHER_NEO4J_PORT).")(command)


def _local_config(port: int | None, home: str | None, version: str | None):
    from .. import localneo4j

    try:
        return localneo4j.LocalConfig.from_env(port, home, version)
    except localneo4j.LocalNeo4jError as exc:
        raise click.ClickException(str(exc))


@neo4j.command("start")
@_local_options
def neo4j_start(port: int | None, home: str | None, version: str | None) -> None:
    """Start Neo4j in the background and wait until Bolt answers."""
    from .. import localneo4j

    cfg = _local_config(port, home, version)
    try:
        running = localneo4j.start(cfg, log=lambda m: click.echo(m, err=True))
    except localneo4j.LocalNeo4jError as exc:
        raise click.ClickException(str(exc))
    click.echo(f"Neo4j {running} up at {cfg.uri} (data: {cfg.home})")


@neo4j.command("stop")
@_local_options
def neo4j_stop(port: int | None, home: str | None, version: str | None) -> None:
    """Shut the local Neo4j down cleanly."""
    from .. import localneo4j

    click.echo("stopped" if localneo4j.stop(_local_config(port, home, version)) else "not running")


@neo4j.command("status")
@_local_options
def neo4j_status(port: int | None, home: str | None, version: str | None) -> None:
    """Say whether the local Neo4j is up, and its version."""
    from .. import localneo4j

    cfg = _local_config(port, home, version)
    up, running = localneo4j.status(cfg)
    click.echo(f"up {cfg.uri} Neo4j {running}" if up else f"down ({cfg.uri})")
    sys.exit(0 if up else 3)


# ---------------------------------------------------------------- helpers
def _parse_params(params: str | None) -> dict[str, Any]:
    if not params:
        return {}
    from ..models import loads

    try:
        value = loads(params, "--params")
    except KipError as exc:
        raise click.BadParameter(exc.message)
    if not isinstance(value, dict):
        raise click.BadParameter("--params must be a JSON object")
    return value


SOURCE_HELP = "SOURCE is a file, '-' for stdin (the default), or the KIP text itself."


# ---------------------------------------------------------------- language
@main.command("parse", epilog=SOURCE_HELP)
@click.argument("source", default="-")
def parse_cmd(source: str) -> None:
    """Print the AST of a KIP command (or of each command of a script) as JSON."""
    from .source import ast_json, command_texts, read_source

    try:
        trees = [ast_json(command) for command, _ in command_texts(read_source(source))]
    except KipError as exc:
        _fail(exc.to_dict())
    click.echo(dump(trees[0] if len(trees) == 1 else trees))


@main.command("compile", epilog=SOURCE_HELP)
@click.argument("source", default="-")
@click.option("--params", default=None, help="Parameters as a JSON object.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--explain", is_flag=True, help="Run EXPLAIN on the configured Neo4j and print each statement's plan.")
@click.option(
    "--mapping",
    type=click.Path(dir_okay=False),
    default=None,
    help="Compile as a namespace that adopted this mapping (docs/adopt.md); with --explain the stored mapping is used.",
)
@_connect_options
def compile_cmd(source: str, params: str | None, fmt: str, explain: bool, mapping: str | None, conn: Connect) -> None:
    """Print the Cypher (and parameters) a KIP command — or each command of a script — compiles to.

    A placeholder without a value in --params stays a Cypher parameter ($name) to bind at
    run time, except where its value shapes the statement (a type, a predicate, LIMIT …):
    then it must be given. --explain connects to Neo4j and needs every value, as a run does.
    """
    from .source import command_texts, first_line, read_source

    parameters = _parse_params(params)
    try:
        commands = command_texts(read_source(source))
        if explain:
            with conn.open() as nexus:
                compiled = [nexus.explain(command, parameters) for command, _ in commands]
        else:
            from .. import adoption
            from .. import compile as compile_command

            adopted = adoption.load(mapping) if mapping else None
            # values not given stay $name for code that binds them itself (never executed here)
            compiled = [compile_command(command, parameters, namespace=conn.namespace, keep_placeholders=True, adoption=adopted) for command, _ in commands]
    except KipError as exc:
        _fail(exc.to_dict())
    if fmt == "json":
        click.echo(dump(compiled[0] if len(compiled) == 1 else compiled))
        return
    for number, ((command, line), statements) in enumerate(zip(commands, compiled), start=1):
        if len(commands) > 1:
            click.echo(f"// ===== command {number} (line {line}): {first_line(command, 60)}")
        for index, statement in enumerate(statements):
            if len(statements) > 1:
                click.echo(f"// statement {index + 1}{': ' + statement['label'] if statement.get('label') else ''}")
            click.echo(statement["cypher"])
            click.echo(f"// parameters: {json.dumps(statement['parameters'], ensure_ascii=False, default=str)}")
            if statement.get("runtime_parameters"):
                click.echo(f"// bound at run time: {', '.join(statement['runtime_parameters'])}")
            if "plan" in statement:
                click.echo("// plan:\n" + "\n".join(f"//   {line_}" for line_ in statement["plan"].splitlines()))


# ---------------------------------------------------------------- execution
@main.command(
    "call",
    epilog="SOURCE is a file, '-' for stdin (the default), or the request itself. "
    "Whatever its origin, text starting with '{' is the request JSON; anything else is one KIP command.",
)
@click.argument("source", required=False)
@click.option("--request", "request_file", default=None, help="Read the request from FILE (same as giving FILE as SOURCE).")
@click.option("--params", default=None, help="Parameters for a KIP command given as text, as a JSON object.")
@click.option("--readonly", is_flag=True, cls=_EnvOption, envvar="KIP2CYPHER_READONLY", help="Use execute_kip_readonly [env KIP2CYPHER_READONLY=1].")
@click.option("--format", "fmt", type=click.Choice(["json", "table"]), default="json", show_default=True, help="table prints results as the shell does.")
@_verbose_option
@_connect_options
def call_cmd(source: str | None, request_file: str | None, params: str | None, readonly: bool, fmt: str, conn: Connect) -> None:
    """Function-call JSON in, response JSON out (spec §6).

    The request is the arguments object {"command"|"commands", "parameters", "dry_run"},
    the spec's full envelope {"function": {"name": "execute_kip[_readonly]", "arguments": {...}}},
    or simply a KIP command (kip2cypher call 'DESCRIBE PRIMER').
    Exit status 1 when the response has a top-level error.
    """
    from .source import read_source, refuse_missing_file

    request = read_source(source or request_file or "-")
    if not request.text.lstrip().startswith(("{", "[")):
        refuse_missing_file(request)
    arguments, readonly = _request_arguments(request.text, _parse_params(params), readonly)
    with conn.open() as nexus:
        response = nexus.execute(arguments, readonly=readonly)
    if fmt == "table":
        _print_table_response(arguments, response)
    else:
        click.echo(dump(response))
    sys.exit(1 if "error" in response else 0)


def _request_arguments(text: str, parameters: dict[str, Any], readonly: bool) -> tuple[Any, bool]:
    """The §6.1 arguments object of ``call``'s input, and whether it asks for execute_kip_readonly."""
    from ..errors import INVALID_SYNTAX
    from ..models import loads

    if not text.lstrip().startswith(("{", "[")):
        return {"command": text, "parameters": parameters or None}, readonly
    try:
        arguments = loads(text)
    except KipError as exc:
        _fail(exc.to_dict())
    if isinstance(arguments, dict) and isinstance(arguments.get("function"), dict) and set(arguments) == {"function"}:
        function = arguments["function"]
        name = function.get("name")
        if name not in ("execute_kip", "execute_kip_readonly"):
            _fail(KipError(INVALID_SYNTAX, f"Unknown function {name!r}.", "Use execute_kip or execute_kip_readonly.").to_dict())
        readonly = readonly or name == "execute_kip_readonly"
        arguments = function.get("arguments", {})
        if isinstance(arguments, str):  # some clients send arguments as a JSON string
            try:
                arguments = loads(arguments, "function.arguments")
            except KipError as exc:
                _fail(exc.to_dict())
    return arguments, readonly


def _print_table_response(arguments: Any, response: dict[str, Any]) -> None:
    """``call --format table``: each command's response as the shell prints it."""
    from .output import make_console, render_response
    from .source import first_line

    console = make_console()
    if not isinstance(arguments, dict) or "error" in response or arguments.get("commands") is None:
        command = arguments.get("command") if isinstance(arguments, dict) else None
        console.print(render_response(command or "", response, console=console))
        return
    for index, (item, item_response) in enumerate(zip(arguments["commands"], response["result"])):
        command = item.get("command", "") if isinstance(item, dict) else str(item)
        console.print(f"[{index}] {first_line(command, 70)}")
        console.print(render_response(command, item_response, console=console))


@main.command("run")
@click.argument("source")
@click.option("--params", default=None, help="Shared parameters as a JSON object.")
@click.option("--dry-run", is_flag=True, help="Validate every command against the live schema without writing.")
@click.option(
    "--readonly",
    is_flag=True,
    cls=_EnvOption,
    envvar="KIP2CYPHER_READONLY",
    help="Refuse KML: run the script as execute_kip_readonly would [env KIP2CYPHER_READONLY=1].",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "table"]),
    default="text",
    show_default=True,
    help="text: a line per command; json: the §6.2.3 batch response; table: one table at the end.",
)
@_verbose_option
@_connect_options
def run_cmd(source: str, params: str | None, dry_run: bool, readonly: bool, fmt: str, conn: Connect) -> None:
    """Execute a .kip file: a capsule or a script of several commands, in order.

    Follows the batch rules of spec §6: a KML execution error stops the run; read
    errors are reported and the run goes on. On a terminal a live bar on stderr counts
    commands and UPSERT blocks; the summary counts what was written (SET PROPOSITIONS
    links included). Exit 1 when any command failed.
    """
    from .run import run_script
    from .source import read_file

    parameters = _parse_params(params)
    text = read_file(source)
    with conn.open() as nexus:
        failed = run_script(nexus, text, source, parameters=parameters, dry_run=dry_run, readonly=readonly, fmt=fmt)
    sys.exit(1 if failed else 0)


@main.command("export")
@click.argument("pattern")
@click.option("--target", default="?n", show_default=True, help="The WHERE variable to export.")
@click.option("--limit", type=int, default=500, show_default=True, help="Elements per page.")
@click.option("--params", default=None, help="Parameters for placeholders in PATTERN, as a JSON object.")
@click.option("--max-pages", type=int, default=0, help="Stop after this many pages (0: follow next_cursor to the end).")
@_connect_options
def export_cmd(pattern: str, target: str, limit: int, params: str | None, max_pages: int, conn: Connect) -> None:
    """Export the elements matched by a WHERE pattern as a capsule (.kip) on stdout.

    PATTERN is the body of an EXPORT's WHERE block, e.g.
    '(?n, "belongs_to_domain", {type: "Domain", name: "Medical"})'. Pages are
    followed through next_cursor; each page is an idempotent capsule and applying
    the file (`kip2cypher run file.kip`) reproduces the subgraph.
    """
    parameters = _parse_params(params)
    target = target if target.startswith("?") else f"?{target}"
    base = f"EXPORT {target}\nWHERE {{\n  {pattern.strip()}\n}}\nLIMIT {int(limit)}"
    cursor: str | None = None
    pages = concepts = propositions = 0
    with conn.open() as nexus:
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
@click.option(
    "--readonly",
    is_flag=True,
    cls=_EnvOption,
    envvar="KIP2CYPHER_READONLY",
    help="Start with writes refused (toggle with :readonly off) [env KIP2CYPHER_READONLY=1].",
)
@click.option("--cypher/--no-cypher", "show_cypher", default=False, help="Show each command's Cypher (toggle with :cypher on|off).")
@click.option(
    "--history",
    "history_file",
    default=None,
    cls=_EnvOption,
    envvar="KIP2CYPHER_HISTORY",
    help="History file [env KIP2CYPHER_HISTORY; default: shell_history in the user data dir].",
)
@_connect_options
def shell_cmd(readonly: bool, show_cypher: bool, history_file: str | None, conn: Connect) -> None:
    """Interactive KIP: end a command with a blank line or `;`. Type :help for the colon commands.

    Ctrl-C discards the command being typed, Ctrl-D leaves; Tab completes keywords, :commands
    and the connected nexus's concept types and predicates.
    """
    from .shell import Shell

    with conn.open() as nexus:
        Shell(nexus, readonly=readonly, show_cypher=show_cypher, history_file=history_file).loop()


_PROFILE = click.option(
    "--profile",
    type=click.Choice(["rc10", "rc11"]),
    default=None,
    cls=_EnvOption,
    envvar="KIP2CYPHER_PROFILE",
    help="The official KIP capsule set to bootstrap with (default rc11); a nexus already bootstrapped keeps its own unless --upgrade [env KIP2CYPHER_PROFILE].",
)
_YES_BOOTSTRAP = click.option("--yes", is_flag=True, help="Bootstrap even a database that holds data other than KIP's (the plan is printed first).")


def _csv(value: str | None) -> list[str]:
    return [item.strip() for item in (value or "").split(",") if item.strip()]


@main.command("mcp")
@click.option(
    "--transport",
    type=click.Choice(["stdio", "http"]),
    default="stdio",
    show_default=True,
    cls=_EnvOption,
    envvar="KIP2CYPHER_MCP_TRANSPORT",
    help="stdio: one local client; http: the SDK's streamable HTTP, many clients [env KIP2CYPHER_MCP_TRANSPORT].",
)
@click.option(
    "--host", default="127.0.0.1", show_default=True, cls=_EnvOption, envvar="KIP2CYPHER_MCP_HOST", help="HTTP: address to listen on [env KIP2CYPHER_MCP_HOST]."
)
@click.option(
    "--port",
    type=int,
    default=8000,
    show_default=True,
    cls=_EnvOption,
    envvar="KIP2CYPHER_MCP_PORT",
    help="HTTP: port (0 = any free port, printed at start) [env KIP2CYPHER_MCP_PORT].",
)
@click.option(
    "--path",
    "http_path",
    default="/mcp",
    show_default=True,
    cls=_EnvOption,
    envvar="KIP2CYPHER_MCP_PATH",
    help="HTTP: endpoint path [env KIP2CYPHER_MCP_PATH].",
)
@click.option(
    "--tokens-file",
    default=None,
    cls=_EnvOption,
    envvar="KIP2CYPHER_MCP_TOKENS_FILE",
    type=click.Path(dir_okay=False),
    help="HTTP: bearer tokens, `<token> rw|ro [namespace]` a line [env KIP2CYPHER_MCP_TOKENS_FILE]; also KIP2CYPHER_MCP_TOKENS='<token>:rw,<token>:ro:alice'.",
)
@click.option("--no-auth", is_flag=True, help="HTTP: serve without tokens (refused unless --host is loopback).")
@click.option(
    "--allowed-hosts",
    default=None,
    cls=_EnvOption,
    envvar="KIP2CYPHER_MCP_ALLOWED_HOSTS",
    help="HTTP: extra Host header values accepted, comma-separated, e.g. 'kip.example.com:*' (DNS-rebinding protection) [env KIP2CYPHER_MCP_ALLOWED_HOSTS].",
)
@click.option(
    "--allowed-origins",
    default=None,
    cls=_EnvOption,
    envvar="KIP2CYPHER_MCP_ALLOWED_ORIGINS",
    help="HTTP: extra browser Origin values accepted, comma-separated [env KIP2CYPHER_MCP_ALLOWED_ORIGINS].",
)
@click.option(
    "--max-request-bytes",
    type=click.IntRange(min=1024),
    default=None,
    cls=_EnvOption,
    envvar="KIP2CYPHER_MCP_MAX_REQUEST_BYTES",
    help="HTTP: largest request body (default 2 MiB); larger ones get KIP_4002 before parsing [env KIP2CYPHER_MCP_MAX_REQUEST_BYTES].",
)
@click.option(
    "--request-timeout",
    type=click.FloatRange(min=0),
    default=None,
    cls=_EnvOption,
    envvar="KIP2CYPHER_MCP_REQUEST_TIMEOUT_S",
    help="Seconds one tool call may take before it answers KIP_4001 (default 120; 0 = none) [env KIP2CYPHER_MCP_REQUEST_TIMEOUT_S].",
)
@click.option(
    "--jwks",
    default=None,
    cls=_EnvOption,
    envvar="KIP2CYPHER_MCP_JWT_JWKS",
    help="HTTP, OAuth resource server: accept JWT access tokens signed by a key of this JWKS (https:// URL or file) [env KIP2CYPHER_MCP_JWT_JWKS].",
)
@click.option(
    "--jwt-issuer",
    default=None,
    cls=_EnvOption,
    envvar="KIP2CYPHER_MCP_JWT_ISSUER",
    help="With --jwks: the `iss` tokens must carry [env KIP2CYPHER_MCP_JWT_ISSUER].",
)
@click.option(
    "--jwt-audience",
    default=None,
    cls=_EnvOption,
    envvar="KIP2CYPHER_MCP_JWT_AUDIENCE",
    help="With --jwks: accepted `aud` values, comma-separated (default: the resource URL) [env KIP2CYPHER_MCP_JWT_AUDIENCE].",
)
@click.option(
    "--jwt-namespace-claim",
    default="kip_namespace",
    show_default=True,
    cls=_EnvOption,
    envvar="KIP2CYPHER_MCP_JWT_NAMESPACE_CLAIM",
    help="With --jwks: the claim that binds a token to a namespace [env KIP2CYPHER_MCP_JWT_NAMESPACE_CLAIM].",
)
@click.option(
    "--resource-url",
    default=None,
    cls=_EnvOption,
    envvar="KIP2CYPHER_MCP_RESOURCE_URL",
    help="HTTP: this endpoint's public URL, e.g. https://kip.example.com/mcp (default: the bound address) [env KIP2CYPHER_MCP_RESOURCE_URL].",
)
@click.option("--readonly", is_flag=True, cls=_EnvOption, envvar="KIP2CYPHER_READONLY", help="Expose only execute_kip_readonly [env KIP2CYPHER_READONLY=1].")
@click.option("--bootstrap", is_flag=True, help="Create the schema objects and apply Genesis before serving (idempotent; not with --readonly).")
@click.option("--with-capsules", is_flag=True, help="With --bootstrap: also apply the profile's whole official capsule set ($self, Person, Event, …).")
@_PROFILE
@_YES_BOOTSTRAP
@click.option("--start-local", is_flag=True, help="Start the bundled local Neo4j when no --uri / NEO4J_URI is set.")
@_connect_options
def mcp_cmd(
    transport: str,
    host: str,
    port: int,
    http_path: str,
    tokens_file: str | None,
    no_auth: bool,
    allowed_hosts: str | None,
    allowed_origins: str | None,
    max_request_bytes: int | None,
    request_timeout: float | None,
    jwks: str | None,
    jwt_issuer: str | None,
    jwt_audience: str | None,
    jwt_namespace_claim: str,
    resource_url: str | None,
    readonly: bool,
    bootstrap: bool,
    with_capsules: bool,
    profile: str | None,
    yes: bool,
    start_local: bool,
    conn: Connect,
) -> None:
    """Serve execute_kip and execute_kip_readonly over MCP: stdio (default) or streamable HTTP.

    stdio: stdout carries only the protocol; logs go to stderr. http: every request needs
    `Authorization: Bearer <token>` (a static token, or with --jwks an OAuth JWT); an `ro` token
    (scope kip:read) may only use execute_kip_readonly.
    """
    from .. import mcp_server

    logs.configure("INFO", text=logs.SERVER_TEXT, tracebacks=True)  # access lines at INFO (docs/interfaces.md, "Logs")
    if bootstrap:
        _check_mcp_bootstrap(conn, start_local=start_local, capsules=with_capsules, profile=profile, yes=yes)
    http = None
    try:
        if transport == "http":
            http = mcp_server.HttpOptions(
                host=host,
                port=port,
                path=http_path,
                no_auth=no_auth,
                tokens=mcp_server.parse_tokens(lookup("KIP2CYPHER_MCP_TOKENS"), tokens_file),
                allowed_hosts=_csv(allowed_hosts),
                allowed_origins=_csv(allowed_origins),
                max_request_bytes=max_request_bytes or mcp_server.DEFAULT_MAX_REQUEST_BYTES,
                jwt=mcp_server.JwtOptions(jwks, jwt_issuer or "", tuple(_csv(jwt_audience)), jwt_namespace_claim) if jwks else None,
                resource_url=resource_url,
                metrics_token=lookup("KIP2CYPHER_MCP_METRICS_TOKEN"),
            )
        timeout = mcp_server.DEFAULT_REQUEST_TIMEOUT_S if request_timeout is None else request_timeout
        mcp_server.run(
            lambda: conn.open(start_local=start_local, asynchronous=True),
            readonly=readonly,
            bootstrap=bootstrap,
            capsules=with_capsules,
            profile=profile,
            http=http,
            request_timeout_s=timeout,
        )
    except mcp_server.McpConfigError as exc:
        raise click.ClickException(str(exc))


def _bootstrap_target(nexus: Any, profile: str | None, *, everything: bool, upgrade: bool, yes: bool, dry_run: bool, echo: Any) -> bool:
    """Before a bootstrap: next to data that is not KIP's (or with ``dry_run``), print exactly what
    it creates; refuse (KIP's data aside) without ``yes``. True when the bootstrap may run."""
    from .target import TargetRefused, bootstrap_plan

    foreign = nexus.foreign_nodes()
    if foreign or dry_run:
        for line in bootstrap_plan(nexus, profile, everything=everything, upgrade=upgrade):
            echo(line)
    if dry_run:
        echo("--dry-run: nothing was written.")
        return False
    if foreign and not yes:
        raise TargetRefused(
            f"{nexus.uri} holds {foreign} node(s) that are not KIP data; bootstrap would add what is listed above to that database. "
            "Re-run with --yes to write there anyway, or point --uri / NEO4J_URI / --database at a database of its own."
        )
    return True


def _check_mcp_bootstrap(conn: Connect, *, start_local: bool, capsules: bool, profile: str | None, yes: bool) -> None:
    """``mcp --bootstrap`` next to data that is not KIP's: the plan on stderr (stdout may carry
    the protocol), and no server without ``--yes``."""
    from .target import TargetRefused

    with conn.open(start_local=start_local) as nexus:
        try:
            _bootstrap_target(nexus, profile, everything=capsules, upgrade=False, yes=yes, dry_run=False, echo=lambda line: click.echo(line, err=True))
        except TargetRefused as exc:
            raise click.ClickException(str(exc))


@main.command("bootstrap")
@click.option("--with-capsules", is_flag=True, help="Also apply the profile's whole official capsule set (Person, $self, Event, …).")
@_PROFILE
@click.option(
    "--upgrade",
    is_flag=True,
    help="Move the nexus forward to --profile, applying its capsules as the engine (they may change protected structures); a downgrade is refused.",
)
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json", "table"]), default="text", show_default=True, help="json: each capsule's UPSERT result, ids included."
)
@click.option("-v", "--verbose", is_flag=True, help="text/table: also list the element ids each capsule upserted.")
@click.option("--dry-run", is_flag=True, help="Print what bootstrap would create (constraints, indexes, nexus node, Genesis elements) and write nothing.")
@_YES_BOOTSTRAP
@_connect_options
def bootstrap_cmd(with_capsules: bool, profile: str | None, upgrade: bool, fmt: str, verbose: bool, dry_run: bool, yes: bool, conn: Connect) -> None:
    """Create the schema objects and apply the official Genesis of --profile (idempotent).

    A nexus already bootstrapped keeps its profile unless --upgrade moves it forward.

    Into a database that holds data other than KIP's it first prints what it will create and
    needs --yes; --dry-run prints that and writes nothing."""
    from .. import profiles
    from .demo import where
    from .output import make_console, table, writes_summary
    from .source import write_counts
    from .target import TargetRefused

    with conn.open(start_local=True) as nexus:
        click.echo(f"{'Planning a bootstrap of' if dry_run else 'Bootstrapping'} {where(nexus)}", err=True)
        try:
            if not _bootstrap_target(nexus, profile, everything=with_capsules, upgrade=upgrade, yes=yes, dry_run=dry_run, echo=click.echo):
                return
        except TargetRefused as exc:
            raise click.ClickException(str(exc))
        except KipError as exc:  # an --upgrade that would be a downgrade
            _fail(exc.to_dict())
        try:
            applied = nexus.bootstrap(profile=profile, capsules=with_capsules, upgrade=upgrade)
        except KipError as exc:
            _fail(exc.to_dict())
        state = nexus.profile_state()
    if fmt == "json":
        click.echo(dump(applied))
        return
    click.echo(f"profile: {profiles.shown(state['profile'])}", err=True)
    counts = {name: write_counts(profiles.capsule_text(name, state["profile"])) for name in applied}
    console = make_console()
    if fmt == "table":
        rows = [[name, c.upserts, c.concepts, c.propositions] for name, c in counts.items()]
        console.print(table(["capsule", "UPSERT blocks", "concepts", "propositions"], rows, console=console, count=False))
    else:
        for name, c in counts.items():
            console.print(f"applied {name}: {writes_summary(c)}", soft_wrap=True)
    if verbose:
        for name, result in applied.items():
            console.print(f"{name} ids: {json.dumps(result, ensure_ascii=False)}", soft_wrap=True)


@main.command("migrate")
@click.option("--dry-run", is_flag=True, help="Only count, per namespace, what would be relabelled and retyped; write nothing.")
@click.option("--batch", type=click.IntRange(min=1), default=None, help="Elements changed per inner transaction (default 2000).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@_connect_options(namespace=False)
def migrate_cmd(dry_run: bool, batch: int | None, fmt: str, conn: Connect) -> None:
    """Move every namespace of the database to the storage layout this kip2cypher reads
    (docs/migration.md): type labels and predicate relationship types into KIP's own label space.

    Runs in batches and can be re-run after an interruption (it changes only what is still in the
    old layout); a nexus written by a newer kip2cypher is refused."""
    from ..cypher import migration
    from .demo import where

    with conn.open() as nexus:
        click.echo(f"{'Surveying' if dry_run else 'Migrating'} {where(nexus)}", err=True)
        report = nexus.migrate(dry_run=dry_run, batch=batch or migration.DEFAULT_BATCH)
    if fmt == "json":
        click.echo(dump(report))
        return
    for line in _migration_lines(report):
        click.echo(line)


def _migration_lines(report: dict[str, Any]) -> list[str]:
    """The migration report as text: per namespace its state, counts and each label / type renamed."""
    verb = ("would relabel", "would retype") if report["dry_run"] else ("relabelled", "retyped")
    lines = []
    for entry in report["namespaces"]:
        where = f"namespace {entry['namespace']!r}" if entry["namespace"] else "default namespace"
        if entry["state"] == "current":
            lines.append(f"{where}: layout {report['layout']} already, nothing to do")
            continue
        lines.append(
            f"{where}: layout {entry['layout'] or 1} -> {report['layout']} ({entry['state']}): "
            f"{verb[0]} {entry['concepts']} concepts, {verb[1]} {entry['relationships']} relationships"
        )
        lines += [f"  label {item['from']} -> {item['to']}: {item['count']} concepts" for item in entry["labels"]]
        lines += [f"  type {item['from']} -> {item['to']}: {item['count']} relationships" for item in entry["types"]]
    if report["dry_run"]:
        lines.append("--dry-run: nothing was written.")
    return lines


@main.command("adopt")
@click.argument("mapping", type=click.Path(dir_okay=False))
@click.option("--dry-run", is_flag=True, help="Only read: print what would be registered and how many nodes and relationships the mapping exposes.")
@click.option("--create-index", is_flag=True, help="Also create the full-text index keyword SEARCH uses over the mapped text properties.")
@click.option(
    "--embed",
    is_flag=True,
    help="Also compute the vectors semantic SEARCH uses for adopted concepts and relationships (on KIP's own shadow nodes); re-run to refresh them.",
)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@_connect_options
def adopt_cmd(mapping: str, dry_run: bool, create_index: bool, embed: bool, fmt: str, conn: Connect) -> None:
    """Let KIP read the team's own graph: register the labels and relationship types a TOML
    mapping names as read-only concept types and predicates of the namespace (docs/adopt.md).
    Idempotent; writes nothing of the team's nodes or relationships."""
    from .. import adoption
    from . import adopt_report
    from .demo import where

    chosen = adoption.load(mapping)
    with conn.open() as nexus:
        click.echo(f"{'Surveying' if dry_run else 'Adopting into'} {where(nexus)}, namespace {nexus.settings.namespace or '(default)'}", err=True)
        report = nexus.adopt(chosen, dry_run=dry_run, create_index=create_index)
        if embed and not dry_run:
            report["vectors"] = nexus.embed_adopted()
    if fmt == "json":
        click.echo(dump(report))
        return
    for line in adopt_report.report_lines(report) + (adopt_report.embed_lines(report["vectors"]) if "vectors" in report else []):
        click.echo(line)


@main.command("demo")
@click.option("--yes", is_flag=True, help="Write the example capsules even into a database that holds data other than KIP's.")
@_connect_options
def demo_cmd(yes: bool, conn: Connect) -> None:
    """Bootstrap, load an example capsule and run queries, showing each one's Cypher.

    Without --uri / NEO4J_URI the demo starts (or reuses) a local Neo4j of its own: port
    KIP2CYPHER_DEMO_PORT (7697), data directory KIP2CYPHER_DEMO_HOME — never the server on 7687.
    """
    from .. import localneo4j
    from . import demo

    if conn.uri is None:
        cfg = localneo4j.demo_config()
        try:
            version = localneo4j.start(cfg, log=lambda m: click.echo(m, err=True), require_own=True)
        except localneo4j.LocalNeo4jError as exc:
            raise click.ClickException(str(exc))
        click.echo(
            f"The demo's own local Neo4j {version} at {cfg.uri} (data: {cfg.home}; stop it with `kip2cypher neo4j stop --port {cfg.port} --data {cfg.home}`)",
            err=True,
        )
        conn = dataclasses.replace(conn, uri=cfg.uri)
    with conn.open() as nexus:
        try:
            demo.run_demo(nexus, click.echo, yes=yes)
        except demo.DemoRefused as exc:
            raise click.ClickException(str(exc))


# ---------------------------------------------------------------- namespaces
@main.group("namespaces")
def namespaces_group() -> None:
    """The isolated nexuses of one database (docs/namespaces.md)."""


@namespaces_group.command("list")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@_connect_options(namespace=False)
def namespaces_list(fmt: str, conn: Connect) -> None:
    """List the namespaces with their concept and proposition counts."""
    from .output import make_console, table

    with conn.open() as nexus:
        found = nexus.namespaces()
    if fmt == "json":
        click.echo(dump([info.to_dict() for info in found]))
        return
    rows = [[info.namespace or "(default)", info.concepts, info.propositions, "yes" if info.bootstrapped else "no"] for info in found]
    console = make_console()
    console.print(table(["namespace", "concepts", "propositions", "schema created"], rows, console=console, count=False))


@namespaces_group.command("drop")
@click.argument("name")
@click.option("--yes", is_flag=True, help="Really delete the namespace's elements, constraints, indexes and nexus node.")
@_connect_options(namespace=False)
def namespaces_drop(name: str, yes: bool, conn: Connect) -> None:
    """Delete the namespace NAME: all its concepts and propositions, its schema objects and its
    nexus node. Nothing of another namespace or outside KIP is touched. Refused without --yes."""
    with conn.open() as nexus:
        if not yes:
            info = {i.namespace: i for i in nexus.namespaces()}.get(name)
            what = f"{info.concepts} concepts and {info.propositions} propositions" if info else "nothing (no such namespace)"
            raise click.ClickException(f"Dropping namespace {name!r} would delete {what} and its schema objects; add --yes to do it.")
        removed = nexus.drop_namespace(name)
    click.echo(dump(removed))
