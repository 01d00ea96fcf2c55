"""The frame half of :class:`~.writer.MindWriter` (see its module for the merge rules): frames
deduplicated by content hash and frame type, ``t`` shifted past a session the mind already has,
B-frame references and P-frame bases remapped to new ids, and references to frames further down
the file fixed once those are written. The rows themselves go through the store's one frame
writer (:class:`~waggle_store.repositories.frame_writer.FrameWriter`).
"""

from __future__ import annotations

import json
from typing import Any

from waggle_store.pipeline.transfer.validate import b_references
from waggle_store.pipeline.transfer.writer_graph import GraphWriter
from waggle_store.repositories import frame_writer
from waggle_store.repositories.common import content_hash
from waggle_store.timeutil import utcnow

__all__ = ["FrameWriter"]


def _b_content(doc: dict[str, Any], refs: list[int]) -> str:
    """A B-frame's content in :meth:`FrameRepository.create_b`'s layout."""
    return json.dumps({**doc, "references": refs}, separators=(",", ":"), ensure_ascii=False)


class FrameWriter(GraphWriter):
    """Base of MindWriter, above :class:`GraphWriter`: the attributes below (and those
    GraphWriter lists) are set by MindWriter's constructor."""

    t_offset: dict[str, int]
    fixups: list[tuple[int, str | None, int | None]]

    # -- frames -------------------------------------------------------------------------------

    def _remap_content(self, content: str) -> tuple[str, bool]:
        """A B-frame's content with its references (old ids) mapped to new ids, and False; or
        the content unchanged and True when a reference waits for a frame later in the file
        (:meth:`_fix_forward_references` maps it then). References to frames the file does not
        hold are dropped."""
        parsed = b_references(content)
        if parsed is None:
            return content, False
        doc, refs = parsed
        mapped = []
        for ref in refs:
            new = self.ids["frame"].get(ref)
            if new is not None:
                mapped.append(new)
            elif ref in self.plan.frame_ids:
                return content, True
        return (content if mapped == refs else _b_content(doc, mapped)), False

    def _write_frame(self, rows: list[dict[str, Any]]) -> None:
        frames = self.ids["frame"]
        prepared = []
        for r in rows:
            content, waiting = r["content"], False
            if r["frame_type"] == "B":
                content, waiting = self._remap_content(content)
            base = r["base_frame_id"]
            after = base is not None and base not in frames and base in self.plan.frame_ids
            prepared.append(
                (
                    r,
                    content,
                    content_hash(content),
                    waiting,
                    frames.get(base) if base else None,
                    base if after else None,
                )
            )
        rows_writer = frame_writer.FrameWriter(self.s, self.mind_id)
        dupes: dict[tuple[str, str], int] = {}
        for fid, digest, ftype in rows_writer.with_hashes([p[2] for p in prepared],
                                                          up_to=self.pre["frame"]):
            dupes.setdefault((digest, ftype), fid)
        for r, _, digest, _, _, _ in prepared:  # map the duplicates before B-frames look them up
            if (digest, r["frame_type"]) in dupes:
                frames.setdefault(r["id"], dupes[(digest, r["frame_type"])])
        prepared = [self._retry_b(p) if p[3] else p for p in prepared]
        late = {p[2] for p in prepared if p[0]["frame_type"] == "B" and (p[2], "B") not in dupes}
        for fid, digest, _ in rows_writer.with_hashes(sorted(late), up_to=self.pre["frame"],
                                                      frame_type="B"):
            dupes.setdefault((digest, "B"), fid)
        fresh, later = [], []
        for r, content, digest, waiting, base, later_base in prepared:
            dupe = None if waiting else dupes.get((digest, r["frame_type"]))
            if dupe is not None:  # the mind has this memory: refer to it, do not insert
                frames[r["id"]] = dupe
                self._count("duplicates")
                continue
            fresh.append(
                {
                    "frame_type": r["frame_type"],
                    "gop_id": r["gop_id"],
                    "t": r["t"] + self.t_offset.get(r["gop_id"], 0),
                    "base_frame_id": base,
                    "content": content,
                    "content_hash": digest,
                    "importance": r["importance"],
                    "source": r["source"],
                    "access_count": r["access_count"],
                    "created_at": r["created_at"],
                    "last_accessed": r["last_accessed"],
                    "salience": r.get("salience"),
                    "metadata": r["metadata"] or None,
                }
            )
            later.append((r["id"], waiting, later_base))
        if not fresh:
            return
        new_ids = rows_writer.insert(fresh)
        for (old, _, _), new in zip(later, new_ids, strict=True):
            frames[old] = new
            self.inserted_frames.add(new)
        now = utcnow()
        rows_writer.add_manifests([
            {"frame_id": new, "content_hash": row["content_hash"], "status": "pending",
             "updated_at": now}
            for new, row in zip(new_ids, fresh, strict=True)])
        self._count("frames", len(fresh))
        # References to frames of this same chunk (a P-frame's base just before it, most often)
        # are known now; the rest wait for frames further down the file.
        self._resolve(
            [
                (new, row["content"] if waiting else None, later_base)
                for new, row, (_, waiting, later_base) in zip(new_ids, fresh, later, strict=True)
                if waiting or later_base is not None
            ]
        )

    def _retry_b(self, item: tuple[Any, ...]) -> tuple[Any, ...]:
        """A B-frame that waited on frames of its own chunk, once the chunk's duplicates are
        mapped: its references may all be known now (then it can be deduplicated too)."""
        r = item[0]
        content, waiting = self._remap_content(r["content"])
        return (r, content, content_hash(content), waiting, *item[4:]) if not waiting else item

    def _resolve(
        self, items: list[tuple[int, str | None, int | None]], *, final: bool = False
    ) -> None:
        """Map the waiting references of ``(new id, unmapped B content or None, old base id or
        None)``; what still waits is kept for later (or dropped when ``final``)."""
        bases: list[tuple[int, int]] = []
        contents: list[tuple[int, str, str]] = []
        for new_id, content, old_base in items:
            still = False
            if old_base is not None:
                if old_base in self.ids["frame"]:
                    bases.append((new_id, self.ids["frame"][old_base]))
                else:
                    still = True
            if content is not None:
                mapped, waiting = self._remap_content(content)
                if waiting and not final:
                    still = True
                else:
                    if waiting:  # final: map what can be mapped, drop the rest
                        mapped = self._drop_unmapped(content)
                    contents.append((new_id, mapped, content_hash(mapped)))
            if still and not final:
                self.fixups.append((new_id, content, old_base))
        rows_writer = frame_writer.FrameWriter(self.s, self.mind_id)
        rows_writer.set_bases(bases)
        rows_writer.set_contents(contents)

    def _drop_unmapped(self, content: str) -> str:
        parsed = b_references(content)
        assert parsed is not None
        doc, refs = parsed
        return _b_content(doc, [self.ids["frame"][r] for r in refs if r in self.ids["frame"]])

    def _fix_forward_references(self) -> None:
        """Frames that referenced frames further down the file: every frame is written now."""
        waiting, self.fixups = self.fixups, []
        self._resolve(waiting, final=True)
