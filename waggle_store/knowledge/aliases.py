"""Entity-name normalisation: the key that decides whether two names are one entity.

:func:`fold` reduces a name to what a person would not call a different name: Unicode NFKC,
case-folded, punctuation removed (``Node.js`` and ``NodeJS`` fold alike; hyphens, underscores and
slashes separate words) and runs of whitespace collapsed. :func:`resolved_key` then maps the
folded name through the alias groups (the built-in ones below, and a mind's own added with
``mind.knowledge.add_alias``), so that "Postgres", "PostgreSQL" and "PG" share the key of
"postgresql".
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from typing import Final

__all__ = ["DEFAULT_ALIASES", "DEFAULT_ALIAS_GROUPS", "fold", "resolved_key"]

#: The built-in alias groups, canonical name first.
DEFAULT_ALIAS_GROUPS: Final[tuple[tuple[str, ...], ...]] = (
    ("postgresql", "postgres", "pg"),
    ("javascript", "js"),
    ("typescript", "ts"),
    ("kubernetes", "k8s"),
    ("new york city", "nyc"),
    ("nodejs", "node.js", "node"),
    ("react.js", "reactjs", "react"),
    ("vue.js", "vuejs", "vue"),
    ("python", "py"),
    ("mongodb", "mongo"),
)


def fold(name: str) -> str:
    """NFKC, case-folded, punctuation and symbols dropped, whitespace collapsed.

    A name made only of punctuation ("C++" folds to "c", "#" to "") keeps its characters
    instead, so it never folds to the empty key or onto a different name.
    """
    text = unicodedata.normalize("NFKC", name).casefold()
    kept = "".join(ch if not unicodedata.category(ch).startswith(("P", "S")) else
                   (" " if ch in "-_/" else "") for ch in text)
    words = kept.split()
    if not words or any(ch in "+#" for ch in text):
        # "c++" and "c#" differ from "c" only by their symbols: keep them.
        return " ".join(text.split())
    return " ".join(words)


def _default_aliases() -> dict[str, str]:
    aliases: dict[str, str] = {}
    for canonical, *others in DEFAULT_ALIAS_GROUPS:
        for other in others:
            aliases[fold(other)] = fold(canonical)
    return aliases


#: Folded alias -> folded canonical name, from :data:`DEFAULT_ALIAS_GROUPS`.
DEFAULT_ALIASES: Final[Mapping[str, str]] = _default_aliases()


def resolved_key(name: str, aliases: Mapping[str, str] | None = None) -> str:
    """The folded name mapped through ``aliases`` (a mind's own, folded alias -> folded
    canonical) and then the built-in groups; one step, no chains."""
    key = fold(name)
    if aliases and key in aliases:
        return aliases[key]
    return DEFAULT_ALIASES.get(key, key)
