"""How provider addresses are read from configuration (OLLAMA_HOST forms, LiteLLM base URLs)."""

from __future__ import annotations

import pytest

from waggle_store.embeddings.ollama import normalize_host
from waggle_store.embeddings.openai_compat import litellm_base_url


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("localhost", "http://localhost:11434"),
        ("localhost:8080", "http://localhost:8080"),
        ("0.0.0.0", "http://127.0.0.1:11434"),
        ("0.0.0.0:11434", "http://127.0.0.1:11434"),
        ("http://ollama.internal:11434/", "http://ollama.internal:11434"),
        ("https://ollama.example.com", "https://ollama.example.com"),
        ("http://10.0.0.5", "http://10.0.0.5:11434"),
        ("http://proxy:8000/ollama", "http://proxy:8000/ollama"),
    ],
)
def test_ollama_host_forms(raw: str, expected: str) -> None:
    assert normalize_host(raw) == expected


@pytest.mark.parametrize(
    "raw",
    [
        "http://litellm:4000",
        "http://litellm:4000/",
        "http://litellm:4000/v1",
        "http://litellm:4000/v1/",
    ],
)
def test_litellm_base_url(raw: str) -> None:
    assert litellm_base_url(raw) == "http://litellm:4000/v1"
