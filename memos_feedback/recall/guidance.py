"""``guidance_for``: the few past repairs that apply to what the agent is about to do.

Read-only and bounded: a handful of indexed queries and a scoring pass over
at most a few hundred candidate rows. The ranking (ALGORITHMS.md, "Recall"):

1. **Eligible** (in SQL): never rejected; global, or of the caller's
   project; validated, or younger than ``unvalidated_max_age_ms``.
2. **Candidates**: repairs for the exact (tool, context), the newest of the
   same tool, the database's text search over the query's terms, and — with
   an embedder — the nearest embeddings.
3. **Evidence of relatedness** between the query text (the context when
   there is no query) and each candidate's *problem* — its lesson, error and
   trace, not its tool and context:
   ``coverage = Σ w(query terms found in the problem) / Σ w(query terms)``, w the
   IDF of a word or a fixed weight for a Chinese character pair
   (how much of the query the repair explains; English words by a light
   stem at the start of words, Chinese words also by their English
   glosses — ``terms``, ``glossary``), and with embeddings
   ``semantic_weight·cosine + (1 - semantic_weight)·coverage``.
4. **Gate**: evidence below the minimum score is dropped, and so is evidence
   that does not exceed ``situation_weight`` times the *situation overlap*
   (the share of the caller's tool and context terms found in the
   candidate's tool and context). A repair must be related by what went
   wrong, not by where: the same tool and context with a different problem
   is the near miss that must not be injected. That holds at full weight
   for a query carrying a tool's report (``terms.is_tool_report``); a
   query in the caller's own words gets the lower
   ``described_situation_weight_*``, because nothing in it names another
   failure. A query that names an error
   code or exception class found in the candidate's problem (``same
   error``) is about the same problem and skips the overlap test, not the
   minimum. Exception: a caller that
   gives no query text and names an exact (tool, context) a repair was
   written for gets that repair.
5. **Order**: exact (tool, context) first, then the same tool, then the
   rest; within each, validated before unvalidated, then by score times
   the repair's outcome factor (``memos_feedback.outcomes.estimate``:
   Beta posterior of "it held", with age decay for unvalidated repairs).
6. Near-duplicates collapse to the better-ranked one; at most ``limit``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ..errors import InvalidInputError
from ..outcomes.estimate import OutcomeCounts, counts_for, rank_factor
from ..outcomes.ledger import record_served
from ..sanitize import sanitize_line
from ..signals import context_hash_of
from ..store import Store
from ..store.rows import now_ms
from .config import RecallConfig
from .embeddings import Embedder, check_embedder, unpack
from .indexing import embedding_text
from .search import (
    Candidate,
    DocumentFrequencies,
    eligible,
    fetch_candidates,
    idf,
    lexical_candidate_ids,
    same_context_candidate_ids,
    same_tool_candidate_ids,
)
from .terms import (
    comparable,
    contains_term,
    error_identifiers,
    glossed,
    is_tool_report,
    query_terms,
)

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["CLOSE_TAG", "OPEN_TAG", "Guidance", "GuidanceItem", "guidance_for"]

OPEN_TAG = "<memory-context>"
CLOSE_TAG = "</memory-context>"
_HEADER = "Lessons from earlier repairs in this workspace (most relevant first):"
# A CJK character pair cannot be counted by a trigram index (no IDF); it weighs this much.
_PAIR_WEIGHT = 0.5
# A tool's report shows in its first lines; a pasted megabyte is not scanned whole.
_REPORT_SCAN = 8_000

Why = Literal["exact context", "same tool", "same session", "same error", "similar text"]

_df = DocumentFrequencies()
_NO_OUTCOMES = OutcomeCounts()


@dataclass(frozen=True, slots=True)
class GuidanceItem:
    """One recalled repair. ``why`` says what matched; ``score`` is the ranking score."""

    repair_id: str
    category: str | None
    preference: str
    anti_pattern: str
    severity: str
    confidence: float
    validated: bool
    created_at: int
    score: float
    why: tuple[str, ...]
    tool_id: str | None = None
    project: str | None = None
    # Outcomes: the ranking factor from this repair's held/recurred record (1 = no evidence).
    effectiveness: float = 1.0


@dataclass(frozen=True, slots=True)
class Guidance:
    """Ranked items and how they were found (``mode``: ``semantic`` or ``lexical``)."""

    items: tuple[GuidanceItem, ...]
    mode: str = "lexical"
    char_budget: int = 1_200
    line_cap: int = 200

    def __bool__(self) -> bool:
        return bool(self.items)

    def render(self) -> str:
        """A ``<memory-context>`` block for the next turn, or ``""`` when there is nothing.

        Every line is one sanitised line of at most ``line_cap`` characters;
        items that would take the block past ``char_budget`` are left out.
        """
        if not self.items:
            return ""
        frame = len(OPEN_TAG) + len(CLOSE_TAG) + len(_HEADER) + 3
        lines: list[str] = []
        used = frame
        for n, item in enumerate(self.items, start=1):
            label = sanitize_line(f"{item.category or 'lesson'}, {item.severity}", 40)
            entry = [
                sanitize_line(f"{n}. [{label}] {item.preference}", self.line_cap),
                sanitize_line(f"   {item.anti_pattern}", self.line_cap),
            ]
            entry = [ln for ln in entry if ln]
            cost = sum(len(ln) + 1 for ln in entry)
            if used + cost > self.char_budget:
                break
            lines += entry
            used += cost
        if not lines:
            return ""
        return "\n".join([OPEN_TAG, _HEADER, *lines, CLOSE_TAG])


def _opt_str(name: str, value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInputError(f"{name} must be a str or None, got {type(value).__name__}")
    return value.strip() or None


def _limit(value: object, cfg: RecallConfig) -> int:
    if value is None:
        return cfg.default_limit
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInputError(f"limit must be a positive int, got {value!r}")
    return min(value, cfg.max_limit)


def guidance_for(
    store: Store,
    *,
    tool_id: str | None = None,
    context: str | None = None,
    query: str | None = None,
    project: str | None = None,
    session_id: str | None = None,
    limit: int | None = None,
    embedder: Embedder | None = None,
    config: RecallConfig | None = None,
    now: int | None = None,
    record: bool = True,
) -> Guidance:
    """Past repairs that apply to (tool, context, query), best first (module docstring).

    With ``session_id`` and ``record`` (the default), the items served are
    written to ``repair_served`` in one short transaction after the read
    (outcomes; skipped on a read-only store). ``FeedbackSubscriber.guidance_for``
    passes ``record=False`` and hands them to its background writer instead.
    """
    cfg = config if config is not None else RecallConfig()
    if not isinstance(cfg, RecallConfig):
        raise InvalidInputError(f"config must be a RecallConfig, got {type(cfg).__name__}")
    if not isinstance(store, Store):
        raise InvalidInputError(f"store must be a Store, got {type(store).__name__}")
    tool = _opt_str("tool_id", tool_id)
    ctx = _opt_str("context", context)
    text = _opt_str("query", query)
    proj = _opt_str("project", project)
    session = _opt_str("session_id", session_id)
    n = _limit(limit, cfg)
    emb = check_embedder(embedder)
    if now is not None and (isinstance(now, bool) or not isinstance(now, int) or now < 0):
        raise InvalidInputError(f"now must be epoch milliseconds, got {now!r}")
    mode = "semantic" if emb is not None else "lexical"
    evidence_text = text or ctx
    if evidence_text is None:
        return Guidance((), mode, cfg.render_char_budget, cfg.render_line_cap)

    qvec = emb.embed([glossed(evidence_text)])[0] if emb is not None else None
    at = now_ms() if now is None else now
    where = eligible(proj, at, cfg.unvalidated_max_age_ms)
    terms = query_terms(evidence_text)
    situation = query_terms(" ".join(part for part in (tool, ctx) if part))
    identifiers = error_identifiers(evidence_text)
    # A tool's report is its own problem; words of the caller's own are read
    # in the light of the situation they share (ALGORITHMS.md, "Recall").
    report = is_tool_report(evidence_text[:_REPORT_SCAN])
    exact_hash = context_hash_of(tool, ctx) if tool is not None and ctx is not None else None
    with store.connection(action="recalling guidance") as s:
        total = _df.total(store, s)
        lookup = tuple(dict.fromkeys(terms.indexed + situation.indexed))
        dfs = _df.of(store, s, lookup)
        ids: set[str] = set(lexical_candidate_ids(s, terms.indexed, where, cfg.candidate_limit, dfs, total))
        if exact_hash is not None:
            ids.update(same_context_candidate_ids(s, exact_hash, where, cfg.candidate_limit))
        if tool is not None:
            ids.update(same_tool_candidate_ids(s, tool, where, cfg.candidate_limit))
        if emb is not None and qvec is not None:
            from .vectors import nearest

            ids.update(i for i, _ in nearest(store, s, emb.model_name, qvec, proj, cfg.candidate_limit))
        candidates = fetch_candidates(s, ids, where)
        weights = _weights(terms.words, terms.short, dfs, total)
        situation_weights = _weights(situation.words, situation.short, dfs, total)
        passed: list[tuple[tuple[int, int, float], GuidanceItem, Candidate]] = []
        for c in candidates:
            item_key = _score(
                c,
                tool,
                exact_hash,
                text is None,
                session,
                weights,
                situation_weights,
                identifiers,
                report,
                qvec,
                emb,
                cfg,
            )
            if item_key is not None:
                passed.append((item_key[0], item_key[1], c))
        # Outcomes only for what passed the gate (one grouped query): they
        # reorder related repairs, never make an unrelated one related.
        outcome_counts = counts_for(s, (c.id for _, _, c in passed))

    scored: list[tuple[tuple[int, int, float], GuidanceItem, Candidate]] = []
    for (tier, validated, score), item, c in passed:
        factor = rank_factor(c.ts, outcome_counts.get(c.id, _NO_OUTCOMES), c.validated, at, cfg)
        item = dataclasses.replace(item, effectiveness=round(factor, 4))
        scored.append(((tier, validated, score * factor), item, c))
    scored.sort(key=lambda entry: entry[0], reverse=True)
    kept = _collapse(scored, emb, cfg.duplicate_similarity, n)
    if record and session is not None and kept and not store.read_only:
        record_served(store, kept, session, tool, ctx, at)
    return Guidance(tuple(kept), mode, cfg.render_char_budget, cfg.render_line_cap)


def _weights(
    words: tuple[str, ...], pairs: tuple[str, ...], dfs: dict[str, int], total: int
) -> dict[str, float]:
    # Words by IDF; CJK text by its character pairs (terms.py says why), not
    # by the 3-character windows the search uses.
    out = {t: idf(dfs.get(t, 0), total) for t in words}
    out.update({t: _PAIR_WEIGHT for t in pairs})
    return out


def _share(weights: dict[str, float], text: str) -> float:
    """The share of ``weights``' mass whose terms occur in ``text`` (0 when there are none)."""
    mass = sum(weights.values())
    # ``in`` first: most terms are absent, and it is cheaper than the word-start check.
    found = sum(w for t, w in weights.items() if t in text and contains_term(text, t))
    return found / mass if mass > 0 else 0.0


