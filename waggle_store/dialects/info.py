"""What an engine learnt about its backend while connecting, for ``Store.health()`` and the
adapters.

It lives in ``dialects/`` because the engine factories (``sqlite_engine``, ``postgres_engine``)
fill it and the adapters read it; ``waggle_store.engine`` re-exports it for callers.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

from sqlalchemy.engine import Engine


@dataclass
class EngineInfo:
    """What an engine can do, learnt while connecting; read by ``Store.health()``."""

    dialect: str
    driver: str
    schema: str | None = None
    sqlite_version: str | None = None
    vector_extension: bool | None = None  # None = not probed yet
    vector_reason: str | None = None
    warnings: list[str] = field(default_factory=list)
    #: True for an engine one of waggle_store's factories built (its connect/begin hooks do
    #: what waggle_store needs); False for a host's own engine, configured per transaction.
    configured: bool = False


#: Weak keys: an engine the caller dropped takes its info with it.
_INFO: weakref.WeakKeyDictionary[Engine, EngineInfo] = weakref.WeakKeyDictionary()


def engine_info(engine: Engine) -> EngineInfo:
    """The engine's info, created empty for an engine no factory of ours built (a host's)."""
    try:
        return _INFO[engine]
    except KeyError:
        info = EngineInfo(dialect=engine.dialect.name, driver=engine.dialect.driver)
        _INFO[engine] = info
        return info
