"""Alembic migrations on a real SQLite file: up, down, drift, unknown revisions, races."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Table, inspect
from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.engine import Engine

from memos_feedback.errors import SchemaError, StoreError
from memos_feedback.store import Store, migrate, open_store
from memos_feedback.store.models import Base, exists_on, is_search_shadow_table

TABLES = set(Base.metadata.tables)


def sqlite_path(url: str) -> Path:
    return Path(url.removeprefix("sqlite:///"))


def dump(path: Path) -> list[str]:
    """A logical dump of the whole database (schema and rows)."""
    conn = sqlite3.connect(path)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


def table_names(engine: Engine) -> set[str]:
    """Tables of the models (recall's SQLite FTS5 tables are checked on their own)."""
    return {t for t in inspect(engine).get_table_names() if not is_search_shadow_table(t)}


def fts_tables(engine: Engine) -> set[str]:
    return {t for t in inspect(engine).get_table_names() if is_search_shadow_table(t)}


def revisions_base_to_head() -> list[str]:
    script = ScriptDirectory(str(migrations_path()))
    return [r.revision for r in reversed(list(script.walk_revisions("base", "heads")))]


def migrations_path() -> Path:
    return migrate.migrations_dir()


def sqlite_affinity(type_name: str) -> str:
    """SQLite's column affinity for a declared type (datatype3.html, §3.1)."""
    t = type_name.upper()
    if "INT" in t:
        return "INTEGER"
    if "CHAR" in t or "CLOB" in t or "TEXT" in t:
        return "TEXT"
    if "BLOB" in t or not t:
        return "BLOB"
    if "REAL" in t or "FLOA" in t or "DOUB" in t:
        return "REAL"
    return "NUMERIC"


# -- up and down ----------------------------------------------------------------


def test_migrate_up_from_empty_reaches_head(sqlite_url: str) -> None:
    path = sqlite_path(sqlite_url)
    assert not path.exists()
    with open_store(sqlite_url) as s:
        head = migrate.head_revision()
        assert s.revision() == head
        assert revisions_base_to_head()[-1] == head
        assert table_names(s.engine) >= TABLES
        with s.engine.connect() as conn:
            versions = conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalars().all()
        assert versions == [head]
    assert path.is_file()


def test_open_without_migrating_leaves_an_empty_database(sqlite_url: str) -> None:
    with open_store(sqlite_url, migrate_to_head=False) as s:
        assert s.revision() is None
        assert not TABLES & table_names(s.engine)


def test_downgrade_to_base_and_up_again(db_url: str) -> None:
    with open_store(db_url) as s:
        s.traces.add(session_id="s")
        migrate.downgrade(s.engine, "base")
        assert s.revision() is None
        assert not TABLES & table_names(s.engine), "downgrade to base must drop every table"
        assert not fts_tables(s.engine), "downgrade to base must drop the FTS tables"
        migrate.upgrade(s.engine)
        assert s.revision() == migrate.head_revision()
        assert table_names(s.engine) >= TABLES
        # the re-created tables are empty and usable
        assert s.traces.list("s", limit=10) == []
        row = s.traces.add(session_id="s")
        assert s.traces.get(row.id) == row


def test_every_revision_steps_up_and_down(db_url: str) -> None:
    revisions = revisions_base_to_head()
    assert revisions, "no migrations found"
    with open_store(db_url, migrate_to_head=False) as s:
        for rev in revisions:
            migrate.upgrade(s.engine, rev)
            assert s.revision() == rev
        for expected in [*reversed(revisions[:-1]), None]:
            migrate.downgrade(s.engine, "-1")
            assert s.revision() == expected
        assert not TABLES & table_names(s.engine)


def test_migrations_folder_is_found() -> None:
    # In a checkout (editable install) this is the repository's migrations/;
    # test_packaging checks that an installed wheel uses its packaged copy.
    folder = migrations_path()
    assert (folder / "env.py").is_file()
    assert (folder / "versions" / "0001_initial.py").is_file()
    assert len(revisions_base_to_head()) == len(list((folder / "versions").glob("[0-9]*.py")))


def test_the_head_read_without_alembic_is_alembics_head() -> None:
    assert migrate.shipped_head() == migrate.head_revision() == revisions_base_to_head()[-1]


def test_at_head_reads_the_revision_and_upgrade_still_migrates_an_older_database(sqlite_url: str) -> None:
    revisions = revisions_base_to_head()
    with open_store(sqlite_url, migrate_to_head=False) as s:
        assert not migrate.at_head(s.engine)  # no alembic_version table yet
        migrate.upgrade(s.engine, revisions[-2])
        assert not migrate.at_head(s.engine)
    with open_store(sqlite_url) as s:  # the at-head check says no: Alembic migrates it
        assert s.revision() == revisions[-1]
        assert migrate.at_head(s.engine)
    with open_store(sqlite_url, read_only=True) as s:
        assert s.revision() == revisions[-1]


# -- no drift between the migrations and the ORM models ----------------------------


@pytest.fixture
def migrated(sqlite_url: str) -> Iterator[Store]:
    with open_store(sqlite_url) as s:
        yield s


def test_autogenerate_finds_nothing_to_change(store: Store) -> None:
    """On both backends: the migrated schema is what the models declare (JSONB on PostgreSQL)."""
    with store.engine.connect() as conn:
        # As migrations/env.py does: a PostgreSQL-only index is not expected on SQLite.
        def include(obj: Any, name: Any, type_: str, reflected: bool, compare_to: Any) -> bool:
            if type_ == "table" and is_search_shadow_table(name):
                return False  # recall's FTS5 tables are not models (test_recall_columns_and_indexes)
            return reflected or exists_on(obj, conn.dialect.name)

        ctx = MigrationContext.configure(conn, opts={"include_object": include})
        assert compare_metadata(ctx, Base.metadata) == []
        strict = MigrationContext.configure(
            conn, opts={"compare_type": True, "compare_server_default": True, "include_object": include}
        )
        assert compare_metadata(strict, Base.metadata) == []


def test_no_extra_tables(migrated: Store) -> None:
    assert table_names(migrated.engine) == TABLES | {"alembic_version"}


@pytest.mark.parametrize("table_name", sorted(TABLES))
def test_table_matches_the_model(migrated: Store, table_name: str) -> None:
    table: Table = Base.metadata.tables[table_name]
    insp = inspect(migrated.engine)
    dialect = sqlite_dialect.dialect()

    # columns: names and order, nullability, declared type and its affinity
    reflected = insp.get_columns(table_name)
    assert [c["name"] for c in reflected] == [c.name for c in table.columns]
    for col in reflected:
        model_col = table.columns[col["name"]]
        where = f"{table_name}.{col['name']}"
        assert col["nullable"] == model_col.nullable, where
        model_type = model_col.type.compile(dialect=dialect)
        db_type = str(col["type"])
        assert db_type == model_type, where
        assert sqlite_affinity(db_type) == sqlite_affinity(model_type), where
        assert col.get("default") is None, f"{where}: defaults live in the models, not the schema"

    # primary key: the same columns, named by the naming convention
    pk = insp.get_pk_constraint(table_name)
    assert pk["constrained_columns"] == [c.name for c in table.primary_key.columns]
    assert pk["name"] == f"pk_{table_name}"

    # indexes: names, columns, uniqueness
    db_indexes = {
        ix["name"]: (tuple(ix["column_names"]), bool(ix["unique"])) for ix in insp.get_indexes(table_name)
    }
    model_indexes = {
        str(ix.name): (tuple(c.name for c in ix.columns), bool(ix.unique))
        for ix in table.indexes
        if exists_on(ix, "sqlite")
    }
    assert db_indexes == model_indexes

    # unique constraints (named by the convention)
    db_uniques = {u["name"]: tuple(u["column_names"]) for u in insp.get_unique_constraints(table_name)}
    model_uniques = {
        f"uq_{table_name}_{'_'.join(c.name for c in u.columns)}": tuple(c.name for c in u.columns)
        for u in table.constraints
        if u.__class__.__name__ == "UniqueConstraint"
    }
    assert db_uniques == model_uniques

    # no foreign keys on either side unless the models declare them
    db_fks = {tuple(fk["constrained_columns"]) for fk in insp.get_foreign_keys(table_name)}
    model_fks = {tuple(c.parent.name for c in fk.elements) for fk in table.foreign_key_constraints}
    assert db_fks == model_fks


def test_spec_columns_of_decision_repairs_exist(migrated: Store) -> None:
    columns = {c["name"] for c in inspect(migrated.engine).get_columns("decision_repairs")}
    # PIPELINE.md §10
    assert {
        "id",
        "ts",
        "context_hash",
        "tool_id",
        "context",
        "trigger",
        "session_id",
        "preference",
        "anti_pattern",
        "severity",
        "confidence",
        "high_value_trace_ids",
        "low_value_trace_ids",
        "validated",
        "rejected",
    } <= columns


# -- refusing unknown revisions ----------------------------------------------------------


def test_unknown_revision_is_refused_and_data_untouched(sqlite_url: str) -> None:
    with open_store(sqlite_url) as s:
        s.traces.add(session_id="s", user_text="keep me", id="t1")
    path = sqlite_path(sqlite_url)
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("UPDATE alembic_version SET version_num = '9999_from_the_future'")
    conn.close()
    before = dump(path)

    with pytest.raises(SchemaError) as info:
        open_store(sqlite_url)
    message = str(info.value)
    assert "9999_from_the_future" in message
    assert "unknown" in message
    assert migrate.head_revision() in message
    assert isinstance(info.value, StoreError)

    assert dump(path) == before
    # and it keeps refusing: nothing was "repaired" on the way
    with pytest.raises(SchemaError):
        open_store(sqlite_url)
    assert dump(path) == before


def test_unknown_revision_on_an_otherwise_empty_database(sqlite_url: str) -> None:
    path = sqlite_path(sqlite_url)
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL PRIMARY KEY)")
        conn.execute("INSERT INTO alembic_version VALUES ('abc123')")
    conn.close()
    with pytest.raises(SchemaError, match="abc123"):
        open_store(sqlite_url)
    conn = sqlite3.connect(path)
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    conn.close()
    assert names == {"alembic_version"}, "no table may be created on a refused database"


