"""A vector's text form (``embeddings/sentences.py``): recorded per vector, made current by
reconcile, kept by dedup, switch, export and import; both dialects.

The embedder below is the hashing model with the ``"sentences"`` form: its model key is the plain
hashing embedder's, so the two stand for one model before and after its text form changed (as
all-MiniLM-L6-v2's did with migration 0007), with vectors that differ and can be told apart.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

import waggle_store as ws
from waggle_store.embeddings import HashingEmbedder
from waggle_store.embeddings.sentences import embed_by_sentences
from waggle_store.models import FrameEmbeddingRow
from waggle_store.pipeline.switch import switch_embedding_model
from waggle_store.repositories.mind_models import MindModelRepository
from waggle_store.repositories.vectors import model_key, register_model

#: Two of several sentences (one labelled with its speaker), one of one sentence.
TEXTS = (
    "Caroline: I went to the support group yesterday. It was so powerful! Then I painted.",
    "a plain note about the garden. the tomatoes need water.",
    "Melanie: That sounds lovely",
)


class SentenceHashing(HashingEmbedder):
    """The hashing model, each document embedded as the mean of its sentences'."""

    text_form = "sentences"

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return embed_by_sentences(list(texts), super().embed_documents)


def _stored(store: ws.Store, mind: ws.Mind, ids: Sequence[int]
            ) -> dict[int, tuple[str, str, list[float] | None]]:
    """frame id -> (manifest status, text form, stored vector) in the mind's active model (the
    store's, for a mind that has none yet)."""
    with store.read() as s:
        model_id = (MindModelRepository(s, mind.id).active()
                    or register_model(s, store.adapter, model_key(store.embedder)))
        vectors = store.adapter.read_vectors(s, model_id, ids)
        out = {}
        for fid in ids:
            manifest = s.get(FrameEmbeddingRow, fid)
            assert manifest is not None
            out[fid] = (manifest.status, manifest.text_form, vectors.get(fid))
        return out


def _close(a: Sequence[float] | None, b: Sequence[float]) -> bool:
    return a is not None and max(abs(x - y) for x, y in zip(a, b, strict=True)) < 1e-5


def _similarity(query: str, vector: Sequence[float]) -> float:
    return sum(q * v for q, v in zip(HashingEmbedder().embed_query(query), vector, strict=True))


def _lane_score(mind: ws.Mind, query: str, frame_id: int) -> float:
    """The vector lane's similarity of ``frame_id`` to ``query``, as the search read it (the
    lane's score is the cosine distance)."""
    hit = next(r for r in mind.search(query, lanes=("vector",)) if r.frame.id == frame_id)
    return 1.0 - float(hit.explain["lanes"]["vector"]["score"])


def _write(mind: ws.Mind) -> list[int]:
    gop = mind.sessions.ensure("s1").gop_id
    return [mind.cognify(text, gop_id=gop).frame_id for text in TEXTS]


def test_vectors_record_their_text_form_and_reconcile_makes_them_current(
    store_factory: Callable[..., ws.Store],
) -> None:
    whole, sentences = HashingEmbedder(), SentenceHashing()
    old = store_factory()
    ids = _write(old.mind("m"))
    stored = _stored(old, old.mind("m"), ids)
    assert {fid: row[:2] for fid, row in stored.items()} == dict.fromkeys(ids, ("ready", "whole"))
    for fid, text in zip(ids, TEXTS, strict=True):
        assert _close(stored[fid][2], whole.embed_documents([text])[0])
    old.close()

    new = store_factory(embedder=sentences)
    mind = new.mind("m")
    # Until reconcile, the old vectors serve (the same model: comparable, only made otherwise);
    # after it, the search reads the new ones (on SQLite through its in-process index too).
    assert {row[1] for row in _stored(new, mind, ids).values()} == {"whole"}
    query = "support group powerful"
    before = _similarity(query, whole.embed_documents([TEXTS[0]])[0])
    after = _similarity(query, sentences.embed_documents([TEXTS[0]])[0])
    assert abs(before - after) > 0.02
    assert _lane_score(mind, query, ids[0]) == pytest.approx(before, abs=2e-3)
    report = new.reconcile()
    assert report.vectors_fixed == len(ids)
    stored = _stored(new, mind, ids)
    for fid, text in zip(ids, TEXTS, strict=True):
        assert stored[fid][:2] == ("ready", "sentences")
        assert _close(stored[fid][2], sentences.embed_documents([text])[0])
    # The several-sentence texts' vectors changed; the one-sentence text's is its own embedding.
    assert not _close(stored[ids[0]][2], whole.embed_documents([TEXTS[0]])[0])
    assert _close(stored[ids[2]][2], whole.embed_documents([TEXTS[2]])[0])
    assert _lane_score(mind, query, ids[0]) == pytest.approx(after, abs=2e-3)
    assert new.reconcile() == ws.ReconcileReport(0, 0, 0)
    # New memories are written in the store's form at once; reconcile has nothing to do.
    fresh = mind.cognify("Jon: The studio opened. It is busy.", gop_id="s1").frame_id
    assert _stored(new, mind, [fresh])[fresh][:2] == ("ready", "sentences")
    assert new.reconcile() == ws.ReconcileReport(0, 0, 0)
    new.close()

    # And back: a store whose embedder makes whole vectors re-embeds the sentence ones.
    back = store_factory()
    assert back.reconcile(mind="m").vectors_fixed == len(ids) + 1
    assert {row[:2] for row in _stored(back, back.mind("m"), [*ids, fresh]).values()} == {
        ("ready", "whole")}


