"""MERGE CONCEPT (§4.4) on the real Neo4j."""

from __future__ import annotations

import pytest
from kml_helpers import SCHEMA, concept, count, err, integrity, link, ok, proposition, snapshot

SPEC = """
// "JS" and "JavaScript" are the same concept; keep the canonical one
MERGE CONCEPT ?dup INTO ?canonical
WHERE {
  ?dup {type: "SkillTopic", name: "JS"}
  ?canonical {type: "SkillTopic", name: "JavaScript"}
}
"""


@pytest.fixture()
def skills(genesis):
    ok(genesis.execute_kip(SCHEMA))
    ok(
        genesis.execute_kip("""
        UPSERT {
          CONCEPT ?x { {type: "Drug", name: "X"} }
          CONCEPT ?ann { {type: "Person", name: "Ann"} }
          CONCEPT ?js {
            {type: "SkillTopic", name: "JS"}
            SET ATTRIBUTES { aliases: ["js", "ECMAScript"], level: 1, created_by_src: "yes" }
            SET PROPOSITIONS { ("related_to", ?x) WITH METADATA { from_src: 1, shared: "src" } }
          }
          WITH METADATA { source: "a" }
          CONCEPT ?jv {
            {type: "SkillTopic", name: "JavaScript"}
            SET ATTRIBUTES { aliases: ["ECMAScript"], level: 5 }
            SET PROPOSITIONS { ("related_to", ?x) WITH METADATA { from_tgt: 2, shared: "tgt" } ("related_to", ?js) }
          }
          PROPOSITION ?claim_src { (?ann, "stated", (?js, "related_to", ?x)) } WITH METADATA { c: "src" }
          PROPOSITION ?claim_tgt { (?ann, "stated", (?jv, "related_to", ?x)) } WITH METADATA { c: "tgt" }
          PROPOSITION ?ann_js { (?ann, "related_to", ?js) }
          PROPOSITION ?only_src_claim { (?x, "related_to", (?ann, "related_to", ?js)) }
        }""")
    )
    return genesis


def test_merge_spec_example(skills):
    js, jv = concept(skills, "SkillTopic", "JS"), concept(skills, "SkillTopic", "JavaScript")
    x, ann = concept(skills, "Drug", "X"), concept(skills, "Person", "Ann")
    ann_js = link(skills, ann["id"], "related_to", js["id"])
    src_link = link(skills, js["id"], "related_to", x["id"])
    tgt_link = link(skills, jv["id"], "related_to", x["id"])
    claim_tgt = link(skills, ann["id"], "stated", tgt_link["id"])
    res = ok(skills.execute_kip(SPEC))
    # repointed: (JavaScript → JS) becomes a self-link, (Ann → JS) moves to JavaScript
    # deduplicated: (JS → X) collides with (JavaScript → X); Ann's claim about it collides with her claim about the survivor
    # filled: created_by_src, and the aliases (JS appended)
    assert res == {"merged": True, "links_repointed": 2, "links_deduplicated": 2, "attributes_filled": 2}
    assert concept(skills, "SkillTopic", "JS") is None
    jv2 = concept(skills, "SkillTopic", "JavaScript")
    assert jv2["id"] == jv["id"]
    assert jv2["attributes"]["level"] == 5 and jv2["attributes"]["created_by_src"] == "yes"
    assert jv2["attributes"]["aliases"] == ["ECMAScript", "js", "JS"]
    assert jv2["metadata"]["_merged_from"] == ["SkillTopic:JS"] and jv2["metadata"]["_version"] == 2
    # ids are preserved when repointing
    moved = proposition(skills, ann_js["id"])
    assert moved["object"] == jv["id"] and moved["metadata"]["_version"] == 2
    # the survivor got the missing metadata key; existing keys won
    survivor = proposition(skills, tgt_link["id"])
    assert survivor["metadata"]["from_src"] == 1 and survivor["metadata"]["from_tgt"] == 2 and survivor["metadata"]["shared"] == "tgt"
    assert proposition(skills, src_link["id"]) is None
    # Ann's claim about the dropped link collided with her claim about the survivor: the target's claim survives
    assert proposition(skills, claim_tgt["id"])["metadata"]["c"] == "tgt"
    assert count(skills, "MATCH (p:KipProposition {predicate: 'stated'}) RETURN count(p)") == 1
    # the higher-order chain (X related_to (Ann related_to JS)) still resolves: its object kept its id
    assert count(skills, "MATCH (p:KipProposition {predicate: 'related_to', object: $id}) RETURN count(p)", id=ann_js["id"]) == 1
    # native relationships follow
    assert count(skills, "MATCH (:`kip:SkillTopic` {name: 'JavaScript'})-[r:`kip:related_to`]->(:`kip:SkillTopic` {name: 'JavaScript'}) RETURN count(r)") == 1
    assert count(skills, "MATCH (:`kip:Person` {name: 'Ann'})-[r:`kip:related_to`]->(:`kip:SkillTopic` {name: 'JavaScript'}) RETURN count(r)") == 1
    integrity(skills)


def test_merge_replay_is_3002_with_already_merged_hint(skills):
    ok(skills.execute_kip(SPEC))
    e = err(skills.execute_kip(SPEC), "KIP_3002")
    assert "already" in e["hint"] and "SkillTopic:JS" in e["hint"] and "JavaScript" in e["hint"]


