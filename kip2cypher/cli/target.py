"""The database a command is about to write KIP into: whose data it holds, and what bootstrap adds.

``demo``, ``bootstrap`` and ``mcp --bootstrap`` refuse, unless given ``--yes``, to write next to
data that is not KIP's (``check_target``); ``bootstrap`` then prints exactly what it would
create (``bootstrap_plan``), and with ``--dry-run`` only prints it (docs/interfaces.md,
"Bootstrap on a shared database").
"""

from __future__ import annotations

import re
from typing import Any

from ..cypher import storage

#: ``CREATE [FULLTEXT|VECTOR] (CONSTRAINT|INDEX) <name> IF NOT EXISTS …``: a catalog statement's kind and object name.
DDL_NAME = re.compile(r"CREATE (?:\w+ )?(CONSTRAINT|INDEX) (\S+) IF NOT EXISTS")


class TargetRefused(Exception):
    """The target database holds data other than KIP's and ``--yes`` was not given."""


def check_target(nexus: Any, what: str, *, yes: bool, own_mark: str | None = None, advice: str = "") -> int:
    """Refuse (``TargetRefused``) to write ``what`` next to data that is not KIP's, unless ``yes``;
    returns how many foreign nodes the database holds."""
    foreign = nexus.foreign_nodes(own_mark)
    if foreign and not yes:
        raise TargetRefused(f"{nexus.uri} holds {foreign} node(s) that are not KIP data; {what}. Re-run with --yes to write there anyway{advice}.")
    return foreign


def capsule_elements(text: str) -> tuple[list[str], int]:
    """The concepts a capsule upserts (``Type:name``) and how many propositions (blocks and SET PROPOSITIONS links)."""
    from ..syntax import ast
    from .source import parsed

    node = parsed(text)
    concepts: list[str] = []
    propositions = 0
    for upsert in node.upserts if isinstance(node, ast.Capsule) else ():
        for block in upsert.blocks:
            if isinstance(block, ast.ConceptBlock):
                identity = block.identity
                concepts.append(f"{getattr(identity.type, 'value', '?')}:{getattr(identity.name, 'value', '?')}")
                propositions += len(block.set_propositions or ())
            else:
                propositions += 1
    return concepts, propositions


def bootstrap_plan(nexus: Any, profile: str | None = None, *, everything: bool = False, upgrade: bool = False) -> list[str]:
    """What ``bootstrap`` creates in the nexus's namespace, one line per item: the missing
    constraints and indexes (their DDL), the nexus node when it is missing, and the elements each
    capsule it applies upserts — the same decision as the bootstrap itself (``profiles.decide``:
    a nexus keeps its profile unless ``upgrade``), with the capsules it skips and why."""
    from .. import profiles
    from ..cypher import catalog

    names = storage.names(nexus.settings.namespace)
    where = f"namespace {names.namespace!r}" if names.namespace else "the default namespace"
    state = nexus.bootstrap_state()
    present = state["schema_objects"]
    missing = [ddl for ddl in catalog.schema(names) if (m := DDL_NAME.match(ddl)) is None or m.group(2) not in present]
    lines = [f"Bootstrap of {where} creates:"]
    lines += [f"  schema: {ddl}" for ddl in missing] or ["  schema: nothing (every constraint and index exists)"]
    if not state["nexus_node"]:
        node = f"{{namespace: {names.namespace!r}, {storage.CURSOR_SECRET}: <random>, {storage.LAYOUT_KEY}: {storage.LAYOUT}}}"
        lines.append(f"  node: (:{storage.NEXUS} {node})")
    held = nexus.profile_state()
    step = profiles.decide(profile, held["profile"], held["genesis"], upgrade=upgrade)
    if step.note:
        lines.append(f"  profile: {step.note}")
    wanted = profiles.capsules(step.profile, everything=everything) if step.profile else []
    applied = profiles.capsules(step.profile, everything=everything, present=set(held["actors"])) if step.profile else []
    for name in wanted:
        if name not in applied:
            lines.append(f"  skips capsule {name}: {profiles.ACTORS[name]} exists already (an actor is seeded once; a replay would reset what it learned)")
            continue
        concepts, propositions = capsule_elements(profiles.capsule_text(name, step.profile))
        lines.append(f"  capsule {name}: upserts {len(concepts)} concepts and {propositions} propositions:")
        lines.append("    " + ", ".join(concepts))
    return lines
