"""The statements of ``kip2cypher migrate`` (docs/migration.md): storage layout 1 → ``storage.LAYOUT``.

Layout 1 gave a memory concept its type as a bare label (``Drug``) and a proposition's native
relationship the bare predicate as its type (``treats``; ``alice/treats`` in namespace ``alice``).
Layout 2 moves both into KIP's own label space (``storage.Names.label`` / ``.rel``:
``kip:Drug``, ``kip.alice:treats``); everything else — the engine labels, ``KIP_SUBJECT`` /
``KIP_OBJECT``, every property (ids, attributes, metadata, vectors), the nexus node's secret and
adoption mapping, the shadow vector nodes, every schema object — is the same in both.

Each step selects exactly the elements still in layout 1, so it is idempotent and a migration
killed half-way is finished by running it again:

- a concept of the namespace (its concept label) that still carries its bare type label or
  lacks its new one gets the new label and loses the bare one, in one write;
- a native relationship is the namespace's when it runs from a proposition's ``KIP_SUBJECT`` end
  to its ``KIP_OBJECT`` end, carries the namespace's link property with the proposition's id and
  has the old type: exactly what layout 1 wrote (also at an adopted team node, link_memory). It
  is recreated with the new type and the same properties, and the old one deleted, in one write;
- last, the namespace's nexus node records the layout.

The two bulk steps run as ``CALL { … } IN TRANSACTIONS OF $batch ROWS`` (inner transactions of
``batch`` elements, so no transaction holds more than a batch's changes whatever the nexus's
size), which Neo4j runs only in an auto-commit statement: the executor's ADMIN access
(``execution.loop.AUTO_COMMIT``). Every type, predicate and namespace travels as a parameter
(dynamic labels and types, ``$(…)``); only engine names are part of the text.
"""

from __future__ import annotations

from typing import Any

from ..errors import INTERNAL_ERROR, KipError
from ..version import __version__
from . import catalog, storage
from .builder import Ident, Param, Statement
from .compiled import EMPTY, Compiled

LEGACY_LAYOUT = catalog.LEGACY_LAYOUT
#: Elements changed per inner transaction by default (``kip2cypher migrate --batch``).
DEFAULT_BATCH = 2_000

#: The labels and nexus nodes of the database: which namespaces exist and the layout each records.
SURVEY = Compiled(catalog.LAYOUT_SURVEY, EMPTY, "the namespaces and their recorded layouts")


def namespace_layouts(labels: list[str], nexuses: list[dict[str, Any]]) -> dict[str, int | None]:
    """``SURVEY``'s row → every namespace of the database and the layout its nexus node records
    (None: no nexus node; its elements were found by their concept or proposition label)."""
    found: dict[str, int | None] = {}
    for label in labels:
        namespace = storage.element_label_namespace(label)
        if namespace is not None:
            found.setdefault(namespace, None)
    for nexus in nexuses:
        found[nexus["namespace"]] = nexus["layout"]
    return found


def legacy_rel_prefix(names: storage.Names) -> str:
    """What layout 1 put before a predicate in a relationship type: nothing in the default
    namespace, ``<namespace>/`` in a named one."""
    return names.namespace + storage.PREDICATE_SEPARATOR if names.namespace else ""


def _params(names: storage.Names) -> dict[str, Param]:
    return {"vocabulary": Param(names.predicate_prefix, "vocabulary"), "legacy": Param(legacy_rel_prefix(names), "legacy")}


def _pending_concept(stmt: Statement, names: storage.Names, p: dict[str, Param]) -> None:
    """``WHERE`` of a concept still in layout 1: its bare type label, or not yet its new one."""
    stmt.line("WITH n WHERE n.type IN labels(n) OR NOT (", p["vocabulary"], " + n.type) IN labels(n)")


def _legacy_link(stmt: Statement, names: storage.Names, p: dict[str, Param]) -> None:
    """``r``: the layout-1 native relationship of proposition ``p`` (bound), from its subject ``s``
    to its object ``o``: the namespace's link property holds the proposition's id, the type is the old one."""
    stmt.line("MATCH (p)-[:", names.subject_rel, "]->(s)")
    stmt.line("MATCH (p)-[:", names.object_rel, "]->(o)")
    # both ends bound first: one Expand(Into) of the old type, never a walk of a dense end's relationships
    stmt.line("WITH p, s, o")
    stmt.line("MATCH (s)-[r:$(", p["legacy"], " + p.predicate)]->(o) WHERE r.", Ident(names.link_id), " = p.id")


def _tally(names: storage.Names, var: str, label: str, select: Any, name: str, what: str) -> Compiled:
    """``MATCH (var:label)``, the ``select`` step, and per ``name`` how many rows it kept."""
    stmt = Statement()
    stmt.line("MATCH (", var, ":", label, ")")
    select(stmt, names, _params(names))
    stmt.line("RETURN ", name, " AS name, count(*) AS count ORDER BY name")
    return Compiled.of(stmt, what)


