"""Scope: what a subscriber writes carries its project, and another project never reads it."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from memos_feedback.config import FeedbackConfig
from memos_feedback.errors import ConfigError, InvalidInputError
from memos_feedback.recall.config import RecallConfig
from memos_feedback.runtime.queue import RepairQueue
from memos_feedback.runtime.subscriber import FeedbackSubscriber, attach_feedback_subscriber
from memos_feedback.signals import context_hash_of
from memos_feedback.store import DecisionRepairRow, Store
from memos_feedback.store.payloads import input_from_payload, payload_of
from memos_feedback.types import RepairInput, Scope

TOOL, CONTEXT = "bash", "bash command=npm install"


def _history(store: Store, session: str) -> None:
    """A failed and a good step in ``session``: evidence a repair stands on."""
    store.traces.add(session, agent_text="pnpm install: 312 packages installed", value=0.8)
    store.traces.add(session, agent_text="npm ERR! ERESOLVE could not resolve dependency tree", value=-0.7)


def _correction(sub: FeedbackSubscriber, **scope: str) -> None:
    _history(sub.store, "s-1")
    _, future = sub.submit_user_feedback(
        "no, use pnpm instead of npm here", "s-1", tool_id=TOOL, context=CONTEXT, **scope
    )
    assert future.result(timeout=30).repair_id is not None


def _burst(sub: FeedbackSubscriber, **scope: str) -> None:
    _history(sub.store, "s-2")
    for step in (1, 2, 3):
        sub.record_tool_failure(TOOL, CONTEXT, step, "npm ERR! ERESOLVE", session_id="s-2", **scope)
    assert sub.flush(timeout=30)


def _seen(sub: FeedbackSubscriber, project: str) -> set[str]:
    got = sub.guidance_for(tool_id=TOOL, context=CONTEXT, query="npm ERR! ERESOLVE", project=project)
    return {item.repair_id for item in got.items}


def test_default_project_from_the_environment_scopes_writes_and_reads(
    store: Store, clean_env: pytest.MonkeyPatch
) -> None:
    clean_env.setenv("MEMOS_FEEDBACK_RECALL_DEFAULT_PROJECT", "a")
    with attach_feedback_subscriber(store, poll_interval=0.01) as sub:
        assert sub.recall.default_project == "a"
        _correction(sub)
        _burst(sub)
        repairs = store.repairs.list()
        assert len(repairs) == 2 and {r.project for r in repairs} == {"a"}
        ids = {r.id for r in repairs}
        assert _seen(sub, "b") == set()
        assert _seen(sub, "a") == ids
        # Without a project the handle reads its own scope.
        got = sub.guidance_for(tool_id=TOOL, context=CONTEXT, query="npm ERR! ERESOLVE")
        assert {item.repair_id for item in got.items} == ids


def test_per_call_project_on_feedback_and_failures(store: Store, clean_env: pytest.MonkeyPatch) -> None:
    with attach_feedback_subscriber(store, poll_interval=0.01) as sub:
        assert sub.recall.default_project is None
        _correction(sub, project="shop-a")
        _burst(sub, project="shop-b")
        by_project = {r.project: r.id for r in store.repairs.list()}
        assert set(by_project) == {"shop-a", "shop-b"}
        assert _seen(sub, "shop-a") == {by_project["shop-a"]}
        assert _seen(sub, "shop-b") == {by_project["shop-b"]}
        assert _seen(sub, "shop-c") == set()


def test_one_loader_for_both_configs(tmp_path: Path) -> None:
    from memos_feedback.recall.config import load_config

    toml = tmp_path / "memos_feedback.toml"
    toml.write_text(
        '[memos_feedback]\nfailure_threshold = 2\n[memos_feedback.recall]\ndefault_project = "from-file"\n',
        encoding="utf-8",
    )
    feedback, recall = load_config(toml=toml, environ={})
    assert feedback.failure_threshold == 2 and recall.default_project == "from-file"
    # The environment over the file, the mapping over both.
    env = {"MEMOS_FEEDBACK_RECALL_DEFAULT_PROJECT": "from-env", "MEMOS_FEEDBACK_COOLDOWN_MS": "5"}
    feedback, recall = load_config(toml=toml, environ=env)
    assert (feedback.cooldown_ms, recall.default_project) == (5, "from-env")
    feedback, recall = load_config(
        toml=toml, environ=env, mapping={"cooldown_ms": 7, "recall": {"default_project": "given"}}
    )
    assert (feedback.failure_threshold, feedback.cooldown_ms, recall.default_project) == (2, 7, "given")
    # Each class reads its own part of the same file.
    assert FeedbackConfig.from_toml(toml).failure_threshold == 2
    assert RecallConfig.from_toml(toml).default_project == "from-file"
    with pytest.raises(ConfigError, match="default_limit"):
        load_config(environ={}, mapping={"recall": {"default_limit": 0}})
    with pytest.raises(ConfigError, match="recall"):
        load_config(environ={}, mapping={"recall": 3})


def test_an_explicit_recall_config_is_used(store: Store, clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("MEMOS_FEEDBACK_RECALL_DEFAULT_PROJECT", "env")
    with attach_feedback_subscriber(
        store, poll_interval=0.01, recall=RecallConfig(default_project="x")
    ) as sub:
        _correction(sub)
        assert [r.project for r in store.repairs.list()] == ["x"]


def _seen_by(sub: FeedbackSubscriber, **scope: str) -> set[str]:
    got = sub.guidance_for(tool_id=TOOL, context=CONTEXT, query="npm ERR! ERESOLVE", **scope)
    return {item.repair_id for item in got.items}


def test_a_user_scope_beside_the_project(store: Store, clean_env: pytest.MonkeyPatch) -> None:
    with attach_feedback_subscriber(store, poll_interval=0.01) as sub:
        _correction(sub, project="shop", user="alice")
        _burst(sub, project="shop")  # every user's
        by_user = {r.user: r for r in store.repairs.list()}
        assert set(by_user) == {"alice", None} and {r.project for r in by_user.values()} == {"shop"}
        alice, everyone = by_user["alice"].id, by_user[None].id
        assert _seen_by(sub, project="shop", user="alice") == {alice, everyone}
        assert _seen_by(sub, project="shop", user="bob") == {everyone}
        assert _seen_by(sub, project="shop") == {everyone}  # no user: only what is every user's
        assert _seen_by(sub, project="other", user="alice") == set()


def test_a_user_scoped_repair_supersedes_only_its_users(store: Store, clean_env: pytest.MonkeyPatch) -> None:
    from memos_feedback.config import FeedbackConfig as Config

    with attach_feedback_subscriber(store, config=Config(cooldown_ms=0), poll_interval=0.01) as sub:
        _history(store, "s-1")
        for text, who in (("use npm here, not pnpm", "bob"), ("no, use pnpm instead of npm here", "alice")):
            _, future = sub.submit_user_feedback(text, "s-1", tool_id=TOOL, context=CONTEXT, user=who)
            assert future.result(timeout=30).repair_id is not None
        rows = {r.user: r for r in store.repairs.list()}
        assert rows["bob"].status == "active"  # alice's opposite lesson does not retire bob's


# -- the Scope value ---------------------------------------------------------------------------


def test_scope_normalises_once() -> None:
    assert Scope("  shop ", " alice\t") == Scope("shop", "alice")
    assert Scope("", "   ") == Scope() == Scope(None, None)
    assert Scope().is_unscoped and not Scope(user="alice").is_unscoped
    assert Scope("x" * 255).project == "x" * 255
    with pytest.raises(InvalidInputError, match=r"^project must be a str or None, got int$"):
        Scope(3)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match=r"^user must be a str or None, got bytes$"):
        Scope(user=b"alice")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match=r"^project must be at most 255 characters, got 256$"):
        Scope("x" * 256)
    with pytest.raises(InvalidInputError, match=r"^user must be at most 255 characters, got 300$"):
        Scope(user="u" * 300)


def test_scope_resolves_the_hosts_default_project() -> None:
    assert Scope.resolve(None, "alice", default_project="a") == Scope("a", "alice")
    assert Scope.resolve("  ", None, default_project="a") == Scope("a")  # blank names no project
    assert Scope.resolve("b", None, default_project="a") == Scope("b")
    assert Scope.resolve(None, None, default_project=None) == Scope()


def test_repair_input_carries_a_normalised_scope_and_old_payloads_load() -> None:
    inp = RepairInput(trigger="manual", context_hash="h", project=" shop ", user="")
    assert (inp.project, inp.user) == ("shop", None) and inp.scope == Scope("shop")
    assert inp.scoped(Scope("other", "bob")).scope == Scope("other", "bob")
    with pytest.raises(InvalidInputError, match="project must be at most 255 characters"):
        RepairInput(trigger="manual", context_hash="h", project="p" * 256)
    # A payload queued before Scope existed: flat project/user keys, no newer keys.
    old = {"trigger": "manual", "context_hash": "h", "failures": [], "project": "shop", "user": "alice"}
    assert input_from_payload(old).scope == Scope("shop", "alice")
    assert input_from_payload(payload_of(inp)) == inp


# -- the worker applies no default of its own ---------------------------------------------------


def _wait_for_repairs(store: Store, n: int) -> list[DecisionRepairRow]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        rows = store.repairs.list()
        if len(rows) >= n:
            return rows
        time.sleep(0.02)
    raise AssertionError(f"fewer than {n} repairs after 30 s")


def test_the_worker_uses_the_scope_the_job_carries_not_its_own_default(
    store: Store, clean_env: pytest.MonkeyPatch
) -> None:
    # Two jobs queued by a host (another process: only the durable queue is
    # shared): one it resolved to global, one to its project "host".
    _history(store, "s-1")
    job = {
        "context_hash": context_hash_of(TOOL, CONTEXT),
        "tool_id": TOOL,
        "context": CONTEXT,
        "session_id": "s-1",
    }
    queue = RepairQueue(store)
    queue.enqueue(RepairInput(trigger="user.correction", user_text="no, use pnpm instead of npm here", **job))
    queue.enqueue(
        RepairInput(trigger="user.correction", user_text="use yarn rather than npm", project="host", **job)
    )
    # A worker whose own default project is another one runs them.
    worker = RecallConfig(default_project="worker-default")
    with attach_feedback_subscriber(
        store, config=FeedbackConfig(cooldown_ms=0), recall=worker, poll_interval=0.01
    ) as sub:
        rows = _wait_for_repairs(store, 2)
        assert sorted((r.project or "", r.user or "") for r in rows) == [("", ""), ("host", "")]
        # Its reads that name no project are the worker's own scope: the global repair only.
        assert _seen(sub, "worker-default") == {r.id for r in rows if r.project is None}
    assert sorted(j.status for j in RepairQueue(store).list()) == ["done", "done"]
