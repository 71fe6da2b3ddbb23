"""SEARCH CONCEPT / PROPOSITION — keyword, semantic and hybrid — on the real Neo4j indexes."""

from __future__ import annotations

import pytest
from meta_data import MEDICAL, TopicEmbedder, load, names, ok, scores

from kip2cypher import embedding
from kip2cypher.execution import scoring
from kip2cypher.execution.programs import search as search_program
from kip2cypher.lower import compile as compiler
from kip2cypher.lower import search


def _use(nexus, embedder):
    nexus.settings = nexus.settings.replace(embedder=embedder)


@pytest.fixture()
def medical(genesis):
    """The medical graph, written while the test embedder is configured (so vectors exist)."""
    _use(genesis, TopicEmbedder())
    load(genesis, MEDICAL)
    return genesis


@pytest.fixture()
def keyword_only(genesis):
    _use(genesis, False)
    load(genesis, MEDICAL)
    return genesis


def _ordered(results):
    s = scores(results)
    assert all(0.0 <= x <= 1.0 for x in s), s
    assert s == sorted(s, reverse=True), s


# ------------------------------------------------------------------ keyword
def test_keyword_exact_name_scores_one_and_whole_hit_shape(keyword_only):
    results = ok(keyword_only.execute_kip('SEARCH CONCEPT "aspirin" MODE "keyword" LIMIT 3'))
    assert names(results) == ["Aspirin", "Aspirin Complex"]
    top = results[0]
    meta = top["metadata"]
    assert meta["_score"] == 1.0 and meta["_version"] >= 1
    assert top == {
        "id": top["id"],
        "type": "Drug",
        "name": "Aspirin",
        "attributes": {
            "aliases": ["acetylsalicylic acid", "ASA"],
            "description": "A nonsteroidal anti-inflammatory drug used to relieve pain and reduce fever.",
            "dosage_form": {"type": "tablet", "strength": "500mg"},
            "risk_level": 2,
        },
        "metadata": {
            "_score": 1.0,
            "_updated_at": meta["_updated_at"],
            "_version": meta["_version"],
            "author": "tester",
            "confidence": 0.9,
            "source": "meta-tests",
        },
    }
    assert 0.5 < results[1]["metadata"]["_score"] < 1.0
    _ordered(results)


def test_keyword_matches_aliases_including_string_lists(keyword_only):
    assert names(ok(keyword_only.execute_kip('SEARCH CONCEPT "acetylsalicylic acid"')))[0] == "Aspirin"
    results = ok(keyword_only.execute_kip('SEARCH CONCEPT "cephalalgia"'))
    assert names(results) == ["Headache"] and scores(results) == [1.0]


def test_keyword_matches_description_below_names(keyword_only):
    results = ok(keyword_only.execute_kip('SEARCH CONCEPT "pain"'))
    # "pain" only appears in descriptions: Headache, Aspirin, Ibuprofen (0.7 = description weight).
    assert set(names(results)) == {"Headache", "Aspirin", "Ibuprofen"}
    assert set(scores(results)) == {0.7}


def test_keyword_typo_prefix_and_compound_names(keyword_only):
    assert names(ok(keyword_only.execute_kip('SEARCH CONCEPT "asprin"')))[0] == "Aspirin"
    assert names(ok(keyword_only.execute_kip('SEARCH CONCEPT "ibupro"')))[0] == "Ibuprofen"
    # snake_case and CamelCase names are split into words for matching.
    hits = ok(keyword_only.execute_kip('SEARCH CONCEPT "side effect" WITH TYPE "$PropositionType"'))
    assert names(hits) == ["has_side_effect"]
    hits = ok(keyword_only.execute_kip('SEARCH CONCEPT "proposition type"'))
    assert names(hits)[0] == "$PropositionType" and hits[0]["metadata"]["_score"] == 1.0


def test_keyword_is_case_and_accent_insensitive(keyword_only):
    load(keyword_only, 'UPSERT { CONCEPT ?c { {type: "Symptom", name: "Café Nausée"} } }')
    hits = ok(keyword_only.execute_kip('SEARCH CONCEPT "cafe nausee"'))
    assert names(hits)[0] == "Café Nausée" and scores(hits)[0] == 1.0
    assert names(ok(keyword_only.execute_kip('SEARCH CONCEPT "FEVER"')))[0] == "Fever"


def test_with_type_filters_by_concept_type(keyword_only):
    results = ok(keyword_only.execute_kip('SEARCH CONCEPT "pain" WITH TYPE "Symptom" LIMIT 50'))
    assert names(results) == ["Headache"]
    assert names(ok(keyword_only.execute_kip('SEARCH CONCEPT "aspirin" WITH TYPE :t', parameters={"t": "Symptom"}))) == []


