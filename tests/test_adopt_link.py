"""link_memory (docs/adopt.md, "link_memory"): memory propositions whose subject or object is an
adopted concept, on a real Neo4j.

Namespace ``linked`` adopts the team graph of ``tests/test_adopt.py`` (its fixtures and helpers
are imported, not copied) with ``[options] link_memory = true``; the default namespace keeps the
option off. Every test checks the whole response, and ``assert_team_unchanged`` that the team's
nodes (labels, properties, element ids) and the team's own relationships never change — only
KIP-owned relationships (KIP_SUBJECT / KIP_OBJECT and native predicate relationships carrying
``kip_id``) are ever added at an adopted node.
"""
from __future__ import annotations

import hashlib
import json
import re

import pytest

from kip2cypher import adopting, adoption
from kip2cypher.cypher import storage
from test_adopt import MAPPING, NOTE_SCHEMA, _open, code, ok, world  # noqa: F401  (world: the module fixture)

LINKED = MAPPING + "\n[options]\nlink_memory = true\n"

SCHEMA = """
UPSERT {
  CONCEPT ?a { {type: "$PropositionType", name: "about"} SET ATTRIBUTES { description: "A note is about something." } }
  CONCEPT ?m { {type: "$PropositionType", name: "mentioned_in"} SET ATTRIBUTES { description: "Something is mentioned in a note." } }
  CONCEPT ?s { {type: "$PropositionType", name: "same_as"} SET ATTRIBUTES { description: "Two names for one thing." } }
}
"""
ENGINE = "any(l IN labels(n) WHERE any(s IN $stems WHERE l = s OR l STARTS WITH s + '__'))"
STEMS = list(storage.RESERVED_LABEL_STEMS)


def team_state(driver, database) -> dict:
    """The team's nodes (labels, properties, element id) and the team's own relationships — every
    relationship touching a team node except KIP's (KIP_SUBJECT / KIP_OBJECT of any namespace,
    native predicate relationships carrying a kip_id): hashed. Must never change."""
    nodes = driver.execute_query(f"MATCH (n) WHERE NOT {ENGINE} RETURN elementId(n) AS e, labels(n) AS l, properties(n) AS p", stems=STEMS, database_=database).records
    rels = driver.execute_query(
        f"MATCH (a)-[r]->(b) WHERE (NOT {ENGINE.replace('(n)', '(a)')} OR NOT {ENGINE.replace('(n)', '(b)')}) "
        "AND NOT type(r) STARTS WITH 'KIP_' AND none(k IN keys(r) WHERE k STARTS WITH 'kip_id') "
        "RETURN elementId(a) AS a, type(r) AS t, properties(r) AS p, elementId(b) AS b, elementId(r) AS r",
        stems=STEMS, database_=database,
    ).records
    items = sorted(json.dumps([r["e"], sorted(r["l"]), {k: str(v) for k, v in dict(r["p"]).items()}], sort_keys=True) for r in nodes)
    items += ["--"] + sorted(json.dumps([r["a"], r["t"], {k: str(v) for k, v in dict(r["p"]).items()}, r["b"], r["r"]], sort_keys=True) for r in rels)
    return {"nodes": len(nodes), "relationships": len(rels), "sha256": hashlib.sha256("\n".join(items).encode()).hexdigest()}


def kip_links_at_team_nodes(driver, database) -> list:
    """The KIP-owned relationships touching a team node: (type, kip_id property keys)."""
    rows = driver.execute_query(
        f"MATCH (a)-[r]->(b) WHERE (NOT {ENGINE.replace('(n)', '(a)')} OR NOT {ENGINE.replace('(n)', '(b)')}) "
        "AND (type(r) STARTS WITH 'KIP_' OR any(k IN keys(r) WHERE k STARTS WITH 'kip_id')) RETURN type(r) AS t, keys(r) AS k",
        stems=STEMS, database_=database,
    ).records
    return sorted((r["t"], tuple(sorted(r["k"]))) for r in rows)


class Linked:
    def __init__(self, default, nexus) -> None:
        self.default, self.nexus = default, nexus
        self.driver, self.database = nexus.driver, nexus.database
        self.team = team_state(self.driver, self.database)

    def run(self, command, **params):
        return self.nexus.execute_kip(command, parameters=params or None)

    def find(self, command, **params):
        return ok(self.run(command, **params))

    def assert_team_unchanged(self):
        assert team_state(self.driver, self.database) == self.team


@pytest.fixture(scope="module")
def linked(world, neo4j_server):  # noqa: F811
    nexus = _open(neo4j_server, "linked")
    nexus.bootstrap()
    ok(nexus.execute_kip(NOTE_SCHEMA))
    ok(nexus.execute_kip(SCHEMA))
    ok(world.nexus.execute_kip(SCHEMA))
    report = adopting.apply(nexus, adoption.parse(LINKED))
    assert report["mapping"] == "stored"
    yield Linked(world, nexus)
    nexus.close()


def test_the_option_is_read_from_the_mapping():
    assert adoption.parse(LINKED).link_memory is True
    assert adoption.parse(MAPPING).link_memory is False
    assert adoption.Adoption.from_json(adoption.parse(LINKED).to_json()).link_memory is True


def test_upsert_links_a_memory_note_to_an_adopted_drug_by_id_and_by_name(linked):
    result = linked.find('UPSERT { CONCEPT ?n { {type: "Note", name: "n1"} SET PROPOSITIONS { ("about", {id: "A:Drug:D1"}) } }'
                         ' PROPOSITION ?m { ({type: "Disease", name: "Headache"}, "mentioned_in", ?n) } }')
    assert result["blocks"] == 1 and len(result["upsert_concept_nodes"]) == 1
    assert [re.sub(r"[0-9a-f]{32}", "…", p) for p in result["upsert_proposition_links"]] == ["P:…:mentioned_in"]
    linked.assert_team_unchanged()
