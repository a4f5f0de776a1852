"""Gate and score one call's candidates: steps 3 and 4 of ``guidance_for``'s ranking.

For each candidate: the signals of the relevance gate (``gate.FEATURES``:
the weighted share of the query's terms found in its problem, the cosine
when both are embedded, the overlap with the caller's situation, error
identifiers, the language pair, the category), its probability under the
learned gate (``gate``, ALGORITHMS.md "Recall"), and the tier it is ranked
in (the probability is its score there).

This runs for every candidate of every call — about a hundred — so the
call's own terms and the gate's model are read once into a ``Scorer``.
"""

from __future__ import annotations

import functools
import math
import re
import threading
from collections.abc import Sequence
from typing import NamedTuple

from .candidates import Candidate
from .categories import CATEGORIES
from .frequencies import idf
from .gate import FEATURES, current_gate, recorder
from .indexing import embedding_text
from .terms import comparable, contains_term, query_terms

__all__ = ["PAIR_WEIGHT", "Passed", "Scorer", "Weights", "has_cjk"]

# A CJK character pair cannot be counted by a trigram index (no IDF); it weighs this much.
PAIR_WEIGHT = 0.5
# Normalised texts per candidate text: the same repairs come back query after
# query (the tool's newest, the exact context's), and splitting, NFKC and
# case-folding each one's text again is per-candidate work that repeats.
# Bounded (cleared when full): a source text is at most 2,000 characters,
# so a full cache holds a few tens of MB at worst, a few MB typically.
_TEXTS_MAX = 4_096


class Weights:
    """Term weights with their total mass, summed once per call instead of per candidate.

    Words weigh their IDF; CJK text counts by its character pairs
    (``terms`` says why), each ``PAIR_WEIGHT``, not by the 3-character
    windows the search uses.
    """

    __slots__ = ("items", "mass")

    def __init__(self, words: Sequence[str], pairs: Sequence[str], dfs: dict[str, int], total: int) -> None:
        weights = {t: idf(dfs.get(t, 0), total) for t in words}
        weights.update({t: PAIR_WEIGHT for t in pairs})
        self.items = tuple(weights.items())
        self.mass = sum(weights.values())


def _share(items: tuple[tuple[str, float], ...], mass: float, text: str) -> float:
    """The share of ``mass`` whose terms occur in ``text`` (0 when there are none)."""
    if mass <= 0:
        return 0.0
    found = 0.0
    for term, weight in items:
        # ``in`` first: most terms are absent, and it is cheaper than the word-start check.
        if term in text and contains_term(text, term):
            found += weight
    return found / mass


class _Texts(NamedTuple):
    problem: str
    problem_normalised: str
    cjk: bool


_texts: dict[str, _Texts] = {}
_situations: dict[tuple[str | None, str | None], str] = {}
_texts_lock = threading.Lock()


def _problem(source_text: str) -> _Texts:
    """The candidate's problem (``embedding_text``) as written and comparable, cached by text."""
    hit = _texts.get(source_text)
    if hit is None:
        problem = embedding_text(source_text)
        hit = _Texts(problem, comparable(problem), has_cjk(problem))
        with _texts_lock:
            if len(_texts) >= _TEXTS_MAX:
                _texts.clear()
            _texts[source_text] = hit
    return hit


def _situation(tool_id: str | None, context: str | None) -> str:
    """The candidate's tool and context, comparable (``terms.comparable``), cached."""
    key = (tool_id, context)
    hit = _situations.get(key)
    if hit is None:
        hit = comparable(f"{tool_id or ''} {context or ''}")
        with _texts_lock:
            if len(_situations) >= _TEXTS_MAX:
                _situations.clear()
            _situations[key] = hit
    return hit


class Passed(NamedTuple):
    """A candidate that passed the gate; its ``GuidanceItem`` is made only if it is kept."""

    candidate: Candidate
    tier: int
    score: float
    why: tuple[str, ...]


_CJK_CHAR = re.compile("[\u3400-\u9fff]")


def has_cjk(text: str) -> bool:
    """Whether ``text`` holds a CJK ideograph (the language pair's side)."""
    return _CJK_CHAR.search(text) is not None