def test_with_undefined_type_is_type_mismatch(keyword_only):
    error = keyword_only.execute_kip('SEARCH CONCEPT "aspirin" WITH TYPE "drug"')["error"]
    assert error["code"] == "KIP_2001" and '"Drug"' in error["hint"]


def test_threshold_drops_weaker_hits(keyword_only):
    all_hits = ok(keyword_only.execute_kip('SEARCH CONCEPT "aspirin"'))
    strong = ok(keyword_only.execute_kip('SEARCH CONCEPT "aspirin" THRESHOLD 0.95'))
    assert names(strong) == ["Aspirin"] and len(all_hits) > 1
    assert ok(keyword_only.execute_kip('SEARCH CONCEPT "aspirin" THRESHOLD :t', parameters={"t": 1.0})) == strong


def test_limit_caps_and_default_limit(keyword_only):
    assert len(ok(keyword_only.execute_kip('SEARCH CONCEPT "pain" LIMIT 2'))) == 2
    for i in range(15):
        load(keyword_only, f'UPSERT {{ CONCEPT ?c {{ {{type: "Symptom", name: "Pain {i}"}} }} }}')
    assert len(ok(keyword_only.execute_kip('SEARCH CONCEPT "pain"'))) == search.SEARCH_DEFAULT_LIMIT
    assert len(ok(keyword_only.execute_kip('SEARCH CONCEPT "pain" LIMIT 100'))) == 18


def test_keyword_expansions_only_when_the_plain_query_leaves_limit_unfilled(keyword_only):
    # "effect" is no word of any grounding field: only the infix expansion finds has_side_effect.
    hits = ok(keyword_only.execute_kip('SEARCH CONCEPT "effect"'))
    assert names(hits) == ["has_side_effect"] and 0.6 < scores(hits)[0] < 0.8
    for i in range(3):
        load(keyword_only, f'UPSERT {{ CONCEPT ?c {{ {{type: "Symptom", name: "Effect {i}"}} }} }}')
    # Three plain hits fill LIMIT 2: the infix query is not run.
    effects = {"Effect 0", "Effect 1", "Effect 2"}
    two = names(ok(keyword_only.execute_kip('SEARCH CONCEPT "effect" LIMIT 2')))
    assert len(two) == 2 and set(two) <= effects
    # Three plain hits leave LIMIT 10 unfilled: the expansions add has_side_effect below them.
    hits = ok(keyword_only.execute_kip('SEARCH CONCEPT "effect"'))
    assert set(names(hits)[:3]) == effects and names(hits)[3:] == ["has_side_effect"]
    _ordered(hits)
    # THRESHOLD counts too: no plain hit reaches 0.9, so the expansions run (and find nothing that strong).
    assert ok(keyword_only.execute_kip('SEARCH CONCEPT "effect" THRESHOLD 0.9 LIMIT 2')) == []


def _lite_only(real_rows):
    """A ``search._rows`` that hands every candidate over as a partial (lite) one."""

    def rows(row):
        out = []
        for rank, element_id, node, whole in real_rows(row):
            if whole:
                texts = [node[k] for k in scoring._DESCRIPTIVE if node.get(k) is not None]
                node = [element_id, node.get("name"), node.get(scoring._ALIASES), texts]
            out.append((rank, element_id, node, False))
        return out

    return rows


KEYWORD_COMMANDS = [
    'SEARCH CONCEPT "aspirin" LIMIT 3',
    'SEARCH CONCEPT "pain"',
    'SEARCH CONCEPT "asprin"',
    'SEARCH CONCEPT "cephalalgia"',
    'SEARCH PROPOSITION "treats"',
    'SEARCH PROPOSITION "adverse reaction"',
]


def test_hits_scored_from_partial_candidates_and_fetched_afterwards_are_identical(keyword_only, monkeypatch):
    """Only the first LIMIT candidates come back whole; the others are scored from [id, name,
    aliases, texts] and fetched by id when they make the cut. Forcing every candidate through
    that path must not change a single result."""
    expected = [ok(keyword_only.execute_kip(c)) for c in KEYWORD_COMMANDS]
    assert all(expected)
    monkeypatch.setattr(search_program, "_rows", _lite_only(search_program._rows))
    assert [ok(keyword_only.execute_kip(c)) for c in KEYWORD_COMMANDS] == expected


