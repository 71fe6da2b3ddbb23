"""The ``kip2cypher`` command line (click), for people."""
from __future__ import annotations

import json
import sys
from typing import Any, Optional

import click

from . import __version__


def _dump(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, indent=2, default=str)


def _connect_options(fn):
    fn = click.option("--database", envvar="NEO4J_DATABASE", default=None, help="Neo4j database (default: server default).")(fn)
    fn = click.option("--password", envvar="NEO4J_PASSWORD", default=None, help="Neo4j password.")(fn)
    fn = click.option("--user", envvar="NEO4J_USERNAME", default=None, help="Neo4j user.")(fn)
    fn = click.option("--uri", envvar="NEO4J_URI", default=None, help="Bolt/neo4j URI (default: the local server).")(fn)
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


@click.group()
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


# ---------------------------------------------------------------- language
def _read_source(source: str) -> str:
    if source == "-":
        return sys.stdin.read()
    with open(source, encoding="utf-8") as fh:
        return fh.read()


@main.command("parse")
@click.argument("source", default="-")
def parse_cmd(source: str) -> None:
    """Print the AST of a KIP command as JSON (or the error JSON, exit 1)."""
    from .errors import KipError
    from .parser import parse
    from .serialize import ast_to_json

    try:
        click.echo(_dump(ast_to_json(parse(_read_source(source)))))
    except KipError as exc:
        click.echo(_dump({"error": exc.to_dict()}))
        sys.exit(1)


@main.command("compile")
@click.argument("source", default="-")
@click.option("--params", default=None, help="Parameters as a JSON object.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
@click.option("--explain", is_flag=True, help="Run EXPLAIN on the configured Neo4j and print the plan.")
@_connect_options
def compile_cmd(source: str, params: Optional[str], fmt: str, explain: bool, uri, user, password, database) -> None:
    """Print the Cypher (and parameters) a KIP command compiles to."""
    from .compiler import compile_command
    from .errors import KipError

    try:
        parameters = json.loads(params) if params else None
        statements = compile_command(_read_source(source), parameters)
    except KipError as exc:
        click.echo(_dump({"error": exc.to_dict()}))
        sys.exit(1)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"--params is not JSON: {exc}")
    if explain:
        with open_nexus(uri, user, password, database) as nexus:
            for statement in statements:
                records = nexus.driver.execute_query("EXPLAIN " + statement["cypher"], statement["parameters"], database_=nexus.database)
                statement["plan"] = _plan_text(records.summary.plan)
    if fmt == "json":
        click.echo(_dump(statements))
        return
    for index, statement in enumerate(statements):
        if len(statements) > 1:
            click.echo(f"// statement {index + 1}{': ' + statement['label'] if statement.get('label') else ''}")
        click.echo(statement["cypher"])
        click.echo(f"// parameters: {json.dumps(statement['parameters'], ensure_ascii=False, default=str)}")
        if "plan" in statement:
            click.echo(statement["plan"])


def _plan_text(plan: Any, depth: int = 0) -> str:
    if not plan:
        return ""
    args = plan.get("args", {}) if isinstance(plan, dict) else {}
    op = plan.get("operatorType", "?") if isinstance(plan, dict) else str(plan)
    detail = args.get("Details", "")
    line = f"{'  ' * depth}+{op}{'  ' + str(detail) if detail else ''}"
    children = plan.get("children", []) if isinstance(plan, dict) else []
    return "\n".join([line] + [_plan_text(child, depth + 1) for child in children])


@main.command("call")
@click.option("--request", "request_file", default=None, help="Read the function-call arguments JSON from FILE (default: stdin).")
@click.option("--readonly", is_flag=True, help="Use execute_kip_readonly.")
@_connect_options
def call_cmd(request_file: Optional[str], readonly: bool, uri, user, password, database) -> None:
    """Read {"command"|"commands", "parameters", "dry_run"} and print the response JSON."""
    raw = _read_source(request_file or "-")
    try:
        arguments = json.loads(raw)
        if not isinstance(arguments, dict):
            raise ValueError("the request must be a JSON object")
    except ValueError as exc:
        from .errors import INVALID_SYNTAX, KipError

        click.echo(_dump({"error": KipError(INVALID_SYNTAX, f"The request is not a JSON object: {exc}", 'Send {"command": "<KIP>"}.').to_dict()}))
        sys.exit(1)
    with open_nexus(uri, user, password, database) as nexus:
        fn = nexus.execute_kip_readonly if readonly else nexus.execute_kip
        known = {k: arguments.get(k) for k in ("command", "commands", "parameters", "dry_run") if k in arguments}
        extra = set(arguments) - set(known)
        if extra:
            from .errors import INVALID_SYNTAX, KipError

            response = {"error": KipError(INVALID_SYNTAX, f"Unknown request keys: {sorted(extra)}", "Allowed keys: command, commands, parameters, dry_run.").to_dict()}
        else:
            response = fn(known.get("command"), commands=known.get("commands"), parameters=known.get("parameters"), dry_run=bool(known.get("dry_run", False)))
    click.echo(_dump(response))
    sys.exit(1 if "error" in response else 0)


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
