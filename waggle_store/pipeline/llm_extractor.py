"""An extractor over any OpenAI-compatible chat completions API (OpenAI, Ollama, vLLM, LiteLLM).

One request per text: the model is asked for entities and relations under a JSON schema
(``response_format`` of type ``json_schema``, strict), so the answer parses without guessing.
HTTP goes through httpx; every attempt's failure is classified exactly as the embedding
providers' are (:mod:`waggle_store.embeddings.retry`: 429/5xx/timeouts/dropped connections are
retried with jittered backoff and ``Retry-After``, other statuses and malformed answers are
not), so one retry policy governs every remote call of the store.

The text is sent only to ``base_url`` (default ``OPENAI_BASE_URL``, then OpenAI's API), and only
because the user built this extractor and gave it to ``open_store``.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any, Final

from waggle_store.embeddings.retry import (
    ProviderCallError,
    RetryPolicy,
    call_with_retry,
    classify_status,
)
from waggle_store.errors import InvalidInputError
from waggle_store.records import ExtractedEntity, ExtractedRelation, Extraction, ExtractionUsage

if TYPE_CHECKING:
    import httpx

__all__ = ["EXTRACTION_SCHEMA", "OpenAICompatibleExtractor"]

_PROVIDER: Final = "extractor"
_MAX_RESPONSE_BYTES: Final = 1_000_000
_SYSTEM: Final = (
    "Extract the named entities and the relations between them that the user's text states. "
    "Entity types are short lower-case nouns (person, organization, location, project, "
    "technology, concept, event). Relation types are lower-case snake_case verbs read from "
    "source to target; use works_at (person -> organization), located_in (-> location) and "
    "reports_to (person -> person) for those facts, and only for facts that hold now. Names "
    "are written as in the text. Confidence is between 0 and 1. Return nothing that the text "
    "does not state."
)
_STR: Final = {"type": "string"}
_NUM: Final = {"type": "number"}


def _object(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties),
            "additionalProperties": False}


#: The JSON schema the model's answer must follow.
EXTRACTION_SCHEMA: Final = _object(
    entities={"type": "array", "items": _object(name=_STR, type=_STR, confidence=_NUM)},
    relations={"type": "array",
               "items": _object(source=_STR, target=_STR, relation_type=_STR,
                                confidence=_NUM)},
)


class OpenAICompatibleExtractor:
    """Entities and relations by a chat model behind an OpenAI-compatible API.

    ``api_key_env`` names the environment variable holding the key; when it is unset no
    ``Authorization`` header is sent (local servers such as Ollama need none).
    ``prompt_usd_per_million`` / ``completion_usd_per_million`` price the tokens the server
    reports, for the usage log. ``retry`` is the policy of every remote call (the default: 3
    attempts within 20 s).
    """

    def __init__(self, model: str, *, base_url: str | None = None,
                 api_key_env: str = "OPENAI_API_KEY", timeout: float = 30.0,
                 prompt_usd_per_million: float = 0.0, completion_usd_per_million: float = 0.0,
                 retry: RetryPolicy | None = None) -> None:
        if not isinstance(model, str) or not model.strip():
            raise InvalidInputError(f"model must be a non-empty string, got {model!r}")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise InvalidInputError(f"timeout must be a positive number, got {timeout!r}")
        url = base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        if not url.startswith(("http://", "https://")):
            raise InvalidInputError(f"base_url must be an http(s) URL, got {url!r}")
        self.model = model
        self.base_url = url.rstrip("/")
        self.timeout = float(timeout)
        self.prices = (float(prompt_usd_per_million), float(completion_usd_per_million))
        self.retry = retry or RetryPolicy()
        key = os.environ.get(api_key_env) if api_key_env else None
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        import httpx  # at first use: importing waggle_store pulls in no HTTP client

        self._client: httpx.Client = httpx.Client(headers=headers, timeout=self.timeout)

    def close(self) -> None:
        self._client.close()

    def extract(self, text: str) -> Extraction:
        """One chat completion under the schema; raises EmbeddingProviderError (retry's final
        error, naming the status and attempts) when the server does not answer usefully."""
        if not isinstance(text, str):
            raise InvalidInputError(f"text must be a string, got {type(text).__name__}")
        body = {
            "model": self.model,
            "messages": [{"role": "system", "content": _SYSTEM},
                         {"role": "user", "content": text}],
            "temperature": 0,
            "response_format": {"type": "json_schema", "json_schema": {
                "name": "extraction", "strict": True, "schema": EXTRACTION_SCHEMA}},
        }
        answer = call_with_retry(lambda: self._post(body), provider=_PROVIDER, policy=self.retry)
        return self._parse(answer)

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        import httpx

        url = f"{self.base_url}/chat/completions"
        try:
            response = self._client.post(url, json=body)
        except httpx.TimeoutException as exc:
            raise ProviderCallError(f"{_PROVIDER}: no answer within {self.timeout}s",
                                    provider=_PROVIDER, retryable=True) from exc
        except httpx.TransportError as exc:
            raise ProviderCallError(f"{_PROVIDER}: cannot reach {url}: {exc}",
                                    provider=_PROVIDER, retryable=True) from exc
        if len(response.content) > _MAX_RESPONSE_BYTES:
            raise ProviderCallError(f"{_PROVIDER}: the answer is larger than "
                                    f"{_MAX_RESPONSE_BYTES} bytes", provider=_PROVIDER)
        if response.status_code >= 400:
            message = response.text[:500]
            try:
                payload: object = response.json()
            except ValueError:
                payload = message
            raise classify_status(_PROVIDER, response.status_code, message, body=payload,
                                  headers=response.headers)
        try:
            parsed = response.json()
        except ValueError as exc:
            raise ProviderCallError(f"{_PROVIDER}: malformed response: {exc}",
                                    provider=_PROVIDER) from exc
        if not isinstance(parsed, dict):
            raise ProviderCallError(f"{_PROVIDER}: malformed response: not a JSON object",
                                    provider=_PROVIDER)
        return parsed

    def _parse(self, answer: dict[str, Any]) -> Extraction:
        try:
            content = answer["choices"][0]["message"]["content"]
            found = json.loads(content)
            entities = [ExtractedEntity(str(e["name"]), str(e["type"]),
                                        float(e.get("confidence", 1.0)))
                        for e in found["entities"]]
            relations = [ExtractedRelation(str(r["source"]), str(r["target"]),
                                           str(r["relation_type"]),
                                           float(r.get("confidence", 1.0)))
                         for r in found["relations"]]
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
            raise ProviderCallError(f"{_PROVIDER}: the answer does not follow the schema: "
                                    f"{type(exc).__name__}: {exc}", provider=_PROVIDER) from exc
        reported = answer.get("usage")
        usage: dict[str, Any] = reported if isinstance(reported, dict) else {}
        prompt = _tokens(usage.get("prompt_tokens"))
        completion = _tokens(usage.get("completion_tokens"))
        cost = (prompt * self.prices[0] + completion * self.prices[1]) / 1_000_000
        return Extraction(entities, relations,
                          ExtractionUsage(self.model, prompt, completion, cost))


def _tokens(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
