"""Optional Prometheus exporter for a subscriber's queue metrics.

Needs the ``prometheus`` extra (``pip install 'memos-feedback[prometheus]'``).
Metrics are read from ``FeedbackSubscriber.metrics()`` at scrape time, so
nothing is updated on the agent's hot path::

    from memos_feedback.prometheus import start_exporter
    start_exporter(subscriber, port=9464)        # http://127.0.0.1:9464/metrics

See docs/OPERATIONS.md for what to alert on.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..errors import MemosFeedbackError

if TYPE_CHECKING:
    from ..runtime.subscriber import FeedbackSubscriber

__all__ = ["COUNTERS", "GAUGES", "SubscriberCollector", "start_exporter"]

COUNTERS = ("enqueued", "deduped", "done", "retried", "dead", "discarded", "failed")
GAUGES = ("depth", "oldest_pending_age_ms", "buffered", "in_flight")


def _client() -> Any:
    try:
        import prometheus_client
    except ImportError as exc:  # pragma: no cover - depends on the extra
        raise MemosFeedbackError(
            "the Prometheus exporter needs the 'prometheus' extra: pip install 'memos-feedback[prometheus]'"
        ) from exc
    return prometheus_client


class SubscriberCollector:
    """A custom collector: one scrape, one ``metrics()`` call."""

    def __init__(self, subscriber: FeedbackSubscriber, prefix: str = "memos_feedback") -> None:
        self._subscriber = subscriber
        self._prefix = prefix
        _client()  # a clear error when the extra is missing
        import prometheus_client.core

        self._core: Any = prometheus_client.core

    def describe(self) -> list[Any]:
        return []  # unchecked collector: families are produced at scrape time

    def collect(self) -> Iterator[Any]:
        core = self._core
        values = self._subscriber.metrics()
        for name in COUNTERS:
            family = core.CounterMetricFamily(
                f"{self._prefix}_jobs_{name}", f"repair jobs {name} since start"
            )
            family.add_metric([], float(values.get(name) or 0))
            yield family
        for name in GAUGES:
            value = values.get(name)
            if value is None:
                continue  # unknown right now (database unreachable, or no pending job)
            family = core.GaugeMetricFamily(f"{self._prefix}_queue_{name}", f"repair queue {name}")
            family.add_metric([], float(value))
            yield family
        yield from self._outcome_gauges()  # served / held / recurred per repair status

    def _outcome_gauges(self) -> Iterator[Any]:
        """Repairs by status and the share of settled servings that held (two small queries)."""
        from ..errors import StoreError
        from ..outcomes.ledger import held_ratio, status_counts

        core = self._core
        try:
            counts = status_counts(self._subscriber.store)
            ratio = held_ratio(self._subscriber.store)
        except StoreError:
            return  # database unreachable: these gauges are absent from this scrape
        family = core.GaugeMetricFamily(
            f"{self._prefix}_repairs", "repairs by status (rejected ones excluded)", labels=["status"]
        )
        for status, n in counts.items():
            family.add_metric([status], float(n))
        yield family
        if ratio is not None:
            held = core.GaugeMetricFamily(
                f"{self._prefix}_repairs_held_ratio", "share of settled servings of guidance that held"
            )
            held.add_metric([], ratio)
            yield held


def start_exporter(
    subscriber: FeedbackSubscriber, port: int = 9464, addr: str = "127.0.0.1", registry: Any = None
) -> Any:
    """Serve ``/metrics`` for ``subscriber``; returns the registry used."""
    client = _client()
    registry = registry if registry is not None else client.CollectorRegistry()
    registry.register(SubscriberCollector(subscriber))
    client.start_http_server(port, addr=addr, registry=registry)
    return registry
