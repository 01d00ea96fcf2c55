"""Pluggable extraction: open_store(extractor=...), the OpenAI-compatible extractor against a
chat-completions server the test starts, pending extraction, reconcile and recognify. SQLite and
PostgreSQL."""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

import waggle_store as ws
from waggle_store.embeddings.retry import RetryPolicy


class ChatServer:
    """POST /v1/chat/completions: each request takes the next scripted (status, body); the
    default answer extracts entities and relations from the user's text by a table."""

    def __init__(self) -> None:
        self.script: deque[tuple[int, Any]] = deque()
        self.requests: list[dict[str, Any]] = []
        self.facts: dict[str, dict[str, Any]] = {}
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length))
                server.requests.append({"path": self.path, "body": body,
                                        "auth": self.headers.get("Authorization")})
                status, reply = (server.script.popleft() if server.script
                                 else (200, server.answer(body)))
                data = json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        text = body["messages"][-1]["content"]
        found = self.facts.get(text, {"entities": [], "relations": []})
        return {"choices": [{"message": {"role": "assistant", "content": json.dumps(found)}}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}}

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def chat() -> Iterator[ChatServer]:
    server = ChatServer()
    yield server
    server.stop()


ACME = "Alice works at Acme."
GLOBEX = "Alice now works at Globex; she left Acme."
_FACTS = {
    ACME: {"entities": [{"name": "Alice", "type": "person", "confidence": 0.9},
                        {"name": "Acme", "type": "organization", "confidence": 0.9}],
           "relations": [{"source": "Alice", "target": "Acme", "relation_type": "works_at",
                          "confidence": 0.9}]},
    GLOBEX: {"entities": [{"name": "alice", "type": "person", "confidence": 0.9},
                          {"name": "Globex", "type": "organization", "confidence": 0.9}],
             "relations": [{"source": "alice", "target": "Globex", "relation_type": "works_at",
                            "confidence": 0.9}]},
}
_FAST = RetryPolicy(max_attempts=2, initial_wait=0.0, max_wait=0.0, deadline=10.0)


def _llm(chat: ChatServer, monkeypatch: pytest.MonkeyPatch) -> ws.OpenAICompatibleExtractor:
    monkeypatch.setenv("TEST_LLM_KEY", "sk-test")
    chat.facts.update(_FACTS)
    return ws.OpenAICompatibleExtractor("test-model", base_url=chat.base_url,
                                        api_key_env="TEST_LLM_KEY", timeout=5.0,
                                        prompt_usd_per_million=1.0,
                                        completion_usd_per_million=2.0, retry=_FAST)


def _employers(mind: ws.Mind) -> list[str]:
    k = mind.knowledge
    alice = k.resolve("Alice")
    assert alice is not None
    names = []
    for r in k.relations_from(alice.id, "works_at"):
        target = k.get_entity(r.target_id)
        assert target is not None
        names.append(target.name)
    return names


def test_openai_compatible_extractor_supersedes_through_cognify(
        store_factory: Callable[..., ws.Store], chat: ChatServer,
        monkeypatch: pytest.MonkeyPatch) -> None:
    with store_factory(extractor=_llm(chat, monkeypatch)) as store:
        mind = store.mind("m")
        mind.cognify(ACME)
        first = chat.requests[0]
        assert first["path"] == "/v1/chat/completions"
        assert first["auth"] == "Bearer sk-test"
        assert first["body"]["model"] == "test-model"
        assert first["body"]["response_format"]["type"] == "json_schema"
        mind.cognify(GLOBEX)
        assert _employers(mind) == ["Globex"]
        ended = [r for r in mind.knowledge.relations_as_of() if r.relation_type == "works_at"
                 and r.valid_to is not None]
        assert len(ended) == 1
        # The usage log has both calls: 2 x (100 + 20) tokens at $1/$2 per million.
        totals = store.usage.totals("m")
        assert totals.total_tokens == 240
        assert totals.cost_usd == pytest.approx(2 * (100 * 1.0 + 20 * 2.0) / 1_000_000)