def test_unknown_revision_is_refused_by_explicit_upgrade_too(sqlite_url: str) -> None:
    with open_store(sqlite_url) as s:
        with s.engine.begin() as conn:
            conn.exec_driver_sql("UPDATE alembic_version SET version_num = 'ffff'")
        with pytest.raises(SchemaError):
            migrate.upgrade(s.engine)
        assert s.revision() == "ffff"


def test_foreign_tables_without_a_revision_are_a_store_error(sqlite_url: str) -> None:
    path = sqlite_path(sqlite_url)
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("CREATE TABLE traces (id TEXT PRIMARY KEY, x TEXT)")
        conn.execute("INSERT INTO traces VALUES ('a', 'b')")
    conn.close()
    before = dump(path)
    with pytest.raises(StoreError):
        open_store(sqlite_url)
    assert dump(path) == before  # the failed migration was rolled back as a whole


# -- idempotence and races ---------------------------------------------------------------


def test_opening_twice_is_idempotent(sqlite_url: str) -> None:
    with open_store(sqlite_url) as s:
        row = s.traces.add(session_id="s")
    path = sqlite_path(sqlite_url)
    before = dump(path)
    with open_store(sqlite_url) as s:
        assert s.revision() == migrate.head_revision()
        assert s.traces.get(row.id) == row
    assert dump(path) == before
    # two stores open on the same file at once
    with open_store(sqlite_url) as a, open_store(sqlite_url) as b:
        written = a.traces.add(session_id="s")
        assert b.traces.get(written.id) == written
        with a.engine.connect() as conn:
            assert conn.exec_driver_sql("SELECT COUNT(*) FROM alembic_version").scalar() == 1


