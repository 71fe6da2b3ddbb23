"""Unit tests (no Neo4j) for the embedder plumbing, the tokenizer and the SEARCH scoring helpers."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from kip2cypher import embedding, text
from kip2cypher.config import Settings
from kip2cypher.execution import scoring
from kip2cypher.lower import search

VOCAB = Path(embedding.__file__).parent / "data" / "minilm-vocab.txt"

# Token ids produced by HuggingFace `tokenizers` from the model's tokenizer.json (padding removed).
HF_IDS = {
    "Aspirin treats Headache.": [101, 2004, 8197, 6657, 18452, 14978, 1012, 102],
    "Café naïve résumé — “quotes” & ümlauts!": [101, 7668, 15743, 13746, 1517, 1523, 16614, 1524, 1004, 8529, 17298, 3215, 999, 102],
    "C12H15N5O3 belongs_to_domain MedicalDevice": [101, 27723, 2475, 2232, 16068, 2078, 2629, 2080, 2509, 7460, 1035, 2000, 1035, 5884, 2966, 24844, 6610, 102],
    "hello\tworld\n\u200bzero-width": [101, 7592, 2088, 5717, 1011, 9381, 102],
    "深色模式 dark mode": [101, 100, 100, 100, 100, 2601, 5549, 102],
    "emoji 😀 test": [101, 7861, 29147, 2072, 100, 3231, 102],
    "x" * 120: [101, 100, 102],
}


@pytest.mark.parametrize("text", sorted(HF_IDS))
def test_wordpiece_tokenizer_matches_huggingface(text):
    assert embedding.WordPieceTokenizer(VOCAB).encode(text) == HF_IDS[text]


def test_tokenizer_truncates():
    tokenizer = embedding.WordPieceTokenizer(VOCAB, max_length=8)
    ids = tokenizer.encode("one two three four five six seven eight nine ten")
    assert len(ids) == 8 and ids[0] == 101 and ids[-1] == 102


def test_identifier_words_and_grounding_text():
    assert embedding.identifier_words("belongs_to_domain") == "belongs to domain"
    assert embedding.identifier_words("MedicalDevice") == "Medical Device"
    assert embedding.identifier_words("$PropositionType") == "Proposition Type"
    assert embedding.concept_text("Drug", "Aspirin", {"aliases": ["ASA"], "description": "Pain reliever.", "risk_level": 2}) == (
        "Aspirin (Drug). Also known as: ASA. Pain reliever."
    )
    assert embedding.proposition_text("Aspirin", "has_side_effect", "Nausea", {"description": "rare"}) == "Aspirin has side effect Nausea. rare"


def test_embedder_resolution():
    class Fixed:
        name, dimensions = "fixed", 2

        def embed(self, texts):
            return [[1.0, 0.0] for _ in texts]

    fixed = Fixed()
    assert isinstance(fixed, embedding.Embedder)
    assert embedding.resolve(Settings(embedder=fixed)) is fixed
    assert embedding.resolve(Settings(embedder=False)) is None
    assert embedding.resolve(Settings(embedder="none")) is None
    assert embedding.load("meta_data:TopicEmbedder").name == "test-topic-embedder-v1"
    # A spec string in the settings is loaded once and kept warm (not a new model per command).
    warm = embedding.resolve(Settings(embedder="meta_data:TopicEmbedder"))
    assert warm is embedding.resolve(Settings(embedder="meta_data:TopicEmbedder")) and warm.name == "test-topic-embedder-v1"
    with pytest.raises(TypeError):
        embedding.load("meta_data:MEDICAL")


def test_bundled_model_vectors():
    try:
        model = embedding.MiniLMEmbedder()
    except ImportError as exc:  # pragma: no cover
        pytest.skip(str(exc))
    a, b, c = model.embed(["headache relief", "Aspirin (Drug). A pain reliever used to treat headaches.", "Paris (City). Capital of France."])
    assert len(a) == model.dimensions == 384
    assert math.isclose(sum(x * x for x in a), 1.0, rel_tol=1e-4)
    cos = lambda u, v: sum(x * y for x, y in zip(u, v))  # noqa: E731
    assert cos(a, b) > 0.4 > cos(a, c)
    assert model.embed(["headache relief"])[0] == a  # cached, deterministic


@pytest.mark.parametrize("term", ["a:b", "(x) OR y*", '"quoted"', "x~2 y^3", "[1 TO 5]", "a/b\\c", "AND", "-minus +plus"])
def test_lucene_query_only_contains_escaped_word_tokens(term):
    for expand in (False, True):
        query = search.lucene_query(term, expand=expand)
        assert query is not None
        # Strip our own operators; what is left are word tokens only.
        residue = re.sub(r"\^\d|\*|~1|\(|\)| OR ", " ", query)
        assert all(re.fullmatch(r"\w+", word) for word in residue.split()), query
        assert not re.search(r"\b(AND|NOT|TO)\b", query), query  # user words are lower-cased: never operators


def test_lucene_query_plain_first_expansions_on_demand():
    assert search.lucene_query("Side effect") == "(side^4 OR side*^2) OR (effect^4 OR effect*^2)"
    assert search.lucene_query("Side effect", expand=True) == "(side^4 OR side*^2 OR *side*) OR (effect^4 OR effect*^2 OR *effect* OR effect~1)"
    # Nothing to expand: the recall query is the plain one (and is not run a second time).
    assert search.lucene_query("深色 ab", expand=True) == search.lucene_query("深色 ab") == "(深色^4) OR (ab^4 OR ab*^2)"


def test_lucene_query_none_for_nothing_searchable():
    for term in ("", "   ", "***", "?!", "\\", "&& || !"):
        assert search.lucene_query(term) is None


def test_field_scores():
    q = text.words("aspirin")
    assert scoring.Scorer(q).field("Aspirin", True) == 1.0
    assert scoring.Scorer(q).field("Aspirin Complex", True) == pytest.approx(0.76)
    assert scoring.Scorer(q).field("a drug like aspirin", False) == pytest.approx(0.7)
    assert scoring.Scorer(q).field("Paris", True) == 0.0
    assert scoring.Scorer(text.words("side effect")).field("has_side_effect", True) == pytest.approx(0.8233, abs=1e-4)


def test_typo_similarity_is_the_lcs_ratio():
    assert scoring._similarity_ratio("asprin", "aspirin") == pytest.approx(12 / 13)
    assert scoring._similarity_ratio("abcd", "abcd") == 1.0
    assert scoring._similarity_ratio("quantum", "lattice") < 0.8  # stops at the shared-letters bound
    # The longest common subsequence "abad", which difflib's greedy longest-block matching
    # under-counts (ratio 0.4): a typo match it used to miss.
    assert scoring._similarity_ratio("adbacd", "abad") == pytest.approx(0.8)
    assert scoring._token_similarity("asprin", "aspirin") == pytest.approx(0.8 * 12 / 13)
    assert scoring._token_similarity("lattise", "lattice") == pytest.approx(0.8 * 12 / 14)
    assert scoring._token_similarity("cat", "cut") == 0.0  # typos need 4+ letters
    assert scoring._token_similarity("kernel", "colonel") == 0.0  # ratio below 0.8
    assert text.words("MedicalDevice has_side_effect Café 深色") == ["medical", "device", "has", "side", "effect", "cafe", "深", "色"]


def test_fusion():
    a = {"x": 1}
    fused = scoring.fuse([[("d1", 1.0, a), ("d2", 0.5, a)], [("d1", 1.0, a), ("d3", 0.9, a)]])
    assert fused[0] == ("d1", 1.0, a)
    assert [d for d, _, _ in fused] == ["d3", "d2"] or [d for d, _, _ in fused[1:]] == ["d3", "d2"]
    assert all(0.0 <= s <= 1.0 for _, s, _ in fused)
    only_one = scoring.fuse([[("d1", 1.0, a)], []])
    assert only_one[0][1] == pytest.approx(0.5)
