"""``repairs delete ID…`` and ``repairs purge``: rows, servings, outcomes and block lines go together."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime

import pytest
from sqlalchemy import text

from memos_feedback import DecisionRepairDraft, attach_repair_to_policies, guidance_for
from memos_feedback.errors import NotFoundError
from memos_feedback.feed import FeedStore
from memos_feedback.store import Store
from memos_feedback.types import DecisionRepairRow
from tests.cli.test_cli import ROOT, _env, cli, one_line_error

OLD = int(datetime(2019, 6, 1, tzinfo=UTC).timestamp() * 1000)


def cli_input(answer: str, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI with ``answer`` typed at its prompt."""
    return subprocess.run(
        [sys.executable, "-m", "memos_feedback", *args],
        input=answer,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env=_env(),
    )


def refused(out: subprocess.CompletedProcess[str]) -> None:
    """Not confirmed: exit 1, the question, then one error line and no traceback."""
    assert out.returncode == 1, out.stderr
    question, error = out.stderr.splitlines()
    assert question.endswith("[y/N] "), out.stderr
    assert error == "memos-feedback: error: not confirmed (answer y, or pass --yes): nothing deleted"


def repair(store: Store, n: str, *, project: str | None = None, ts: int | None = None) -> DecisionRepairRow:
    row = store.repairs.insert(
        context_hash=f"ctx{n}",
        trigger="manual",
        preference=f"Prefer: tool{n} install",
        anti_pattern=f"Avoid: legacy{n} install",
        tool_id="shell",
        confidence=0.8,
        ts=ts,
    )
    if project is not None:  # the worker stores it with the repair; set it the same way here
        with store.session(write=True) as s:
            s.execute(
                text("UPDATE decision_repairs SET project = :p WHERE id = :i"), {"p": project, "i": row.id}
            )
    return row


def attach(store: Store, row: DecisionRepairRow, policy_id: str) -> None:
    draft = DecisionRepairDraft(
        context_hash=row.context_hash,
        preference=row.preference,
        anti_pattern=row.anti_pattern,
        severity="info",
        confidence=row.confidence,
        high_value_trace_ids=(),
        low_value_trace_ids=(),
        attach_to_policy_ids=(policy_id,),
    )
    assert attach_repair_to_policies(draft, store) == (policy_id,)


def count(store: Store, table: str, repair_id: str) -> int:
    column = "id" if table == "decision_repairs" else "repair_id"
    with store.session() as s:
        return int(
            s.execute(
                text(f"SELECT count(*) FROM {table} WHERE {column} = :i"), {"i": repair_id}
            ).scalar_one()
        )


def gone(store: Store, repair_id: str) -> bool:
    try:
        store.repairs.get(repair_id)
    except NotFoundError:
        return True
    return False


def test_delete_takes_the_row_its_servings_and_its_block_lines_in_one_go(store: Store, db_url: str) -> None:
    policy = store.policies.add("install dependencies", boundary="Use the lockfile.")
    a, b = repair(store, "a"), repair(store, "b")
    attach(store, a, policy.id)
    attach(store, b, policy.id)
    served = guidance_for(store, tool_id="shell", query="tool a install", session_id="s1")
    assert a.id in [i.repair_id for i in served.items]
    assert count(store, "repair_served", a.id) == 1

    out = cli("--db", db_url, "repairs", "delete", a.id, "--yes")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "1 repair(s) deleted"
    assert gone(store, a.id) and not gone(store, b.id)
    assert count(store, "repair_served", a.id) == 0
    boundary = store.policies.get(policy.id).boundary
    assert a.preference not in boundary and a.anti_pattern not in boundary
    assert b.preference in boundary and b.anti_pattern in boundary and "Use the lockfile." in boundary
    found = guidance_for(store, tool_id="shell", query="tool a install")
    assert a.id not in [i.repair_id for i in found.items], "the search index lost it too"
    [event] = [r for r in FeedStore(store).read(0) if r.kind == "repair.deleted"]
    assert (event.repair_id, list(event.payload["policy_ids"])) == (a.id, [policy.id])


