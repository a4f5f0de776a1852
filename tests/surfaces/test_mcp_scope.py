"""Issue 44 finding 2: ``memos-feedback mcp``'s resources and ``review_repair`` follow the server's
project scope, as ``guidance`` does, driven by the ``mcp`` SDK's client on both backends."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from memos_feedback.config import FeedbackConfig
from memos_feedback.runtime.subscriber import attach_feedback_subscriber
from memos_feedback.store import open_store
from tests.support.runtimes import require_runtime

require_runtime("mcp.client.stdio", "mcp")

from mcp import ClientSession, MCPError  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def _seed(db_url: str) -> dict[str | None, str]:
    """One repair of project alpha, one of beta, one global; their ids by project."""
    ids: dict[str | None, str] = {}
    with open_store(db_url) as store:
        sub = attach_feedback_subscriber(store, config=FeedbackConfig(use_llm=False), poll_interval=0.02)
        try:
            for project, (text, command) in {
                "alpha": ("no, use pnpm instead of npm here", "npm install"),
                "beta": ("no, use uv instead of pip here", "pip install"),
                None: ("no, use rg instead of grep here", "grep -r"),
            }.items():
                session = f"s-{project}"  # a failed and a good step: the evidence a repair stands on
                store.traces.add(session, agent_text=f"{text.split()[2]}: done", value=0.8)
                store.traces.add(session, agent_text=f"{command}: error, could not resolve", value=-0.7)
                _, future = sub.submit_user_feedback(text, session, "Bash", command, project=project)
                result = future.result(timeout=60)
                assert result.repair_id, result
                ids[project] = result.repair_id
        finally:
            sub.close(timeout=30)
    return ids


async def _as_seen_by(db_url: str, flags: list[str], ids: dict[str | None, str]) -> dict[str, Any]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memos_feedback", "mcp", "--db", db_url, *flags],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=str(REPO),
    )
    seen: dict[str, Any] = {"read": {}, "review": {}}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
        await client.initialize()
        listed = await client.read_resource("memos-feedback://repairs")
        seen["listed"] = {r["id"] for r in json.loads(listed.contents[0].text)}  # type: ignore[union-attr]
        for project, rid in ids.items():
            try:
                one = await client.read_resource(f"memos-feedback://repairs/{rid}")
                seen["read"][project] = json.loads(one.contents[0].text)["id"]  # type: ignore[union-attr]
            except MCPError as exc:
                seen["read"][project] = str(exc)
            out = await client.call_tool("review_repair", {"repair_id": rid, "verdict": "validate"})
            seen["review"][project] = "".join(getattr(b, "text", "") for b in out.content)
    return seen


@pytest.mark.slow
def test_resources_and_reviews_follow_the_servers_project(db_url: str) -> None:
    ids = _seed(db_url)
    beta = anyio.run(_as_seen_by, db_url, ["--project-name", "beta"], ids)
    assert beta["listed"] == {ids["beta"], ids[None]}
    assert beta["read"] == {
        "alpha": f"no repair with id {ids['alpha']!r}",
        "beta": ids["beta"],
        None: ids[None],
    }
    assert beta["review"]["alpha"].endswith(f"no repair with id {ids['alpha']!r}")
    assert beta["review"]["beta"] == f"repair {ids['beta']} validated"

    unscoped = anyio.run(_as_seen_by, db_url, [], ids)
    assert unscoped["listed"] == {ids[None]}
    assert unscoped["read"]["alpha"] == f"no repair with id {ids['alpha']!r}"
    assert unscoped["read"]["beta"] == f"no repair with id {ids['beta']!r}"
    assert unscoped["review"][None] == f"repair {ids[None]} validated"

    with open_store(db_url) as store:  # alpha's repair was never reviewed by either server
        alpha = store.repairs.get(ids["alpha"])
        assert not alpha.validated and not alpha.rejected
        assert store.repairs.get(ids["beta"]).validated
