"""The Starlette app of ``memos-feedback serve``: the page, the JSON API and the live feed.

``/api/stream`` is Server-Sent Events: each event's SSE id is its ``seq``
in the log. A browser that reconnects sends ``Last-Event-ID`` and the
stream resumes right after it — commit order makes that exact (no event
missed, none repeated; see ``memos_feedback.feed.log``). A first
connection gets the newest ``backlog`` events, then the live ones.

Every handler that touches the database is synchronous and runs in
Starlette's thread pool; the store is thread-safe.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import asdict
from importlib import resources
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ..config import FeedbackConfig
from ..errors import InvalidInputError, MemosFeedbackError, NotFoundError
from ..feed.actions import purge_job, requeue_job, review_repair
from ..outcomes.estimate import OutcomeCounts
from ..outcomes.report import list_with_outcomes
from ..runtime.queue import RepairQueue
from ..store import DecisionRepairRow, Store
from ..store.event_log import FeedStore, record_to_dict
from ..store.reads import repair_projects
from ..text.blocks import parse_repair_block
from .guard import Guard

__all__ = ["create_app"]

_STATIC = {"app.js": "text/javascript", "style.css": "text/css", "favicon.svg": "image/svg+xml"}
_POLL = 0.25  # seconds between reads of the log while a stream is idle
_KEEPALIVE = 15.0
_MAX_SEQ = 2**63 - 1  # seq is a signed 64-bit integer in both databases
_CONTEXT_SHOWN = 2000  # characters of a repair's context the page gets (the rest is elided)
_PROJECT_MAX = 255  # the project column's width


def _asset(name: str) -> bytes:
    return resources.files("memos_feedback.web").joinpath("static", name).read_bytes()


def repair_json(r: DecisionRepairRow, counts: OutcomeCounts | None = None) -> dict[str, Any]:
    status = "validated" if r.validated else "rejected" if r.rejected else "new"
    context = r.context
    if context is not None and len(context) > _CONTEXT_SHOWN:
        context = context[:_CONTEXT_SHOWN] + "…"
    return {
        "id": r.id,
        "ts": r.ts,
        "status": status,
        # What became of it once served: active, stale or superseded (ALGORITHMS.md, "Outcomes").
        "outcome_status": r.status,
        "review_flagged": r.review_flagged_at is not None,
        "superseded_by": r.superseded_by,
        "outcomes": None if counts is None else _counts_json(counts),
        "confidence": r.confidence,
        "severity": r.severity,
        "preference": r.preference,
        "anti_pattern": r.anti_pattern,
        # Provenance: what triggered it, where, and the traces it rests on.
        "trigger": r.trigger,
        "context_hash": r.context_hash,
        "context": context,
        "tool_id": r.tool_id,
        "session_id": r.session_id,
        "high_value_trace_ids": list(r.high_value_trace_ids),
        "low_value_trace_ids": list(r.low_value_trace_ids),
        "category": r.category,
        "project": r.project,
    }


def _counts_json(c: OutcomeCounts) -> dict[str, int]:
    return {"served": c.served, "held": c.held, "recurred": c.recurred, "contradicted": c.contradicted}


def _project_filter(request: Request) -> dict[str, Any]:
    """``?project=NAME`` (stored with exactly that project) or ``?global=1`` (stored with none)."""
    project = request.query_params.get("project")
    only_global = request.query_params.get("global") in ("1", "true")
    if project is not None and only_global:
        raise InvalidInputError("pass project or global, not both")
    if project is not None and not 0 < len(project) <= _PROJECT_MAX:
        raise InvalidInputError(f"project must be 1..{_PROJECT_MAX} characters")
    return {"project": project, "global_only": only_global}


def _int_param(request: Request, name: str, default: int, low: int, high: int) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise InvalidInputError(f"{name} must be an integer") from None
    if not low <= value <= high:
        raise InvalidInputError(f"{name} must be in [{low}, {high}]")
    return value


def _resume_seq(raw: str) -> int:
    """A ``Last-Event-ID`` (or ``?after=``): decimal digits naming a seq, checked before the stream starts."""
    # int() would also take "-1", " 7", "+7" and non-ASCII digits; a seq is plain digits.
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 19 and int(raw) <= _MAX_SEQ):
        raise InvalidInputError(f"Last-Event-ID must be an event seq in [0, {_MAX_SEQ}]")
    return int(raw)


def create_app(store: Store, *, token: str | None = None) -> Any:
    """The ASGI app (Starlette wrapped in ``Guard``) serving ``store``."""
    feed = FeedStore(store)
    config = FeedbackConfig()
    queue = RepairQueue(store, config)

    def page(request: Request) -> Response:
        return Response(_asset("index.html"), media_type="text/html; charset=utf-8")

    def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in _STATIC:
            return JSONResponse({"error": "not found"}, status_code=404)
        return Response(_asset(name), media_type=f"{_STATIC[name]}; charset=utf-8")

    def favicon(request: Request) -> Response:
        # Browsers ask for /favicon.ico whatever the page links; answer with the same icon.
        return Response(_asset("favicon.svg"), media_type="image/svg+xml")

    def events(request: Request) -> Response:
        after = _int_param(request, "after", 0, 0, _MAX_SEQ)
        limit = _int_param(request, "limit", 200, 1, 10_000)
        kinds = request.query_params.getlist("kind") or None
        return JSONResponse([record_to_dict(r) for r in feed.read(after, kinds, limit)])

    def repairs(request: Request) -> Response:
        limit = _int_param(request, "limit", 100, 1, 10_000)
        scope = _project_filter(request)
        rows = list_with_outcomes(store, status=None, context_hash=None, limit=limit, **scope)
        return JSONResponse([repair_json(r, c) for r, c in rows])

    def projects(request: Request) -> Response:
        with store.session(action="listing projects") as s:
            found = repair_projects(s)
        return JSONResponse([{"project": p, "repairs": n} for p, n in found])

    def verdict(request: Request) -> Response:
        row = review_repair(store, request.path_params["id"], request.path_params["verdict"])
        return JSONResponse(repair_json(row))

    def queue_view(request: Request) -> Response:
        dead = queue.list(status="dead", limit=100)
        jobs = [{k: v for k, v in asdict(j).items() if k not in ("payload", "payload_error")} for j in dead]
        return JSONResponse({"stats": queue.stats(), "dead": jobs})

    def job_action(request: Request) -> Response:
        job_id, action = request.path_params["id"], request.path_params["action"]
        if action not in ("retry", "purge"):
            return JSONResponse({"error": "action must be retry or purge"}, status_code=404)
        job = requeue_job(store, job_id, config) if action == "retry" else purge_job(store, job_id, config)
        return JSONResponse({"id": job.id, "action": action})

    def policies(request: Request) -> Response:
        out = []
        for p in store.policies.list():
            host, block = parse_repair_block(p.boundary)
            out.append(
                {
                    "id": p.id,
                    "title": p.title,
                    "status": p.status,
                    "boundary": host,
                    "repair": None
                    if block is None
                    else {"preference": list(block.preference), "anti_pattern": list(block.anti_pattern)},
                }
            )
        return JSONResponse(out)

    async def stream(request: Request) -> Response:
        resume = request.headers.get("last-event-id") or request.query_params.get("after")
        backlog = _int_param(request, "backlog", 50, 0, 1000)
        if resume is not None:
            start = _resume_seq(resume)
            first: list[Any] = []
        else:
            first = await run_in_threadpool(feed.newest, backlog) if backlog else []
            start = first[-1].seq if first else await run_in_threadpool(feed.last_seq)

        async def body() -> AsyncIterator[str]:
            last = start
            yield "retry: 1000\n\n"
            for r in first:
                yield _sse(r)
            idle = 0.0
            while True:
                rows = await run_in_threadpool(feed.read, last, None, 500)
                for r in rows:
                    last = r.seq
                    yield _sse(r)
                if rows:
                    idle = 0.0
                    continue
                if idle >= _KEEPALIVE:
                    idle = 0.0
                    yield ": keep-alive\n\n"
                await anyio.sleep(_POLL)
                idle += _POLL

        return StreamingResponse(body(), media_type="text/event-stream", headers={"X-Accel-Buffering": "no"})

    async def on_error(request: Request, exc: Exception) -> Response:
        status = 404 if isinstance(exc, NotFoundError) else 400
        return JSONResponse({"error": str(exc)}, status_code=status)

    routes = [
        Route("/", page),
        Route("/static/{name}", static),
        Route("/favicon.ico", favicon),
        Route("/api/events", events),
        Route("/api/stream", stream),
        Route("/api/repairs", repairs),
        Route("/api/projects", projects),
        Route("/api/repairs/{id}/{verdict:str}", verdict, methods=["POST"]),
        Route("/api/queue", queue_view),
        Route("/api/queue/{id}/{action:str}", job_action, methods=["POST"]),
        Route("/api/policies", policies),
    ]
    app = Starlette(
        routes=routes,
        exception_handlers={MemosFeedbackError: on_error, ValueError: on_error},
    )
    return Guard(app, token=token)


def _sse(r: Any) -> str:
    # json.dumps escapes newlines, so the data is one line; the id is the seq.
    return f"id: {r.seq}\ndata: {json.dumps(record_to_dict(r), ensure_ascii=False)}\n\n"