def test_a_failing_extractor_leaves_the_memory_pending_then_reconcile_extracts_it(
        store_factory: Callable[..., ws.Store], chat: ChatServer,
        monkeypatch: pytest.MonkeyPatch) -> None:
    with store_factory(extractor=_llm(chat, monkeypatch)) as store:
        mind = store.mind("m")
        chat.script.extend([(503, {"error": {"message": "overloaded"}})] * 2)
        result = mind.cognify(ACME)
        assert len(chat.requests) == 2  # retried once (the policy's two attempts), then gave up
        assert mind.frames.get(result.frame_id) is not None  # stored
        assert mind.knowledge.resolve("Alice") is None  # nothing extracted yet
        chat.script.append((400, {"error": {"message": "bad request"}}))
        assert store.reconcile().extractions_fixed == 0  # a 400 is not retried: still pending
        assert len(chat.requests) == 3
        assert store.reconcile().extractions_fixed == 1
        assert _employers(mind) == ["Acme"]
        assert store.reconcile().extractions_fixed == 0  # nothing left


def test_recognify_reextracts_without_a_new_frame(
        store_factory: Callable[..., ws.Store], chat: ChatServer,
        monkeypatch: pytest.MonkeyPatch) -> None:
    with store_factory(extractor=_llm(chat, monkeypatch)) as store:
        mind = store.mind("m")
        chat.facts[ACME] = {"entities": [], "relations": []}  # the first pass finds nothing
        frame = mind.cognify(ACME).frame_id
        assert mind.knowledge.resolve("Acme") is None
        chat.facts.update(_FACTS)
        again = mind.recognify(frame)
        assert isinstance(again, ws.CognifyResult)
        assert (again.frame_id, again.entities_extracted) == (frame, 2)
        assert _employers(mind) == ["Acme"]
        assert mind.frames.stats().total == 1
        with pytest.raises(ws.NotFoundError):
            mind.recognify(frame + 1000)
        chat.script.extend([(500, {"error": {"message": "down"}})] * 2)
        with pytest.raises(ws.WaggleStoreError):
            mind.recognify(frame)


class _Broken:
    def extract(self, text: str) -> ws.Extraction:
        raise RuntimeError("no model here")


class _Odd:
    """Returns names and values a store must not take as they are."""

    def extract(self, text: str) -> ws.Extraction:
        return ws.Extraction(
            [ws.ExtractedEntity("Zed Co", "organization", 0.5, {"founded": 1999}),
             ws.ExtractedEntity("", "person"), ws.ExtractedEntity("Bad", "x", 7.0),
             ws.ExtractedEntity("N" * 600, "person")],
            [ws.ExtractedRelation("Zed Co", "Nowhere", "located_in", 2.0)])


def test_any_object_with_extract_is_an_extractor(store_factory: Callable[..., ws.Store]) -> None:
    with store_factory(extractor=_Odd()) as store:
        mind = store.mind("m")
        mind.cognify("Zed Co is a company somewhere in the world.")
        [zed] = mind.knowledge.entities()
        assert (zed.name, zed.properties["founded"]) == ("Zed Co", 1999)
    with store_factory(extractor=_Broken()) as store:
        mind = store.mind("m")
        frame = mind.cognify("Another memory, extracted by nobody.").frame_id
        assert mind.frames.get(frame) is not None
        assert store.reconcile().extractions_fixed == 0
    with pytest.raises(ws.InvalidInputError):
        store_factory(extractor=object())


def test_the_rule_based_extractor_is_the_default(mind: ws.Mind) -> None:
    mind.cognify(ACME)
    mind.cognify(GLOBEX)
    assert _employers(mind) == ["Globex"]


def test_cognify_batch_uses_the_store_extractor(
        store_factory: Callable[..., ws.Store], chat: ChatServer,
        monkeypatch: pytest.MonkeyPatch) -> None:
    with store_factory(extractor=_llm(chat, monkeypatch)) as store:
        mind = store.mind("m")
        chat.script.extend([(200, chat.answer({"messages": [{"content": ACME}]})),
                            (401, {"error": {"message": "bad key"}})])
        result = mind.cognify_batch([ACME, GLOBEX])
        assert result.failures == []
        assert len(chat.requests) == 2  # one per memory; the 401 is not retried
        assert _employers(mind) == ["Acme"]
        assert store.reconcile().extractions_fixed == 1  # GLOBEX, pending after the 401
        assert _employers(mind) == ["Globex"]
