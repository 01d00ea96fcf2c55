"""The contract every embedding provider meets, and the vector checks the storage layer relies on.

Vectors of different models must never be compared, so every embedder names itself with a stable
``model_id`` ("provider/model/dimensions") that the store uses as the key of a vector index.
Every vector an embedder returns is unit-normalised (L2), which makes cosine distance and inner
product agree on both dialects.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from typing import Protocol, runtime_checkable

from waggle_store.errors import DimensionMismatchError, InvalidVectorError

#: The text embedded to decide whether a provider answers (Waggle's probe text).
PROBE_TEXT = "waggle embedding probe"


class DescribesModel(Protocol):
    """What names an embedding model: (provider, model, dimensions) is the registration key."""

    @property
    def provider(self) -> str: ...

    @property
    def model(self) -> str: ...

    @property
    def dimensions(self) -> int: ...


@runtime_checkable
class Embedder(DescribesModel, Protocol):
    """Anything that turns text into unit vectors of one fixed dimension.

    The attributes are declared read-only so that plain attributes and properties both satisfy
    the protocol (a wrapper such as the provider chain delegates them).
    """

    @property
    def model_id(self) -> str: ...

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]: ...

    def embed_query(self, text: str) -> list[float]: ...


def embeds_beside_reads(embedder: object) -> bool:
    """Whether a search may embed its query with ``embedder`` on a thread while it reads.

    True when the embedder says so with a true ``embeds_beside_reads`` attribute: its query
    embedding is milliseconds of this process's own work (an in-process model), so running it
    beside the keyword lane's statement hides it, and it holds no network wait that would keep
    the search's read transaction open. Remote providers leave it unset (a network call never
    runs inside a transaction), and so does the hashing embedder (microseconds: the thread hop
    would cost more than it hides). The provider chain delegates it to its active provider; the
    quota meter never overlaps (its reservation needs a pooled connection of its own).
    """
    return getattr(embedder, "embeds_beside_reads", False) is True


def make_model_id(provider: str, model: str, dimensions: int) -> str:
    """The key under which a model's vectors are registered: one index per triple."""
    return f"{provider}/{model}/{dimensions}"


def validate_vector(
    vec: Iterable[float], dimensions: int, *, normalize: bool = False
) -> list[float]:
    """Return ``vec`` as a list of floats, or raise if it cannot be stored or compared.

    A NaN or infinity poisons every distance computed against it, and a zero vector has no
    direction, so cosine distance is undefined; the vector indexes of both dialects would accept
    them silently, hence the check here. ``normalize=True`` also scales the result to unit length.
    """
    if isinstance(vec, (str, bytes)):
        raise InvalidVectorError(
            f"a vector must be a sequence of numbers, got {type(vec).__name__}"
        )
    # map() over the C-level functions: this check runs for every stored vector, and the
    # generator-based version costs more than the ingest's database work.
    try:
        values = list(map(float, vec))
    except (TypeError, ValueError) as exc:
        raise InvalidVectorError(f"a vector must hold only numbers: {exc}") from exc
    if len(values) != dimensions:
        raise DimensionMismatchError(
            f"vector has {len(values)} dimensions, the embedding model has {dimensions}"
        )
    if not all(map(math.isfinite, values)):
        i, x = next((i, x) for i, x in enumerate(values) if not math.isfinite(x))
        raise InvalidVectorError(
            f"vector element {i} is {x}: NaN and infinities are not storable"
        )
    norm = math.hypot(*values)  # C, and accurate without overflow (fsum of squares was slower)
    if normalize and math.isinf(norm):  # finite values too long to divide by: scale them first
        top = max(map(abs, values))
        values = [x / top for x in values]
        norm = math.hypot(*values)
    if norm == 0.0:
        raise InvalidVectorError(
            "the zero vector has no direction and cannot be compared by cosine"
        )
    if normalize:
        return [x / norm for x in values]
    return values


def l2_normalize(vec: Sequence[float]) -> list[float]:
    """Scale ``vec`` to unit length (raises InvalidVectorError for a zero or non-finite vector)."""
    return validate_vector(vec, len(vec), normalize=True)


def split_batches(
    texts: Sequence[str], *, max_items: int, max_chars: int | None = None
) -> Iterator[list[str]]:
    """Cut ``texts`` into request-sized batches, keeping order.

    Providers cap both the number of inputs and the total size of one request; characters are a
    safe upper bound for tokens (a token is at least one character), so a character budget never
    produces a request the provider rejects for size. A single text longer than the budget still
    goes alone: the provider truncates or rejects it, which is its call to make.
    """
    if max_items < 1:
        raise ValueError("max_items must be at least 1")
    batch: list[str] = []
    size = 0
    for text in texts:
        too_many = len(batch) >= max_items
        too_big = max_chars is not None and batch and size + len(text) > max_chars
        if too_many or too_big:
            yield batch
            batch, size = [], 0
        batch.append(text)
        size += len(text)
    if batch:
        yield batch


__all__ = [
    "PROBE_TEXT",
    "Embedder",
    "embeds_beside_reads",
    "l2_normalize",
    "make_model_id",
    "split_batches",
    "validate_vector",
]