_LESSON = 3  # the lesson's share in ``gate.FEATURES``
_CATEGORY_INDEX = {c: i for i, c in enumerate(CATEGORIES)}
# The query's size saturates at this IDF mass (a long report is not more relevant).
_SIZE_MASS = 40.0


class Scorer:
    """One call's gate and score (``passed``): the learned relevance gate (``gate``)."""

    __slots__ = (
        "_call",
        "_exact_hash",
        "_extra",
        "_extra_found",
        "_extra_lesson",
        "_identifiers",
        "_mass",
        "_model",
        "_no_query",
        "_novel_items",
        "_novel_mass",
        "_novel_top",
        "_query_cjk",
        "_query_text",
        "_reads_cosine",
        "_record",
        "_session",
        "_situation_items",
        "_situation_mass",
        "_terms",
        "_threshold_logit",
        "_tool",
    )

    def __init__(
        self,
        *,
        tool: str | None,
        exact_hash: str | None,
        no_query: bool,
        session: str | None,
        weights: Weights,
        situation_weights: Weights,
        identifiers: tuple[str, ...],
        report: bool,
        query_cjk: bool = False,
        embedding_model: str | None = None,
        query_text: str = "",
    ) -> None:
        self._tool = tool
        self._exact_hash = exact_hash
        self._no_query = no_query
        self._session = session
        self._terms, self._mass = weights.items, weights.mass
        self._situation_items, self._situation_mass = situation_weights.items, situation_weights.mass
        # The query's terms that do not name the caller's situation: what the
        # problem is, not where it happens (a near miss shares the where).
        where = {t for t, _ in situation_weights.items}
        self._novel_items = tuple((t, w) for t, w in weights.items if t not in where)
        self._novel_mass = sum(w for _, w in self._novel_items)
        self._novel_top = max((w for _, w in self._novel_items), default=0.0)
        self._query_text = comparable(query_text)
        self._identifiers = identifiers
        self._query_cjk = query_cjk
        self._model, self._reads_cosine = current_gate().model(embedding_model)
        self._record = recorder()
        # The features that are the same for every candidate of the call.
        self._call = (float(report), float(query_cjk), min(1.0, self._mass / _SIZE_MASS))
        t = min(max(self._model.threshold, 1e-12), 1 - 1e-12)
        self._threshold_logit = math.log(t / (1 - t))
        # The most the dear features can add to the logit (each is in [0, 1]);
        # the novel coverage and the rarest term are 0 when no term was found.
        w = dict(zip(FEATURES, self._model.weights, strict=True))
        ids = float(bool(identifiers))
        upper = {
            "lesson_in_query": 1.0,
            "situation": 1.0,
            "report_x_situation": float(report),
            "same_error": ids,
            "conflicting_error": ids,
        }
        self._extra = sum(max(0.0, w[k]) * u for k, u in upper.items())
        self._extra_lesson = max(0.0, w["lesson_in_query"])
        self._extra_found = self._extra + max(0.0, w["novel_coverage"]) + max(0.0, w["rarest_match"])

    def passed(self, candidates: Sequence[Candidate], cosines: Sequence[float | None]) -> list[Passed]:
        """The candidates that pass the gate, scored (``cosines[i]``: the query's with ``candidates[i]``).

        Two passes: each candidate's coverage and cosine, then its features
        with how those compare with the call's best. The dearer features
        (situation, lesson, rarest term, identifiers) are computed only for a
        candidate that could still reach the threshold with their largest
        possible contribution: an exact bound, so the same ones pass.
        """
        first = [self._first(c, cosine) for c, cosine in zip(candidates, cosines, strict=True)]
        best_cov = max((f[1] for f in first), default=0.0)
        best_cos = max((f[2] for f in first), default=0.0)
        out: list[Passed] = []
        for c, (texts, coverage, cos) in zip(candidates, first, strict=True):
            exact = self._exact_hash is not None and c.context_hash == self._exact_hash
            cheap = self._vector(c, texts, coverage, cos, best_cov, best_cos, full=False)
            if self._record is None and not (exact and self._no_query):
                bound = self._model.logit(cheap[0]) + (self._extra_found if coverage > 0 else self._extra)
                if bound < self._threshold_logit:
                    continue
            values, same_error = self._vector(c, texts, coverage, cos, best_cov, best_cos, full=True)
            # The lesson's terms cost most: only for what its share could still lift.
            lift = self._model.logit(values) + self._extra_lesson
            if self._record is None and not (exact and self._no_query) and lift < self._threshold_logit:
                continue
            lesson = _lesson_share(_lesson_terms(c.preference, c.anti_pattern), self._query_text)
            values = (*values[:_LESSON], lesson, *values[_LESSON + 1 :])
            hit = self._decide(c, values, same_error)
            if hit is not None:
                out.append(hit)
        return out

    def _first(self, c: Candidate, cosine: float | None) -> tuple[_Texts, float, float]:
        texts = _problem(c.source_text)
        coverage = _share(self._terms, self._mass, texts.problem_normalised)
        cos = max(0.0, cosine) if cosine is not None and self._reads_cosine else 0.0
        return texts, coverage, cos

    def _vector(
        self,
        c: Candidate,
        texts: _Texts,
        coverage: float,
        cos: float,
        best_cov: float,
        best_cos: float,
        *,
        full: bool,
    ) -> tuple[tuple[float, ...], bool]:
        """The features (``gate.FEATURES`` order) and same error or not; without ``full``, the dear ones 0.

        The lesson's share is left 0 here (``passed`` fills it in last).
        """
        problem = texts.problem_normalised
        novel = rarest = lesson = situation = 0.0  # lesson: filled in by ``passed``
        same_error = False
        if full:
            novel = _share(self._novel_items, self._novel_mass, problem)
            rarest = _rarest(self._novel_items, self._novel_top, problem)
            situation = _share(self._situation_items, self._situation_mass, _situation(c.tool_id, c.context))
            same_error = any(ident in texts.problem for ident in self._identifiers)
        report, query_cjk, size = self._call
        category = [0.0] * len(CATEGORIES)
        index = _CATEGORY_INDEX.get(c.category or "")
        if index is not None:
            category[index] = 1.0
        values = (
            coverage,
            novel,
            rarest,
            lesson,
            coverage / best_cov if best_cov > 0 else 0.0,
            float(best_cov > 0 and coverage >= best_cov),
            cos / best_cos if best_cos > 0 else 0.0,
            float(best_cos > 0 and cos >= best_cos),
            cos,
            coverage * cos,
            situation,
            report,
            report * situation,
            float(same_error),
            float(full and bool(self._identifiers) and not same_error),
            float(self._tool is not None and c.tool_id == self._tool),
            float(self._exact_hash is not None and c.context_hash == self._exact_hash),
            query_cjk,
            float(texts.cjk),
            float(texts.cjk != self._query_cjk),
            size,
            *category,
        )
        return values, same_error

    def _decide(self, c: Candidate, values: tuple[float, ...], same_error: bool) -> Passed | None:
        if self._record is not None:
            into, key = self._record
            into.append((key, c.id, values))
        probability = self._model.probability(values)
        related = probability >= self._model.threshold
        exact = self._exact_hash is not None and c.context_hash == self._exact_hash
        if not related and not (exact and self._no_query):
            return None
        same_tool = self._tool is not None and c.tool_id == self._tool
        why: list[str] = []
        if exact:
            why.append("exact context")
        elif same_tool:
            why.append("same tool")
        if self._session is not None and c.session_id == self._session:
            why.append("same session")
        if related:
            why.append("same error" if same_error else "similar text")
        tier = 2 if exact else 1 if same_tool else 0
        return Passed(c, tier, probability, tuple(why))


def _rarest(items: tuple[tuple[str, float], ...], top: float, text: str) -> float:
    """The weight of the rarest query term found in ``text`` against the rarest of the query's."""
    if top <= 0:
        return 0.0
    found = max((w for t, w in items if t in text and contains_term(text, t)), default=0.0)
    return found / top


@functools.lru_cache(maxsize=_TEXTS_MAX)
def _lesson_terms(preference: str, anti_pattern: str) -> tuple[str, ...]:
    """The terms of a repair's lesson (what it is about), cached."""
    return query_terms(f"{preference} {anti_pattern}").all()


def _lesson_share(terms: tuple[str, ...], query_text: str) -> float:
    """The share of the lesson's terms found in the query (each term weighs the same)."""
    if not terms or not query_text:
        return 0.0
    return sum(1 for t in terms if t in query_text and contains_term(query_text, t)) / len(terms)
