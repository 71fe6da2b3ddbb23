"""Round 3 attack on the label space (issue 30 item 6, docs/storage-model.md "Label space"):
hostile concept-type and predicate names — backticks, colons, dots, ``kip:`` / ``kip.<ns>:``
prefixes, another namespace's spelled label, the team's own labels, Unicode look-alikes, the
engine's stems — defined and used in several namespaces at once, beside a team graph.

What must hold: every name is stored in its namespace's space (``names(ns).label(name)``, exactly
two labels per concept), a read in one namespace never returns another's element, no team label
or relationship type is taken, and every refusal is a KIP error with the documented code.

Extend by adding to ``NAMESPACES``, ``HOSTILE_NAMES`` or ``REFUSED``: each test runs the whole
table."""

from __future__ import annotations

import itertools

import pytest
from hostile_payloads import fingerprint, kip_string
from kml_helpers import err, ok

from kip2cypher.config import Settings
from kip2cypher.cypher import storage

#: Namespaces attacked together: the default one; ``a`` and ``a__b`` (one a prefix of the other's
#: engine suffix); ``ab``; ``kip`` (its prefix is ``kip.kip:``); ``kipconcept`` (engine-stem-like).
NAMESPACES = ("", "a", "a__b", "ab", "kip", "kipconcept")

#: Names every namespace defines as a concept type and as a predicate. Each one, after its
#: namespace's prefix, spells what another namespace's plain name would if the encoding were
#: not injective (``b.C`` in ``a`` vs ``C`` in ``a.b``; ``kip.a:Drug`` in the default namespace
#: vs ``Drug`` in ``a`` …), or is a team label, a look-alike or a quoting break-out.
HOSTILE_NAMES = (
    "Drug",
    "b.C",
    "C",
    "b:C",
    "a:Drug",
    ":Drug",
    "kip:Drug",
    "kip.a:Drug",
    "kip.a__b:Drug",
    "kip.ab:Drug",
    "kip.kip:Drug",
    "kip",
    "kip.",
    "kip:",
    "Kip",
    "KipConceptX",
    "__a",
    "b__a",
    "Person",  # the team's label
    "Service",  # the team's label, with the team's uniqueness constraint
    "owns",  # the team's relationship type
    "Drug`) DETACH DELETE n --",
    "Drug\\u0060) MATCH (m) DETACH DELETE m --",
    "`kip:Drug`",
    "Dr\u0578g",  # Armenian letter that looks like u
    "\uff24rug",  # full-width D
    "Drug\u200b",  # zero-width space
    "kip\uff1aDrug",  # full-width colon
    "kip\u2024a:Drug",  # one-dot leader, looks like "."
    "K\u0456pConcept",  # Cyrillic i
)

#: (name as a concept type, as a predicate) → the code each must be refused with.
REFUSED = {
    "KipConcept": "KIP_3004",
    "KipConcept__a": "KIP_3004",
    "KipProposition__a__b": "KIP_3004",
    "KipNexus": "KIP_3004",
    "KipAdoptedVector__kip": "KIP_3004",
    "KipAdoptedRelationshipVector": "KIP_3004",
    "": "KIP_1002",
    " ": "KIP_1002",
    "Drug\x00": "KIP_1002",
}
REFUSED_PREDICATES = {
    "KIP_SUBJECT": "KIP_3004",
    "KIP_OBJECT__a": "KIP_3004",
    "a/treats": "KIP_1002",
    "kip.a:x/y": "KIP_1002",
    "": "KIP_1002",
    "\t": "KIP_1002",
}

TEAM_GRAPH = """
CREATE (p:Person {name: 'ann'}), (s:Service {name: 'api'}), (d:Drug {name: 'Aspirin', type: 'Drug'}),
       (c:C {name: 'c'}), (k:`b.C` {name: 'bc'}), (p)-[:owns]->(s), (d)-[:`b.C`]->(c), (d)-[:Drug]->(k)
"""


