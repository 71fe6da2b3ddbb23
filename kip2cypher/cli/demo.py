"""`kip2cypher demo`: bootstrap, load a small capsule, run a few queries and show their Cypher.

Without NEO4J_URI the demo runs on a local server of its own (``localneo4j.demo_config``: its
own port and data directory); with one, it says where it writes and refuses to add its example
capsules to a database holding data that is not KIP's unless asked (``--yes``).
"""

from __future__ import annotations

import json
from collections.abc import Callable

from ..cypher import catalog
from ..errors import KipError
from ..lower.compile import compile_command
from . import target
from .target import TargetRefused

DEMO_SCHEMA = """
UPSERT {
  CONCEPT ?drug_type { {type: "$ConceptType", name: "Drug"} SET ATTRIBUTES { description: "A medicinal substance." } }
  CONCEPT ?symptom_type { {type: "$ConceptType", name: "Symptom"} SET ATTRIBUTES { description: "A sign of illness." } }
  CONCEPT ?class_type { {type: "$ConceptType", name: "DrugClass"} SET ATTRIBUTES { description: "A class of drugs." } }
  CONCEPT ?treats { {type: "$PropositionType", name: "treats"}
    SET ATTRIBUTES { description: "The drug relieves the symptom.", subject_types: ["Drug"], object_types: ["Symptom"] } }
  CONCEPT ?has_side_effect { {type: "$PropositionType", name: "has_side_effect"}
    SET ATTRIBUTES { description: "The drug may cause the symptom.", subject_types: ["Drug"], object_types: ["Symptom"] } }
  CONCEPT ?belongs_to_class { {type: "$PropositionType", name: "belongs_to_class"}
    SET ATTRIBUTES { description: "The drug is a member of the class.", subject_types: ["Drug"], object_types: ["DrugClass"] } }
}
WITH METADATA { source: "kip2cypher demo", author: "demo" }
"""

DEMO_DATA = """
UPSERT {
  CONCEPT ?headache { {type: "Symptom", name: "Headache"} }
  CONCEPT ?fever { {type: "Symptom", name: "Fever"} }
  CONCEPT ?stomach { {type: "Symptom", name: "Stomach Upset"} }
  CONCEPT ?nsaid { {type: "DrugClass", name: "NSAID"} }
  CONCEPT ?aspirin {
    {type: "Drug", name: "Aspirin"}
    SET ATTRIBUTES { risk_level: 2, aliases: ["ASA", "acetylsalicylic acid"] }
    SET PROPOSITIONS { ("treats", ?headache) ("treats", ?fever) ("belongs_to_class", ?nsaid) ("has_side_effect", ?stomach) }
  }
  CONCEPT ?paracetamol {
    {type: "Drug", name: "Paracetamol"}
    SET ATTRIBUTES { risk_level: 1 }
    SET PROPOSITIONS { ("treats", ?headache) ("treats", ?fever) }
  }
}
WITH METADATA { source: "kip2cypher demo", confidence: 0.9 }
"""

DEMO_QUERIES = [
    'FIND(?drug.name, ?drug.attributes.risk_level) WHERE { ?drug {type: "Drug"} (?drug, "treats", {type: "Symptom", name: "Headache"}) } ORDER BY '
    "?drug.attributes.risk_level ASC",
    'FIND(?drug.name) WHERE { ?drug {type: "Drug"} NOT { (?drug, "belongs_to_class", {name: "NSAID"}) } }',
    'FIND(?drug.name, ?effect.name) WHERE { ?drug {type: "Drug"} OPTIONAL { (?drug, "has_side_effect", ?effect) } }',
    'FIND(?pred, COUNT(?o)) WHERE { (?d {type: "Drug", name: "Aspirin"}, ?pred, ?o) }'.replace("?d {", "{"),
    "DESCRIBE CONCEPT TYPES",
]


DEMO_BATCH = [
    'FIND(?d.name WHERE { ?d {type: "Drug"} }',
    'FIND(?d.name) WHERE { ?d {type: "drug"} }',
    {"command": 'FIND(?d.attributes.risk_level) WHERE { ?d {type: "Drug", name: :name} }', "parameters": {"name": "Aspirin"}},
    'UPSERT { CONCEPT ?x { {type: "Drugg", name: "Ibuprofen"} } }',
    "DESCRIBE PRIMER",
]


DEMO_MAPPING = """
[types.Staff]
label = "DemoStaff"
attributes = ["role"]
key = "staff_id"
description = "A colleague, from the team's own staff graph."

[predicates.reports_to]
type = "DEMO_REPORTS_TO"
subject = "Staff"
object = "Staff"
"""
DEMO_ADOPTED_QUERIES = [
    'FIND(?s) WHERE { ?s {type: "Staff", name: "Sam"} }',
    'FIND(?boss.name, ?boss.attributes.role) WHERE { ?s {type: "Staff", name: "Sam"} (?s, "reports_to"{1,3}, ?boss) }',
    'UPSERT { CONCEPT ?s { {type: "Staff", name: "Eve"} } }',
]


