"""§6.1 to the letter and the spec's naming rules at definition time (issue 30), on the real Neo4j."""

from __future__ import annotations

import pytest
from kml_helpers import ok

#: A NUL in a type name: Neo4j refuses it as a label (TokenNameError → KIP_1002 at run time).
BAD_TYPE = "Bad\u0000Type"


def _legacy_definition(nexus, name: str) -> None:
    """A ``$ConceptType`` definition named ``name`` written straight into storage, as an engine
    that did not yet check names at definition time left it: a copy of Domain's definition."""
    records = nexus.driver.execute_query(
        'MATCH (d:KipConcept {type: "$ConceptType", name: "Domain"}) RETURN labels(d) AS labels', database_=nexus.database
    ).records
    labels = "".join(":`" + label.replace("`", "``") + "`" for label in records[0]["labels"])
    nexus.driver.execute_query(
        f'MATCH (d:KipConcept {{type: "$ConceptType", name: "Domain"}}) CREATE (x{labels}) SET x = d {{.*, name: $name, id: $id}}',
        {"name": name, "id": "C:legacy-bad-type"},
        database_=nexus.database,
    )


def _domains(nexus) -> set[str]:
    return set(ok(nexus.execute_kip_readonly('FIND(?d.name) WHERE { ?d {type: "Domain"} }')))


def test_kml_error_with_a_1xxx_code_at_run_time_did_not_halt_the_batch(genesis):
    _legacy_definition(genesis, BAD_TYPE)
    response = genesis.execute_kip(
        commands=[
            'UPSERT { CONCEPT ?d { {type: "Domain", name: "Before"} } }',
            {"command": 'UPSERT { CONCEPT ?x { {type: :t, name: "x"} } }', "parameters": {"t": BAD_TYPE}},
            'UPSERT { CONCEPT ?d { {type: "Domain", name: "After"} } }',
            "DESCRIBE DOMAINS",
        ]
    )
    items = response["result"]
    assert len(items) == 2, items  # the run-time error stopped the batch
    assert "result" in items[0]
    error = items[1]["error"]
    assert error["code"].startswith("KIP_1"), error
    assert "commands[1] stopped the batch" in error["message"] and "commands[2]…commands[3]" in error["message"], error
    assert "After" not in _domains(genesis) and "Before" in _domains(genesis)


def test_syntax_error_of_a_kml_command_still_does_not_halt_the_batch(genesis):
    response = genesis.execute_kip(commands=["UPSERT { CONCEPT ?d { {type: ", 'UPSERT { CONCEPT ?d { {type: "Domain", name: "After"} } }'])
    items = response["result"]
    assert len(items) == 2 and items[0]["error"]["code"] == "KIP_1001" and "result" in items[1], items
    assert "stopped the batch" not in items[0]["error"]["message"]


def _types(nexus) -> list[str]:
    return ok(nexus.execute_kip_readonly("DESCRIBE CONCEPT TYPES"))


@pytest.mark.parametrize("name", ["", "   ", "\t", "Drug\nDrug", "Bad\u001bType", "\u0085"])
@pytest.mark.parametrize("meta", ["$ConceptType", "$PropositionType"])
def test_empty_or_control_character_type_name_could_be_defined_and_failed_only_at_run_time(genesis, meta, name):
    before = _types(genesis)
    response = genesis.execute_kip(f'UPSERT {{ CONCEPT ?t {{ {{type: "{meta}", name: :n}} }} }}', parameters={"n": name})
    error = response["error"]
    assert error["code"] == "KIP_1002" and "cannot be defined" in error["message"], error
    assert "§2.8.1" in error["hint"] and "[a-zA-Z_][a-zA-Z0-9_]*" in error["hint"]
    assert (error["line"], error["column"]) == (1, len(f'UPSERT {{ CONCEPT ?t {{ {{type: "{meta}", name: ') + 1)
    assert _types(genesis) == before
