"""Helpers for the interface tests: injected plans and a graph fingerprint.

``FakePlans`` maps exact command texts to hand-built ``Plan``s, so the executor's
machinery (batch rules, READ/WRITE access, timeouts, caps, metadata, error
mapping) is tested against the real Neo4j with Cypher we control — including
Cypher no correct compiler would ever emit for that command.
"""
from __future__ import annotations

import hashlib
import json
from typing import Any, Callable, Optional

from kip2cypher.errors import KipError
from kip2cypher.lower._legacy import Compiled, Plan, Tx


def kql_text(tag: str) -> str:
    """A parseable FIND (so readonly pre-scans classify it as KQL) unique per tag."""
    return f'FIND(?x) WHERE {{ ?x {{type: "Probe{tag}"}} }}'


def kml_text(tag: str) -> str:
    """A parseable UPSERT unique per tag."""
    return f'UPSERT {{ CONCEPT ?x {{ {{type: "Probe", name: "{tag}"}} }} }}'


def meta_text(tag: str) -> str:
    return f'DESCRIBE CONCEPT TYPE "Probe{tag}"'


def cypher_plan(kind: str, access: str, cypher: str, params: Optional[dict[str, Any]] = None, *, shape: Callable[[list], Any] = lambda rows: rows, dry: Optional[Callable[[Tx], dict]] = None) -> Plan:
    stmt = Compiled(cypher, params or {}, "probe")

    def runner(tx: Tx) -> dict[str, Any]:
        return {"result": shape(tx.run(stmt))}

    return Plan(kind, access, [stmt], runner, dry_result=dry)


def failing_plan(kind: str, access: str, code: str, *, write_first: Optional[str] = None) -> Plan:
    """A plan that (optionally) writes, then fails with a KIP error — the write must roll back."""
    stmt = Compiled(write_first or "RETURN 1 AS one", {}, "probe")

    def runner(tx: Tx) -> dict[str, Any]:
        tx.run(stmt)
        raise KipError(code, f"probe failure {code}")

    return Plan(kind, access, [stmt], runner)


class FakePlans(dict):
    """text → Plan | (parameters → Plan); unknown texts go to the real compiler."""

    def __init__(self, real: Callable) -> None:
        super().__init__()
        self.real = real
        self.compiled: list[str] = []

    def compile_plan(self, text: str, parameters: Optional[dict[str, Any]] = None, settings: Any = None) -> Plan:
        self.compiled.append(text)
        if text in self:
            entry = self[text]
            return entry if isinstance(entry, Plan) else entry(dict(parameters or {}))
        return self.real(text, parameters, settings)


def fingerprint(driver, database: Optional[str] = None) -> str:
    """A hash of every node (labels, properties) and relationship (type, endpoints, properties)."""
    nodes = driver.execute_query(
        "MATCH (n) RETURN elementId(n) AS eid, labels(n) AS labels, properties(n) AS props", database_=database
    ).records
    rels = driver.execute_query(
        "MATCH (a)-[r]->(b) RETURN elementId(a) AS a, type(r) AS t, elementId(b) AS b, properties(r) AS props", database_=database
    ).records
    canon = {
        "nodes": sorted(json.dumps([sorted(r["labels"]), r["props"]], sort_keys=True, default=str) for r in nodes),
        "rels": sorted(json.dumps([r["t"], r["props"]], sort_keys=True, default=str) for r in rels),
        "counts": [len(nodes), len(rels)],
    }
    return hashlib.sha256(json.dumps(canon, sort_keys=True).encode()).hexdigest()


def count(driver, label: str, database: Optional[str] = None) -> int:
    return driver.execute_query(f"MATCH (n:`{label}`) RETURN count(n) AS c", database_=database).records[0]["c"]


def shape_checked(monkeypatch) -> None:
    """Make every Nexus.execute response in the calling test pass the §6.2 response model."""
    from kip2cypher.execute import Nexus
    from kip2cypher.models import check_response

    real = Nexus.execute

    def execute(self, arguments, *, readonly=False):
        response = real(self, arguments, readonly=readonly)
        batch = isinstance(arguments, dict) and arguments.get("commands") is not None and "error" not in response
        check_response(response, batch=batch)
        return response

    monkeypatch.setattr(Nexus, "execute", execute)