def _wipe(driver, database=None) -> None:
    while driver.execute_query("MATCH (n) WITH n LIMIT 10000 DETACH DELETE n RETURN count(*) AS c", database_=database).records[0]["c"]:
        pass


ANY_ENDS = 'description: "hostile", subject_types: ["*"], object_types: ["*"]'


def _member(ns: str, i: int) -> str:
    """The name of the instance of HOSTILE_NAMES[i] in namespace ``ns``: whose it is shows in every answer."""
    return f"{ns or '(default)'}#{i}"


def _capsule(ns: str) -> tuple[str, dict]:
    """Every hostile name as a concept type and a predicate, one instance per type, one link per predicate (instance → itself)."""
    blocks, params = [], {}
    for i, name in enumerate(HOSTILE_NAMES):
        s = kip_string(name)
        params[f"n{i}"] = _member(ns, i)
        blocks.append(
            f'CONCEPT ?t{i} {{ {{type: "$ConceptType", name: {s}}} SET ATTRIBUTES {{ description: "hostile" }} }}\n'
            f'CONCEPT ?p{i} {{ {{type: "$PropositionType", name: {s}}} SET ATTRIBUTES {{ {ANY_ENDS} }} }}\n'
            f"CONCEPT ?x{i} {{ {{type: {s}, name: :n{i}}} SET PROPOSITIONS {{ ({s}, {{type: {s}, name: :n{i}}}) }} }}"
        )
    return "UPSERT {\n" + "\n".join(blocks) + "\n}", params


@pytest.fixture(scope="module")
def spaces(neo4j_server):
    """One bootstrapped Nexus per namespace, every hostile name written in each, beside the team graph."""
    from kip2cypher.nexus import Nexus

    opened = {
        ns: Nexus(neo4j_server.uri, auth=neo4j_server.auth, database=neo4j_server.database, settings=Settings(embedder=False), namespace=ns)
        for ns in NAMESPACES
    }
    first = opened[""]
    _wipe(first.driver, first.database)
    first.driver.execute_query("CREATE CONSTRAINT attack_service_name IF NOT EXISTS FOR (s:Service) REQUIRE s.name IS UNIQUE", database_=first.database)
    first.driver.execute_query(TEAM_GRAPH, database_=first.database)
    team_before = _team(first)
    for nexus in opened.values():
        nexus.bootstrap()
    for ns, nexus in opened.items():
        capsule, params = _capsule(ns)
        ok(nexus.execute_kip(capsule, parameters=params))
    yield opened, team_before
    _wipe(first.driver, first.database)
    first.driver.execute_query("DROP CONSTRAINT attack_service_name IF EXISTS", database_=first.database)
    for nexus in opened.values():
        nexus.close()


def _team(nexus) -> list:
    """Every node and relationship without a KIP label or type: the team's graph, read whole."""
    nodes = nexus.driver.execute_query(
        "MATCH (n) WHERE none(l IN labels(n) WHERE l STARTS WITH 'Kip' OR l STARTS WITH 'kip:' OR l STARTS WITH 'kip.') "
        "RETURN labels(n) AS l, properties(n) AS p, COUNT { (n)--() } AS degree ORDER BY n.name",
        database_=nexus.database,
    ).records
    return [(sorted(r["l"]), dict(r["p"]), r["degree"]) for r in nodes]


def _result(response):
    assert "error" not in response, response
    return response["result"]


@pytest.mark.parametrize("ns", NAMESPACES)
def test_hostile_names_are_stored_in_their_own_namespace_space_only(spaces, ns):
    opened, _ = spaces
    nexus, names = opened[ns], storage.names(ns)
    rows = nexus.driver.execute_query(
        "MATCH (n) WHERE n.name IN $members RETURN n.name AS name, n.type AS type, labels(n) AS labels",
        members=[_member(ns, i) for i in range(len(HOSTILE_NAMES))],
        database_=nexus.database,
    ).records
    stored = {r["name"]: (r["type"], sorted(r["labels"])) for r in rows}
    expected = {_member(ns, i): (name, sorted([names.concept, names.label(name)])) for i, name in enumerate(HOSTILE_NAMES)}
    assert stored == expected
    links = nexus.driver.execute_query(
        "MATCH (s)-[r]->(o) WHERE s.name IN $members RETURN s.name AS name, type(r) AS t, keys(r) AS keys",
        members=list(expected),
        database_=nexus.database,
    ).records
    by_member = sorted((r["name"], r["t"], r["keys"]) for r in links)
    assert by_member == sorted((_member(ns, i), names.rel(name), [names.link_id]) for i, name in enumerate(HOSTILE_NAMES))


