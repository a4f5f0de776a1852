"""Gate and score one call's candidates: steps 3 and 4 of ``guidance_for``'s ranking.

For each candidate: the evidence that it is about the query's problem (the
weighted share of the query's terms found in its problem, mixed with the
cosine when both are embedded), the gate (``guidance`` module docstring,
ALGORITHMS.md "Recall"), and the score and tier it is ranked by.

This runs for every candidate of every call — about a hundred — so the
call's constants (weights, thresholds, bonuses) are read once into a
``Scorer``, and the overlap with the caller's situation and the error
identifiers are looked at only for a candidate whose evidence reaches the
minimum (below it, nothing else can make it related).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import NamedTuple

from ..store.search import Candidate
from .config import RecallConfig
from .frequencies import idf
from .indexing import embedding_text
from .problem_gate import GateModel, QueryParts, features, repair_parts
from .terms import comparable, contains_term

__all__ = ["PAIR_WEIGHT", "Passed", "Scorer", "Weights"]

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


_texts: dict[str, _Texts] = {}
_situations: dict[tuple[str | None, str | None], str] = {}
_texts_lock = threading.Lock()


def _problem(source_text: str) -> _Texts:
    """The candidate's problem (``embedding_text``) as written and comparable, cached by text."""
    hit = _texts.get(source_text)
    if hit is None:
        problem = embedding_text(source_text)
        hit = _Texts(problem, comparable(problem))
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
    # The problem gate's probability that it is about the query's problem
    # (None: the gate is off, or the repair has no part to compare).
    problem: float | None = None


class Scorer:
    """One call's gate and score (``passed``), its constants read once."""

    __slots__ = (
        "_exact_bonus",
        "_exact_hash",
        "_gate",
        "_identifiers",
        "_lexical_gate",
        "_lexical_min",
        "_mass",
        "_no_query",
        "_parts",
        "_semantic_gate",
        "_semantic_min",
        "_semantic_weight",
        "_session",
        "_situation_items",
        "_situation_mass",
        "_terms",
        "_threshold",
        "_tool",
        "_tool_bonus",
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
        cfg: RecallConfig,
        gate: tuple[GateModel, QueryParts] | None = None,
        semantic_min: float | None = None,
    ) -> None:
        self._tool = tool
        self._exact_hash = exact_hash
        self._no_query = no_query
        self._session = session
        self._terms, self._mass = weights.items, weights.mass
        self._situation_items, self._situation_mass = situation_weights.items, situation_weights.mass
        self._identifiers = identifiers
        self._semantic_weight = cfg.semantic_weight
        # ``semantic_min``: the embedding model's own minimum, when it has one.
        self._semantic_min = cfg.min_score_semantic if semantic_min is None else semantic_min
        self._lexical_min = cfg.min_score_lexical
        # A query carrying a tool's report holds the situation test at full weight.
        self._semantic_gate = cfg.situation_weight if report else cfg.described_situation_weight_semantic
        self._lexical_gate = cfg.situation_weight if report else cfg.described_situation_weight_lexical
        self._exact_bonus, self._tool_bonus = cfg.exact_context_bonus, cfg.same_tool_bonus
        # The problem gate (``problem_gate``): its model and the query's parts, or None when off.
        self._gate: GateModel | None = gate[0] if gate is not None else None
        self._parts: QueryParts | None = gate[1] if gate is not None else None
        self._threshold = cfg.problem_gate_threshold

    def passed(self, candidates: Sequence[Candidate], cosines: Sequence[float | None]) -> list[Passed]:
        """The candidates that pass the gate, scored (``cosines[i]``: the query's with ``candidates[i]``)."""
        out: list[Passed] = []
        for c, cosine in zip(candidates, cosines, strict=True):
            hit = self.score(c, cosine)
            if hit is not None:
                out.append(hit)
        return out

    def score(self, c: Candidate, cosine: float | None) -> Passed | None:
        """Gate and score one candidate (``cosine``: with the query, when both are embedded by one model)."""
        texts = _problem(c.source_text)
        lexical = _share(self._terms, self._mass, texts.problem_normalised)
        if cosine is not None:
            weight = self._semantic_weight
            evidence = weight * cosine + (1.0 - weight) * lexical
            threshold, gate = self._semantic_min, self._semantic_gate
        else:
            evidence, threshold, gate = lexical, self._lexical_min, self._lexical_gate
        exact = self._exact_hash is not None and c.context_hash == self._exact_hash
        same_error = related = False
        belief: float | None = None  # the problem gate's probability
        # Below the minimum nothing makes a candidate related: the error
        # identifiers and the situation's overlap are looked at only above it.
        if evidence >= threshold:
            problem = texts.problem
            same_error = any(ident in problem for ident in self._identifiers)
            related = same_error or evidence >= gate * _share(
                self._situation_items, self._situation_mass, _situation(c.tool_id, c.context)
            )
            if related:
                belief = self._problem(c, exact=exact, same_error=same_error)
                if belief is not None and belief < self._threshold:
                    related = same_error = False
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
        score = evidence + self._exact_bonus * exact + self._tool_bonus * same_tool
        tier = 2 if exact else 1 if same_tool else 0
        return Passed(c, tier, score, tuple(why), belief if related else None)

    def _problem(self, c: Candidate, *, exact: bool, same_error: bool) -> float | None:
        """The problem gate's probability for a candidate the text gate passed (None: no verdict)."""
        if self._gate is None or self._parts is None:
            return None
        parts = repair_parts(c.source_text, c.tool_id, c.context)
        if not parts.compared:
            # A lesson alone (a repair written before recall, or by hand): no
            # error or user words to compare, so the text gate's answer stands.
            return None
        return self._gate.probability(features(self._parts, parts, exact=exact, same_error=same_error))