def _short(obj, limit: int = 400) -> str:
    text = json.dumps(obj, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _summary(capsule: str, response) -> str:
    """What a capsule wrote, counted from its text (SET PROPOSITIONS links included), or the error."""
    from .output import writes_summary
    from .source import write_counts

    if "error" in response:
        return _short(response)
    return writes_summary(write_counts(capsule))


DemoRefused = TargetRefused


def where(nexus) -> str:
    """'Neo4j 5.26.x community at bolt://host:7687, database neo4j' (the URI without credentials)."""
    return f"Neo4j {nexus.server_version()} at {nexus.uri}, database {nexus.database or '(the server default)'}"


def foreign_nodes(nexus) -> int:
    """Nodes that are neither KIP's nor the demo's example team graph: somebody else's data."""
    return nexus.foreign_nodes(catalog.DEMO_MARK)


def check_target(nexus, *, yes: bool) -> None:
    """Refuse (DemoRefused) to write the example capsules next to data that is not KIP's, unless ``yes``."""
    target.check_target(
        nexus,
        "the demo would add its example types and capsules (Drug, Symptom, …) to that database",
        yes=yes,
        own_mark=catalog.DEMO_MARK,
        advice=", or unset NEO4J_URI / --uri to run the demo on its own local server",
    )


def run_demo(nexus, echo: Callable[[str], None], *, yes: bool = False) -> None:
    """Each step prints its KIP, the Cypher it compiles to, and the KIP response (JSON and as a table)."""
    from .. import profiles
    from .output import response_text

    echo(f"Writing the demo into {where(nexus)}")
    check_target(nexus, yes=yes)
    try:
        applied = nexus.bootstrap()
        echo(f"Bootstrapped Genesis: {_summary(profiles.capsule_text('Genesis', None), {'result': applied['Genesis']})}")
    except KipError as exc:
        echo(f"Bootstrap failed: {json.dumps(exc.to_dict())}")
        return
    for title, command in (("Schema capsule", DEMO_SCHEMA), ("Data capsule", DEMO_DATA)):
        echo(f"\n== {title}\n{command.strip()}")
        echo("-- response " + _summary(command, nexus.execute_kip(command)))
    for command in DEMO_QUERIES:
        echo(f"\n== KIP\n{command}")
        try:
            for statement in compile_command(command):
                label = f" ({statement['label']})" if statement.get("label") else ""
                echo(f"-- Cypher{label}\n{statement['cypher']}\n-- parameters {json.dumps(statement['parameters'], ensure_ascii=False)}")
        except KipError as exc:
            echo(f"-- compile error {json.dumps(exc.to_dict())}")
        response = nexus.execute_kip_readonly(command)
        echo("-- response " + _short(response))
        echo(response_text(command, response))
    echo("\n== A batch (spec §6.2.3): syntax and read errors come back inline, a failing UPSERT stops the rest")
    echo(json.dumps(DEMO_BATCH, ensure_ascii=False, indent=2))
    for index, item in enumerate(nexus.execute_kip(commands=DEMO_BATCH)["result"]):
        echo(f"-- [{index}] {_short(item, 200)}")
    echo("\n== execute_kip_readonly refuses writes before anything runs")
    echo("-- response " + _short(nexus.execute_kip_readonly('UPSERT { CONCEPT ?x { {type: "Drug", name: "Ibuprofen"} } }')))
    echo("\n== dry_run validates against the live schema and writes nothing")
    echo("-- response " + _short(nexus.execute_kip('UPSERT { CONCEPT ?x { {type: "Drug", name: "Ibuprofen"} } }', dry_run=True)))
    run_adopted(nexus, echo)


def run_adopted(nexus, echo: Callable[[str], None]) -> None:
    """A small example team graph next to the memory, adopted and queried (docs/adopt.md). Never
    written into a database holding somebody else's data, whatever --yes says."""
    from .. import adoption
    from . import adopt_report

    echo("\n== Adopting a team's own graph (docs/adopt.md): KIP reads it, never changes it")
    if foreign_nodes(nexus):
        echo("-- skipped: this database holds data that is not KIP's; the demo adds no example team graph to it.")
        return
    echo(catalog.DEMO_TEAM_GRAPH.strip())
    nexus.write_demo_team_graph()
    echo(f"-- mapping (kip2cypher adopt mapping.toml){DEMO_MAPPING.rstrip()}")
    for line in adopt_report.report_lines(nexus.adopt(adoption.parse(DEMO_MAPPING, "the demo mapping"), create_index=True)):
        echo("-- " + line)
    for command in DEMO_ADOPTED_QUERIES:
        echo(f"\n== KIP\n{command}")
        echo("-- response " + _short(nexus.execute_kip(command)))