def test_the_encoding_of_every_name_in_every_namespace_is_injective(spaces):
    """No two (namespace, name) pairs of the table share a label, and no label is an engine one or the team's."""
    labels = {(ns, name): storage.names(ns).label(name) for ns, name in itertools.product(NAMESPACES, HOSTILE_NAMES)}
    assert len(set(labels.values())) == len(labels)
    assert all(storage.is_vocabulary_name(label) and not storage.is_engine_label(label) for label in labels.values())
    opened, _ = spaces
    team_labels = {label for labels_, _p, _d in _team(opened[""]) for label in labels_}
    assert team_labels.isdisjoint(labels.values())


@pytest.mark.parametrize("ns", NAMESPACES)
def test_reads_in_one_namespace_never_return_another_namespaces_elements(spaces, ns):
    opened, _ = spaces
    nexus = opened[ns]
    for i, name in enumerate(HOSTILE_NAMES):
        s = kip_string(name)
        reads = ok(
            nexus.execute_kip_readonly(
                commands=[
                    f"FIND(?x.name) WHERE {{ ?x {{type: {s}}} }}",
                    f"FIND(?s.name, ?o.name) WHERE {{ (?s, {s}, ?o) }}",
                    f"FIND(?x.name) WHERE {{ (?x, {s}{{1,3}}, ?y) }}",
                    f"DESCRIBE CONCEPT TYPE {s}",
                    f"DESCRIBE PROPOSITION TYPE {s}",
                    f"SEARCH CONCEPT {kip_string(_member(ns, i))} WITH TYPE {s} LIMIT 5",
                ]
            )
        )
        found, linked, walked, concept_type, predicate, searched = (_result(r) for r in reads)
        assert found == [_member(ns, i)], (ns, name, found)
        assert linked == [[_member(ns, i)], [_member(ns, i)]], (ns, name, linked)  # one column each
        assert walked == [_member(ns, i)], (ns, name, walked)
        assert concept_type["name"] == name and predicate["name"] == name
        assert [hit["name"] for hit in searched] == [_member(ns, i)]
    subjects, predicates, objects = _result(nexus.execute_kip_readonly("FIND(?s.name, ?p, ?o.name) WHERE { (?s, ?p, ?o) } LIMIT 1000"))
    mine = {_member(ns, i) for i in range(len(HOSTILE_NAMES))}
    assert mine <= set(subjects) and set(HOSTILE_NAMES) <= set(predicates)
    assert (set(subjects) | set(objects)) & (_all_members() - mine) == set()
    types = set(_result(nexus.execute_kip_readonly("DESCRIBE CONCEPT TYPES LIMIT 500")))
    assert set(HOSTILE_NAMES) <= types


def _all_members() -> set[str]:
    return {_member(ns, i) for ns in NAMESPACES for i in range(len(HOSTILE_NAMES))}


