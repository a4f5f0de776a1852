"""The text search: which of a query's terms select candidates, and with what weight.

Only the rarer terms search (``search_terms``): at most
``MAX_SEARCH_TERMS`` of those fewer than the rare cap (``rare_cap``)
repairs contain, the rarest first. Matches rank by the IDF weight of the
terms they contain (``text_search``'s weights), then newest first. The
statement that finds them is the store's (``store.search``: FTS5 on
SQLite, ILIKE over a trigram index on PostgreSQL).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..store.handles import Executor
from ..store.search import Eligibility, TextSearch, search_reader
from .frequencies import RARE_DF, idf, term_expression

__all__ = ["MAX_SEARCH_TERMS", "lexical_candidate_ids", "rare_cap", "search_terms", "text_search"]

# At most this many (the rarest) of a query's terms select candidates by text.
MAX_SEARCH_TERMS = 8
# The rare cap (``RARE_DF``) shrinks to 5 % of a small store, never below 20.
_RARE_SHARE = 20
_RARE_FLOOR = 20


def rare_cap(total: int | None) -> int:
    """A term in this many repairs or more selects no candidate by text (``lexical_candidate_ids``)."""
    return RARE_DF if total is None else max(_RARE_FLOOR, min(RARE_DF, total // _RARE_SHARE))


def search_terms(
    terms: Sequence[str], frequencies: Mapping[str, int] | None = None, total: int | None = None
) -> list[str]:
    """The terms that select candidates by text (``lexical_candidate_ids`` says which)."""
    cap = rare_cap(total)
    rare = [t for t in terms if len(t) >= 3 and (frequencies is None or frequencies.get(t, 0) < cap)]
    if frequencies is not None and len(rare) > MAX_SEARCH_TERMS:
        # The rarest say the most and have the shortest postings: the
        # search's cost follows the terms it ORs, so it takes only those.
        rare = sorted(rare, key=lambda t: frequencies.get(t, 0))[:MAX_SEARCH_TERMS]
    return rare


def text_search(
    rare: Sequence[str],
    frequencies: Mapping[str, int] | None,
    total: int | None,
    matched: Mapping[str, Sequence[str]] | None = None,
) -> TextSearch:
    """What the store needs to search by ``rare``: each term's IDF weight and FTS5 expression.

    Without frequencies every term weighs 1. ``matched``: terms given as the
    ids of every repair containing them (``search.read_candidates``).
    """
    n = max(total or 0, 1)
    weights = [idf(frequencies.get(t, 0), n) if frequencies is not None else 1.0 for t in rare]
    # Every match of the rare terms is read when their frequencies are known
    # (each is below the rare cap); the store sizes its read by this sum.
    known = sum(frequencies.get(t, 0) for t in rare) if frequencies is not None else 0
    expressions = [term_expression(t) for t in rare]
    return TextSearch(list(rare), weights, expressions, dict(matched or {}), known)


def lexical_candidate_ids(
    reader: Executor,
    terms: Sequence[str],
    where: Eligibility,
    limit: int,
    frequencies: Mapping[str, int] | None = None,
    total: int | None = None,
) -> list[str]:
    """Eligible repairs matching the query's rarer terms (3+ characters each), best first.

    Ranked by the IDF weight of the terms matched over the terms fewer
    than ``RARE_DF`` repairs (or 5 % of ``total``, at least 20) contain — the
    ``MAX_SEARCH_TERMS`` rarest of them — so the work follows those terms'
    postings, not the table. A query whose every term is common selects no
    candidate by text: such terms cannot tell a few hundred repairs apart,
    and candidates found by tool, context or embedding are still scored on
    them.
    """
    rare = search_terms(terms, frequencies, total)
    if not rare:
        return []
    return search_reader(reader).lexical_ids(reader, text_search(rare, frequencies, total), where, limit)
