"""Harvest: bringing a user's existing conversations and notes into a mind.

Adapters (:mod:`.chats` for the ChatGPT and Claude data exports, :mod:`.files` for a folder of
Markdown/text notes and for generic JSONL) turn a source into items made of frames; :mod:`.sync`
stores what is new through cognify. The registry of sources is
:mod:`waggle_store.repositories.harvest`; ``mind.harvest`` (:mod:`waggle_store.facade.harvest`)
is the public entry.
"""

from __future__ import annotations

from waggle_store.pipeline.harvest.items import HarvestFrame, HarvestItem, Parsed
from waggle_store.pipeline.harvest.sync import harvest_session, read_source, sync_sources

__all__ = ["HarvestFrame", "HarvestItem", "Parsed", "harvest_session", "read_source",
           "sync_sources"]