def test_delete_is_all_or_nothing_and_asks_first(store: Store, db_url: str) -> None:
    b, c = repair(store, "b"), repair(store, "c")
    line = one_line_error(cli("--db", db_url, "repairs", "delete", b.id, "dr_missing", "--yes"))
    assert "dr_missing" in line and "nothing deleted" in line
    assert not gone(store, b.id), "an unknown id deletes nothing"

    for answer in ("", "n\n", "no\n", "maybe\n"):
        out = cli_input(answer, "--db", db_url, "repairs", "delete", b.id, c.id)
        assert out.stderr.startswith(f"delete 2 repair(s) ({b.id}, {c.id}) and their block lines? [y/N]")
        refused(out)
        assert not gone(store, b.id) and not gone(store, c.id)
    done = cli_input("y\n", "--db", db_url, "repairs", "delete", b.id, c.id, b.id)
    assert done.returncode == 0, done.stderr
    assert gone(store, b.id) and gone(store, c.id)


def test_purge_by_project_and_date_cleans_blocks_in_the_same_transaction(store: Store, db_url: str) -> None:
    policy = store.policies.add("install dependencies", boundary="Use the lockfile.")
    old_a = repair(store, "1", project="shop-a", ts=OLD)
    new_a = repair(store, "2", project="shop-a")
    old_b = repair(store, "3", project="shop-b", ts=OLD)
    old_global = repair(store, "4", ts=OLD)
    for row in (old_a, old_b):
        attach(store, row, policy.id)

    out = cli("--db", db_url, "repairs", "purge", "--project", "shop-a", "--before", "2020-01-01", "--yes")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "1 repair(s) deleted"
    assert [gone(store, r.id) for r in (old_a, new_a, old_b, old_global)] == [True, False, False, False]
    boundary = store.policies.get(policy.id).boundary
    assert old_a.preference not in boundary and old_b.preference in boundary

    out = cli_input("\n", "--db", db_url, "repairs", "purge", "--before", "2020-01-01")
    assert out.stderr.startswith(
        "delete 2 repair(s) older than 2020-01-01T00:00:00+00:00 and their block lines?"
    )
    refused(out)
    assert not gone(store, old_b.id)
    out = cli_input("yes\n", "--db", db_url, "repairs", "purge", "--before", "2020-01-01")
    assert out.stdout.strip() == "2 repair(s) deleted", out.stderr
    assert gone(store, old_b.id) and gone(store, old_global.id) and not gone(store, new_a.id)
    assert old_b.preference not in store.policies.get(policy.id).boundary

    empty = cli("--db", db_url, "repairs", "purge", "--project", "shop-z", "--yes")
    assert (empty.returncode, empty.stdout.strip()) == (0, "no repairs of project 'shop-z'")
    everything = cli("--db", db_url, "repairs", "purge", "--yes")
    assert everything.stdout.strip() == "1 repair(s) deleted" and gone(store, new_a.id)
    deleted = [r.repair_id for r in FeedStore(store).read(0) if r.kind == "repair.deleted"]
    assert sorted(deleted) == sorted(r.id for r in (old_a, new_a, old_b, old_global))


@pytest.mark.parametrize("n", [1203])
def test_purge_walks_past_one_batch(store: Store, db_url: str, n: int) -> None:
    with store.session(write=True) as s:
        for i in range(n):
            store.repairs.insert(
                context_hash=f"bulk{i % 7}", trigger="manual", preference=f"Prefer: p{i}",
                anti_pattern=f"Avoid: a{i}", ts=OLD + i, session=s,
            )  # fmt: skip
    out = cli("--db", db_url, "repairs", "purge", "--before", "2020-01-01", "--yes")
    assert out.stdout.strip() == f"{n} repair(s) deleted", out.stderr
    assert store.repairs.list(limit=10) == []


def test_bad_arguments_are_one_clear_error(store: Store) -> None:
    from memos_feedback.errors import InvalidInputError
    from memos_feedback.feed.actions import count_purge, delete_repairs, purge_repairs

    for call in (
        lambda: delete_repairs(store, []),
        lambda: delete_repairs(store, [None]),  # type: ignore[list-item]
        lambda: purge_repairs(store, before=-1),
        lambda: purge_repairs(store, before="2020"),  # type: ignore[arg-type]
        lambda: purge_repairs(store, project=7),  # type: ignore[arg-type]
        lambda: count_purge(store, before=True),
    ):
        with pytest.raises(InvalidInputError):
            call()