OPENER = textwrap.dedent(
    """
    import sys
    from memos_feedback.store import open_store

    print("ready", flush=True)
    for line in sys.stdin:          # one database URL per round
        url = line.strip()
        with open_store(url) as s:
            s.traces.add(session_id="race", user_text=sys.argv[1])
            print(s.revision(), flush=True)
    """
)


def test_processes_opening_the_same_fresh_file_at_once(tmp_path: Path) -> None:
    rounds, processes = 20, 3
    logs = [tmp_path / f"proc{n}.err" for n in range(processes)]

    def stderr_of(n: int) -> str:
        return logs[n].read_text(encoding="utf-8", errors="replace")

    procs = []
    for n in range(processes):
        with logs[n].open("w") as err:  # a file, not a pipe: reading it can never block
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-c", OPENER, f"proc{n}"],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=err,
                    text=True,
                    cwd=tmp_path,
                )
            )
    try:
        for n, p in enumerate(procs):
            assert p.stdout is not None
            assert p.stdout.readline().strip() == "ready", stderr_of(n)
        head = migrate.head_revision()
        for r in range(rounds):
            url = f"sqlite:///{tmp_path / f'race{r}.db'}"
            for p in procs:  # all get the URL at (nearly) the same moment
                assert p.stdin is not None
                p.stdin.write(url + "\n")
                p.stdin.flush()
            for n, p in enumerate(procs):
                assert p.stdout is not None
                answer = p.stdout.readline().strip()
                assert answer == head, f"round {r}, process {n}: {answer!r}\n{stderr_of(n)}"
            with open_store(url) as s:
                texts = sorted(t.user_text for t in s.traces.list("race", limit=10))
                assert texts == [f"proc{n}" for n in range(processes)]
    finally:
        for p in procs:
            if p.stdin is not None:
                p.stdin.close()
        for p in procs:
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:  # pragma: no cover
                p.kill()
                p.wait()
    for n, p in enumerate(procs):
        assert p.returncode == 0, stderr_of(n)


