"""Building the pipeline a ``FeedbackSubscriber`` runs (``build_pipeline``).

Assembly is kept apart from the facade: this module reads the
configuration (the environment for what the host did not pass), validates
the knobs, recovers what a previous process left behind and wires the
collaborators together; ``FeedbackSubscriber`` receives the result and
only starts, serves and stops it. So each part can be read — and a test
can build a pipeline — without the facade's threads.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .._checks import check_int, check_number
from ..config import FeedbackConfig
from ..errors import InvalidInputError
from ..events import FeedbackBus
from ..recall.config import RecallConfig, load_config
from ..recall.judge import RelevanceJudge
from ..signals import FailureSignals
from ..store import Store
from ..store.event_log import FeedStore
from ..synthesis.llm import RepairLLM
from .enqueuer import Enqueuer
from .futures import JobFutures
from .heartbeat import Heartbeat, recover_at_start
from .hot_path import HotPath
from .outcomes import SubscriberOutcomes
from .queue import RepairQueue, default_owner
from .workers import Workers

__all__ = ["MAX_WORKERS", "POLL_INTERVAL_RANGE", "Pipeline", "build_pipeline"]

# Bounds on the thread pool and the idle poll: a typo must not start
# 100,000 threads or make a worker sleep for ever.
MAX_WORKERS = 64
POLL_INTERVAL_RANGE = (0.001, 60.0)


@dataclass(frozen=True, slots=True)
class Pipeline:
    """The collaborators of one subscriber, wired and not yet started.

    ``worker_threads`` threads run ``workers.run``; ``closing`` is the
    event every loop watches to stop. ``events`` is None when the durable
    event log is off (``config.events_log``); otherwise it already listens
    to ``bus`` and ``events_off`` unsubscribes it.
    """

    store: Store
    config: FeedbackConfig
    recall: RecallConfig
    bus: FeedbackBus
    signals: FailureSignals
    queue: RepairQueue
    owner: str
    embedder: Any
    # The optional reading judge ``guidance_for`` consults (None: off).
    judge: RelevanceJudge | None
    jobs: JobFutures
    events: FeedStore | None
    events_off: Callable[[], None] | None
    outcomes: SubscriberOutcomes
    hot: HotPath
    enqueuer: Enqueuer
    workers: Workers
    worker_threads: int
    heartbeat: Heartbeat
    closing: threading.Event


def build_pipeline(
    store: Store,
    llm: RepairLLM | None = None,
    embedder: Any = None,
    bus: FeedbackBus | None = None,
    config: FeedbackConfig | None = None,
    *,
    workers: int = 1,
    poll_interval: float = 0.2,
    rng: random.Random | None = None,
    owner: str | None = None,
    recall: RecallConfig | None = None,
    judge: RelevanceJudge | None = None,
) -> Pipeline:
    """Validate the knobs, read what is not given from the environment, wire the parts.

    Jobs a dead process left running are returned to the queue here
    (``recover_at_start``), before any worker of this pipeline can claim.
    Raises ``InvalidInputError`` on a bad argument; starts no thread.
    """
    check_int("workers", workers, lo=1, hi=MAX_WORKERS)
    poll = check_number("poll_interval", poll_interval, *POLL_INTERVAL_RANGE)
    config, recall = _configs(config, recall)
    if judge is not None and not isinstance(judge, RelevanceJudge):
        raise InvalidInputError(f"judge must be a RelevanceJudge or None, got {type(judge).__name__}")
    if not isinstance(store, Store):
        raise InvalidInputError(f"store must be a Store, got {type(store).__name__}")
    bus = bus or FeedbackBus()
    signals = FailureSignals(config)
    queue = RepairQueue(store, config)
    owner = owner or default_owner()
    closing = threading.Event()
    # One lock for the futures, the jobs in flight and the counters.
    jobs = JobFutures(store, queue, threading.Condition())
    # The durable event log (memos_feedback.feed), on unless config.events_log is off.
    events = FeedStore(store, config) if config.events_log else None
    # Listening before the recovery below, so what it emits is logged too.
    events_off = bus.on_any(events.buffer) if events is not None else None
    recover_at_start(store, queue, bus, events, jobs)
    outcomes = SubscriberOutcomes(store, bus, config)
    hot = HotPath(signals, config, outcomes, default_project=recall.default_project)
    run_jobs = Workers(
        store,
        config,
        bus,
        queue,
        signals,
        jobs,
        events,
        owner=owner,
        llm=llm,
        embedder=embedder,
        poll=poll,
        rng=rng or random.Random(),
        closing=closing,
        recall=recall,
    )
    return Pipeline(
        store=store,
        config=config,
        recall=recall,
        bus=bus,
        signals=signals,
        queue=queue,
        owner=owner,
        embedder=embedder,
        judge=judge,
        jobs=jobs,
        events=events,
        events_off=events_off,
        outcomes=outcomes,
        hot=hot,
        enqueuer=Enqueuer(store, config, bus, queue, hot, jobs, closing),
        workers=run_jobs,
        worker_threads=workers,
        heartbeat=Heartbeat(config, queue, jobs, owner, closing),
        closing=closing,
    )


def _configs(config: object, recall: object) -> tuple[FeedbackConfig, RecallConfig]:
    """The pipeline's two configs: what is not given comes from the environment, as for the CLI.

    So ``MEMOS_FEEDBACK_RECALL_DEFAULT_PROJECT`` alone scopes what a
    subscriber writes and reads (``recall.config.load_config``).
    """
    if config is not None and not isinstance(config, FeedbackConfig):
        raise InvalidInputError(f"config must be a FeedbackConfig, got {type(config).__name__}")
    if recall is not None and not isinstance(recall, RecallConfig):
        raise InvalidInputError(f"recall must be a RecallConfig, got {type(recall).__name__}")
    if config is None or recall is None:
        from_env, recall_from_env = load_config()
        return config or from_env, recall or recall_from_env
    return config, recall
