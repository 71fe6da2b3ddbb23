"""The background embedding refresh and the consistency rule semantic SEARCH follows (docs/meta.md).

A KML write answers once it commits; its elements are embedded afterwards by the nexus's
refresh worker. A semantic or hybrid SEARCH through the same nexus first waits for the refresh
of every write committed before it (``Settings.embedding_wait_s``), and says so in ``warnings``
when it had to answer without them. A vector is only written for the element version whose text
was embedded. The gated embedder below blocks inside ``embed`` until the test lets it go, so
each test decides the interleaving — nothing here depends on timing.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

from meta_data import MEDICAL, TopicEmbedder, load, names, ok

import kip2cypher
from kip2cypher import embedding
from kip2cypher.config import Settings
from kip2cypher.cypher import storage
from kip2cypher.domain.embeddings import statements
from kip2cypher.execution.programs.admin import rows as _rows_of
from kip2cypher.execution.programs.embeddings import refresh_touched
from kip2cypher.execution.requests import Context, Embed, Run

NAUSEA = '{type: "Symptom", name: "Nausea"}'


def set_description(text: str) -> str:
    return f'UPSERT {{ CONCEPT ?c {{ {NAUSEA} SET ATTRIBUTES {{ description: "{text}" }} }} }}'


class GatedEmbedder(TopicEmbedder):
    """``TopicEmbedder`` whose first ``embed`` call (the refresh of the first write) sets
    ``entered`` and waits for ``release``; later calls (a SEARCH term) pass."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = threading.Event()
        self.release = threading.Event()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not self.entered.is_set():
            self.entered.set()
            assert self.release.wait(30), "the test never released the embedder"
        return super().embed(texts)


def stored(nexus, name: str = "Nausea") -> dict:
    records, _, _ = nexus.driver.execute_query(
        "MATCH (n:KipConcept {type: 'Symptom', name: $name}) RETURN n.kip_embedding_hash AS hash, n.`meta._version` AS version, n.`attr.description` AS "
        "description",
        name=name,
        database_=nexus.database,
    )
    return records[0].data()


def medical_then(nexus, embedder, **settings):
    """The medical graph embedded, then ``embedder`` (and ``settings``) in force."""
    nexus.settings = nexus.settings.replace(embedder=TopicEmbedder())
    load(nexus, MEDICAL)
    nexus.settings = nexus.settings.replace(embedder=embedder, **settings)
    return embedder


def test_a_write_answers_before_its_embedding_and_semantic_search_waits_for_it(genesis):
    gated = medical_then(genesis, GatedEmbedder())
    try:
        ok(genesis.execute_kip(set_description("Pyrexia-like heat.")))  # answers while the model is blocked
        assert gated.entered.wait(30)
        assert not genesis.wait_for_embeddings(0)
        # keyword SEARCH does not wait for vectors
        assert "Nausea" in names(ok(genesis.execute_kip('SEARCH CONCEPT "pyrexia" MODE "keyword"')))
        threading.Timer(0.2, gated.release.set).start()  # let the model go while SEARCH waits
        hits = ok(genesis.execute_kip('SEARCH CONCEPT "fever" MODE "semantic" THRESHOLD 0.5'))
        assert "Nausea" in names(hits)  # read-your-writes: the SEARCH waited for the refresh
        assert stored(genesis)["hash"] == embedding.text_hash(gated.name, "Nausea (Symptom). Pyrexia-like heat.")
    finally:
        gated.release.set()


def test_semantic_search_that_cannot_wait_answers_with_a_warning(genesis):
    gated = medical_then(genesis, GatedEmbedder(), embedding_wait_s=0)
    try:
        ok(genesis.execute_kip(set_description("Pyrexia-like heat.")))
        assert gated.entered.wait(30)
        response = genesis.execute_kip('SEARCH CONCEPT "fever" MODE "semantic" THRESHOLD 0.5')
        assert "result" in response and "still being computed" in response["warnings"][0]
        assert "warnings" not in genesis.execute_kip('SEARCH CONCEPT "fever" MODE "keyword"')
    finally:
        gated.release.set()
    assert genesis.wait_for_embeddings(30)
    assert "warnings" not in genesis.execute_kip('SEARCH CONCEPT "fever" MODE "semantic" THRESHOLD 0.5')


def test_a_newer_text_never_gets_the_vector_of_an_older_one(genesis):
    gated = medical_then(genesis, GatedEmbedder())
    try:
        ok(genesis.execute_kip(set_description("Older text.")))
        assert gated.entered.wait(30)  # the refresh read "Older text." and is embedding it
        ok(genesis.execute_kip(set_description("Newer text.")))  # commits meanwhile (the refresh holds no lock yet)
    finally:
        gated.release.set()
    assert genesis.wait_for_embeddings(30)
    embedded = [text for call in gated.calls for text in call]
    assert "Nausea (Symptom). Older text." in embedded and "Nausea (Symptom). Newer text." in embedded
    assert stored(genesis)["hash"] == embedding.text_hash(gated.name, "Nausea (Symptom). Newer text.")