def test_episode_index_is_gin_on_postgresql_only(db_url: str) -> None:
    with open_store(db_url) as s:
        names = {ix["name"] for ix in inspect(s.engine).get_indexes("policies")}
        if s.dialect == "postgresql":
            assert "ix_policies_source_episode_ids" in names
            migrate.downgrade(s.engine, "0003")
            assert "ix_policies_source_episode_ids" not in {
                ix["name"] for ix in inspect(s.engine).get_indexes("policies")
            }
            migrate.upgrade(s.engine)
            with s.engine.connect() as conn:
                method = conn.exec_driver_sql(
                    "SELECT am.amname FROM pg_class c JOIN pg_am am ON am.oid = c.relam "
                    "WHERE c.relname = 'ix_policies_source_episode_ids'"
                ).scalar_one()
                # The operator the lookup uses (``?|``) can be answered by it.
                conn.exec_driver_sql("SET enable_seqscan = off")
                plan = "\n".join(
                    r[0]
                    for r in conn.exec_driver_sql(
                        "EXPLAIN SELECT id FROM policies WHERE source_episode_ids ?| ARRAY['ep1', 'ep2']"
                    )
                )
            assert method == "gin"
            assert "ix_policies_source_episode_ids" in plan, plan
        else:
            assert "ix_policies_source_episode_ids" not in names


# -- 0005: recall columns, ts index, text search ----------------------------------------


def test_recall_columns_and_indexes(db_url: str) -> None:
    with open_store(db_url) as s:
        insp = inspect(s.engine)
        columns = {c["name"]: c for c in insp.get_columns("decision_repairs")}
        for name in ("category", "project", "source_text", "embedding", "embedding_model"):
            assert columns[name]["nullable"], name
        names = {ix["name"] for ix in insp.get_indexes("decision_repairs")}
        wanted = {f"ix_decision_repairs_{c}" for c in ("ts", "project_ts", "tool_id_ts")}
        assert wanted <= names
        with s.engine.connect() as conn:
            if s.dialect == "postgresql":
                assert "ix_decision_repairs_source_text_trgm" in names
                ext = conn.exec_driver_sql("SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm'").scalar()
                assert ext == 1
                conn.exec_driver_sql("SET enable_seqscan = off")
                plan = "\n".join(
                    r[0]
                    for r in conn.exec_driver_sql(
                        "EXPLAIN SELECT id FROM decision_repairs WHERE source_text ILIKE '%%pnpm%%'"
                    )
                )
                assert "ix_decision_repairs_source_text_trgm" in plan, plan
            else:
                assert "decision_repairs_fts" in fts_tables(s.engine)
                triggers = set(
                    conn.exec_driver_sql("SELECT name FROM sqlite_master WHERE type = 'trigger'").scalars()
                )
                # 0006 adds triggers of its own (counters, policy episodes).
                fts_triggers = {t for t in triggers if t.startswith("decision_repairs_fts_")}
                assert fts_triggers == {f"decision_repairs_fts_{k}" for k in ("ai", "au", "ad")}


