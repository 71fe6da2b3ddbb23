"""DESCRIBE PRIMER / DOMAINS / CONCEPT TYPES / PROPOSITION TYPES / … TYPE "X" on the real Neo4j."""

from __future__ import annotations

import pytest
from meta_data import MEDICAL, PERSON_AND_SELF, TopicEmbedder, load, ok

from kip2cypher import __version__
from kip2cypher.execution.programs import describe as meta
from kip2cypher.lower import search
from kip2cypher.lower.describe import PRIMER_KEY_CONCEPTS


@pytest.fixture()
def medical(genesis):
    genesis.settings = genesis.settings.replace(embedder=False)
    load(genesis, MEDICAL)
    return genesis


def test_concept_types_lists_names_sorted(medical):
    assert ok(medical.execute_kip("DESCRIBE CONCEPT TYPES")) == ["$ConceptType", "$PropositionType", "Domain", "Drug", "Symptom"]


def test_proposition_types_lists_names_sorted(medical):
    assert ok(medical.execute_kip("DESCRIBE PROPOSITION TYPES")) == ["belongs_to_domain", "has_side_effect", "treats"]


def test_concept_types_pages_with_cursor(medical):
    first = medical.execute_kip("DESCRIBE CONCEPT TYPES LIMIT 2")
    assert first["result"] == ["$ConceptType", "$PropositionType"]
    second = medical.execute_kip("DESCRIBE CONCEPT TYPES LIMIT 2 CURSOR :c", parameters={"c": first["next_cursor"]})
    assert second["result"] == ["Domain", "Drug"]
    third = medical.execute_kip("DESCRIBE CONCEPT TYPES LIMIT :n CURSOR :c", parameters={"c": second["next_cursor"], "n": 2})
    assert third == {"result": ["Symptom"]}


def test_proposition_types_cursor_is_bound_to_its_command(medical):
    first = medical.execute_kip("DESCRIBE PROPOSITION TYPES LIMIT 1")
    assert first["result"] == ["belongs_to_domain"] and "next_cursor" in first
    wrong = medical.execute_kip("DESCRIBE CONCEPT TYPES LIMIT 1 CURSOR :c", parameters={"c": first["next_cursor"]})
    assert wrong["error"]["code"] == "KIP_1001"
    tampered = medical.execute_kip("DESCRIBE PROPOSITION TYPES LIMIT 1 CURSOR :c", parameters={"c": first["next_cursor"][:-2] + "xx"})
    assert tampered["error"]["code"] == "KIP_1001"
    rest = medical.execute_kip("DESCRIBE PROPOSITION TYPES CURSOR :c", parameters={"c": first["next_cursor"]})
    assert rest == {"result": ["has_side_effect", "treats"]}


def test_describe_concept_type_returns_definition_node(medical):
    node = ok(medical.execute_kip('DESCRIBE CONCEPT TYPE "Drug"'))
    assert node["id"].startswith("C:")
    version, updated = node["metadata"].pop("_version"), node["metadata"].pop("_updated_at")
    assert version >= 1 and updated.endswith("Z")
    assert node == {
        "id": node["id"],
        "type": "$ConceptType",
        "name": "Drug",
        "attributes": {"description": "A medicinal substance used to treat or prevent disease.", "key_instances": ["Aspirin"]},
        "metadata": {"author": "tester", "confidence": 0.9, "source": "meta-tests"},
    }


def test_describe_proposition_type_returns_definition_node(medical):
    node = ok(medical.execute_kip("DESCRIBE PROPOSITION TYPE :p", parameters={"p": "treats"}))
    assert node["type"] == "$PropositionType" and node["name"] == "treats"
    assert node["attributes"] == {
        "description": "The subject drug alleviates or cures the object symptom.",
        "object_types": ["Symptom"],
        "subject_types": ["Drug"],
    }


@pytest.mark.parametrize(
    "command, hint_part",
    [
        ('DESCRIBE CONCEPT TYPE "drug"', 'Did you mean "Drug"?'),
        ('DESCRIBE CONCEPT TYPE "Symptoms"', 'Did you mean "Symptom"?'),
        ('DESCRIBE PROPOSITION TYPE "treat"', 'Did you mean "treats"?'),
        ('DESCRIBE PROPOSITION TYPE "Treats"', 'Did you mean "treats"?'),
    ],
)
def test_unknown_type_is_not_found_with_did_you_mean(medical, command, hint_part):
    error = medical.execute_kip(command)["error"]
    assert error["code"] == "KIP_3002"
    assert hint_part in error["hint"]


def test_unknown_type_without_a_close_name(medical):
    error = medical.execute_kip('DESCRIBE CONCEPT TYPE "Spaceship"')["error"]
    assert error == {
        "code": "KIP_3002",
        "message": 'The concept type "Spaceship" is not defined.',
        "hint": 'Run DESCRIBE CONCEPT TYPES to list the defined names, or define "Spaceship" with an UPSERT of a $ConceptType node.',
    }