def _score(
    c: Candidate,
    tool: str | None,
    exact_hash: str | None,
    no_query: bool,
    session: str | None,
    weights: dict[str, float],
    situation_weights: dict[str, float],
    identifiers: tuple[str, ...],
    report: bool,
    qvec: npt.NDArray[np.float32] | None,
    emb: Embedder | None,
    cfg: RecallConfig,
) -> tuple[tuple[int, int, float], GuidanceItem] | None:
    problem = embedding_text(c.source_text)
    lexical = _share(weights, comparable(problem))
    same_error = any(ident in problem for ident in identifiers)
    overlap = _share(situation_weights, comparable(f"{c.tool_id or ''} {c.context or ''}"))
    cosine = _cosine(c, qvec, emb)
    if cosine is not None:
        evidence = cfg.semantic_weight * cosine + (1.0 - cfg.semantic_weight) * lexical
        threshold, gate_weight = cfg.min_score_semantic, cfg.described_situation_weight_semantic
    else:
        evidence, threshold = lexical, cfg.min_score_lexical
        gate_weight = cfg.described_situation_weight_lexical
    if report:
        gate_weight = cfg.situation_weight
    exact = exact_hash is not None and c.context_hash == exact_hash
    same_tool = tool is not None and c.tool_id == tool
    related = evidence >= threshold and (same_error or evidence >= gate_weight * overlap)
    if not related and not (exact and no_query):
        return None
    why: list[str] = []
    if exact:
        why.append("exact context")
    elif same_tool:
        why.append("same tool")
    if session is not None and c.session_id == session:
        why.append("same session")
    if related:
        why.append("same error" if same_error else "similar text")
    score = evidence + cfg.exact_context_bonus * exact + cfg.same_tool_bonus * same_tool
    tier = 2 if exact else 1 if same_tool else 0
    item = GuidanceItem(
        repair_id=c.id,
        category=c.category,
        preference=c.preference,
        anti_pattern=c.anti_pattern,
        severity=c.severity,
        confidence=c.confidence,
        validated=c.validated,
        created_at=c.ts,
        score=round(score, 4),
        why=tuple(why),
        tool_id=c.tool_id,
        project=c.project,
    )
    return (tier, int(c.validated), score), item


