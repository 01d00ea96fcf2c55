"""mind.conversations on both dialects: open/create, append and trimming, remember=True,
validation, the canonical conversation's compaction (byte for byte), isolation, drop_mind."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import pytest

import waggle_store as ws
from waggle_store.embeddings.hashing import HashingEmbedder


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


# -- channel conversations ----------------------------------------------------------------------


def test_open_returns_the_channels_open_conversation(mind: ws.Mind) -> None:
    first = mind.conversations.open("telegram", label="tg")
    assert mind.conversations.open("telegram").id == first.id
    assert mind.conversations.open("discord").id != first.id
    newer = mind.conversations.create("telegram")
    assert newer.id != first.id
    assert newer.is_open
    assert mind.conversations.open("telegram").id == newer.id
    infos = {i.id: i for i in mind.conversations.list(channel="telegram")}
    assert set(infos) == {first.id, newer.id}
    assert not infos[first.id].is_open
    assert next(i.id for i in mind.conversations.list()) == newer.id  # newest first
    found = mind.conversations.find_by_label("tg")
    assert found is not None
    assert found.id == first.id
    mind.conversations.set_label(newer.id, "tg")
    found = mind.conversations.find_by_label("tg")
    assert found is not None
    assert found.id == newer.id


def test_append_keeps_order_and_trims_to_keep_last(mind: ws.Mind) -> None:
    conv = mind.conversations.open()
    mind.conversations.append(conv.id, [
        ws.Message("system", "be brief"),
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "clock"}]},
        {"role": "tool", "content": "12:00", "tool_call_id": "c1", "metadata": {"ms": 3}},
    ], keep_last=None)
    stored = mind.conversations.messages(conv.id)
    assert [(m.role, m.content, m.seq) for m in stored] == [
        ("system", "be brief", 1), ("assistant", "", 2), ("tool", "12:00", 3)]
    assert stored[1].tool_calls == [{"id": "c1", "name": "clock"}]
    assert stored[2].tool_call_id == "c1"
    assert stored[2].metadata == {"ms": 3}
    assert stored[0].created_at is not None

    for n in range(30):
        result = mind.conversations.append(conv.id, [_user(f"turn {n}")])
    assert [m.content for m in result.messages] == [f"turn {n}" for n in range(10, 30)]
    kept = mind.conversations.messages(conv.id)
    assert [m.seq for m in kept] == list(range(14, 34))  # numbers are never reused
    assert [m.content for m in mind.conversations.messages(conv.id, limit=3)] == [
        "turn 27", "turn 28", "turn 29"]
    info = mind.conversations.list()[0]
    assert info.message_count == 20
    got = mind.conversations.get(conv.id)
    assert got is not None
    assert len(got.messages) == 20
    mind.conversations.append(conv.id, [_user("last")], keep_last=2)
    assert [m.content for m in mind.conversations.messages(conv.id)] == ["turn 29", "last"]
    mind.conversations.delete(conv.id)
    assert mind.conversations.get(conv.id) is None
    with pytest.raises(ws.NotFoundError):
        mind.conversations.messages(conv.id)


@pytest.mark.parametrize("bad", [
    [{"role": "robot", "content": "x"}],
    [{"role": "user", "content": "x", "extra": 1}],
    [{"role": "user", "content": "x" * (1_048_576 + 1)}],
    [{"role": "user", "content": "nul\x00"}],
    [{"role": "user", "content": "x", "metadata": {"n": float("nan")}}],
    [{"role": "user", "content": "x", "tool_calls": "not a list"}],
    "a string is not a list of messages",
])
def test_bad_messages_store_nothing(mind: ws.Mind, bad: Any) -> None:
    conv = mind.conversations.open()
    with pytest.raises(ws.InvalidInputError):
        mind.conversations.append(conv.id, [_user("ok"), *bad] if isinstance(bad, list) else bad)
    assert mind.conversations.messages(conv.id) == []


def test_bounded_channel_label_and_counts(mind: ws.Mind) -> None:
    for call in (lambda: mind.conversations.open("x" * 256),
                 lambda: mind.conversations.open("   "),
                 lambda: mind.conversations.create("c", label="l" * 256),
                 lambda: mind.conversations.append(1, [], keep_last=-1),
                 lambda: mind.conversations.canonical(window=-1)):
        with pytest.raises(ws.InvalidInputError):
            call()
    assert mind.conversations.list() == []


def test_remember_keeps_a_trimmed_message_findable(mind: ws.Mind) -> None:
    conv = mind.conversations.open("web")
    mind.conversations.append(conv.id, [
        _user("My sister Margarethe lives in Reykjavik"),
        {"role": "assistant", "content": "Noted: Margarethe lives in Reykjavik."},
        {"role": "tool", "content": "tool output is not remembered"},
    ], remember=True)
    for n in range(10):
        mind.conversations.append(conv.id, [_user(f"small talk {n}")], keep_last=4,
                                  remember=True)
    kept = [m.content for m in mind.conversations.messages(conv.id)]
    assert not any("Reykjavik" in c for c in kept)
    hits = mind.search("Margarethe Reykjavik", limit=5)
    assert "My sister Margarethe lives in Reykjavik" in [h.frame.content for h in hits]
    assert {h.frame.gop_id for h in hits} == {f"conversation-{conv.id}"}
    assert not mind.search("tool output is not remembered", lanes={"keyword"})


class _DeletesWhileEmbedding(HashingEmbedder):
    """Embeds like the hashing embedder, and meanwhile another store deletes a conversation:
    what a concurrent writer can do between an append's embedding and its transaction."""

    def __init__(self, other: Callable[[], None]) -> None:
        super().__init__()
        self.other = other

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        self.other()
        return super().embed_documents(texts)