def test_writes_in_one_namespace_leave_every_other_namespace_and_the_team_graph_unchanged(spaces):
    opened, team_before = spaces
    nexus = opened["a"]
    before = fingerprint(nexus.driver, nexus.database, skip=storage.names("a"))
    for i, name in enumerate(HOSTILE_NAMES):
        s = kip_string(name)
        ok(nexus.execute_kip(f"UPDATE ?x SET ATTRIBUTES {{ touched: true }} WHERE {{ ?x {{type: {s}}} }}"))
        ok(nexus.execute_kip(f"DELETE PROPOSITIONS ?l WHERE {{ ?l (?s, {s}, ?o) }}"))
        ok(nexus.execute_kip(f"DELETE CONCEPT ?x DETACH WHERE {{ ?x {{type: {s}}} }}"))
        assert _result(nexus.execute_kip_readonly(f"FIND(?x.name) WHERE {{ ?x {{type: {s}}} }}")) == []
    assert fingerprint(nexus.driver, nexus.database, skip=storage.names("a")) == before
    assert _team(nexus) == team_before
    for ns in NAMESPACES:
        if ns != "a":
            assert len(_result(opened[ns].execute_kip_readonly('FIND(?x.name) WHERE { ?x {type: "b.C"} }'))) == 1


@pytest.mark.parametrize("ns", NAMESPACES)
def test_reserved_and_unnameable_names_are_refused_with_their_code_in_every_namespace(spaces, ns):
    opened, team_before = spaces
    nexus = opened[ns]
    before = fingerprint(nexus.driver, nexus.database)
    for name, code in REFUSED.items():
        answer = nexus.execute_kip(f'UPSERT {{ CONCEPT ?t {{ {{type: "$ConceptType", name: {kip_string(name)}}} }} }}')
        err(answer, code)
    for name, code in REFUSED_PREDICATES.items():
        answer = nexus.execute_kip(f'UPSERT {{ CONCEPT ?t {{ {{type: "$PropositionType", name: {kip_string(name)}}} }} }}')
        err(answer, code)
    assert fingerprint(nexus.driver, nexus.database) == before
    assert _team(nexus) == team_before


def test_namespaces_list_read_a_namespace_with_a_double_underscore_as_its_first_part(spaces, neo4j_server):
    """``c__d``'s labels are ``KipConcept__c__d``; the listing split them at every ``__`` and
    reported a phantom namespace ``c`` (which ``namespaces drop c`` then accepted)."""
    from kip2cypher.nexus import Nexus

    with Nexus(neo4j_server.uri, auth=neo4j_server.auth, database=neo4j_server.database, settings=Settings(embedder=False), namespace="c__d") as nexus:
        nexus.bootstrap()
        nexus.driver.execute_query("MATCH (n:KipNexus {namespace: 'c__d'}) DELETE n", database_=nexus.database)  # found by its labels alone
        listed = [info.namespace for info in nexus.namespaces()]
        assert "c__d" in listed and "c" not in listed
        assert set(NAMESPACES) <= set(listed)
        with pytest.raises(Exception) as refused:
            nexus.drop_namespace("c")
        assert getattr(refused.value, "code", None) == "KIP_3002"
        nexus.drop_namespace("c__d")


ENGINE_NAMES = [stem + suffix for stem in storage.RESERVED_LABEL_STEMS + storage.RESERVED_REL_STEMS for suffix in ("", "__a", "__a__b")]


@pytest.mark.parametrize("name", ENGINE_NAMES)
def test_the_shadow_label_of_adopted_relationship_vectors_could_be_adopted(name):
    """adoption.ENGINE_STEMS (spelled apart from storage's, below the layer) lacked
    KipAdoptedRelationshipVector: a mapping could adopt KIP's shadow nodes as the team's concepts
    and put an adopted index on them. Every engine label and relationship type, in every form, is
    refused as an adopted label and as an adopted relationship type."""
    import json

    from kip2cypher import adoption
    from kip2cypher.errors import KipError

    assert sorted(adoption.ENGINE_STEMS) == sorted(storage.RESERVED_LABEL_STEMS + storage.RESERVED_REL_STEMS)
    for mapping in (
        f"[types.T]\nlabel = {json.dumps(name)}\n",
        f'[types.T]\nlabel = "T"\n[predicates.p]\ntype = {json.dumps(name)}\nsubject = "T"\nobject = "T"\n',
    ):
        with pytest.raises(KipError) as refused:
            adoption.parse(mapping)
        assert refused.value.code == "KIP_3004", (name, refused.value.message)
