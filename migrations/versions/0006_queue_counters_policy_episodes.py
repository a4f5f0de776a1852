"""repair_jobs counters and retention indexes; a policy -> episode side table

Reads the worker, metrics and the command line run regularly must not grow
with everything ever written (issue 15):

* ``repair_job_counts``: jobs per status, kept by triggers on
  ``repair_jobs`` (insert, delete, status change), so ``queue.stats()``
  reads a handful of rows instead of counting the table. Existing jobs are
  counted once here. On PostgreSQL a status is spread over shards keyed by
  the backend pid, so concurrent transactions rarely queue on one row.
* ``ix_repair_jobs_status_created_at`` (oldest pending job) and
  ``ix_repair_jobs_status_updated_at`` (finished jobs past retention).
* ``policy_episodes``: one row per (episode, policy) of
  ``policies.source_episode_ids``, kept by triggers and filled from the
  existing policies, so "policies of these episodes" is an index range
  read on both backends (SQLite used to scan every policy with json_each).

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

COUNTS = "repair_job_counts"
EPISODES = "policy_episodes"
JOB_INDEXES = {
    "ix_repair_jobs_status_created_at": ["status", "created_at"],
    "ix_repair_jobs_status_updated_at": ["status", "updated_at"],
}
# PostgreSQL counter shards (see the module docstring).
PG_SHARDS = 64

_SQLITE_TRIGGERS = {
    "repair_jobs_count_ai": f"""
        CREATE TRIGGER repair_jobs_count_ai AFTER INSERT ON repair_jobs BEGIN
            INSERT INTO {COUNTS} (status, shard, n) VALUES (NEW.status, 0, 1)
            ON CONFLICT (status, shard) DO UPDATE SET n = n + 1;
        END""",
    "repair_jobs_count_au": f"""
        CREATE TRIGGER repair_jobs_count_au AFTER UPDATE OF status ON repair_jobs
        WHEN OLD.status IS NOT NEW.status BEGIN
            UPDATE {COUNTS} SET n = n - 1 WHERE status = OLD.status AND shard = 0;
            INSERT INTO {COUNTS} (status, shard, n) VALUES (NEW.status, 0, 1)
            ON CONFLICT (status, shard) DO UPDATE SET n = n + 1;
        END""",
    "repair_jobs_count_ad": f"""
        CREATE TRIGGER repair_jobs_count_ad AFTER DELETE ON repair_jobs BEGIN
            UPDATE {COUNTS} SET n = n - 1 WHERE status = OLD.status AND shard = 0;
        END""",
    "policies_episodes_ai": f"""
        CREATE TRIGGER policies_episodes_ai AFTER INSERT ON policies BEGIN
            INSERT OR IGNORE INTO {EPISODES} (episode_id, policy_id)
            SELECT value, NEW.id FROM json_each(NEW.source_episode_ids) WHERE type = 'text';
        END""",
    "policies_episodes_au": f"""
        CREATE TRIGGER policies_episodes_au AFTER UPDATE OF id, source_episode_ids ON policies BEGIN
            DELETE FROM {EPISODES} WHERE policy_id = OLD.id;
            INSERT OR IGNORE INTO {EPISODES} (episode_id, policy_id)
            SELECT value, NEW.id FROM json_each(NEW.source_episode_ids) WHERE type = 'text';
        END""",
    "policies_episodes_ad": f"""
        CREATE TRIGGER policies_episodes_ad AFTER DELETE ON policies BEGIN
            DELETE FROM {EPISODES} WHERE policy_id = OLD.id;
        END""",
}

# One function per table; the two counter rows of a status change are
# touched in a fixed (sorted) order, so two transactions that change the
# same statuses on the same shard cannot deadlock each other.
_PG_FUNCTIONS = {
    "memos_repair_jobs_count": f"""
        CREATE FUNCTION memos_repair_jobs_count() RETURNS trigger LANGUAGE plpgsql AS $$
        DECLARE
            s integer := pg_backend_pid() % {PG_SHARDS};
            old_status text;
            new_status text;
            st text;
        BEGIN
            IF TG_OP <> 'INSERT' THEN
                old_status := OLD.status;
            END IF;
            IF TG_OP <> 'DELETE' THEN
                new_status := NEW.status;
            END IF;
            IF old_status IS NOT DISTINCT FROM new_status THEN
                RETURN NULL;
            END IF;
            FOR st IN SELECT x FROM unnest(ARRAY[old_status, new_status]) AS x
                      WHERE x IS NOT NULL ORDER BY x LOOP
                INSERT INTO {COUNTS} AS c (status, shard, n)
                VALUES (st, s, CASE WHEN st = new_status THEN 1 ELSE -1 END)
                ON CONFLICT (status, shard)
                DO UPDATE SET n = c.n + CASE WHEN st = new_status THEN 1 ELSE -1 END;
            END LOOP;
            RETURN NULL;
        END $$""",
    "memos_policies_episodes": f"""
        CREATE FUNCTION memos_policies_episodes() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP IN ('UPDATE', 'DELETE') THEN
                DELETE FROM {EPISODES} WHERE policy_id = OLD.id;
            END IF;
            IF TG_OP IN ('INSERT', 'UPDATE') THEN
                IF jsonb_typeof(NEW.source_episode_ids) = 'array' THEN
                    INSERT INTO {EPISODES} (episode_id, policy_id)
                    SELECT DISTINCT e #>> '{{}}', NEW.id
                    FROM jsonb_array_elements(NEW.source_episode_ids) AS e
                    WHERE jsonb_typeof(e) = 'string'
                    ON CONFLICT DO NOTHING;
                END IF;
            END IF;
            RETURN NULL;
        END $$""",
}
_PG_TRIGGERS = {
    "repair_jobs_count": (
        "CREATE TRIGGER repair_jobs_count AFTER INSERT OR DELETE OR UPDATE OF status ON repair_jobs "
        "FOR EACH ROW EXECUTE FUNCTION memos_repair_jobs_count()"
    ),
    "policies_episodes": (
        "CREATE TRIGGER policies_episodes AFTER INSERT OR DELETE OR UPDATE OF id, source_episode_ids "
        "ON policies FOR EACH ROW EXECUTE FUNCTION memos_policies_episodes()"
    ),
}
_PG_TRIGGER_TABLES = {"repair_jobs_count": "repair_jobs", "policies_episodes": "policies"}


def upgrade() -> None:
    op.create_table(
        COUNTS,
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("shard", sa.Integer(), nullable=False),
        sa.Column("n", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("status", "shard", name=op.f("pk_repair_job_counts")),
    )
    op.create_table(
        EPISODES,
        sa.Column("episode_id", sa.Text(), nullable=False),
        sa.Column("policy_id", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("episode_id", "policy_id", name=op.f("pk_policy_episodes")),
    )
    op.create_index("ix_policy_episodes_policy_id", EPISODES, ["policy_id"])
    for name, columns in JOB_INDEXES.items():
        op.create_index(name, "repair_jobs", columns)
    dialect = op.get_bind().dialect.name
    # Fill both tables from what exists, then keep them by trigger. Nothing
    # else writes during a migration (it holds the schema lock).
    op.execute(
        f"INSERT INTO {COUNTS} (status, shard, n) SELECT status, 0, count(*) FROM repair_jobs GROUP BY status"
    )
    if dialect == "postgresql":
        op.execute(
            f"INSERT INTO {EPISODES} (episode_id, policy_id) "
            "SELECT DISTINCT e #>> '{}', p.id FROM policies AS p, "
            "jsonb_array_elements(CASE WHEN jsonb_typeof(p.source_episode_ids) = 'array' "
            "THEN p.source_episode_ids ELSE '[]'::jsonb END) AS e WHERE jsonb_typeof(e) = 'string'"
        )
        for sql in _PG_FUNCTIONS.values():
            op.execute(sql)
        for sql in _PG_TRIGGERS.values():
            op.execute(sql)
    else:
        op.execute(
            f"INSERT OR IGNORE INTO {EPISODES} (episode_id, policy_id) "
            "SELECT j.value, p.id FROM policies AS p, json_each(p.source_episode_ids) AS j "
            "WHERE j.type = 'text'"
        )
        for sql in _SQLITE_TRIGGERS.values():
            op.execute(sql)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for name, table in _PG_TRIGGER_TABLES.items():
            op.execute(f"DROP TRIGGER IF EXISTS {name} ON {table}")
        for name in _PG_FUNCTIONS:
            op.execute(f"DROP FUNCTION IF EXISTS {name}()")
    else:
        for name in _SQLITE_TRIGGERS:
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
    for name in JOB_INDEXES:
        op.drop_index(name, table_name="repair_jobs")
    op.drop_index("ix_policy_episodes_policy_id", table_name=EPISODES)
    op.drop_table(EPISODES)
    op.drop_table(COUNTS)
