"""Pass 1 of an import for the record types of format version 3 (:mod:`.format_knowledge`):
what one line alone cannot show, checked against the records on earlier lines.

* an alias is on a line before every entity (entity names resolve through the aliases), its
  name folds to a key no other alias of the file has, and aliases do not chain (no alias's key is
  another's canonical key, as ``add_alias`` refuses);
* an entity or relation version is of an entity or relation defined on an earlier line, is one
  of its earlier versions (below the version number its record gives), once; a relation
  version's ends are entities defined on earlier lines;
* a pending extraction is of a frame defined on an earlier line, once;
* at most one ``exclusive_relations`` record.

What it keeps is one int per entity and relation (its version number) and one pair per version
record, like the ids :func:`~.validate.check_records` keeps.
"""

from __future__ import annotations

from typing import Any

from waggle_store.knowledge.aliases import fold
from waggle_store.pipeline.transfer.format import Line, line_error

__all__ = ["KnowledgeChecks"]


class KnowledgeChecks:
    """The checks of pass 1 for the version 3 records (see the module docstring)."""

    def __init__(self) -> None:
        self.versions: dict[str, dict[int, int]] = {"entity": {}, "relation": {}}
        self.history: set[tuple[str, int, int]] = set()
        self.alias_keys: dict[str, int] = {}  # alias key -> line
        self.canonical_keys: dict[str, int] = {}  # canonical key -> first line naming it
        self.pending: set[int] = set()
        self.exclusive = False

    def saw(self, line: Line) -> None:
        """An entity or relation record (checked by the caller): its version number."""
        self.versions[line.type][line.fields["id"]] = line.fields["version"]

    def check(self, line_no: int, line: Line, frame_ids: set[int]) -> None:
        f = line.fields
        kind = line.type
        if kind == "alias":
            self._alias(line_no, f)
        elif kind in ("entity_version", "relation_version"):
            self._version(line_no, kind.removesuffix("_version"), f)
        elif kind == "extraction_pending":
            if f["frame_id"] not in frame_ids:
                raise line_error(line_no, f"pending extraction of frame {f['frame_id']}: the frame "
                                          "must be defined on an earlier line")
            if f["frame_id"] in self.pending:
                raise line_error(line_no, f"a second pending extraction of frame {f['frame_id']}")
            self.pending.add(f["frame_id"])
        elif kind == "exclusive_relations":
            if self.exclusive:
                raise line_error(line_no, "a second exclusive_relations record (a mind has one)")
            self.exclusive = True

    def _alias(self, line_no: int, f: dict[str, Any]) -> None:
        if self.versions["entity"]:
            raise line_error(line_no, "an alias after an entity: aliases come before every entity "
                                      "(entity names resolve through them)")
        key, canonical = fold(f["alias"]), f["canonical_key"]
        if not key or key == canonical:
            raise line_error(line_no, f"alias {f['alias']!r} has no letters or digits of its own "
                                      "or already resolves to its canonical name")
        if key in self.alias_keys:
            raise line_error(line_no, f"alias {f['alias']!r} folds to the key of the alias on line "
                                      f"{self.alias_keys[key]}")
        chained = self.canonical_keys.get(key) if key in self.canonical_keys else (
            self.alias_keys.get(canonical))
        if chained is not None:
            raise line_error(line_no, f"alias {f['alias']!r} chains with the alias on line "
                                      f"{chained} (an alias's canonical name is never itself an "
                                      "alias)")
        self.alias_keys[key] = line_no
        self.canonical_keys.setdefault(canonical, line_no)

    def _version(self, line_no: int, of: str, f: dict[str, Any]) -> None:
        ident = f[f"{of}_id"]
        current = self.versions[of].get(ident)
        if current is None:
            raise line_error(line_no, f"a version of {of} {ident}, which no earlier line defines")
        if f["version"] >= current:
            raise line_error(line_no, f"version {f['version']} of {of} {ident} is not earlier than "
                                      f"its current version {current}")
        if (of, ident, f["version"]) in self.history:
            raise line_error(line_no, f"version {f['version']} of {of} {ident} is defined twice")
        if of == "relation":
            for end in ("source_id", "target_id"):
                if f[end] not in self.versions["entity"]:
                    raise line_error(line_no, f"a version of relation {ident}: {end} {f[end]} "
                                              "is not an entity defined on an earlier line")
        self.history.add((of, ident, f["version"]))
