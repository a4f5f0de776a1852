"""The durable event log (``feedback_events``) and its readers: ``tail`` and the web UI.

``FeedStore`` writes the events of the bus to the database (state changes
in their own transaction, the rest batched), reads them back in commit
order, follows them like ``tail -f`` and prunes them. See docs/EVENTS.md.
"""

from __future__ import annotations

from ..store.event_log import STATE_KINDS, EventRecord, FeedStore, record_to_dict

__all__ = ["STATE_KINDS", "EventRecord", "FeedStore", "record_to_dict"]
