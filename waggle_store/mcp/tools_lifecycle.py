"""The MCP lifecycle tools: harvest (harvest_import, harvest_sources, ingest_source) and
consolidate_memory.

The harvest tools read files on the machine running the server, with its permissions, so they
read only under the server's ``--harvest-root`` folders (see :mod:`waggle_store.mcp.confine`):
a source registered otherwise (by the operator's ``waggle-store harvest add``, or by an imported
mind) is synced over MCP only when it lies under a root too. Export and import of whole minds are
left to the ``waggle-store export``/``import`` commands: moving a mind between stores is an
operator's job, and a tool writing files wherever its (possibly remote) caller names would be a
file-writing primitive on the server's machine.

A group of :mod:`waggle_store.mcp.server`, in its own module to keep each under 400 lines.
"""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult
from pydantic import Field

import waggle_store as ws
from waggle_store.mcp import models as m
from waggle_store.mcp.confine import HarvestRefused, confined, confined_source, no_roots
from waggle_store.mcp.tooling import MindArg, ToolContext, ToolGroup, guard, reply

Kind = Literal["chatgpt", "claude", "markdown", "jsonl"]


def _sync_text(report: m.HarvestSynced) -> str:
    text = (f"Synced {report.sources_synced} source(s) ({report.sources_skipped} unchanged): "
            f"{report.items_imported} of {report.items_seen} items imported, "
            f"{report.frames_created} new memories.")
    if report.failures:
        text += " Failed: " + "; ".join(f"{f.item}: {f.error}" for f in report.failures)
    return text


def _merged(reports: list[ws.HarvestReport],
            refused: list[tuple[str, str]]) -> ws.HarvestReport:
    """One report for several syncs; sources refused before reading count as failures."""
    return ws.HarvestReport(
        sources_synced=sum(r.sources_synced for r in reports),
        sources_skipped=sum(r.sources_skipped for r in reports),
        items_seen=sum(r.items_seen for r in reports),
        items_imported=sum(r.items_imported for r in reports),
        frames_created=sum(r.frames_created for r in reports),
        failures=[*(f for r in reports for f in r.failures), *refused])


