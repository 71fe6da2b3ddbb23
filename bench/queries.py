"""The query mix: every KQL feature, SEARCH and the KML writes, each with the Cypher a
Neo4j expert would write by hand for the same question on the same stored graph.

Each ``Query`` knows how to turn both answers into comparable rows (``kip_rows`` /
``cypher_rows``); the runner asserts they are equal (as multisets, or in order when
``ordered``) before it times anything. Writes get a per-run ``setup`` (untimed) and
a per-iteration command, so every timed run does the same amount of work.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kip2cypher.cypher import storage

from . import namespaced, writer
from .capsule import small_capsule
from .graph import MemoryGraph

Rows = list[tuple]


# ------------------------------------------------------------------ normalization
def norm(value: Any) -> Any:
    """A comparable form of one result value: elements → their id, floats rounded."""
    if isinstance(value, dict):
        return value.get("id", tuple(sorted((k, norm(v)) for k, v in value.items())))
    if hasattr(value, "element_id") and hasattr(value, "get"):  # a driver Node
        return value.get("id")
    if isinstance(value, float):
        return round(value, 9)
    if isinstance(value, list):
        return tuple(norm(v) for v in value)
    return storage.decode(value) if isinstance(value, str) else value


def find_rows(response: dict[str, Any], columns: int) -> Rows:
    """A FIND response (columnar, §6.2.2) → rows."""
    result = response["result"]
    if columns == 1:
        return [(norm(v),) for v in result]
    return [tuple(norm(v) for v in row) for row in zip(*result)]


def record_rows(records: list[Any]) -> Rows:
    return [tuple(norm(v) for v in record.values()) for record in records]


# ------------------------------------------------------------------ the query model
@dataclass
class Query:
    name: str
    feature: str
    kip: str
    cypher: str
    kip_params: dict[str, Any] = field(default_factory=dict)
    cypher_params: dict[str, Any] = field(default_factory=dict)
    columns: int = 1
    ordered: bool = False
    write: bool = False
    path: bool = False
    search: bool = False
    #: per-iteration command (writes): i -> (kip text, kip params, cypher params)
    vary: Callable[[int], tuple[str, dict[str, Any], dict[str, Any]]] | None = None
    #: untimed, before every run of either side (writes): (driver, database) -> None
    setup: Callable[[Any, Any], None] | None = None
    kip_rows: Callable[[dict[str, Any]], Rows] | None = None
    cypher_rows: Callable[[list[Any]], Rows] | None = None
    #: hand-written side as a function of a managed write transaction: (tx, params) -> rows
    cypher_run: Callable[[Any, dict[str, Any]], Rows] | None = None
    #: answer comparison when equality is too strict (SEARCH re-scores): (kip rows, cypher rows) -> bool
    compare: Callable[[Rows, Rows], bool] | None = None
    #: the hand-written statement used (untimed) for the answer check, when it differs from the timed one
    verify_cypher: str | None = None
    #: a second hand-written variant timed in the same alternation (reported as cypher_alt_ms)
    alt_cypher: str | None = None
    alt_params: dict[str, Any] = field(default_factory=dict)
    #: extra equality check after one run of each side: (driver, database) -> None (raises)
    check: Callable[[Any, Any], None] | None = None
    #: hand-written side's Python after its statement, timed with it (e.g. hybrid fusion): records -> rows
    cypher_post: Callable[[list[Any]], Any] | None = None
    #: KIP runs through the nexus with the bench embedder (semantic / hybrid SEARCH)
    semantic: bool = False
    note: str = ""

    def command(self, i: int) -> tuple[str, dict[str, Any], str, dict[str, Any]]:
        if self.vary is None:
            return self.kip, self.kip_params, self.cypher, self.cypher_params
        kip, kip_params, cypher_params = self.vary(i)
        return kip, kip_params, self.cypher, cypher_params

    def kip_answer(self, response: dict[str, Any]) -> Rows:
        if "error" in response:
            raise AssertionError(f"{self.name}: KIP error {response['error']}")
        if self.kip_rows is not None:
            return self.kip_rows(response)
        return find_rows(response, self.columns)

    def cypher_answer(self, records: list[Any]) -> Rows:
        if self.cypher_rows is not None:
            return self.cypher_rows(records)
        return record_rows(records)

    def same(self, kip: Rows, cypher: Rows) -> bool:
        if self.compare is not None:
            return self.compare(kip, cypher)
        if self.ordered:
            return kip == cypher
        return sorted(kip, key=repr) == sorted(cypher, key=repr)


# ------------------------------------------------------------------ the mix
def build(graph: MemoryGraph, cursor_token: str | None = None) -> list[Query]:
    """The query mix for ``graph``; CURSOR paging needs a token fetched from the live graph
    (``cursor_query`` gives the command that yields it)."""
    g = graph
    person, topic, org = g.person, g.topic, g.org
    witness, fact_s, fact_o = g.stated_example()
    qs: list[Query] = []
    add = qs.append

    # ---------------------------------------------------------------- lookups and scans
    add(Query("type_scan", "type scan", 'FIND(?o.name) WHERE { ?o {type: "Organization"} }', "MATCH (o:Organization) RETURN o.name"))
    add(
        Query(
            "type_name_lookup",
            "type+name lookup (whole node)",
            'FIND(?p) WHERE { ?p {type: "Person", name: :name} }',
            "MATCH (p:KipConcept {type: 'Person', name: $name}) RETURN p",
            {"name": person(42)},
            {"name": person(42)},
        )
    )
    add(
        Query(
            "name_lookup",
            "name-only lookup",
            "FIND(?c.type, ?c.id) WHERE { ?c {name: :name} }",
            "MATCH (c:KipConcept {name: $name}) RETURN c.type, c.id",
            {"name": topic(7)},
            {"name": topic(7)},
            columns=2,
        )
    )

    # ---------------------------------------------------------------- joins
    add(
        Query(
            "join_1",
            "join, 1 pattern",
            'FIND(?p.name) WHERE { (?p, "works_at", {type: "Organization", name: :org}) }',
            "MATCH (:KipConcept {type: 'Organization', name: $org})<-[:works_at]-(p) RETURN p.name",
            {"org": org(3)},
            {"org": org(3)},
        )
    )
    add(
        Query(
            "join_2",
            "join, 2 patterns",
            'FIND(?b.name, ?o.name) WHERE { ?a {type: "Person", name: :name} (?a, "knows", ?b) (?b, "works_at", ?o) }',
            "MATCH (:KipConcept {type: 'Person', name: $name})-[:knows]->(b)-[:works_at]->(o) RETURN b.name, o.name",
            {"name": person(5)},
            {"name": person(5)},
            columns=2,
        )
    )
    add(
        Query(
            "join_3",
            "join, 3 patterns",
            'FIND(?c.name, ?e.name) WHERE { ?a {type: "Person", name: :name} (?a, "knows", ?b) (?b, "knows", ?c) (?c, "attended", ?e) }',
            "MATCH (:KipConcept {type: 'Person', name: $name})-[:knows]->(b)-[:knows]->(c)-[:attended]->(e) RETURN DISTINCT c.name, e.name",
            {"name": person(5)},
            {"name": person(5)},
            columns=2,
        )
    )
    add(
        Query(
            "join_cycle",
            "join, 4 patterns (cycle, scan-heavy)",
            'FIND(?p.name, ?pl.name) WHERE { (?p, "works_at", ?o) (?o, "located_in", ?pl) (?p, "attended", ?e) (?e, "located_in", ?pl) }',
            "MATCH (p)-[:works_at]->(o)-[:located_in]->(pl), (p)-[:attended]->(e)-[:located_in]->(pl) RETURN DISTINCT p.name, pl.name",
            columns=2,
            note="KIP dedups solutions over (?p, ?pl); the hand-written query does the same with DISTINCT.",
        )
    )

    # ---------------------------------------------------------------- FILTER, NOT, OPTIONAL, UNION
    add(
        Query(
            "filter_numeric",
            "FILTER on numbers",
            'FIND(?p.name, ?p.attributes.age) WHERE { ?p {type: "Person"} '
            "FILTER(?p.attributes.age >= 30 && ?p.attributes.age < 32 && ?p.attributes.score > 50.0) }",
            "MATCH (p:Person) WHERE p.`attr.age` >= 30 AND p.`attr.age` < 32 AND p.`attr.score` > 50.0 RETURN p.name, p.`attr.age`",
            columns=2,
        )
    )
    add(
        Query(
            "filter_string",
            "FILTER on strings (CONTAINS)",
            'FIND(?t.name) WHERE { ?t {type: "Topic"} FILTER(CONTAINS(?t.attributes.description, "quantum") && ?t.attributes.level >= 4) }',
            "MATCH (t:Topic) WHERE t.`attr.description` CONTAINS 'quantum' AND t.`attr.level` >= 4 RETURN t.name",
        )
    )
    add(
        Query(
            "filter_events_order",
            "FILTER (IN, time range) + ORDER BY 2 keys + LIMIT",
            'FIND(?e.name, ?e.attributes.start_time) WHERE { ?e {type: "Event"} '
            'FILTER(IN(?e.attributes.event_class, ["Conversation", "Meeting"])) '
            'FILTER(?e.attributes.start_time > "2025-06-01T00:00:00Z") } '
            "ORDER BY ?e.attributes.start_time DESC, ?e.name ASC LIMIT 20",
            "MATCH (e:Event) WHERE e.`attr.event_class` IN ['Conversation', 'Meeting'] AND e.`attr.start_time` > '2025-06-01T00:00:00Z' "
            "RETURN e.name, e.`attr.start_time` ORDER BY e.`attr.start_time` DESC, e.name LIMIT 20",
            columns=2,
            ordered=True,
        )
    )
    add(
        Query(
            "not",
            "NOT",
            'FIND(?p.name) WHERE { ?p {type: "Person"} FILTER(?p.attributes.age > 70) NOT { (?p, "works_at", ?o) } }',
            "MATCH (p:Person) WHERE p.`attr.age` > 70 AND NOT EXISTS { (p)-[:works_at]->() } RETURN p.name",
        )
    )
    add(
        Query(
            "optional",
            "OPTIONAL",
            'FIND(?d.name, ?a.name) WHERE { ?d {type: "Document"} FILTER(?d.attributes.year == 2001) OPTIONAL { (?a, "authored", ?d) } }',
            "MATCH (d:Document) WHERE d.`attr.year` = 2001 OPTIONAL MATCH (a)-[:authored]->(d) RETURN d.name, a.name",
            columns=2,
        )
    )
    add(
        Query(
            "union",
            "UNION",
            'FIND(?p.name) WHERE { (?p, "works_at", {type: "Organization", name: :a}) UNION { (?p, "works_at", {type: "Organization", name: :b}) } }',
            "MATCH (o:KipConcept {type: 'Organization'}) WHERE o.name IN [$a, $b] MATCH (p)-[:works_at]->(o) RETURN DISTINCT p.name",
            {"a": org(1), "b": org(2)},
            {"a": org(1), "b": org(2)},
        )
    )

    # ---------------------------------------------------------------- aggregation, ordering
    add(
        Query(
            "group_count",
            "grouped COUNT + ORDER BY aggregate + LIMIT",
            'FIND(?o.name, COUNT(?p)) WHERE { (?p, "works_at", ?o) } ORDER BY COUNT(?p) DESC LIMIT 10',
            "MATCH (o:Organization) WITH o, COUNT { (o)<-[:works_at]-() } AS n ORDER BY n DESC, o.name LIMIT 10 RETURN o.name, n",
            columns=2,
            ordered=True,
            note="The expert counts with the relationship-degree store (COUNT { … } on the label scan).",
        )
    )
    add(
        Query(
            "group_avg",
            "grouped COUNT + AVG over an attribute",
            'FIND(?e.attributes.event_class, COUNT(?e), AVG(?e.attributes.salience)) WHERE { ?e {type: "Event"} }',
            "MATCH (e:Event) RETURN e.`attr.event_class`, count(e), avg(e.`attr.salience`)",
            columns=3,
        )
    )
    add(
        Query(
            "order_limit",
            "ORDER BY attribute DESC + LIMIT (top-k)",
            'FIND(?e.name, ?e.attributes.salience) WHERE { ?e {type: "Event"} } ORDER BY ?e.attributes.salience DESC LIMIT 20',
            "MATCH (e:Event) RETURN e.name, e.`attr.salience` ORDER BY e.`attr.salience` DESC LIMIT 20",
            columns=2,
            ordered=True,
        )
    )

    # ---------------------------------------------------------------- predicate variables
    add(
        Query(
            "predvar_explore",
            "predicate variable on a bound ?link (spec example 5)",
            'FIND(?pred, ?n.name, ?l.metadata.confidence) WHERE { ?person {type: "Person", name: :name} ?l (?person, ?pred, ?n) '
            'FILTER(?pred != "belongs_to_domain") } ORDER BY ?l.metadata.confidence DESC LIMIT 50',
            "MATCH (:KipConcept {type: 'Person', name: $name})<-[:KIP_SUBJECT]-(l:KipProposition)-[:KIP_OBJECT]->(n) "
            "WHERE l.predicate <> 'belongs_to_domain' RETURN l.predicate, n.name, l.`meta.confidence` ORDER BY l.`meta.confidence` DESC LIMIT 50",
            {"name": person(10)},
            {"name": person(10)},
            columns=3,
        )
    )
    add(
        Query(
            "predvar_native",
            "predicate variable, no ?link (native relationships)",
            'FIND(?pred, ?n.name) WHERE { ({type: "Person", name: :name}, ?pred, ?n) }',
            "MATCH (:KipConcept {type: 'Person', name: $name})-[r]->(n) RETURN type(r), n.name",
            {"name": person(10)},
            {"name": person(10)},
            columns=2,
        )
    )

    # ---------------------------------------------------------------- paths
    # KIP paths have walk semantics (docs/kql.md, "Paths": every node some walk of m..n links
    # reaches). The hand-written twin answers that question the way an expert would on Neo4j 5:
    # a breadth-first ANY SHORTEST search per reached node; the trail-enumerating
    # variable-length pattern (`*1..n`, the same answer when m <= 1) is timed alongside as
    # `cypher_alt_ms`.
    def path(name: str, feature: str, kip: str, start: str, pattern: str, alt: str, params: dict[str, Any]) -> Query:
        end = "x" if pattern.startswith("(x)") else "y"
        return Query(
            name,
            feature,
            kip,
            f"{start} MATCH ANY SHORTEST {pattern} RETURN DISTINCT {end}.name",
            params,
            params,
            path=True,
            alt_cypher=f"{start} MATCH {alt} RETURN DISTINCT {end}.name",
            alt_params=params,
        )

    for name, feature, kip, start, pattern, alt, params in (
        (
            "path_part_of_1_3",
            'path "part_of"{1,3} (descendants of the tree root)',
            'FIND(?x.name) WHERE { (?x, "part_of"{1,3}, {type: "Topic", name: :root}) }',
            "MATCH (r:KipConcept {type: 'Topic', name: $root})",
            "(x)-[:part_of]->{1,3}(r)",
            "(x)-[:part_of*1..3]->(r)",
            {"root": topic(0)},
        ),
        (
            "path_follows_1_5",
            'path "follows"{1,5} (a chain)',
            'FIND(?y.name) WHERE { ({type: "Topic", name: :start}, "follows"{1,5}, ?y) }',
            "MATCH (s:KipConcept {type: 'Topic', name: $start})",
            "(s)-[:follows]->{1,5}(y)",
            "(s)-[:follows*1..5]->(y)",
            {"start": topic(20)},
        ),
        (
            "path_knows_1_3",
            'path "knows"{1,3} (social neighbourhood)',
            'FIND(?y.name) WHERE { ({type: "Person", name: :start}, "knows"{1,3}, ?y) }',
            "MATCH (s:KipConcept {type: 'Person', name: $start})",
            "(s)-[:knows]->{1,3}(y)",
            "(s)-[:knows*1..3]->(y)",
            {"start": person(5)},
        ),
        (
            "path_knows_1_5",
            'path "knows"{1,5} (wide neighbourhood)',
            'FIND(?y.name) WHERE { ({type: "Person", name: :start}, "knows"{1,5}, ?y) }',
            "MATCH (s:KipConcept {type: 'Person', name: $start})",
            "(s)-[:knows]->{1,5}(y)",
            "(s)-[:knows*1..5]->(y)",
            {"start": person(5)},
        ),
    ):
        add(path(name, feature, kip, start, pattern, alt, params))

    # ---------------------------------------------------------------- higher-order
    hp = {"w": witness, "a": fact_s, "b": fact_o}
    add(
        Query(
            "higher_order_fact",
            "higher-order lookup (spec example 3)",
            'FIND(?s.metadata.confidence) WHERE { ?f ({type: "Person", name: :a}, "knows", {type: "Person", name: :b}) '
            '?s ({type: "Person", name: :w}, "stated", ?f) }',
            "MATCH (:KipConcept {type: 'Person', name: $a})<-[:KIP_SUBJECT]-(f:KipProposition {predicate: 'knows'})-[:KIP_OBJECT]->(:KipConcept {type: "
            "'Person', name: $b}) "
            "MATCH (:KipConcept {type: 'Person', name: $w})<-[:KIP_SUBJECT]-(s:KipProposition {predicate: 'stated'})-[:KIP_OBJECT]->(f) "
            "RETURN s.`meta.confidence`",
            hp,
            hp,
        )
    )
    add(
        Query(
            "higher_order_scan",
            "higher-order: every stated fact with its endpoints",
            'FIND(?w.name, ?a.name, ?b.name) WHERE { ?f (?a, "knows", ?b) (?w, "stated", ?f) }',
            "MATCH (w)-[:stated]->(f:KipProposition)-[:KIP_SUBJECT]->(a), (f)-[:KIP_OBJECT]->(b) RETURN w.name, a.name, b.name",
            columns=3,
        )
    )

    # ---------------------------------------------------------------- paging
    if cursor_token is not None:
        add(
            Query(
                "cursor_page3",
                "CURSOR paging (3rd page of 100)",
                'FIND(?d.name) WHERE { ?d {type: "Document"} } ORDER BY ?d.name ASC LIMIT 100 CURSOR :cursor',
                "MATCH (d:Document) RETURN d.name ORDER BY d.name SKIP 200 LIMIT 100",
                {"cursor": cursor_token},
                {},
                ordered=True,
                kip_rows=lambda r: find_rows(r, 1),
            )
        )
    return qs


CURSOR_QUERY = 'FIND(?d.name) WHERE { ?d {type: "Document"} } ORDER BY ?d.name ASC LIMIT 100'


# ------------------------------------------------------------------ SEARCH
def search_queries(term_words: str, term_name: str) -> list[Query]:
    """Keyword SEARCH vs the direct full-text call with the same Lucene query string.

    KIP builds its Lucene query from escaped word tokens (term^4 OR prefix*^2 OR *infix* OR
    fuzzy~1 per token), takes a pool of max(5 × LIMIT, 50) candidates and re-scores them
    (lexical score in [0, 1]); the hand-written call asks the index the same Lucene query for
    LIMIT 10. The answer check: every KIP hit is among the index's top-50 candidates for that
    query. ``cypher_alt_ms`` times the plain term as the Lucene query (what a person would type)."""
    from kip2cypher.cypher import catalog, storage
    from kip2cypher.lower.search import lucene_query

    call = f"CALL db.index.fulltext.queryNodes('{catalog.concept_text_index(storage.DEFAULT)}', $q) YIELD node, score "
    out = []
    for name, term in (("search_words", term_words), ("search_name", term_name)):
        lucene = lucene_query(term)
        plain = " ".join(w for w in term.split() if w.isalnum())
        out.append(
            Query(
                name,
                f"keyword SEARCH CONCEPT {term!r} LIMIT 10",
                'SEARCH CONCEPT :term MODE "keyword" LIMIT 10',
                call + "RETURN node.id, node.name, score LIMIT 10",
                {"term": term},
                {"q": lucene},
                search=True,
                verify_cypher=call + "RETURN node.id, node.name, score LIMIT 50",
                alt_cypher=call + "RETURN node.id, node.name, score LIMIT 10",
                alt_params={"q": plain},
                kip_rows=lambda r: [(obj["id"],) for obj in r["result"]],
                cypher_rows=lambda recs: [(rec[0],) for rec in recs],
                compare=lambda k, c: bool(k) and set(k) <= set(c),
                note="KIP re-scores the index's candidates; checked: every KIP hit is among the top-50 of the same index query.",
            )
        )
    return out


def semantic_queries(term: str, embedder: Any) -> list[Query]:
    """Semantic and hybrid SEARCH vs the direct index calls with the same query vector.

    KIP runs through a nexus whose embedder is ``embedder`` (bench/vectors.py); the query
    vector is computed once for the hand-written side (KIP's own embedding of the term is
    part of its time). Semantic: ``db.index.vector.queryNodes`` with KIP's k (its candidate
    pool, 20 for LIMIT 10) — answers equal as sets. Hybrid: the hand-written side runs the
    full-text call (the same Lucene query) and the vector call in one statement and fuses
    them in Python with KIP's own score-weighted RRF (``execution.scoring.fuse``, Lucene
    scores divided by the best) — KIP re-scores its keyword candidates lexically, so the
    check is that every KIP hit is among the candidates of either index."""
    from kip2cypher.cypher import catalog, storage
    from kip2cypher.execution.scoring import fuse
    from kip2cypher.lower.search import candidate_pool, lucene_query

    vector = embedder.embed([term])[0]
    pool = candidate_pool(10)
    vector_call = f"CALL db.index.vector.queryNodes('{catalog.concept_vector_index(storage.DEFAULT)}', $k, $vector) YIELD node, score "
    hybrid = (
        f"CALL () {{ CALL db.index.fulltext.queryNodes('{catalog.concept_text_index(storage.DEFAULT)}', $q) YIELD node, score "
        "WITH node, score LIMIT $k RETURN collect([node.id, node.name, score]) AS kw } "
        f"CALL () {{ {vector_call}RETURN collect([node.id, node.name, score]) AS vec }} RETURN kw, vec"
    )

    def fused(records: list[Any]) -> list[tuple]:
        kw, vec = records[0]["kw"], records[0]["vec"]
        best = max((score for _, _, score in kw), default=1.0) or 1.0
        ranked = fuse([[(i, score / best, None) for i, _, score in kw], [(i, max(0.0, 2.0 * score - 1.0), None) for i, _, score in vec]])
        return [(element_id,) for element_id, _, _ in ranked[:10]]

    params = {"term": term}
    return [
        Query(
            "search_semantic",
            f"semantic SEARCH CONCEPT {term!r} LIMIT 10 (vector index)",
            'SEARCH CONCEPT :term MODE "semantic" LIMIT 10',
            vector_call + "RETURN node.id, node.name, score LIMIT 10",
            params,
            {"vector": vector, "k": pool},
            search=True,
            semantic=True,
            kip_rows=lambda r: [(obj["id"],) for obj in r["result"]],
            cypher_rows=lambda recs: [(rec[0],) for rec in recs],
            note="Same query vector, same k; KIP also embeds the term (cached by the embedder after the first run) and returns whole concepts.",
        ),
        Query(
            "search_hybrid",
            f"hybrid SEARCH CONCEPT {term!r} LIMIT 10 (full-text + vector, fused)",
            'SEARCH CONCEPT :term MODE "hybrid" LIMIT 10',
            hybrid,
            params,
            {"vector": vector, "k": pool, "q": lucene_query(term)},
            search=True,
            semantic=True,
            kip_rows=lambda r: [(obj["id"],) for obj in r["result"]],
            cypher_rows=lambda recs: [(c[0],) for c in recs[0]["kw"] + recs[0]["vec"]],
            verify_cypher=hybrid.replace("$k", "50"),
            cypher_post=fused,
            compare=lambda k, c: bool(k) and set(k) <= set(c),
            note="The hand-written side fuses in Python with KIP's RRF; checked: every KIP hit is a candidate of either index.",
        ),
    ]


# ------------------------------------------------------------------ writes
def write_queries(graph: MemoryGraph) -> list[Query]:
    out = []

    def capsule_vary(i: int) -> tuple[str, dict[str, Any], dict[str, Any]]:
        kip = small_capsule(f"K{i}")
        hand = small_capsule(f"H{i}")
        return kip.text, {}, {"concepts": hand.concept_rows, "links": hand.link_rows, "now": writer.now_iso()}

    out.append(
        Query(
            "upsert_capsule",
            "UPSERT capsule (20 concepts, 40 propositions, new text every run)",
            "",
            writer.CONCEPTS + "\n" + writer.LINKS,
            write=True,
            vary=capsule_vary,
            cypher_run=lambda tx, p: [writer.write(tx, p["concepts"], p["links"])],
            cypher_rows=lambda rows: [tuple(r) for r in rows],
            # the capsule's two Domain blocks only match (they are reported, not written)
            kip_rows=lambda r: [
                (len(r["result"]["upsert_concept_nodes"]) - 2, len(r["result"]["upsert_concept_nodes"]) - 2 + len(r["result"]["upsert_proposition_links"]))
            ],
            check=_same_capsule,
            note="Every run upserts NEW concepts (fresh names), so KIP pays a cold parse + compile each time, as an agent would.",
        )
    )
    people = [graph.person(1000 + j) for j in range(100)]
    attr_text = (
        "UPSERT {\n"
        + "\n".join(
            f'  CONCEPT ?c{j} {{ {{type: "Person", name: :n{j}}} SET ATTRIBUTES {{ mood: :m{j}, visits: :v{j}, last_seen: :t{j} }} }}' for j in range(100)
        )
        + "\n}"
    )

    def attr_values(i: int, side: str) -> list[tuple[str, int, str]]:
        # each side writes values of its own, so neither finds the other's write already in place
        return [(f"{side}-mood-{(i + j) % 7}", i * 100 + j, f"2026-01-{1 + i % 28:02d}T10:00:{j % 60:02d}Z") for j in range(100)]

    def attr_vary(i: int) -> tuple[str, dict[str, Any], dict[str, Any]]:
        kip = {
            key: value
            for j, (mood, visits, seen) in enumerate(attr_values(i, "k"))
            for key, value in ((f"n{j}", people[j]), (f"m{j}", mood), (f"v{j}", visits), (f"t{j}", seen))
        }
        rows = [
            {"type": "Person", "name": people[j], "props": {"attr.mood": mood, "attr.visits": visits, "attr.last_seen": seen}}
            for j, (mood, visits, seen) in enumerate(attr_values(i, "c"))
        ]
        return attr_text, kip, {"rows": rows, "now": writer.now_iso()}

    out.append(
        Query(
            "upsert_attributes",
            "UPSERT 3 attributes on 100 known concepts (parameterized capsule)",
            "",
            "UNWIND $rows AS r MATCH (c:KipConcept {type: r.type, name: r.name}) "
            "SET c += r.props, c.`meta._version` = coalesce(c.`meta._version`, 0) + 1, c.`meta._updated_at` = $now RETURN count(c) AS n",
            write=True,
            vary=attr_vary,
            kip_rows=lambda r: [(len(r["result"]["upsert_concept_nodes"]),)],
            cypher_rows=lambda recs: [(recs[0]["n"],)],
            note="One capsule text (parsed once), new values every run; the hand-written side is the issue's UNWIND/MATCH/SET with the version bump.",
        )
    )
    out.append(
        Query(
            "update_bulk",
            "bulk UPDATE (counter on ~20% of Events)",
            'UPDATE ?e SET ATTRIBUTES { views: ADD(COALESCE(?e.attributes.views, 0), 1) } WHERE { ?e {type: "Event"} FILTER(?e.attributes.event_class == '
            '"Meeting") }',
            "MATCH (e:Event) WHERE e.`attr.event_class` = 'Meeting' "
            "SET e.`attr.views` = coalesce(e.`attr.views`, 0) + 1, e.`meta._version` = e.`meta._version` + 1, e.`meta._updated_at` = $now "
            "RETURN count(e) AS n",
            write=True,
            vary=lambda i: (
                'UPDATE ?e SET ATTRIBUTES { views: ADD(COALESCE(?e.attributes.views, 0), 1) } WHERE { ?e {type: "Event"} FILTER(?e.attributes.event_class == '
                '"Meeting") }',
                {},
                {"now": writer.now_iso()},
            ),
            kip_rows=lambda r: [(r["result"]["updated"],)],
            cypher_rows=lambda recs: [(recs[0]["n"],)],
            check=_views_in_step,
        )
    )
    out.append(
        Query(
            "update_decay",
            "bulk UPDATE over a predicate variable (spec decay example, LIMIT 500)",
            "",
            "MATCH (l:KipProposition) WHERE l.predicate <> 'belongs_to_domain' AND l.`meta.confidence` > 0.9 "
            "WITH l LIMIT 500 SET l.`meta.confidence` = CASE WHEN l.`meta.confidence` * 0.9999 > 1.0 THEN 1.0 ELSE l.`meta.confidence` * 0.9999 END, "
            "l.`meta._version` = l.`meta._version` + 1, l.`meta._updated_at` = $now RETURN count(l) AS n",
            write=True,
            vary=lambda i: (
                "UPDATE ?l SET METADATA { confidence: CLAMP(MUL(?l.metadata.confidence, 0.9999), 0.0, 1.0) } "
                'WHERE { ?l (?s, ?p, ?o) FILTER(?p != "belongs_to_domain") FILTER(?l.metadata.confidence > 0.9) } LIMIT 500',
                {},
                {"now": writer.now_iso()},
            ),
            kip_rows=lambda r: [(r["result"]["matched"],)],
            cypher_rows=lambda recs: [(recs[0]["n"],)],
            note="Both sides update 500 links (which 500 is implementation-defined); equality is on the count.",
        )
    )
    out.append(
        Query(
            "delete_concepts",
            "DELETE CONCEPT … DETACH (20 concepts with 2 links each, cascade)",
            'DELETE CONCEPT ?c DETACH WHERE { ?c {type: "Scratch"} }',
            "MATCH (c:Scratch) OPTIONAL MATCH (c)<-[:KIP_SUBJECT|KIP_OBJECT]-(p:KipProposition) "
            "WITH collect(DISTINCT c) AS cs, collect(DISTINCT p) AS ps "
            "FOREACH (x IN ps | DETACH DELETE x) FOREACH (x IN cs | DETACH DELETE x) "
            "RETURN size(cs) AS concepts, size(ps) AS props",
            write=True,
            setup=lambda driver, db: _scratch(driver, db, graph),
            kip_rows=lambda r: [(r["result"]["deleted_concepts"], r["result"]["deleted_propositions"])],
            cypher_rows=lambda recs: [(recs[0]["concepts"], recs[0]["props"])],
            note="Setup (untimed) writes 20 Scratch concepts, each the subject of 2 links to Persons.",
        )
    )
    return out


def _scratch(driver: Any, database: Any, graph: MemoryGraph) -> None:
    concepts = [writer.concept_row("Scratch", f"scratch {i}", {"n": i}, {"source": "bench"}) for i in range(20)]
    links = []
    for i in range(20):
        for j in (i, i + 1):
            links.append(writer.link_row(("Scratch", f"scratch {i}"), "mentions" if j == i else "stated", ("Person", graph.person(j)), {}, {}))
    with driver.session(database=database) as session:
        session.execute_write(lambda tx: writer.write(tx, concepts, links))


def _views_in_step(driver: Any, database: Any) -> None:
    records, _, _ = driver.execute_query(
        namespaced.cypher(
            "MATCH (e:Event) WHERE e.`attr.event_class` = 'Meeting' RETURN count(DISTINCT e.`attr.views`) AS distinct_values, min(e.`attr.views`) AS low"
        ),
        database_=database,
    )
    if records[0]["distinct_values"] != 1:
        raise AssertionError(f"update_bulk: KIP and hand-written runs did not increment the same Events ({records[0]})")


_SUBGRAPH = """MATCH (c:KipConcept) WHERE c.name STARTS WITH $prefix
OPTIONAL MATCH (c)<-[:KIP_SUBJECT]-(l:KipProposition)-[:KIP_OBJECT]->(o)
OPTIONAL MATCH (c)-[r]->(o) WHERE r.kip_id = l.id
RETURN c.type AS type, substring(c.name, size($prefix)) AS name,
       [k IN keys(c) WHERE k STARTS WITH 'attr.' | [k, c[k]]] AS attrs,
       [k IN keys(c) WHERE k STARTS WITH 'meta.' AND NOT k STARTS WITH 'meta._' | [k, c[k]]] AS meta,
       l.predicate AS predicate, CASE WHEN o.name STARTS WITH $prefix THEN substring(o.name, size($prefix)) ELSE o.name END AS object,
       [k IN keys(l) WHERE (k STARTS WITH 'attr.' OR k STARTS WITH 'meta.') AND NOT k STARTS WITH 'meta._' | [k, l[k]]] AS link_props,
       r IS NOT NULL AS native"""


def _same_capsule(driver: Any, database: Any) -> None:
    """The KIP capsule (names "K0 …") and the hand-written write (names "H0 …") stored the same graph."""

    def read(prefix: str) -> list:
        records, _, _ = driver.execute_query(namespaced.cypher(_SUBGRAPH), prefix=prefix, database_=database)
        return sorted(
            (
                tuple(sorted(map(tuple, r["attrs"]))),
                tuple(sorted(map(tuple, r["meta"]))),
                r["type"],
                r["name"],
                r["predicate"] or "",
                r["object"] or "",
                tuple(sorted(map(tuple, r["link_props"]))),
                r["native"],
            )
            for r in records
        )

    kip, hand = read("K0 "), read("H0 ")
    if kip != hand or not kip:
        raise AssertionError(f"upsert_capsule: the KIP capsule and the hand-written MERGE wrote different graphs:\n{kip[:3]}\n{hand[:3]}")