def test_old_repairs_survive_0005_and_are_searchable(db_url: str) -> None:
    with open_store(db_url, migrate_to_head=False) as s:
        migrate.upgrade(s.engine, "0004")
        with s.engine.begin() as conn:
            conn.exec_driver_sql(
                "INSERT INTO decision_repairs (id, ts, context_hash, tool_id, context, trigger, session_id, "
                "preference, anti_pattern, severity, confidence, high_value_trace_ids, low_value_trace_ids, "
                "validated, rejected) VALUES ('dr_old', 1, 'abc', 'pip.install', 'ctx', 'manual', 's', "
                "'Prefer: uv add', 'Avoid: pip install --break-system-packages', 'warn', 0.5, '[]', '[]', "
                "false, false)"
            )
        migrate.upgrade(s.engine)
        row = s.repairs.get("dr_old")
        assert row.preference == "Prefer: uv add" and row.category is None
        with s.engine.connect() as conn:
            if s.dialect == "sqlite":
                hit = conn.exec_driver_sql(
                    "SELECT repair_id FROM decision_repairs_fts "
                    "WHERE decision_repairs_fts MATCH '\"break-system\"'"
                ).scalar()
                assert hit == "dr_old"
        # and down again keeps the row, without the new columns
        migrate.downgrade(s.engine, "0004")
        columns = {c["name"] for c in inspect(s.engine).get_columns("decision_repairs")}
        assert "source_text" not in columns
        with s.engine.connect() as conn:
            sql = "SELECT anti_pattern FROM decision_repairs WHERE id = 'dr_old'"
            kept = conn.exec_driver_sql(sql).scalar()
        assert kept == "Avoid: pip install --break-system-packages"
        assert not fts_tables(s.engine)


# -- 0008: outcomes (servings, outcomes, repair status) ---------------------------------


def test_outcome_tables_and_columns(db_url: str) -> None:
    with open_store(db_url) as s:
        insp = inspect(s.engine)
        columns = {c["name"]: c for c in insp.get_columns("decision_repairs")}
        for name in ("status", "superseded_by", "review_flagged_at"):
            assert columns[name]["nullable"], name
        assert {"repair_served", "repair_outcomes"} <= set(insp.get_table_names())
        uniques = {u["name"]: u["column_names"] for u in insp.get_unique_constraints("repair_outcomes")}
        assert uniques == {"uq_repair_outcomes_served_id": ["served_id"]}
        # (PostgreSQL also lists the unique constraint's own index here.)
        assert "ix_repair_outcomes_repair_id_kind" in {
            ix["name"] for ix in insp.get_indexes("repair_outcomes")
        }
        assert {ix["name"] for ix in insp.get_indexes("repair_served")} == {
            "ix_repair_served_repair_id",
            "ix_repair_served_ts",
        }


def test_repairs_survive_0008_up_and_down_with_search_intact(db_url: str) -> None:
    with open_store(db_url, migrate_to_head=False) as s:
        migrate.upgrade(s.engine, "0005")
        with s.engine.begin() as conn:
            conn.exec_driver_sql(
                "INSERT INTO decision_repairs (id, ts, context_hash, trigger, preference, anti_pattern, "
                "severity, confidence, high_value_trace_ids, low_value_trace_ids, validated, rejected) "
                "VALUES ('dr_old', 1, 'abc', 'manual', 'Prefer: uv', 'x', 'info', 0.5, '[]', '[]', "
                "false, false)"
            )
        migrate.upgrade(s.engine)
        row = s.repairs.get("dr_old")
        assert row.status == "active" and row.superseded_by is None and row.review_flagged_at is None
        migrate.downgrade(s.engine, "0005")
        insp = inspect(s.engine)
        assert "repair_outcomes" not in insp.get_table_names()
        assert "status" not in {c["name"] for c in insp.get_columns("decision_repairs")}
        with s.engine.connect() as conn:
            kept = conn.exec_driver_sql("SELECT preference FROM decision_repairs WHERE id = 'dr_old'")
            assert kept.scalar() == "Prefer: uv"
            if s.dialect == "sqlite":
                # DROP COLUMN, not a table copy: recall's FTS triggers are still there.
                triggers = set(
                    conn.exec_driver_sql("SELECT name FROM sqlite_master WHERE type = 'trigger'").scalars()
                )
                assert triggers == {f"decision_repairs_fts_{k}" for k in ("ai", "au", "ad")}
        migrate.upgrade(s.engine)
        assert s.revision() == migrate.head_revision()


