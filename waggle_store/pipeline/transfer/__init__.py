"""Moving a mind's memory in and out of a store.

* :mod:`.format`: the ``waggle-mind`` JSONL format, version 1 (``docs/export-format.md``,
  ``waggle_store/schemas/waggle-mind-v1.schema.json``);
* :mod:`.export`: a mind to JSONL, streamed in keyset pages;
* :mod:`.importer`, :mod:`.validate`, :mod:`.writer`: JSONL (or any record source) into a mind,
  checked first, written in one transaction, ids remapped, merged into what the mind holds;
* :mod:`.waggle_mind`: a Waggle ``.mind`` SQLite file as a record source;
* :mod:`.openfang`: OpenFang's memory JSON export, both ways.

Everything here takes a :class:`~waggle_store.context.StoreContext` or
:class:`~waggle_store.context.MindContext` and names tables only through the ORM models.
"""

from waggle_store.pipeline.transfer.export import export_mind
from waggle_store.pipeline.transfer.importer import jsonl_records, run_import

__all__ = ["export_mind", "jsonl_records", "run_import"]
