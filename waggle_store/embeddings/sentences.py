"""A document's vector made from its sentences: the ``"sentences"`` text form.

A dense sentence encoder gives one long, several-topic text ("Hey Jon! Long time no chat! How's
the dance studio? Last week was wild, I got noticed by fashion editors…") a vector near none of
its topics, and it cuts a text longer than its window (256 word pieces for all-MiniLM-L6-v2) off
unread. A turn of a conversation written as a transcript line ("Caroline: …") also names its
speaker once, and one embedding of the whole turn weighs that name little, while the questions
asked of a conversation name the person ("What did Caroline research?").

So an embedder whose :attr:`text_form` is ``"sentences"`` embeds a document as the normalised
mean of its sentences' vectors, each sentence carrying the text's speaker label when it opens
with one (a single word and a colon: ``"Caroline: "``, ``"user: "``, ``"assistant: "``). A
text of one sentence is embedded as it is. The mean is one vector per document, so the stored
vector tables, the search and the query's embedding (the whole query, always) are as for
``"whole"``. Measured on the LoCoMo development set with all-MiniLM-L6-v2
(``benchmarks/locomo_recall.py``): the vector lane's recall@10 0.478 → 0.605,
and the hybrid at or above both lanes at every k. It costs more texts per embedding call
(about 3× on conversational turns, about the same tokens: each sentence once, plus its label).

Which form a stored vector was made with is recorded in its manifest row (``text_form``), so
``store.reconcile()`` re-embeds the vectors of a form the store's embedder no longer makes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Final

from waggle_store.embeddings.base import l2_normalize
from waggle_store.errors import InvalidInputError, WaggleStoreError

__all__ = ["TEXT_FORMS", "check_text_form", "embed_by_sentences", "sentence_parts",
           "text_form_of"]

#: How an embedder turns a document into its one vector: ``"whole"`` (one embedding of the
#: text, every embedder's default) or ``"sentences"`` (this module).
TEXT_FORMS: Final = ("whole", "sentences")

#: A sentence ends at ``.``, ``!`` or ``?`` followed by white space.
_SENTENCE_END: Final = re.compile(r"(?<=[.!?])\s+")
#: A transcript line's speaker: one word, a colon and a space, at the start of the text.
_SPEAKER: Final = re.compile(r"(\w+): (.*)", re.DOTALL)


def check_text_form(form: object, *, what: str = "text_form") -> str:
    """``form`` if it is one of :data:`TEXT_FORMS`, else an :class:`InvalidInputError`."""
    if form not in TEXT_FORMS:
        raise InvalidInputError(f"{what} must be one of {', '.join(TEXT_FORMS)}, got {form!r}")
    return str(form)


def text_form_of(embedder: object) -> str:
    """The embedder's ``text_form`` attribute, ``"whole"`` when it has none (any embedder
    written before the attribute, or one that has no reason to split). Any other value is an
    error: its vectors would be recorded as made in a form they were not."""
    return check_text_form(getattr(embedder, "text_form", "whole"),
                           what="an embedder's text_form")


def sentence_parts(text: str) -> list[str]:
    """The text's sentences, each prefixed by its speaker label when the text opens with one;
    ``[]`` when the text is a single sentence (it is embedded whole)."""
    found = _SPEAKER.fullmatch(text)
    label, body = (found.group(1), found.group(2)) if found else ("", text)
    parts = [part for part in _SENTENCE_END.split(body.strip()) if part]
    if len(parts) <= 1:
        return []
    return [f"{label}: {part}" for part in parts] if label else parts


def embed_by_sentences(texts: Sequence[str],
                       embed: Callable[[list[str]], list[list[float]]]) -> list[list[float]]:
    """Each text's vector as the normalised mean of its sentences' (:func:`sentence_parts`),
    or its own embedding when it is one sentence; ``embed`` is called once, with every text
    and part, and must return unit vectors in order."""
    flat: list[str] = []
    spans: list[tuple[int, int]] = []
    for text in texts:
        parts = sentence_parts(text) or [text]
        spans.append((len(flat), len(flat) + len(parts)))
        flat.extend(parts)
    vectors = embed(flat)
    if len(vectors) != len(flat):
        raise WaggleStoreError(f"the model returned {len(vectors)} vectors for {len(flat)} texts")
    out: list[list[float]] = []
    for start, end in spans:
        if end - start == 1:
            out.append(vectors[start])
            continue
        rows = vectors[start:end]
        out.append(l2_normalize([sum(column) / len(rows) for column in zip(*rows, strict=True)]))
    return out
