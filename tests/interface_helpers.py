"""Helpers for the interface tests: injected plans and a graph fingerprint.

``FakePlans`` maps exact command texts to hand-built ``Plan``s, so the executor's
machinery (batch rules, READ/WRITE access, timeouts, caps, metadata, error
mapping) is tested against the real Neo4j with Cypher we control — including
Cypher no correct compiler would ever emit for that command.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from kip2cypher.errors import KipError
from kip2cypher.execution.background import wait_all
from kip2cypher.execution.requests import Explain, Run
from kip2cypher.lower.plan import Compiled, Plan


def kql_text(tag: str) -> str:
    """A parseable FIND (so readonly pre-scans classify it as KQL) unique per tag."""
    return f'FIND(?x) WHERE {{ ?x {{type: "Probe{tag}"}} }}'


def kml_text(tag: str) -> str:
    """A parseable UPSERT unique per tag."""
    return f'UPSERT {{ CONCEPT ?x {{ {{type: "Probe", name: "{tag}"}} }} }}'


def meta_text(tag: str) -> str:
    return f'DESCRIBE CONCEPT TYPE "Probe{tag}"'


def compiled(cypher: str, params: dict[str, Any] | None = None) -> Compiled:
    return Compiled(cypher, MappingProxyType(dict(params or {})), "probe")


@dataclass(frozen=True)
class ProbePlan(Plan):
    """A hand-built plan (tests only): its kind and access, and the program body to run —
    Cypher we control, including Cypher no correct compiler would emit for that command."""

    probe_kind: str = "KQL"
    probe_access: str = "READ"
    statements: tuple[Compiled, ...] = ()
    body: Callable[[], Any] = field(default=None, compare=False)  # generator function: the program
    dry: Callable[[], Any] | None = field(default=None, compare=False)  # generator function: the dry run

    @property
    def kind(self) -> str:
        return self.probe_kind

    @property
    def access(self) -> str:
        return self.probe_access

    def steps(self) -> tuple[Compiled, ...]:
        return self.statements


def probe_program(plan: ProbePlan, ctx: Any):
    """The program of a ProbePlan; without its own dry run, a dry run EXPLAINs its statements."""
    if ctx.dry_run:
        if plan.dry is not None:
            return (yield from plan.dry())
        for statement in plan.statements:
            yield Explain(statement)
        return {"result": {"dry_run": True, "kind": plan.kind, "statements": [s.text for s in plan.statements]}}
    return (yield from plan.body())


def cypher_plan(
    kind: str,
    access: str,
    cypher: str,
    params: dict[str, Any] | None = None,
    *,
    shape: Callable[[list], Any] = lambda rows: rows,
    dry: Callable[[], Any] | None = None,
) -> ProbePlan:
    stmt = compiled(cypher, params)

    def body():
        rows = yield Run(stmt)
        return {"result": shape(rows)}

    return ProbePlan(probe_kind=kind, probe_access=access, statements=(stmt,), body=body, dry=dry)


def program_plan(kind: str, access: str, body: Callable[[], Any]) -> ProbePlan:
    """A plan whose program is ``body`` (a generator function yielding requests)."""
    return ProbePlan(probe_kind=kind, probe_access=access, body=body)


def failing_plan(kind: str, access: str, code: str, *, write_first: str | None = None) -> ProbePlan:
    """A plan that (optionally) writes, then fails with a KIP error — the write must roll back."""
    stmt = compiled(write_first or "RETURN 1 AS one")

    def body():
        yield Run(stmt)
        raise KipError(code, f"probe failure {code}")

    return ProbePlan(probe_kind=kind, probe_access=access, statements=(stmt,), body=body)


class FakePlans(dict):
    """text → Plan | (parameters → Plan); unknown texts go to the real compiler."""

    def __init__(self, real: Callable) -> None:
        super().__init__()
        self.real = real
        self.compiled: list[str] = []

    def compile_plan(self, text: str, parameters: dict[str, Any] | None = None, settings: Any = None, **options: Any) -> Plan:
        self.compiled.append(text)
        if text in self:
            entry = self[text]
            return entry if isinstance(entry, Plan) else entry(dict(parameters or {}))
        return self.real(text, parameters, settings, **options)

    def install(self, monkeypatch) -> FakePlans:
        """Serve these plans to the executor (and their program to the program table)."""
        import kip2cypher.execution.batch as batch_module
        import kip2cypher.execution.core as core_module
        from kip2cypher.execution import programs

        monkeypatch.setattr(batch_module, "compile_plan", self.compile_plan)
        monkeypatch.setattr(core_module, "compile_plan", self.compile_plan)
        monkeypatch.setitem(programs.PROGRAMS, ProbePlan, probe_program)
        return self


def fingerprint(driver, database: str | None = None) -> str:
    """A hash of every node (labels, properties) and relationship (type, endpoints, properties)."""
    # vectors are derived data written after a commit (execution.background): settle them first
    assert wait_all(120), "the background embedding refresh did not settle"
    nodes = driver.execute_query("MATCH (n) RETURN elementId(n) AS eid, labels(n) AS labels, properties(n) AS props", database_=database).records
    rels = driver.execute_query(
        "MATCH (a)-[r]->(b) RETURN elementId(a) AS a, type(r) AS t, elementId(b) AS b, properties(r) AS props", database_=database
    ).records
    canon = {
        "nodes": sorted(json.dumps([sorted(r["labels"]), r["props"]], sort_keys=True, default=str) for r in nodes),
        "rels": sorted(json.dumps([r["t"], r["props"]], sort_keys=True, default=str) for r in rels),
        "counts": [len(nodes), len(rels)],
    }
    return hashlib.sha256(json.dumps(canon, sort_keys=True).encode()).hexdigest()


def count(driver, label: str, database: str | None = None) -> int:
    return driver.execute_query(f"MATCH (n:`{label}`) RETURN count(n) AS c", database_=database).records[0]["c"]


def shape_checked(monkeypatch) -> None:
    """Make every Nexus.execute response in the calling test pass the §6.2 response model."""
    from kip2cypher.models import check_response
    from kip2cypher.nexus import Nexus

    real = Nexus.execute

    def execute(self, arguments, *, readonly=False):
        response = real(self, arguments, readonly=readonly)
        batch = isinstance(arguments, dict) and arguments.get("commands") is not None and "error" not in response
        check_response(response, batch=batch)
        return response

    monkeypatch.setattr(Nexus, "execute", execute)
