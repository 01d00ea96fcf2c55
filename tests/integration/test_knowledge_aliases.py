"""Entity names resolved through case, spacing, punctuation and aliases; one active entity per
resolved name and one active relation per (source, target, type). SQLite and PostgreSQL."""

from __future__ import annotations

import io
from typing import Any

import sqlalchemy as sa

import waggle_store as ws
from waggle_store import migrate
from waggle_store.config import StoreConfig
from waggle_store.engine import create_engine
from waggle_store.knowledge.aliases import fold, resolved_key

from conftest import Target


def test_fold_and_built_in_groups() -> None:
    assert fold("  Node.JS ") == fold("nodejs") == "nodejs"
    assert fold("New-York   City") == "new york city"
    assert fold("C++") != fold("C")
    assert fold("C#") != fold("C")
    keys = {resolved_key(n) for n in ("Postgres", "PostgreSQL", "PG", "postgres.")}
    assert keys == {"postgresql"}
    assert resolved_key("K8s") == "kubernetes"
    assert resolved_key("Acme Corp") == "acme corp"


def test_resolve_and_create_find_one_entity(mind: ws.Mind) -> None:
    k = mind.knowledge
    pg = k.create_entity("technology", "PostgreSQL")
    for name in ("postgres", "PG", " Postgre-SQL ".replace("-", ""), "POSTGRESQL"):
        assert k.resolve(name) == pg, name
    assert k.resolve("MySQL") is None
    again = k.create_entity("technology", "Postgres", {"ignored": True})
    assert again == pg  # saving the same entity twice creates one
    assert k.entity_count() == 1


def test_same_relation_twice_is_one(mind: ws.Mind) -> None:
    k = mind.knowledge
    a, b = k.create_entity("person", "Ann Lee"), k.create_entity("person", "Ben Ode")
    first = k.create_relation(a.id, b.id, "knows")
    assert k.create_relation(a.id, b.id, "knows") == first
    assert len(k.relations_from(a.id)) == 1
    k.retire_relation(first.id)
    assert k.create_relation(a.id, b.id, "knows").id != first.id  # a new fact after the old


def test_cognify_resolves_names_before_creating(mind: ws.Mind) -> None:
    mind.cognify("We run Postgres for the billing service.")
    mind.cognify("PostgreSQL 16 replication is configured now.")
    mind.cognify("Kubernetes and K8s dashboards both show the cluster.")
    tech = [e.name for e in mind.knowledge.entities(entity_type="technology")]
    assert sum(resolved_key(n) == "postgresql" for n in tech) == 1, tech
    assert sum(resolved_key(n) == "kubernetes" for n in tech) <= 1, tech


def test_add_alias_merges_existing_entities(mind: ws.Mind) -> None:
    k = mind.knowledge
    robert = k.create_entity("person", "Robert Smith")
    bob = k.create_entity("person", "Bob Smith")
    acme = k.create_entity("organization", "Acme Corp")
    k.create_relation(bob.id, acme.id, "works_at")
    mind.cognify("Bob Smith wrote the Acme Corp quarterly plan.")
    k.add_alias("Bob Smith", "Robert Smith")

    assert k.resolve("bob  smith") == k.get_entity(robert.id)
    assert k.get_entity(bob.id).valid_to is not None  # merged: retired, history kept
    assert [(r.source_id, r.target_id) for r in k.relations_from(robert.id, "works_at")] == [
        (robert.id, acme.id)]
    assert k.relations_from(bob.id) == []
    assert k.create_entity("person", "BOB SMITH").id == robert.id


_NOW = "2026-12-01 10:00:00.000000"