def test_merge_chained_carries_merged_from(skills):
    ok(skills.execute_kip('UPSERT { CONCEPT ?a { {type: "SkillTopic", name: "Javascript"} SET ATTRIBUTES { aliases: ["JScript"] } } }'))
    ok(skills.execute_kip(SPEC))
    res = ok(skills.execute_kip('MERGE CONCEPT ?s INTO ?t WHERE { ?s {type: "SkillTopic", name: "JavaScript"} ?t {type: "SkillTopic", name: "Javascript"} }'))
    assert res["merged"] is True
    t = concept(skills, "SkillTopic", "Javascript")
    assert t["metadata"]["_merged_from"] == ["SkillTopic:JS", "SkillTopic:JavaScript"]
    assert t["attributes"]["aliases"] == ["JScript", "ECMAScript", "js", "JS", "JavaScript"]
    assert t["attributes"]["level"] == 5
    e = err(skills.execute_kip(SPEC), "KIP_3002")
    assert "Javascript" in e["hint"]
    integrity(skills)


def test_merge_errors(skills):
    before = snapshot(skills)
    # same node: no-op success
    res = ok(skills.execute_kip('MERGE CONCEPT ?a INTO ?b WHERE { ?a {type: "SkillTopic", name: "JS"} ?b {type: "SkillTopic", name: "JS"} }'))
    assert res == {"merged": True, "links_repointed": 0, "links_deduplicated": 0, "attributes_filled": 0}
    # zero matches
    err(skills.execute_kip('MERGE CONCEPT ?a INTO ?b WHERE { ?a {type: "SkillTopic", name: "Nope"} ?b {type: "SkillTopic", name: "JS"} }'), "KIP_3002")
    # several matches
    e = err(skills.execute_kip('MERGE CONCEPT ?a INTO ?b WHERE { ?a {type: "SkillTopic"} ?b {type: "SkillTopic", name: "JS"} }'), "KIP_3003")
    assert "?a" in e["message"]
    # different types
    err(skills.execute_kip('MERGE CONCEPT ?a INTO ?b WHERE { ?a {type: "Drug", name: "X"} ?b {type: "SkillTopic", name: "JS"} }'), "KIP_2002")
    assert snapshot(skills) == before  # the no-op and the refusals wrote nothing
    # protected
    ok(skills.execute_kip('UPSERT { CONCEPT ?s { {type: "Person", name: "$self"} } }'))
    err(skills.execute_kip('MERGE CONCEPT ?a INTO ?b WHERE { ?a {type: "Person", name: "Ann"} ?b {type: "Person", name: "$self"} }'), "KIP_3004")
    err(skills.execute_kip('MERGE CONCEPT ?a INTO ?b WHERE { ?a {type: "Domain", name: "Unsorted"} ?b {type: "Domain", name: "CoreSchema"} }'), "KIP_3004")
    # undefined type
    err(skills.execute_kip('MERGE CONCEPT ?a INTO ?b WHERE { ?a {type: "Skill", name: "JS"} ?b {type: "SkillTopic", name: "JS"} }'), "KIP_2001")
    ok(skills.execute_kip('DELETE CONCEPT ?s DETACH WHERE { ?s {type: "Person", name: "Ann"} }'))
    assert concept(skills, "SkillTopic", "JS") is not None


def test_merge_dry_run(skills):
    before = snapshot(skills)
    res = ok(skills.execute_kip(SPEC, dry_run=True))
    assert res["merged"] is False
    assert snapshot(skills) == before
    err(skills.execute_kip('MERGE CONCEPT ?a INTO ?b WHERE { ?a {type: "SkillTopic"} ?b {type: "SkillTopic", name: "JS"} }', dry_run=True), "KIP_3003")


def test_merge_self_referencing_links(genesis):
    ok(genesis.execute_kip(SCHEMA))
    ok(
        genesis.execute_kip("""
        UPSERT {
          CONCEPT ?a { {type: "Drug", name: "A"} }
          CONCEPT ?b { {type: "Drug", name: "B"} SET PROPOSITIONS { ("related_to", ?a) } }
          CONCEPT ?a2 { {type: "Drug", name: "A"} SET PROPOSITIONS { ("related_to", {type: "Drug", name: "A"}) ("related_to", ?b) } }
        }""")
    )
    # A→A, A→B, B→A : merging A into B turns all three into B→B
    res = ok(genesis.execute_kip('MERGE CONCEPT ?s INTO ?t WHERE { ?s {type: "Drug", name: "A"} ?t {type: "Drug", name: "B"} }'))
    assert res["links_repointed"] + res["links_deduplicated"] == 3 and res["links_deduplicated"] == 2
    b = concept(genesis, "Drug", "B")
    assert count(genesis, "MATCH (p:KipProposition {predicate: 'related_to'}) RETURN count(p)") == 1
    assert link(genesis, b["id"], "related_to", b["id"]) is not None
    integrity(genesis)


def test_merge_of_a_node_deleted_while_it_was_read_was_reported_as_a_proposition(skills):
    """The bind statement reads each side's labels: a node deleted by a concurrent command reads
    with its id but no labels, which answered KIP_2002 "?s bound a proposition link" now and then
    in the MERGE/DELETE race (test_reliability_concurrency). Only a node with the proposition
    label is a proposition; a node with neither label was deleted (KIP_3002)."""
    from kip2cypher.lower.compile import compile_plan

    plan = compile_plan('MERGE CONCEPT ?a INTO ?b WHERE { ?a {type: "SkillTopic", name: "JS"} ?b {type: "SkillTopic", name: "JavaScript"} }')
    assert "concept: x:KipConcept, link: x:KipProposition" in plan.bind.text
    # ?a is an element variable bound to the one proposition X relates to: still refused as one
    merge = 'MERGE CONCEPT ?a INTO ?b WHERE { ({type: "Drug", name: "X"}, "related_to", ?a) ?b {type: "SkillTopic", name: "JS"} }'
    e = err(skills.execute_kip(merge), "KIP_2002")
    assert "bound a proposition link" in e["message"]