def test_the_vector_write_skips_an_element_whose_version_moved_on(genesis):
    """The vector write itself: a row embedded from version v is dropped once the element is at v + 1."""
    genesis.settings = genesis.settings.replace(embedder=False)
    load(genesis, MEDICAL)
    now = stored(genesis)
    records, _, _ = genesis.driver.execute_query("MATCH (n:KipConcept {name: 'Nausea'}) RETURN n.id AS id", database_=genesis.database)
    ctx = Context(genesis.settings, "2026-01-01T00:00:00.000Z")

    def write(version: int, hash_: str) -> None:
        rows = [{"id": records[0]["id"], "vector": [1.0, 0.0], "hash": hash_, "version": version}]
        genesis.run_program("WRITE", lambda: _rows_of(statements(storage.DEFAULT, "concept").write, {"rows": rows, "model": "m"}), ctx)

    write(now["version"] - 1, "stale")
    assert stored(genesis)["hash"] is None
    write(now["version"], "current")
    assert stored(genesis)["hash"] == "current"


def test_a_failing_model_leaves_the_write_standing_and_sync_embeddings_backfills(genesis):
    class Broken(TopicEmbedder):
        def embed(self, texts):
            raise RuntimeError("model crashed")

    genesis.settings = genesis.settings.replace(embedder=Broken())
    load(genesis, MEDICAL)  # waits for the (failed) refresh
    assert stored(genesis)["hash"] is None and stored(genesis)["description"] == "An uneasy feeling in the stomach."
    genesis.settings = genesis.settings.replace(embedder=TopicEmbedder())
    assert embedding.sync_embeddings(genesis)["concepts"] >= 10
    assert stored(genesis)["hash"] is not None


def test_close_finishes_the_refresh_of_the_last_writes(neo4j_server, genesis):
    genesis.settings = genesis.settings.replace(embedder=False)
    load(genesis, MEDICAL)
    topic = TopicEmbedder()
    nexus = kip2cypher.Nexus(neo4j_server.uri, auth=neo4j_server.auth, database=neo4j_server.database, settings=Settings(embedder=topic))
    ok(nexus.execute_kip(set_description("Written just before close.")))
    nexus.close()
    assert stored(genesis)["hash"] == embedding.text_hash(topic.name, "Nausea (Symptom). Written just before close.")


def test_async_nexus_semantic_search_sees_its_own_writes(neo4j_server, genesis):
    genesis.settings = genesis.settings.replace(embedder=False)
    load(genesis, MEDICAL)

    async def run():
        settings = Settings(embedder=TopicEmbedder())
        async with kip2cypher.connect_async(neo4j_server.uri, auth=neo4j_server.auth, database=neo4j_server.database, settings=settings) as nexus:
            assert "error" not in await nexus.execute_kip(set_description("Pyrexia-like heat."))
            return await nexus.execute_kip('SEARCH CONCEPT "fever" MODE "semantic" THRESHOLD 0.5')

    response = asyncio.run(run())
    assert "warnings" not in response and "Nausea" in names(response["result"])


def test_refresh_program_embeds_only_changed_texts_with_their_version():
    """The refresh sub-program on canned rows (no Neo4j): page, grounding, one model batch, write."""
    ctx = Context(Settings(embedder=False), "2026-01-01T00:00:00.000Z", embedder=TopicEmbedder())
    program = refresh_touched(ctx)
    request = program.send(None)
    assert isinstance(request, Run) and request.statement is statements(storage.DEFAULT, "concept").touched and request.params["since"] == ctx.now
    request = program.send([{"id": "C:a"}, {"id": "C:b"}])
    assert request.statement is statements(storage.DEFAULT, "concept").grounding and request.params == {"ids": ["C:a", "C:b"]}
    unchanged = embedding.text_hash(ctx.embedder.name, "B (Symptom).")
    request = program.send(
        [
            {"id": "C:a", "type": "Symptom", "name": "A", "vals": [None] * 7, "hash": "old", "version": 3},
            {"id": "C:b", "type": "Symptom", "name": "B", "vals": [None] * 7, "hash": unchanged, "version": 5},
        ]
    )
    assert request == Embed(("A (Symptom).",))
    request = program.send([[0.5, 0.5]])
    assert request.statement is statements(storage.DEFAULT, "concept").write
    assert request.params["rows"] == [{"id": "C:a", "vector": [0.5, 0.5], "hash": embedding.text_hash(ctx.embedder.name, "A (Symptom)."), "version": 3}]
