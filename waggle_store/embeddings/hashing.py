"""An offline, deterministic embedder: signed feature hashing of word tokens.

It is what a store uses when no embedding model exists (and what tests use to be reproducible).
Its vectors capture lexical overlap only: two texts sharing words are close, paraphrases are not.
The hash is blake2b, never Python's ``hash()``, whose per-process salt would make vectors written
by one process incomparable with those of the next.
"""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence

from waggle_store.embeddings.base import make_model_id
from waggle_store.errors import InvalidInputError

_WORD = re.compile(r"\w+")
# Distinguishes "whole text" features from word features so that a text consisting of the
# single word "x" and the punctuation-only text "x" cannot collide by construction.
_WHOLE_TEXT_PREFIX = b"\x00whole:"
_PERSON = b"waggle-hash-v1"


class HashingEmbedder:
    """Deterministic lexical embedder; identical text gives an identical vector in any process."""

    provider = "hashing"
    model = "blake2b-signed-words-v1"
    #: Its vector is a bag of the text's words: the mean of its sentences' bags says nothing
    #: the whole bag does not (:mod:`waggle_store.embeddings.sentences`), so texts stay whole.
    text_form = "whole"

    def __init__(self, dimensions: int = 384) -> None:
        if not isinstance(dimensions, int) or isinstance(dimensions, bool) or dimensions < 2:
            raise InvalidInputError(
                f"HashingEmbedder dimensions must be an int >= 2, got {dimensions!r}"
            )
        self._dimensions = dimensions

    @property
    def dimensions(self) -> int:
        return self._dimensions

    @property
    def model_id(self) -> str:
        return make_model_id(self.provider, self.model, self._dimensions)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._embed(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._embed(text)

    def _embed(self, text: str) -> list[float]:
        # NFKC + casefold: "\uff23afé" (a fullwidth C) and "CAFÉ" are the same
        # word to a reader, so the same feature.
        folded = unicodedata.normalize("NFKC", text).casefold()
        counts = Counter(_WORD.findall(folded))
        vec = [0.0] * self._dimensions
        used = {self._add(vec, token.encode("utf-8"), float(count))
                for token, count in counts.items()}
        if not any(vec[i] for i in used):
            # No word tokens (punctuation, emoji, empty text), or signed features that cancelled
            # out: a whole-text feature keeps every text embeddable with a nonzero vector.
            vec = [0.0] * self._dimensions
            used = {self._add(vec, _WHOLE_TEXT_PREFIX + folded.encode("utf-8"), 1.0)}
        # Only the features' coordinates are non-zero: the norm and the scaling read those
        # (the same values as over the whole vector: ``fsum`` is exact, 0.0 / norm is 0.0).
        norm = math.sqrt(math.fsum(vec[i] * vec[i] for i in used))
        for i in used:
            vec[i] /= norm
        return vec

    def _add(self, vec: list[float], feature: bytes, weight: float) -> int:
        """Add the feature's signed weight at its coordinate; returns the coordinate."""
        digest = hashlib.blake2b(feature, digest_size=8, person=_PERSON).digest()
        h = int.from_bytes(digest, "little")
        index = (h >> 1) % self._dimensions
        sign = 1.0 if h & 1 else -1.0
        vec[index] += sign * weight
        return index

    def __repr__(self) -> str:
        return f"HashingEmbedder(dimensions={self._dimensions})"


__all__ = ["HashingEmbedder"]
