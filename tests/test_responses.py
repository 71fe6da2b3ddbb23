"""kip2cypher.responses: the §6 TypedDicts describe what the engine really answers — every command
kind, a dry run, a batch, errors — on the real Neo4j; and the package is marked typed (py.typed)."""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any, Union, get_args, get_origin

import kip2cypher
from kip2cypher import responses

DEFINE = (
    'UPSERT { CONCEPT ?t { {type: "$ConceptType", name: "Gadget"} SET ATTRIBUTES { description: "a thing" } } '
    'CONCEPT ?p { {type: "$PropositionType", name: "pairs_with"} SET ATTRIBUTES { description: "works with" } } }'
)
WRITE = (
    'UPSERT { CONCEPT ?a { {type: "Gadget", name: "Alpha"} SET ATTRIBUTES { size: 1 } } '
    'CONCEPT ?b { {type: "Gadget", name: "Beta"} SET ATTRIBUTES { colour: "red" } } '
    'CONCEPT ?c { {type: "Gadget", name: "Gamma"} } '
    'PROPOSITION ?l { (?a, "pairs_with", ?c) } }'
)


def conforms(value: Any, kind: Any, where: str = "response") -> list[str]:
    """Where ``value`` departs from the type ``kind`` (TypedDict keys exactly, lists, unions, scalars)."""
    if kind is Any:
        return []
    if typing.is_typeddict(kind):
        if not isinstance(value, dict):
            return [f"{where}: not an object"]
        hints = typing.get_type_hints(kind)
        problems = [f"{where}: missing {key}" for key in kind.__required_keys__ if key not in value]
        problems += [f"{where}: unexpected key {key}" for key in value if key not in hints]
        return problems + [p for key in value if key in hints for p in conforms(value[key], hints[key], f"{where}.{key}")]
    origin = get_origin(kind)
    if origin is Union:
        return [] if any(not conforms(value, option, where) for option in get_args(kind)) else [f"{where}: {value!r:.80} matches no {kind}"]
    if origin is list:
        return (
            [f"{where}: not a list"]
            if not isinstance(value, list)
            else [p for i, item in enumerate(value) for p in conforms(item, get_args(kind)[0], f"{where}[{i}]")]
        )
    if origin is dict:
        return [] if isinstance(value, dict) else [f"{where}: not an object"]
    if kind is type(None):
        return [] if value is None else [f"{where}: not null"]
    if kind is float:
        return [] if isinstance(value, (int, float)) and not isinstance(value, bool) else [f"{where}: not a number"]
    return [] if isinstance(value, kind) and (kind is bool or not isinstance(value, bool)) else [f"{where}: not {kind.__name__}"]


def test_the_typeddicts_describe_every_kind_of_answer(genesis):
    checks = {
        "define": (DEFINE, responses.UpsertResult),
        "upsert": (WRITE, responses.UpsertResult),
        "find nodes": ('FIND(?g) WHERE { ?g {type: "Gadget"} } ORDER BY ?g.name', list[responses.ConceptNode]),
        "find links": ('FIND(?l) WHERE { ?l (?a, "pairs_with", ?c) }', list[responses.PropositionLink]),
        "find columns": ('FIND(?g.name, ?g.attributes.size) WHERE { ?g {type: "Gadget"} }', list[list[Any]]),
        "count": ('FIND(COUNT(?g)) WHERE { ?g {type: "Gadget"} }', int),
        "update": ('UPDATE ?g SET ATTRIBUTES { size: 2 } WHERE { ?g {type: "Gadget", name: "Alpha"} }', responses.UpdateResult),
        "primer": ("DESCRIBE PRIMER", responses.PrimerResult),
        "types": ("DESCRIBE CONCEPT TYPES", list[str]),
        "type": ('DESCRIBE CONCEPT TYPE "Gadget"', responses.ConceptNode),
        "export": ('EXPORT ?g WHERE { ?g {type: "Gadget"} } LIMIT 10', responses.ExportResult),
        "delete keys": ('DELETE ATTRIBUTES { "colour" } FROM ?g WHERE { ?g {type: "Gadget", name: "Beta"} }', responses.DeleteKeysResult),
        "merge": ('MERGE CONCEPT ?a INTO ?b WHERE { ?a {type: "Gadget", name: "Beta"} ?b {type: "Gadget", name: "Gamma"} }', responses.MergeResult),
        "delete links": ('DELETE PROPOSITIONS ?l WHERE { ?l (?a, "pairs_with", ?c) }', responses.DeletePropositionsResult),
        "delete concept": ('DELETE CONCEPT ?g DETACH WHERE { ?g {type: "Gadget", name: "Alpha"} }', responses.DeleteConceptResult),
    }
    problems = []
    for case, (command, result_type) in checks.items():
        response = genesis.execute_kip(command)
        assert "result" in response, (case, response)
        problems += conforms(response, responses.CommandResponse, case) + conforms(response["result"], result_type, f"{case}.result")
    dry = genesis.execute_kip('FIND(?g) WHERE { ?g {type: "Gadget"} }', dry_run=True)
    batch = genesis.execute_kip(commands=["DESCRIBE CONCEPT TYPES", 'FIND(?x) WHERE { ?x {type: "Nope"} }'])
    failed = genesis.execute_kip("FIND(")
    problems += conforms(dry["result"], responses.DryRunResult, "dry") + conforms(batch, responses.BatchResponse, "batch")
    problems += conforms(failed, responses.CommandResponse, "failed") + conforms(failed["error"], responses.ErrorObject, "failed.error")
    assert "error" in batch["result"][1] and "line" in failed["error"]
    assert problems == []


def test_the_checker_itself_refuses_what_departs_from_a_type():
    assert conforms({"blocks": 1, "upsert_concept_nodes": [], "upsert_proposition_links": [], "extra": 1}, responses.UpsertResult) == [
        "response: unexpected key extra"
    ]
    assert conforms({"code": "KIP_1001", "message": "m"}, responses.ErrorObject) == ["response: missing hint"]
    assert conforms({"updated": True, "matched": 1}, responses.UpdateResult) == ["response.updated: not int"]


def test_the_package_is_typed_and_exports_the_response_types():
    assert (Path(kip2cypher.__file__).parent / "py.typed").is_file()
    assert kip2cypher.KipResponse is responses.KipResponse and "CommandResponse" in kip2cypher.__all__