def test_migration_merges_duplicates_of_an_older_store(target: Target) -> None:
    """A store of revision 0009 with "Postgres", "postgresql" and "PG" as three technologies:
    the upgrade keeps the oldest, moves the others' edges and mentions onto it and retires
    them, so the unique indexes can be built."""
    migrate.upgrade(target.url, "0009", schema=target.schema)
    engine = create_engine(target.url, config=StoreConfig.from_env(None, target.schema))
    try:
        with engine.begin() as c:
            def run(sql: str, **params: Any) -> None:
                c.execute(sa.text(sql), params)

            run("INSERT INTO waggle_minds(id, name, kind, created_at, settings) "
                "VALUES (1, 'm', 'workspace', :t, '{}')", t=_NOW)
            run("INSERT INTO waggle_sessions(id, mind_id, gop_id, kind, status, started_at) "
                "VALUES (1, 1, 'g1', 'auto', 'active', :t)", t=_NOW)
            run("INSERT INTO waggle_memory_frames(id, mind_id, frame_type, gop_id, t, content, "
                "content_hash, importance, source, access_count, created_at, last_accessed) "
                "VALUES (1, 1, 'I', 'g1', 0, 'we use pg', 'h1', 'normal', 'user_stated', 0, "
                ":t, :t)", t=_NOW)
            for i, (etype, name) in enumerate([("technology", "Postgres"),
                                               ("technology", "postgresql"),
                                               ("technology", "PG"),
                                               ("organization", "Acme Corp")], start=1):
                run("INSERT INTO waggle_knowledge_entities(id, mind_id, entity_type, name, "
                    "name_key, properties, valid_from, recorded_at) VALUES (:i, 1, :ty, :n, "
                    ":k, '{}', :t, :t)", i=i, ty=etype, n=name, k=name.casefold(), t=_NOW)
            for i, source in enumerate((4, 4, 3), start=1):
                target_id = 1 if i == 1 else 2 if i == 2 else 1
                run("INSERT INTO waggle_knowledge_relations(id, mind_id, source_id, target_id, "
                    "relation_type, confidence, properties, valid_from, recorded_at) VALUES "
                    "(:i, 1, :s, :d, 'uses', 1.0, '{}', :t, :t)", i=i, s=source, d=target_id,
                    t=_NOW)
            run("INSERT INTO waggle_entity_mentions(entity_id, frame_id) VALUES (3, 1)")
    finally:
        engine.dispose()
    migrate.upgrade(target.url, schema=target.schema)
    assert migrate.check(target.url, schema=target.schema) == []
    with target.open() as store:
        k = store.mind("m").knowledge
        assert [e.id for e in k.entities(entity_type="technology")] == [1]
        assert k.resolve("PG").id == 1
        # Acme->postgresql became Acme->Postgres, a duplicate of edge 1: retired. PG->Postgres
        # became a self-loop: retired.
        assert [(r.id, r.source_id, r.target_id) for r in k.relations_to(1)] == [(1, 4, 1)]
        assert k.relations_from(3) == []
        with store.read() as s:
            mentions = s.execute(sa.text(
                "SELECT entity_id FROM waggle_entity_mentions ORDER BY entity_id")).scalars()
            assert list(mentions) == [1]
        assert k.create_entity("technology", "pg").id == 1


def test_import_of_an_older_export_merges_names_that_resolve_alike(store: ws.Store) -> None:
    """An export written before names were resolved can hold "Postgres" and "postgresql" as
    two active entities with an edge each: the import keeps one of each."""
    k = store.mind("src").knowledge
    pg, other = k.create_entity("technology", "Postgres"), k.create_entity("technology", "MySQL")
    app = k.create_entity("project", "Billing App")
    k.create_relation(app.id, pg.id, "uses")
    k.create_relation(app.id, other.id, "uses")
    out = io.StringIO()
    store.export_mind("src", out)
    older = out.getvalue().replace('"MySQL"', '"postgresql"')
    report = store.import_mind(io.StringIO(older), into="dst")
    assert report is not None
    dst = store.mind("dst").knowledge
    [tech] = dst.entities(entity_type="technology")
    assert tech.name == "Postgres"
    [billing] = dst.entities(entity_type="project")
    assert [r.target_id for r in dst.relations_from(billing.id, "uses")] == [tech.id]
    assert dst.resolve("PG") == tech


def test_concurrent_saves_of_one_name_make_one_entity(store: ws.Store) -> None:
    """Writers racing to save "Postgres", "PG" and "postgresql" (and an edge to it) get one
    entity and one edge; none fails on the unique indexes."""
    import threading

    k = store.mind("race").knowledge
    app = k.create_entity("project", "Billing App")
    names = ["Postgres", "PG", "postgresql", "POSTGRES"] * 3
    ids: list[int] = []
    errors: list[BaseException] = []
    start = threading.Barrier(len(names))

    def save(name: str) -> None:
        try:
            start.wait()
            entity = k.create_entity("technology", name)
            k.create_relation(app.id, entity.id, "uses")
            ids.append(entity.id)
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=save, args=(n,)) for n in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(set(ids)) == 1
    assert len(k.relations_from(app.id, "uses")) == 1