def lifecycle_tools(ctx: ToolContext) -> ToolGroup:
    """harvest_sources (a reader), harvest_import and ingest_source (writers), consolidate_memory
    (an eraser: it deletes faded and merged memories), bound to ``ctx``."""

    async def harvest_import(
        kind: Annotated[
            Kind,
            Field(description="chatgpt or claude (a data export: its conversations.json, the "
                              "unzipped folder or the .zip), "
                              "markdown (a folder of .md/.txt notes, read recursively) or jsonl "
                              "(one JSON object per line with 'content')."),
        ],
        path: Annotated[
            str,
            Field(min_length=1, max_length=4096,
                  description="The file or folder on the machine running the server, under one "
                              "of its harvest roots (a relative path is taken relative to the "
                              "first root)."),
        ],
        name: Annotated[
            str | None,
            Field(description="Name for the source (default: the kind); ingest_source uses it."),
        ] = None,
        auto_sync: Annotated[
            bool, Field(description="Mark the source for periodic re-syncs.")
        ] = False,
        sync_interval_hours: Annotated[
            int, Field(ge=1, le=87_600, description="Hours between periodic re-syncs.")
        ] = 24,
        mind: MindArg = None,
    ) -> Annotated[CallToolResult, m.HarvestSynced]:
        """Register an import source (adding a name again updates it) and import it now; what is
        already stored is not stored twice. Reads only under the server's harvest roots."""
        if not ctx.harvest_roots:
            raise ToolError(f"InvalidInputError: {no_roots()}")
        target = await ctx.mind_of(mind)

        def add_and_sync() -> m.HarvestSynced:
            real = confined(path, ctx.harvest_roots)  # a refused path is not registered
            source = target.sync.harvest.add_source(kind, real, name=name, auto_sync=auto_sync,
                                                    sync_interval_hours=sync_interval_hours)
            report = target.sync.harvest.sync(source.name)
            return m.HarvestSynced.of(target.name, report,
                                      [target.sync.harvest.get(source.name) or source])

        out = await guard(ctx.store.run_sync(add_and_sync))
        return reply(out, _sync_text(out))

    async def harvest_sources(mind: MindArg = None) -> Annotated[CallToolResult, m.HarvestSources]:
        """The registered import sources, most recently synced first, and which are due."""
        target = await ctx.mind_of(mind)

        def listing() -> m.HarvestSources:
            due = {s.name for s in target.sync.harvest.stale()}
            return m.HarvestSources(mind=target.name, sources=[
                m.HarvestSourceOut.of(s, stale=s.name in due)
                for s in target.sync.harvest.sources()
            ])

        out = await guard(ctx.store.run_sync(listing))
        lines = [f"{s.name} ({s.kind}): {s.path}; {s.frames_created} memories"
                 + ("; due for a sync" if s.stale else "") for s in out.sources]
        return reply(out, "\n".join(lines) if lines else "No harvest sources.")

    async def ingest_source(
        name: Annotated[
            str | None,
            Field(description="The source to sync (see harvest_sources); omit for every source."),
        ] = None,
        mind: MindArg = None,
    ) -> Annotated[CallToolResult, m.HarvestSynced]:
        """Sync a registered source (or all): new content is imported, unchanged sources are
        skipped, nothing is stored twice. Only sources under the server's harvest roots are
        read; others are listed as failures."""
        if not ctx.harvest_roots:
            raise ToolError(f"InvalidInputError: {no_roots()}")
        target = await ctx.mind_of(mind)

        def sync() -> m.HarvestSynced:
            harvest = target.sync.harvest
            if name is not None:
                source = harvest.get(name)
                if source is None:
                    raise ws.NotFoundError(f"no harvest source named {name!r}")
                chosen = [source]
            else:
                chosen = harvest.sources()
            reports: list[ws.HarvestReport] = []
            refused: list[tuple[str, str]] = []
            for source in chosen:
                try:
                    confined_source(source.path or "", ctx.harvest_roots)
                except HarvestRefused as exc:
                    if name is not None:
                        raise
                    refused.append((source.name, str(exc)))
                    continue
                reports.append(harvest.sync(source.name))
            report = _merged(reports, refused)
            names = {s.name for s in chosen}
            return m.HarvestSynced.of(
                target.name, report, [s for s in harvest.sources() if s.name in names])

        out = await guard(ctx.store.run_sync(sync))
        return reply(out, _sync_text(out))

    async def consolidate_memory(
        dry_run: Annotated[
            bool, Field(description="Only report what a run would do; change nothing.")
        ] = False,
        decay_rate: Annotated[
            float, Field(gt=0.0, le=1.0, description="Salience kept per day without access.")
        ] = 0.95,
        prune_below: Annotated[
            float,
            Field(ge=0.0, le=1.0, description="Delete memories whose salience fell below this "
                                              "(critical and important ones never are)."),
        ] = 0.1,
        merge_similarity: Annotated[
            float, Field(gt=0.0, le=1.0, description="Merge near-duplicate memories this similar.")
        ] = 0.9,
        mind: MindArg = None,
    ) -> Annotated[CallToolResult, m.Consolidated]:
        """Consolidate memory: decay salience, merge near-duplicates, prune faded memories.
        Idempotent: a second run the same day changes nothing."""
        target = await ctx.mind_of(mind)
        r: ws.ConsolidationReport = await guard(target.consolidate(
            decay_rate=decay_rate, prune_below=prune_below, merge_similarity=merge_similarity,
            dry_run=dry_run))
        out = m.Consolidated(mind=target.name, dry_run=dry_run,
                             fragments_processed=r.fragments_processed,
                             fragments_decayed=r.fragments_decayed,
                             fragments_merged=r.fragments_merged,
                             fragments_deleted=r.fragments_deleted)
        return reply(out, f"{'Would process' if dry_run else 'Processed'} "
                          f"{r.fragments_processed} memories: {r.fragments_decayed} decayed, "
                          f"{r.fragments_merged} merged, {r.fragments_deleted} deleted.")

    return ToolGroup(readers=[harvest_sources], writers=[harvest_import, ingest_source],
                     erasers=[consolidate_memory])