def test_describe_domains(medical):
    domains = ok(medical.execute_kip("DESCRIBE DOMAINS"))
    for domain in domains:
        assert domain.pop("id").startswith("C:")
    assert domains == [
        # CoreSchema: 4 Genesis definitions + 3 operational domains + 4 from MEDICAL.
        {
            "name": "CoreSchema",
            "description": "The foundational domain containing the meta-definitions of the KIP system itself.",
            "display_hint": "🧩",
            "member_count": 11,
        },
        {"name": "Medical", "description": "Medicine: drugs, symptoms and treatments.", "display_hint": "💊", "member_count": 6},
        {"name": "Archived", "description": "Storage for deprecated, obsolete, or consolidated items preserved for audit trail.", "member_count": 0},
        {
            "name": "System",
            "description": "Operational home for the memory system's own working nodes (e.g., SleepTask instances); not user knowledge.",
            "member_count": 0,
        },
        {"name": "Unsorted", "description": "Temporary inbox for items awaiting topic classification.", "member_count": 0},
    ]


def test_primer_without_self_and_without_embedder(medical):
    primer = ok(medical.execute_kip("DESCRIBE PRIMER"))
    assert set(primer) == {"identity", "domain_map", "total_domains"}
    identity = primer["identity"]
    assert identity["type"] == "Person" and identity["name"] == "$self"
    assert identity["exists"] is False and identity["id"] is None and identity["attributes"] == {}
    assert identity["summary"] == meta.SELF_IDENTITY_DEFAULT
    caps = identity["capabilities"]
    assert caps["protocol"] == "KIP v1.0-RC11" and caps["engine"].startswith(f"kip2cypher {__version__}")
    assert caps["search"]["modes"] == ["keyword"] and caps["search"]["default_mode"] == "keyword"
    assert caps["search"]["semantic"] is False and "semantic_unavailable_reason" in caps["search"]
    assert caps["limits"]["max_path_hops"] == medical.settings.max_hops
    assert caps["limits"]["max_result_rows"] == medical.settings.max_result_rows
    assert primer["total_domains"] == 5
    medical_entry = next(d for d in primer["domain_map"] if d["name"] == "Medical")
    medical_entry.pop("id")
    assert medical_entry == {
        "name": "Medical",
        "description": "Medicine: drugs, symptoms and treatments.",
        "display_hint": "💊",
        "member_count": 6,
        # By degree (propositions other than domain membership): Aspirin 3, Headache 2,
        # Fever 1, Ibuprofen 1, Nausea 1, Aspirin Complex 0; ties by type then name.
        "key_concepts": [
            {"type": "Drug", "name": "Aspirin"},
            {"type": "Symptom", "name": "Headache"},
            {"type": "Drug", "name": "Ibuprofen"},
            {"type": "Symptom", "name": "Fever"},
            {"type": "Symptom", "name": "Nausea"},
            {"type": "Drug", "name": "Aspirin Complex"},
        ],
        "key_propositions": ["treats", "has_side_effect"],
    }
    core = next(d for d in primer["domain_map"] if d["name"] == "CoreSchema")
    assert core["key_propositions"] == [] and len(core["key_concepts"]) == PRIMER_KEY_CONCEPTS


def test_primer_with_self_and_embedder(medical):
    load(medical, PERSON_AND_SELF)
    embedder = TopicEmbedder()
    medical.settings = medical.settings.replace(embedder=embedder)
    identity = ok(medical.execute_kip("DESCRIBE PRIMER"))["identity"]
    assert identity["exists"] is True and identity["id"].startswith("C:")
    assert identity["summary"] == "I am Medibot, a careful medical knowledge assistant."
    assert identity["attributes"] == {
        "core_directives": ["Be accurate", "Cite sources"],
        "identity_narrative": "I am Medibot, a careful medical knowledge assistant.",
    }
    search_caps = identity["capabilities"]["search"]
    assert search_caps["modes"] == ["keyword", "semantic", "hybrid"] and search_caps["default_mode"] == "hybrid"
    assert search_caps["embedder"] == {"name": "test-topic-embedder-v1", "dimensions": 7}
    assert search_caps["default_limit"] == search.SEARCH_DEFAULT_LIMIT


def test_describe_on_empty_nexus(nexus):
    nexus.settings = nexus.settings.replace(embedder=False)
    assert ok(nexus.execute_kip("DESCRIBE CONCEPT TYPES")) == []
    assert ok(nexus.execute_kip("DESCRIBE DOMAINS")) == []
    primer = ok(nexus.execute_kip("DESCRIBE PRIMER"))
    assert primer["domain_map"] == [] and primer["total_domains"] == 0


def test_describe_is_readonly_and_compiles_to_parameterized_cypher(medical):
    response = medical.execute_kip_readonly('DESCRIBE CONCEPT TYPE "Drug"')
    assert response["result"]["name"] == "Drug"
    from kip2cypher import compile as compile_kip

    statements = compile_kip('DESCRIBE CONCEPT TYPE "Robert\'); DROP"')
    assert "DROP" not in statements[0]["cypher"]
    assert statements[0]["parameters"]["name"] == "Robert'); DROP"