def test_remember_stores_nothing_when_the_append_fails(store_factory: Any) -> None:
    plain = store_factory()
    conv = plain.mind("m").conversations.open()
    embedder = _DeletesWhileEmbedding(lambda: plain.mind("m").conversations.delete(conv.id))
    mind = store_factory(embedder=embedder).mind("m")
    with pytest.raises(ws.NotFoundError):
        mind.conversations.append(conv.id, [_user("Quentin collects antique barometers")],
                                  remember=True)
    assert mind.frames.stats().total == 0
    assert mind.sessions.list() == []


def test_isolation_between_minds_and_drop_mind(store: ws.Store) -> None:
    alice, bob = store.mind("alice"), store.mind("bob")
    conv = alice.conversations.open()
    alice.conversations.append(conv.id, [_user("secret")])
    alice.conversations.canonical_append([_user("alice canonical")])
    assert bob.conversations.get(conv.id) is None
    assert bob.conversations.list() == []
    assert bob.conversations.canonical().messages == []
    for call in (lambda: bob.conversations.append(conv.id, [_user("x")]),
                 lambda: bob.conversations.messages(conv.id),
                 lambda: bob.conversations.delete(conv.id)):
        with pytest.raises(ws.NotFoundError):
            call()
    assert [m.content for m in alice.conversations.messages(conv.id)] == ["secret"]
    store.drop_mind("alice")
    again = store.mind("alice")
    assert again.conversations.list() == []
    assert again.conversations.canonical() == ws.CanonicalContext(None, [])
    assert again.conversations.get(conv.id) is None


# -- the canonical conversation ----------------------------------------------------------------


def _cut_head(text: str, limit: int) -> str:
    out = ""
    for ch in text:
        if len((out + ch).encode()) > limit:
            break
        out += ch
    return out


def _cut_tail(text: str, limit: int) -> str:
    while len(text.encode()) > limit:
        text = text[1:]
    return text


def _expected(summary: str | None, messages: list[tuple[str, str]]) -> str:
    """The compaction rules, written out independently of the library."""
    lines = [] if summary is None else [summary]
    names = {"user": "User", "assistant": "Assistant", "system": "System"}
    for role, text in messages:
        if role not in names or text == "":
            continue
        if len(text.encode()) > 200:
            text = _cut_head(text, 200) + "..."
        lines.append(f"{names[role]}: {text}")
    return _cut_tail("\n".join(lines), 4000)


