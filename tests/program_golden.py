"""Program goldens: the sequence of requests a command's program issues, driven by canned rows.

File format (``tests/golden/programs/*.txt``, one file per area)::

    === a unique case name
    --- kip                           (or --- admin: an administrative program of the nexus core,
    UPSERT { … }                       its name and a line of JSON arguments; ``ADMIN_PROGRAMS``)
    --- request parameters            (optional: the request's `parameters` JSON)
    {"name": "Aspirin"}
    --- settings                      (optional: Settings fields for this case)
    {"strict_schema": true}
    --- dry run                       (optional, empty: run the program as a dry run)
    --- replies                       (one JSON value per line: the reply to each Run / Embed, in order)
    [{"i": 0, "id": null, "schema": null}]
    [[0.1, 0.2, 0.3]]
    --- program                       (generated: one line per request, then its run-time parameters)
    run    UPSERT: check types/predicates and look up outside targets
           {"refs": […]}
    --- response                      (generated: the command's response, or the KIP error code)
    {"result": …}

The statements' texts are pinned by the plan goldens (``test_golden.py``); a program golden
pins what the program does with them: which it runs, in which order, with which run-time
parameters, and what it answers for the rows it was given. Every statement a program issues
must be one ``lower.compile.issued`` lists (what ``kip2cypher compile`` prints, and what the
plan goldens EXPLAIN on Neo4j): the plan's steps and, after a KML write, the embedding refresh
the executor composes after it (``programs.start``). Regenerate with ``KIP2CYPHER_REGEN_GOLDEN=1``
(``golden_harness.py``: the harness shared with the Cypher goldens).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from golden_harness import GOLDEN_DIR, GoldenKind, Sections, unknown_section

NOW = "2026-01-01T00:00:00.000Z"


@dataclass
class ProgramCase:
    name: str
    kip: str = ""
    admin: str = ""
    request: dict[str, Any] | None = None
    settings: dict[str, Any] | None = None
    dry_run: bool = False
    replies: list[Any] = field(default_factory=list)
    program: str = ""
    response: str = ""


class GoldenEmbedder:
    """A deterministic stand-in for the embedding model (the model is not what these goldens test)."""

    name = "golden-embedder"
    dimensions = 3

    def embed(self, texts):  # pragma: no cover - programs never call it: the loop does
        raise AssertionError("program goldens reply to Embed requests with canned vectors")


def build(name: str, sections: Sections, filename: str) -> ProgramCase:
    case = ProgramCase(name)
    for section, body in sections:
        if section == "kip":
            case.kip = body
        elif section == "admin":
            case.admin = body
        elif section == "request parameters":
            case.request = json.loads(body)
        elif section == "settings":
            case.settings = json.loads(body)
        elif section == "dry run":
            case.dry_run = True
        elif section == "replies":
            case.replies = [json.loads(line) for line in body.splitlines() if line.strip()]
        elif section == "program":
            case.program = body
        elif section == "response":
            case.response = body
        else:
            raise unknown_section(filename, section, name)
    return case


def render(case: ProgramCase) -> list[str]:
    out = [f"=== {case.name}", *(["--- admin", case.admin] if case.admin else ["--- kip", case.kip])]
    if case.request is not None:
        out += ["--- request parameters", _json(case.request)]
    if case.settings is not None:
        out += ["--- settings", _json(case.settings)]
    if case.dry_run:
        out.append("--- dry run")
    out.append("--- replies")
    out += [_json(reply) for reply in case.replies]
    return out + ["--- program", case.program, "--- response", case.response, ""]


#: The program goldens: ``tests/golden/programs/*.txt``; the generated part is the requests and the response.
PROGRAMS = GoldenKind(GOLDEN_DIR / "programs", build, render, lambda case: (case.program, case.response))


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=_plain)


def _plain(value: Any) -> Any:
    """What an administrative program returns that JSON has no word for."""
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if hasattr(value, "to_json"):
        return json.loads(value.to_json())
    raise TypeError(f"not JSON: {value!r}")


def admin_program(spec: str, ctx: Any) -> Any:
    """The administrative program a case's ``--- admin`` section names: ``name`` and a line of
    JSON arguments (the programs ``execution.core.Core`` runs for bootstrap, adoption, the
    namespaces and the bootstrap target checks)."""
    from kip2cypher import adoption
    from kip2cypher.execution.programs import admin, adopt, namespaces, target

    name, _, text = spec.partition("\n")
    args = json.loads(text) if text.strip() else {}
    programs = {
        "admin.nexus_node": lambda: admin.nexus_node(ctx),
        "admin.server_version": admin.server_version,
        "admin.ensure_schema": lambda: admin.ensure_schema(ctx),
        "admin.migrate": lambda: admin.migrate(ctx, **args),
        "namespaces.listing": namespaces.listing,
        "namespaces.drop": lambda: namespaces.drop(args["namespace"], args.get("batch", namespaces.DROP_BATCH)),
        "target.foreign_nodes": lambda: target.foreign_nodes(args.get("own_mark")),
        "target.bootstrap_state": lambda: target.bootstrap_state(ctx),
        "adopt.survey": lambda: adopt.survey(
            ctx, adoption.parse(args["mapping"], "the golden mapping"), dry_run=args.get("dry_run", False), create_index=args.get("create_index", False)
        ),
        "adopt.create_indexes": lambda: adopt.create_indexes(args["report"]),
        "adopt.mark_embedded": lambda: adopt.mark_embedded(ctx),
        "adopt.link_counts": lambda: adopt.link_counts(ctx.names),
    }
    return programs[name.strip()]()


def run_case(case: ProgramCase) -> ProgramCase:
    """Compile the case's command and drive its program with the canned replies."""
    from kip2cypher.config import Settings
    from kip2cypher.errors import KipError
    from kip2cypher.execution import programs
    from kip2cypher.execution.requests import Context, Embed, Explain, Run
    from kip2cypher.lower.compile import compile_plan, issued

    settings = Settings(max_hops=10, max_result_rows=10000, strict_schema=False, cypher_prefix="", cursor_secret=b"golden-secret", embedder=False)
    if case.settings:
        settings = settings.replace(**case.settings)
    actual = replace(case, program="", response="")
    lines: list[str] = []
    ctx = Context(settings, NOW, dry_run=case.dry_run, embedder=GoldenEmbedder())
    if case.admin:
        program, listed = admin_program(case.admin, ctx), None
    else:
        try:
            plan = compile_plan(case.kip, case.request, settings)
        except KipError as exc:
            actual.response = f"error {exc.code}"
            return actual
        listed = {s.text for s in issued(plan)}
        program = programs.start(plan, ctx)
    replies = iter(case.replies)
    reply: Any = None
    try:
        while True:
            request = program.send(reply)
            if isinstance(request, (Run, Explain)):
                unlisted = listed is not None and request.statement.text not in listed
                assert not unlisted, f"{case.name}: the program ran a statement its plan does not list: {request.statement.label}"
                verb = "run" if isinstance(request, Run) else "explain"
                lines.append(f"{verb:<8}{request.statement.label}")
                if request.params:
                    lines.append(" " * 8 + _json(dict(request.params)))
                reply = _next(replies, case) if isinstance(request, Run) else None
            elif isinstance(request, Embed):
                lines.append(f"{'embed':<8}{_json(list(request.texts))}")
                reply = _next(replies, case)
            else:  # pragma: no cover
                raise AssertionError(f"unknown request {request!r}")
    except StopIteration as stop:
        actual.response = _json(stop.value)
    except KipError as exc:
        actual.response = f"error {exc.code}: {exc.message}"
    actual.program = "\n".join(lines)
    return actual


def _next(replies, case: ProgramCase) -> Any:
    try:
        return next(replies)
    except StopIteration:
        raise AssertionError(f"{case.name}: the program asked for more replies than the case gives") from None
