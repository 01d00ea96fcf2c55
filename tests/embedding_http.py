"""A scriptable embedding HTTP server on 127.0.0.1 for driving the real SDKs in tests.

It speaks three dialects, chosen by the request path:

- OpenAI (and LiteLLM): ``POST <prefix>/v1/embeddings`` → ``{"data": [{"embedding", "index"}]}``,
  errors as ``{"error": {"message", "type", "code"}}``; honours ``encoding_format=base64``;
- Voyage: ``POST /voyage/v1/embeddings`` → the same list shape, errors as ``{"detail": ...}``;
- Ollama: ``POST /api/embed`` → ``{"embeddings": [...]}``, errors as ``{"error": ...}``.

Each request takes the next scripted :class:`Reply` (or a success once the script is used up)
and is recorded, so a test asserts exactly how many requests the client made and when.
"""

from __future__ import annotations

import base64
import hashlib
import json
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

OPENAI_PREFIX = "/openai/v1"
VOYAGE_PREFIX = "/voyage/v1"


@dataclass(frozen=True)
class Reply:
    """What the server answers to one request."""

    status: int = 200
    message: str = ""
    code: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    dims: int | None = None
    raw_body: bytes | None = None
    hang: float = 0.0

    @classmethod
    def ok(cls, dims: int | None = None) -> Reply:
        return cls(dims=dims)

    @classmethod
    def error(
        cls,
        status: int,
        message: str = "scripted failure",
        *,
        code: str | None = None,
        retry_after: float | str | None = None,
    ) -> Reply:
        headers = {} if retry_after is None else {"Retry-After": str(retry_after)}
        return cls(status=status, message=message, code=code, headers=headers)

    @classmethod
    def malformed(cls) -> Reply:
        """A 200 that claims JSON and is not."""
        return cls(raw_body=b'{"data": [{"embedding": [0.1, 0.2')

    @classmethod
    def hanging(cls, seconds: float) -> Reply:
        """Say nothing for ``seconds`` (then answer, to whoever is still listening)."""
        return cls(hang=seconds)


@dataclass(frozen=True)
class Request:
    path: str
    body: Any
    headers: dict[str, str]
    at: float


def fake_vector(text: str, dims: int) -> list[float]:
    """A deterministic, nonzero, text-dependent vector (not normalised: clients must do it)."""
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=64).digest()
    while len(digest) < dims:
        digest += hashlib.blake2b(digest, digest_size=64).digest()
    return [(b - 127.5) / 10.0 for b in digest[:dims]]


class EmbeddingServer:
    """The server plus its script and request log; use as the ``embedding_server`` fixture."""

    def __init__(self, dims: int = 8) -> None:
        self.dims = dims
        self._script: deque[Reply] = deque()
        self._requests: list[Request] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False
        # A short poll interval: shutdown() waits for the serve loop to notice, once per test.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> EmbeddingServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()  # releases hanging handlers
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    # -- addresses ------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        port = self._httpd.server_address[1]
        return f"http://127.0.0.1:{port}"

    @property
    def openai_base_url(self) -> str:
        return self.url + OPENAI_PREFIX

    @property
    def voyage_base_url(self) -> str:
        return self.url + VOYAGE_PREFIX

    @property
    def ollama_host(self) -> str:
        return self.url

    # -- script and log ---------------------------------------------------------------------

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._script.extend(replies)

    def next_reply(self) -> Reply:
        with self._lock:
            return self._script.popleft() if self._script else Reply.ok()

    def record(self, request: Request) -> None:
        with self._lock:
            self._requests.append(request)

    @property
    def requests(self) -> list[Request]:
        with self._lock:
            return list(self._requests)

    @property
    def count(self) -> int:
        return len(self.requests)

    def reset(self) -> None:
        with self._lock:
            self._script.clear()
            self._requests.clear()

    def wait_stopped(self, seconds: float) -> bool:
        return self._stop.wait(seconds)


def _dialect(path: str) -> str:
    if path.endswith("/api/embed"):
        return "ollama"
    if path.startswith(VOYAGE_PREFIX):
        return "voyage"
    return "openai"


def _success_body(dialect: str, body: Any, dims: int) -> dict[str, Any]:
    inputs = body.get("input") if isinstance(body, dict) else None
    texts = [inputs] if isinstance(inputs, str) else list(inputs or [])
    vectors = [fake_vector(str(t), dims) for t in texts]
    model = body.get("model") if isinstance(body, dict) else None
    if dialect == "ollama":
        return {"model": model, "embeddings": vectors}
    b64 = isinstance(body, dict) and body.get("encoding_format") == "base64"
    data = [
        {
            "object": "embedding",
            "index": i,
            "embedding": (base64.b64encode(struct.pack(f"<{len(v)}f", *v)).decode() if b64 else v),
        }
        for i, v in enumerate(vectors)
    ]
    tokens = sum(len(str(t).split()) for t in texts)
    return {
        "object": "list",
        "data": data,
        "model": model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


def _error_body(dialect: str, reply: Reply) -> dict[str, Any]:
    text = f"{reply.code}: {reply.message}" if reply.code else reply.message
    if dialect == "ollama":
        return {"error": text}
    if dialect == "voyage":
        return {"detail": text}
    return {"error": {"message": reply.message, "type": reply.code or "error", "code": reply.code}}


def _handler_for(server: EmbeddingServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            """Keep test output clean; the request log is the record."""

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body: Any = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
            server.record(
                Request(
                    self.path,
                    body,
                    {k.lower(): v for k, v in self.headers.items()},
                    time.monotonic(),
                )
            )
            reply = server.next_reply()
            if reply.hang and server.wait_stopped(reply.hang):
                return  # the server is shutting down: answer nobody
            dialect = _dialect(self.path)
            if reply.raw_body is not None:
                payload = reply.raw_body
            elif reply.status >= 400:
                payload = json.dumps(_error_body(dialect, reply)).encode()
            else:
                payload = json.dumps(
                    _success_body(dialect, body, reply.dims or server.dims)
                ).encode()
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                return  # the client gave up waiting (the timeout cases): nothing to answer

    return Handler


def closed_port_url() -> str:
    """An address nothing listens on: connecting is refused at once."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.fixture
def embedding_server() -> Iterator[EmbeddingServer]:
    """A fresh server per test (random port), stopped at teardown."""
    server = EmbeddingServer().start()
    try:
        yield server
    finally:
        server.stop()