# -- 0009: supersede's tool range from a covering index (SQLite) -----------------------


def test_tool_lines_index_covers_supersedes_tool_read_on_sqlite_only(db_url: str) -> None:
    from memos_feedback.store.supersede import _TOOL_LINES

    with open_store(db_url) as s:
        names = {ix["name"] for ix in inspect(s.engine).get_indexes("decision_repairs")}
        if s.dialect != "sqlite":
            assert "ix_decision_repairs_tool_lines" not in names
            return
        assert "ix_decision_repairs_tool_lines" in names
        sql = str(_TOOL_LINES.statement.compile(dialect=s.engine.dialect))
        params = ("pip.install", "dr_new", 1 << 40, "", "", "", "", 20, 0)  # project, then user (0014)
        with s.engine.connect() as conn:
            plan = [r[3] for r in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + sql, params)]
        # Answered from the index alone, in index order: no row lookups, no sort.
        assert any("COVERING INDEX ix_decision_repairs_tool_lines" in step for step in plan), plan
        assert not any("ORDER BY" in step for step in plan), plan
        migrate.downgrade(s.engine, "0008")
        assert "ix_decision_repairs_tool_lines" not in {
            ix["name"] for ix in inspect(s.engine).get_indexes("decision_repairs")
        }
        migrate.upgrade(s.engine)
        assert s.revision() == migrate.head_revision()


# -- 0010: a group of repairs indexed for search by one statement (SQLite) --------------


def _repair_sql(repair_id: str, preference: str) -> str:
    return (
        "INSERT INTO decision_repairs (id, ts, context_hash, trigger, preference, anti_pattern, "
        "severity, confidence, high_value_trace_ids, low_value_trace_ids, validated, rejected) "
        f"VALUES ('{repair_id}', 1, 'abc', 'manual', '{preference}', 'Avoid: pip', 'info', 0.5, "
        "'[]', '[]', false, false)"
    )


def _search(conn: Any, phrase: str) -> list[str]:
    sql = f"SELECT repair_id FROM decision_repairs_fts WHERE decision_repairs_fts MATCH '\"{phrase}\"'"
    return sorted(conn.exec_driver_sql(sql).scalars())


def test_deferred_search_index_on_sqlite_only(db_url: str) -> None:
    from memos_feedback.store.search_index import defer_search_index, index_deferred

    with open_store(db_url) as s:
        tables = set(inspect(s.engine).get_table_names())
        if s.dialect != "sqlite":
            assert "decision_repairs_fts_pending" not in tables
            return
        assert "decision_repairs_fts_pending" in tables
        with s.engine.begin() as conn:
            conn.exec_driver_sql(_repair_sql("dr_plain", "Prefer: uv plain"))  # the trigger indexes it
            defer_search_index(conn, "dr_later")
            conn.exec_driver_sql(_repair_sql("dr_later", "Prefer: uv later"))
            assert _search(conn, "uv later") == []  # left to index_deferred
            assert index_deferred(conn) == 1
        with s.engine.connect() as conn:
            assert _search(conn, "uv plain") == ["dr_plain"]
            assert _search(conn, "uv later") == ["dr_later"]
            assert conn.exec_driver_sql("SELECT count(*) FROM decision_repairs_fts_pending").scalar() == 0
        # Down: the plain trigger again, and a repair still named as pending is indexed, not lost.
        with s.engine.begin() as conn:
            defer_search_index(conn, "dr_stuck")
            conn.exec_driver_sql(_repair_sql("dr_stuck", "Prefer: uv stuck"))
        migrate.downgrade(s.engine, "0009")
        assert "decision_repairs_fts_pending" not in set(inspect(s.engine).get_table_names())
        with s.engine.begin() as conn:
            assert _search(conn, "uv stuck") == ["dr_stuck"]
            conn.exec_driver_sql(_repair_sql("dr_after", "Prefer: uv after"))
            assert _search(conn, "uv after") == ["dr_after"]
            trigger = conn.exec_driver_sql(
                "SELECT sql FROM sqlite_master WHERE name = 'decision_repairs_fts_ai'"
            ).scalar()
            assert "WHEN" not in trigger
        migrate.upgrade(s.engine)
        assert s.revision() == migrate.head_revision()