def test_a_duplicate_memory_gets_the_vector_of_the_current_form(
    store_factory: Callable[..., ws.Store],
) -> None:
    """Cognify of a memory already stored (a dedup hit) keeps its vector only if it is current:
    one of the other text form is replaced by the one just embedded."""
    old = store_factory()
    (first, *_) = _write(old.mind("m"))
    old.close()
    new = store_factory(embedder=SentenceHashing())
    mind = new.mind("m")
    again = mind.cognify(TEXTS[0], gop_id="s1")
    assert again.frame_id == first
    status, form, vector = _stored(new, mind, [first])[first]
    assert (status, form) == ("ready", "sentences")
    assert _close(vector, SentenceHashing().embed_documents([TEXTS[0]])[0])
    batch = mind.cognify_batch([TEXTS[0], TEXTS[1]], gop_id="s1")
    assert batch.frame_ids[0] == first
    assert {row[1] for row in _stored(new, mind, batch.frame_ids).values()} == {"sentences"}


def test_a_switch_records_the_form_of_the_embedder_it_switched_to(
    store_factory: Callable[..., ws.Store],
) -> None:
    store = store_factory()
    mind = store.mind("m")
    ids = _write(mind)
    other = SentenceHashing(dimensions=64)
    report = mind.switch_embedding_model(other)
    assert report.switched
    assert report.frames_embedded == len(ids)
    stored = _stored(store, mind, ids)
    for fid, text in zip(ids, TEXTS, strict=True):
        assert stored[fid][:2] == ("ready", "sentences")
        assert _close(stored[fid][2], other.embed_documents([text])[0])


class FailingAfter(HashingEmbedder):
    """The hashing model, whose provider goes down after ``calls`` embedding calls."""

    def __init__(self, dimensions: int, calls: int) -> None:
        super().__init__(dimensions)
        self.left = calls

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if self.left == 0:
            raise RuntimeError("provider down")
        self.left -= 1
        return super().embed_documents(texts)


def test_a_switch_resumed_in_another_form_embeds_what_it_had_staged_again(
    store_factory: Callable[..., ws.Store],
) -> None:
    """A switch stopped after staging whole vectors and resumed by an embedder of the same model
    in the sentences form embeds those frames again: no vector ends up recorded in a form it was
    not made in."""
    store = store_factory()
    mind = store.mind("m")
    ids = _write(mind)
    with pytest.raises(ws.EmbeddingProviderError, match="provider down"):
        switch_embedding_model(mind.context, FailingAfter(64, calls=1), batch_size=1)
    other = SentenceHashing(dimensions=64)
    report = mind.switch_embedding_model(other)
    assert report.switched
    assert report.frames_embedded == len(ids)  # the one staged whole, embedded again
    stored = _stored(store, mind, ids)
    for fid, text in zip(ids, TEXTS, strict=True):
        assert stored[fid][:2] == ("ready", "sentences")
        assert _close(stored[fid][2], other.embed_documents([text])[0])


def test_export_and_import_carry_the_text_form(
    store_factory: Callable[..., ws.Store], tmp_path: Path,
) -> None:
    source = store_factory(embedder=SentenceHashing())
    ids = _write(source.mind("m"))
    path = tmp_path / "m.jsonl"
    source.export_mind("m", path, include_vectors=True)
    lines = [line for line in path.read_text("utf-8").splitlines() if '"type":"vector"' in line]
    assert len(lines) == len(ids)
    assert all('"text_form":"sentences"' in line for line in lines)
    imported = source.import_mind(path, into="copy")
    assert imported.vectors_imported == len(ids)
    copy = source.mind("copy")
    copy_ids = [r.frame.id for r in copy.search("garden tomatoes support group lovely", limit=10)]
    assert len(copy_ids) == len(ids)
    assert {row[:2] for row in _stored(source, copy, copy_ids).values()} == {
        ("ready", "sentences")}
    assert source.reconcile(mind="copy").vectors_fixed == 0

    # A file written before the field existed: its vectors were whole ones, and are recorded so
    # (reconcile then re-embeds them with this store's form).
    old_file = tmp_path / "old.jsonl"
    old_file.write_text(path.read_text("utf-8").replace('"text_form":"sentences",', ""), "utf-8")
    assert "text_form" not in old_file.read_text("utf-8")
    source.import_mind(old_file, into="older")
    older = source.mind("older")
    older_ids = [r.frame.id for r in older.search("garden tomatoes support group lovely",
                                                  limit=10)]
    assert {row[1] for row in _stored(source, older, older_ids).values()} == {"whole"}
    assert source.reconcile(mind="older").vectors_fixed == len(ids)


@pytest.mark.parametrize("form", ["paragraphs", ""])
def test_an_unknown_text_form_in_a_file_is_refused(form: str) -> None:
    from waggle_store.pipeline.transfer.format import LineError, make_line

    record = {"type": "vector", "frame_id": 1, "model_id": 1, "content_hash": "a" * 64,
              "vector": [1.0, 0.0]}
    assert make_line(record).fields["text_form"] == "whole"
    with pytest.raises(LineError, match="text_form"):
        make_line({**record, "text_form": form})