def test_semantic_and_hybrid_hits_fetched_afterwards_are_identical(medical, monkeypatch):
    commands = [
        'SEARCH CONCEPT "analgesic" MODE "semantic" LIMIT 2',
        'SEARCH CONCEPT "aspirin" MODE "hybrid" LIMIT 4',
        'SEARCH PROPOSITION "migraine medicine" MODE "hybrid" LIMIT 3',
    ]
    expected = [ok(medical.execute_kip(c)) for c in commands]
    assert all(expected)
    monkeypatch.setattr(search_program, "_rows", _lite_only(search_program._rows))
    assert [ok(medical.execute_kip(c)) for c in commands] == expected


def test_candidate_statement_returns_the_first_limit_whole_and_the_rest_lite(keyword_only):
    plan = compiler.compile_plan('SEARCH CONCEPT "aspirin pain"', {}, keyword_only.settings)
    stmt = plan.fulltext
    with keyword_only.session("READ") as session:
        row = session.run(stmt.text, {**stmt.params, "query": search.lucene_query("aspirin pain"), "type": None, "whole": 1}).single()
    assert len(row["whole"]) == 1 and "id" in row["whole"][0] and row["whole"][0].get("kip_embedding") is None
    assert row["whole"][0]["type"] and "meta._version" in row["whole"][0]
    rest = {lite[1]: lite for lite in row["rest"]}
    assert len(rest) >= 2
    for element_id, name, aliases, texts in rest.values():
        assert element_id.startswith("C:") and isinstance(texts, list)
    if "Aspirin" in rest:
        assert rest["Aspirin"][2] == ["acetylsalicylic acid", "ASA"]
        assert rest["Aspirin"][3] == ["A nonsteroidal anti-inflammatory drug used to relieve pain and reduce fever."]


@pytest.mark.parametrize("term", ["", "   ", "***", "?", "\\", '"', "AND", "OR NOT", "(", "a:b", "[x TO y]", "~", "/regex/", "x^2", "&&||!"])
def test_hostile_terms_never_break_the_index_query(keyword_only, term):
    response = keyword_only.execute_kip("SEARCH CONCEPT :t", parameters={"t": term})
    assert "error" not in response, response
    assert isinstance(response["result"], list)
    for mode in ("semantic", "hybrid"):
        assert "error" not in keyword_only.execute_kip(f'SEARCH PROPOSITION :t MODE "{mode}"', parameters={"t": term})


def test_nothing_searchable_returns_empty(keyword_only):
    assert ok(keyword_only.execute_kip('SEARCH CONCEPT "***"')) == []
    assert ok(keyword_only.execute_kip('SEARCH CONCEPT ""')) == []
    assert ok(keyword_only.execute_kip('SEARCH CONCEPT "zzzqqqxxx"')) == []


@pytest.mark.parametrize(
    "command, code",
    [
        ('SEARCH CONCEPT "x" MODE "fuzzy"', "KIP_1001"),
        ('SEARCH CONCEPT "x" THRESHOLD 1.5', "KIP_1001"),
        ('SEARCH CONCEPT "x" LIMIT 0', "KIP_1001"),
        ('SEARCH CONCEPT "x" LIMIT 100000', "KIP_4002"),
    ],
)
def test_bad_options(keyword_only, command, code):
    assert keyword_only.execute_kip(command)["error"]["code"] == code


# ------------------------------------------------------------------ propositions
def test_search_proposition_by_predicate_name(keyword_only):
    results = ok(keyword_only.execute_kip('SEARCH PROPOSITION "treats" MODE "keyword"'))
    assert [r["predicate"] for r in results] == ["treats"] * 3
    assert scores(results) == [1.0, 1.0, 1.0]
    hit = results[0]
    assert set(hit) == {"id", "subject", "predicate", "object", "attributes", "metadata"}
    assert hit["id"].startswith("P:") and hit["id"].endswith(":treats")


def test_search_proposition_by_predicate_type_description(keyword_only):
    results = ok(keyword_only.execute_kip('SEARCH PROPOSITION "adverse reaction"'))
    assert [r["predicate"] for r in results] == ["has_side_effect"]
    assert 0 < scores(results)[0] < 1.0