# -- 0011: a repair may wait in the pending table past its transaction (SQLite) --------


def _trigger_sql(conn: Any, name: str) -> str:
    return str(conn.exec_driver_sql(f"SELECT sql FROM sqlite_master WHERE name = '{name}'").scalar())


def _tail(conn: Any) -> list[str]:
    return sorted(conn.exec_driver_sql("SELECT repair_id FROM decision_repairs_fts_pending").scalars())


def test_triggers_leave_a_waiting_repair_to_whoever_indexes_it(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memos_feedback.store import checkpoint
    from memos_feedback.store.search_index import defer_search_index, index_deferred

    monkeypatch.setattr(checkpoint, "INTERVAL_S", 3600.0)  # the store's thread indexes nothing meanwhile
    with open_store(db_url) as s:
        if s.dialect != "sqlite":
            return  # PostgreSQL: the table's own trigram index; nothing waits
        with s.engine.begin() as conn:
            for repair_id in ("dr_edited", "dr_deleted"):
                defer_search_index(conn, repair_id)
                conn.exec_driver_sql(_repair_sql(repair_id, f"Prefer: uv {repair_id[3:]}"))
        with s.engine.begin() as conn:
            # Its text changes while it waits: no index row yet (one would be a duplicate later).
            conn.exec_driver_sql(
                "UPDATE decision_repairs SET source_text = 'Prefer: uv rewritten' WHERE id = 'dr_edited'"
            )
            assert _search(conn, "uv rewritten") == [] and _search(conn, "uv edited") == []
            # Deleted while it waits: its name goes too.
            conn.exec_driver_sql("DELETE FROM decision_repairs WHERE id = 'dr_deleted'")
            assert _tail(conn) == ["dr_edited"]
            assert index_deferred(conn) == 1
            assert _search(conn, "uv rewritten") == ["dr_edited"]
        with s.engine.begin() as conn:  # indexed: an edit re-indexes it, once
            conn.exec_driver_sql(
                "UPDATE decision_repairs SET source_text = 'Prefer: uv again' WHERE id = 'dr_edited'"
            )
            assert _search(conn, "uv again") == ["dr_edited"] and _search(conn, "uv rewritten") == []
            count = "SELECT count(*) FROM decision_repairs_fts WHERE repair_id = 'dr_edited'"
            assert conn.exec_driver_sql(count).scalar() == 1
        # Down to 0010 (whose pending table is empty between transactions): the waiting are indexed.
        with s.engine.begin() as conn:
            defer_search_index(conn, "dr_waiting")
            conn.exec_driver_sql(_repair_sql("dr_waiting", "Prefer: uv waiting"))
        migrate.downgrade(s.engine, "0010")
        with s.engine.begin() as conn:
            assert _tail(conn) == [] and _search(conn, "uv waiting") == ["dr_waiting"]
            assert "WHEN" not in _trigger_sql(conn, "decision_repairs_fts_au")
            assert "pending" not in _trigger_sql(conn, "decision_repairs_fts_ad")
        migrate.upgrade(s.engine)
        assert s.revision() == migrate.head_revision()
        with s.engine.begin() as conn:
            assert "WHEN NOT EXISTS" in _trigger_sql(conn, "decision_repairs_fts_au")