def _in_batches(names: storage.Names, var: str, label: str, select: Any, change: Any, what: str) -> Compiled:
    """``MATCH (var:label)`` and, per row in inner transactions of ``$batch`` rows, the ``select``
    step and the lines ``change(params)`` gives; returns how many rows were changed (``done``)."""
    p = _params(names)
    stmt = Statement()
    stmt.line("MATCH (", var, ":", label, ")")
    with stmt.block("CALL (", var, ")", close="} IN TRANSACTIONS OF $batch ROWS"):
        select(stmt, names, p)
        for parts in change(p):
            stmt.line(*parts)
        stmt.line("RETURN count(*) AS done")
    stmt.line("RETURN sum(done) AS done")
    return Compiled.of(stmt, what)


def pending_concepts(names: storage.Names) -> Compiled:
    """Per concept type, how many concepts of the namespace are still in layout 1 (``--dry-run``)."""
    return _tally(names, "n", names.concept, _pending_concept, "n.type", "concepts still carrying their bare type label, per type")


def pending_links(names: storage.Names) -> Compiled:
    """Per predicate, how many native relationships of the namespace still have the old type (``--dry-run``)."""
    return _tally(names, "p", names.proposition, _legacy_link, "p.predicate", "native relationships still of the old type, per predicate")


def relabel(names: storage.Names) -> Compiled:
    """Give every layout-1 concept of the namespace its new type label and remove the bare one,
    ``$batch`` concepts per inner transaction; returns how many were changed (``done``)."""

    def change(p: dict[str, Param]) -> list[tuple[Any, ...]]:
        return [("SET n:$(", p["vocabulary"], " + n.type)"), ("REMOVE n:$(n.type)",)]

    return _in_batches(names, "n", names.concept, _pending_concept, change, "relabel the concepts, in batches")


def retype(names: storage.Names) -> Compiled:
    """Recreate every layout-1 native relationship of the namespace with its new type and the
    same properties and delete the old one, ``$batch`` propositions per inner transaction;
    returns how many were changed (``done``)."""

    def change(p: dict[str, Param]) -> list[tuple[Any, ...]]:
        return [("CREATE (s)-[m:$(", p["vocabulary"], " + p.predicate)]->(o)"), ("SET m = properties(r)",), ("DELETE r",)]

    return _in_batches(names, "p", names.proposition, _legacy_link, change, "recreate the native relationships with their new types, in batches")


def mark(names: storage.Names) -> Compiled:
    """Record the layout on the namespace's nexus node (the last step: until it runs, every
    command of this build refuses the namespace)."""
    stmt = Statement()
    stmt.line(
        "MATCH (n:",
        storage.NEXUS,
        " {namespace: ",
        Param(names.namespace, "namespace"),
        "}) SET n.",
        storage.LAYOUT_KEY,
        " = ",
        Param(storage.LAYOUT, "layout"),
        " RETURN count(n) AS marked",
    )
    return Compiled.of(stmt, "record the layout on the nexus node")


def nexus_read(names: storage.Names) -> Compiled:
    """``catalog.nexus_read`` as a statement of a program."""
    return Compiled(catalog.nexus_read(names), {"namespace": names.namespace}, "the nexus node")


def nexus_create(names: storage.Names) -> Compiled:
    """``catalog.NEXUS_CREATE``: the nexus node, created in this build's layout with a secret the server draws."""
    return Compiled(catalog.NEXUS_CREATE, {"namespace": names.namespace, "layout": storage.LAYOUT}, "the nexus node")


def schema(names: storage.Names) -> tuple[Compiled, ...]:
    """The namespace's constraints and indexes (``catalog.schema``), one statement each."""
    return tuple(Compiled(ddl, EMPTY, "schema") for ddl in catalog.schema(names))


def where(namespace: str) -> str:
    return f"namespace {namespace!r}" if namespace else "the default namespace"


def layout_refusal(found: int | None, namespace: str) -> KipError | None:
    """The KIP error every command of this build answers for a nexus stored in another layout
    (None: the layout is this build's, or the namespace has no nexus yet). KIP_4003: nothing the
    agent sends can fix it; the hint is for the operator it has to tell."""
    if found is None or found == storage.LAYOUT:
        return None
    if found > storage.LAYOUT:
        return newer_layout(found, namespace)
    return KipError(
        INTERNAL_ERROR,
        f"The nexus of {where(namespace)} is stored in layout {found}, an older storage layout; kip2cypher {__version__} reads and "
        f"writes layout {storage.LAYOUT} only, so it answers no command on this nexus until the database is migrated. Nothing was read or written.",
        "Ask the operator to run `kip2cypher migrate --dry-run` (shows what would change) and then `kip2cypher migrate`, which moves every "
        "namespace of the database to the new layout in batches and can be re-run if interrupted (docs/migration.md).",
    )


def newer_layout(found: int, namespace: str) -> KipError:
    """A nexus written by a newer kip2cypher: refused by every command and by the migration."""
    return KipError(
        INTERNAL_ERROR,
        f"The nexus of {where(namespace)} is stored in layout {found}, written by a newer kip2cypher; kip2cypher {__version__} knows "
        f"layouts up to {storage.LAYOUT} and neither reads nor migrates it. Nothing was read or written.",
        "Upgrade kip2cypher on this machine to the version that wrote the database (pip install -U kip2cypher); a layout is never migrated back.",
    )