def _cosine(c: Candidate, qvec: npt.NDArray[np.float32] | None, emb: Embedder | None) -> float | None:
    if qvec is None or emb is None or c.embedding is None or c.embedding_model != emb.model_name:
        return None
    vec = unpack(c.embedding, int(qvec.shape[0]))
    return None if vec is None else float(vec @ qvec)


def _tokens(c: Candidate) -> frozenset[str]:
    return frozenset(query_terms(f"{c.preference} {c.anti_pattern}", limit=10_000).all())


def _collapse(
    scored: list[tuple[tuple[int, int, float], GuidanceItem, Candidate]],
    emb: Embedder | None,
    threshold: float,
    limit: int,
) -> list[GuidanceItem]:
    """Keep the better-ranked of near-duplicate repairs, up to ``limit`` items."""
    kept: list[tuple[GuidanceItem, Candidate, frozenset[str]]] = []
    for _, item, cand in scored:
        tokens = _tokens(cand)
        if any(
            _duplicate(cand, tokens, other, other_tokens, emb, threshold) for _, other, other_tokens in kept
        ):
            continue
        kept.append((item, cand, tokens))
        if len(kept) >= limit:
            break
    return [item for item, _, _ in kept]


def _duplicate(
    a: Candidate,
    a_tokens: frozenset[str],
    b: Candidate,
    b_tokens: frozenset[str],
    emb: Embedder | None,
    threshold: float,
) -> bool:
    if emb is not None and a.embedding and b.embedding and a.embedding_model == b.embedding_model:
        va, vb = unpack(a.embedding), unpack(b.embedding)
        if va is not None and vb is not None and va.shape == vb.shape:
            return float(va @ vb) >= threshold
    if not a_tokens or not b_tokens:
        return a.preference == b.preference and a.anti_pattern == b.anti_pattern
    return len(a_tokens & b_tokens) / len(a_tokens | b_tokens) >= threshold