def test_search_proposition_by_text_attributes_and_with_type(keyword_only):
    load(
        keyword_only,
        """UPSERT {
             PROPOSITION ?p {
               ({type: "Drug", name: "Ibuprofen"}, "has_side_effect", {type: "Symptom", name: "Nausea"})
               SET ATTRIBUTES { description: "Observed mostly at high doses on an empty stomach." }
             }
           }""",
    )
    hits = ok(keyword_only.execute_kip('SEARCH PROPOSITION "empty stomach"'))
    assert len(hits) == 1 and hits[0]["attributes"]["description"].startswith("Observed")
    hits = ok(keyword_only.execute_kip('SEARCH PROPOSITION "side effect" WITH TYPE "has_side_effect"'))
    assert {h["predicate"] for h in hits} == {"has_side_effect"} and len(hits) == 2
    assert ok(keyword_only.execute_kip('SEARCH PROPOSITION "treats" WITH TYPE "has_side_effect"')) == []
    assert keyword_only.execute_kip('SEARCH PROPOSITION "x" WITH TYPE "treat"')["error"]["code"] == "KIP_2001"


# ------------------------------------------------------------------ semantic / hybrid (test embedder)
def test_semantic_finds_meaning_without_lexical_overlap(medical):
    # "analgesic" appears in no grounding field; the test embedder puts it on the pain axis.
    assert ok(medical.execute_kip('SEARCH CONCEPT "analgesic" MODE "keyword"')) == []
    results = ok(medical.execute_kip('SEARCH CONCEPT "analgesic" MODE "semantic" LIMIT 3'))
    assert names(results)[0] in {"Headache", "Aspirin", "Ibuprofen"}
    assert set(names(results)) <= {"Headache", "Aspirin", "Ibuprofen", "Aspirin Complex"}
    _ordered(results)


def test_semantic_threshold_and_type(medical):
    strong = ok(medical.execute_kip('SEARCH CONCEPT "pyrexia" MODE "semantic" THRESHOLD 0.5'))
    assert names(strong)[0] == "Fever"
    assert all(s >= 0.5 for s in scores(strong))
    drugs = ok(medical.execute_kip('SEARCH CONCEPT "analgesic" WITH TYPE "Drug" MODE "semantic"'))
    assert drugs and {r["type"] for r in drugs} == {"Drug"}


def test_hybrid_is_default_with_an_embedder_and_fuses(medical):
    default = ok(medical.execute_kip('SEARCH CONCEPT "aspirin"'))
    hybrid = ok(medical.execute_kip('SEARCH CONCEPT "aspirin" MODE "hybrid"'))
    assert default == hybrid
    assert names(hybrid)[0] == "Aspirin"
    _ordered(hybrid)
    # A semantic-only hit is reachable through hybrid (keyword alone finds nothing).
    assert names(ok(medical.execute_kip('SEARCH CONCEPT "analgesic"')))


def test_semantic_search_on_propositions(medical):
    results = ok(medical.execute_kip('SEARCH PROPOSITION "migraine medicine" MODE "semantic" LIMIT 5'))
    assert results and results[0]["predicate"] in {"treats", "has_side_effect"}
    _ordered(results)


def test_without_embedder_semantic_and_hybrid_degrade_to_keyword(keyword_only):
    keyword = ok(keyword_only.execute_kip('SEARCH CONCEPT "aspirin" MODE "keyword"'))
    assert ok(keyword_only.execute_kip('SEARCH CONCEPT "aspirin" MODE "semantic"')) == keyword
    assert ok(keyword_only.execute_kip('SEARCH CONCEPT "aspirin" MODE "hybrid"')) == keyword
    assert ok(keyword_only.execute_kip('SEARCH CONCEPT "aspirin"')) == keyword


def test_embeddings_follow_writes_and_never_leave_the_engine(medical):
    embedder = medical.settings.embedder
    with medical.session("READ") as session:
        row = session.run("MATCH (n:KipConcept {name: 'Aspirin'}) RETURN n.kip_embedding AS v, n.kip_embedding_model AS m").single()
    assert row["m"] == embedder.name and len(row["v"]) == embedder.dimensions
    # Rewriting a grounding field re-embeds the element (after the write commits: load waits for it).
    before = len(embedder.calls)
    load(medical, 'UPSERT { CONCEPT ?c { {type: "Symptom", name: "Nausea"} SET ATTRIBUTES { description: "Pyrexia-like heat." } } }')
    assert any("Pyrexia-like heat." in text for call in embedder.calls[before:] for text in call)
    assert "Nausea" in names(ok(medical.execute_kip('SEARCH CONCEPT "fever" MODE "semantic" THRESHOLD 0.5')))
    # Unchanged elements are not re-embedded (hash check).
    before = len(embedder.calls)
    load(medical, 'UPSERT { CONCEPT ?c { {type: "Symptom", name: "Nausea"} SET ATTRIBUTES { description: "Pyrexia-like heat." } } }')
    assert not any("Pyrexia" in text for call in embedder.calls[before:] for text in call)
    # No result ever carries the vector.
    for command in ('SEARCH CONCEPT "aspirin"', 'FIND(?d) WHERE { ?d {type: "Drug"} }', 'DESCRIBE CONCEPT TYPE "Drug"'):
        assert "kip_embedding" not in str(ok(medical.execute_kip(command)))