def test_canonical_compaction_byte_for_byte(mind: ws.Mind) -> None:
    conv = mind.conversations
    first = [
        ("user", "a" * 199 + "é"),          # 201 bytes: é straddles byte 200 and is dropped
        ("assistant", "b" * 198 + "é"),     # exactly 200 bytes: kept whole
        ("system", "€" * 67),                # 201 bytes: cut to 66 euros (198 bytes)
        ("user", ""),                        # no text: no line
        ("tool", "a tool result"),           # not conversation text: no line
        ("assistant", "short"),
        ("user", "ü" * 101),                 # 202 bytes: cut to 100
        ("assistant", "z"),
    ]
    later = [("user", f"later {n}") for n in range(4)]
    ctx = conv.canonical_append([{"role": r, "content": t} for r, t in first + later],
                                threshold=10, window=4)
    expected = _expected(None, first)
    assert ctx.summary == expected
    assert "\u00e9..." not in expected
    assert ("a" * 199 + "...") in expected
    assert [(m.role, m.content) for m in ctx.messages] == later
    assert conv.canonical(window=2).messages == ctx.messages[-2:]

    # below the threshold nothing is compacted
    ctx = conv.canonical_append([_user("one more")], threshold=10, window=4)
    assert ctx.summary == expected
    assert len(ctx.messages) == 4

    # a summary past 4,000 bytes keeps its last 4,000, cut on a character boundary
    for pad in range(3):
        long = [("user", "x" * pad + "€" * 70) for _ in range(25)]
        whole = "\n".join([expected, *[f"User: {_cut_head(t, 200)}..." for _, t in long]])
        if (whole.encode()[-4000] & 0xC0) == 0x80:  # the raw cut would split a character
            break
    else:
        pytest.fail("no padding puts the 4,000-byte cut inside a character")
    before = [(m.role, m.content) for m in conv.canonical(window=100).messages]
    ctx = conv.canonical_append([{"role": r, "content": t} for r, t in long],
                                threshold=10, window=4)
    assert ctx.summary == _expected(expected, before + long[:-4])
    assert len(ctx.summary.encode()) <= 4000
    assert ctx.summary.startswith("€")


def test_set_canonical_summary(mind: ws.Mind) -> None:
    conv = mind.conversations
    conv.canonical_append([_user(f"m{n}") for n in range(6)])
    conv.set_canonical_summary("an LLM summary", keep_last=2)
    ctx = conv.canonical()
    assert ctx.summary == "an LLM summary"
    assert [m.content for m in ctx.messages] == ["m4", "m5"]
    conv.set_canonical_summary("another")
    assert [m.content for m in conv.canonical().messages] == ["m4", "m5"]
    ctx = conv.canonical_append([_user(f"n{n}") for n in range(3)], threshold=4, window=2)
    assert ctx.summary == "another\nUser: m4\nUser: m5\nUser: n0"


@pytest.mark.parametrize("threshold", [100_000, 30])
def test_concurrent_canonical_appends_lose_nothing(store_factory: Any, threshold: int) -> None:
    store_factory()
    threads, per_thread = 6, 15
    errors: list[BaseException] = []

    def channel(k: int) -> None:
        try:
            mind = store_factory().mind("shared")
            for n in range(per_thread):
                mind.conversations.canonical_append([_user(f"c{k}-{n}")], threshold=threshold,
                                                    window=10)
        except BaseException as exc:  # noqa: BLE001 - reported to the test below
            errors.append(exc)

    workers = [threading.Thread(target=channel, args=(k,)) for k in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert errors == []
    ctx = store_factory().mind("shared").conversations.canonical(window=1000)
    summarised = [] if ctx.summary is None else ctx.summary.split("\n")
    seen = [line.removeprefix("User: ") for line in summarised] + [m.content for m in ctx.messages]
    assert sorted(seen) == sorted(f"c{k}-{n}" for k in range(threads) for n in range(per_thread))
    for k in range(threads):  # each channel's messages stay in its order
        mine = [s for s in seen if s.startswith(f"c{k}-")]
        assert mine == [f"c{k}-{n}" for n in range(per_thread)]


def test_reconcile_checks_conversation_counters(store: ws.Store) -> None:
    import sqlalchemy as sa

    from waggle_store.models import MessageRow

    mind = store.mind("m")
    conv = mind.conversations.open()
    mind.conversations.append(conv.id, [_user("a"), _user("b"), _user("c")])
    assert not [p for p in store.reconcile().problems if "conversation" in p]
    with store.write() as session:  # a row deleted behind the API
        session.execute(sa.delete(MessageRow).where(MessageRow.conversation_id == conv.id,
                                                    MessageRow.seq == 2))
    found = [p for p in store.reconcile().problems if "conversation" in p]
    assert found == [
        f"conversation {conv.id} counts 3 messages up to seq 3 but holds 2 up to seq 3"]
    report = store.reconcile(repair=True)
    assert found[0] in report.repaired
    assert mind.conversations.list()[0].message_count == 2
    assert not [p for p in store.reconcile().problems if "conversation" in p]