def test_sync_embeddings_backfills_after_switching_models(medical):
    class Other(TopicEmbedder):
        name = "test-topic-embedder-v2"

    other = Other()
    _use(medical, other)
    # Vectors of the old model are ignored by semantic search until re-embedded.
    assert ok(medical.execute_kip('SEARCH CONCEPT "analgesic" MODE "semantic"')) == []
    counts = embedding.sync_embeddings(medical, batch=5)
    assert counts["concepts"] >= 16 and counts["propositions"] >= 10
    assert ok(medical.execute_kip('SEARCH CONCEPT "analgesic" MODE "semantic"'))
    assert embedding.sync_embeddings(medical) == {"concepts": 0, "propositions": 0}


# ------------------------------------------------------------------ the bundled offline model
def test_bundled_minilm_semantic_search(genesis):
    try:
        model = embedding.MiniLMEmbedder()
    except ImportError as exc:  # pragma: no cover - the embed extra is part of the test extra
        pytest.skip(f"embed extra not installed: {exc}")
    _use(genesis, model)
    load(genesis, MEDICAL)
    results = ok(genesis.execute_kip('SEARCH CONCEPT "headache relief" MODE "semantic" LIMIT 5'))
    top = names(results)[:3]
    assert "Headache" in top and ({"Aspirin", "Ibuprofen"} & set(top)), results
    _ordered(results)
    fever = ok(genesis.execute_kip('SEARCH CONCEPT "high body temperature" MODE "semantic" LIMIT 1'))
    assert names(fever) == ["Fever"]
    hybrid = ok(genesis.execute_kip('SEARCH CONCEPT "aspirin"'))
    assert names(hybrid)[0] == "Aspirin"


def test_spec_examples_including_cjk(keyword_only):
    load(keyword_only, 'UPSERT { CONCEPT ?c { {type: "Symptom", name: "Dark mode preference"} SET ATTRIBUTES { aliases: ["深色模式", "dark theme"] } } }')
    hits = ok(keyword_only.execute_kip('SEARCH CONCEPT "深色模式" MODE "hybrid" LIMIT 10'))
    assert names(hits) == ["Dark mode preference"] and scores(hits) == [1.0]
    assert names(ok(keyword_only.execute_kip('SEARCH CONCEPT "模式"'))) == ["Dark mode preference"]
    assert names(ok(keyword_only.execute_kip('SEARCH CONCEPT "aspirin" LIMIT 5')))[0] == "Aspirin"
    assert names(ok(keyword_only.execute_kip('SEARCH CONCEPT "Aspirin" WITH TYPE "Drug"')))[0] == "Aspirin"
    assert ok(keyword_only.execute_kip('SEARCH PROPOSITION "treats" LIMIT 10'))
    assert "error" not in keyword_only.execute_kip('SEARCH CONCEPT "headache relief" MODE "semantic" THRESHOLD 0.75 LIMIT 10')


def test_bulk_update_reembeds_in_chunks_within_the_row_cap(medical):
    embedder = medical.settings.embedder
    blocks = "\n".join(f'CONCEPT ?c{i} {{ {{type: "Symptom", name: "Bulk {i}"}} }}' for i in range(25))
    load(medical, "UPSERT {\n" + blocks + "\n}")
    medical.settings = medical.settings.replace(max_result_rows=7)
    before = len(embedder.calls)
    result = ok(
        medical.execute_kip('UPDATE ?s SET ATTRIBUTES { description: "queasy stomach" } WHERE { ?s {type: "Symptom"} FILTER(STARTS_WITH(?s.name, "Bulk")) }')
    )
    assert result == {"updated": 25, "matched": 25}
    assert medical.wait_for_embeddings(60)  # the refresh runs after the commit, with the command's settings
    embedded = [text for call in embedder.calls[before:] for text in call]
    assert len(embedded) == 25 and all(len(call) <= 7 for call in embedder.calls[before:])
    medical.settings = medical.settings.replace(max_result_rows=10000)
    hits = ok(medical.execute_kip('SEARCH CONCEPT "vomit" WITH TYPE "Symptom" MODE "semantic" THRESHOLD 0.9 LIMIT 30'))
    assert len([h for h in hits if h["name"].startswith("Bulk")]) == 25
