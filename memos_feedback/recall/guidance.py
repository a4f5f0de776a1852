"""``guidance_for``: the few past repairs that apply to what the agent is about to do.

Read-only and bounded: a handful of indexed queries and a scoring pass over
at most a few hundred candidate rows. The ranking (ALGORITHMS.md, "Recall"):

1. **Eligible** (in SQL): never rejected; global, or of the caller's
   project; validated, or younger than ``unvalidated_max_age_ms``.
2. **Candidates**: repairs for the exact (tool, context), the newest of the
   same tool, the validated ones of the exact (tool, context) (always), the database's text
   search over the query's terms, and — with an embedder — the nearest
   embeddings.
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
   written for gets that repair. Then the **problem gate**
   (``problem_gate``): a candidate that passed is compared with the query
   part by part and dropped when a learned probability that it is about
   the query's problem is under ``problem_gate_threshold``.
5. **Order**: exact (tool, context) first, then the same tool, then the
   rest; within each, validated before unvalidated, then by score times
   the repair's outcome factor (``memos_feedback.outcomes.estimate``:
   Beta posterior of "it held", with age decay for unvalidated repairs).
   Then the principle rules (``principles``): within one situation the
   user's own word ranks above a lesson inferred from failures.
6. Near-duplicates collapse to the better-ranked one; at most ``limit``.
7. With a ``judge`` (off by default): one request asks a model which of the
   borderline items (passed on "similar text" alone, the problem gate not
   sure of them) apply; those it says do not are dropped, any failure keeps
   the offline answer (``recall.judge``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Literal, TypeVar

from .._checks import check_int
from ..embeddings import Embedder, check_embedder
from ..errors import InvalidInputError
from ..outcomes.estimate import OutcomeCounts, counts_for, rank_factor
from ..outcomes.ledger import record_served
from ..signals import context_hash_of
from ..store import Store
from ..store.search import Candidate, search_reader
from ..text.lessons import has_cjk
from ..text.sanitize import sanitize_line
from ..types import now_ms
from .config import RecallConfig
from .eligibility import eligible
from .frequencies import DocumentFrequencies
from .judge import JudgeOutcome, RelevanceJudge, consult
from .principles import user_word_first
from .problem_gate import GateModel, QueryParts, shipped_model
from .scoring import Passed, Scorer, Weights
from .search import CandidateRead, read_candidates
from .situation import Situation, situation_of
from .terms import error_identifiers, glossed, is_tool_report, query_terms
from .vectors import Similarities, similarities

__all__ = ["CLOSE_TAG", "OPEN_TAG", "Guidance", "GuidanceItem", "guidance_for"]

OPEN_TAG = "<memory-context>"
CLOSE_TAG = "</memory-context>"
_HEADER = "Lessons from earlier repairs in this workspace (most relevant first):"
# Before an item's second line (what to avoid), under its first.
_INDENT = "   "
# A tool's report shows in its first lines; a pasted megabyte is not scanned whole.
_REPORT_SCAN = 8_000

_T = TypeVar("_T")

Why = Literal["exact context", "same tool", "same session", "same error", "similar text"]

_df = DocumentFrequencies()
# Frozen, so one instance serves every call without a config (building one validates it: ~30 us).
_DEFAULT_CONFIG = RecallConfig()
# The multilingual-e5 embedder's model names (``embeddings.e5``) begin so.
_E5_MODEL_PREFIX = "multilingual-e5"
_NO_OUTCOMES = OutcomeCounts()
# Lexical mode: no cosine for anyone.
_NO_VECTORS = Similarities([], {}, {}, {})


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
    # When the lesson applies (the call and the error it was written from),
    # said in front of it by ``Guidance.render`` (``recall.situation``).
    situation: Situation = field(default_factory=Situation)


@dataclass(frozen=True, slots=True)
class Guidance:
    """Ranked items and how they were found (``mode``: ``semantic`` or ``lexical``).

    ``judge``: ``"off"`` (none given), ``"not asked"`` (nothing borderline),
    ``"answered"`` (the model's answer was used) or ``"fell back"`` (no
    usable answer: the offline one was kept).
    """

    items: tuple[GuidanceItem, ...]
    mode: str = "lexical"
    char_budget: int = 1_200
    line_cap: int = 200
    judge: JudgeOutcome = "off"

    def __bool__(self) -> bool:
        return bool(self.items)

    def render(self) -> str:
        """A ``<memory-context>`` block for the next turn, or ``""`` when there is nothing.

        Each item is a numbered line with its category, severity, the
        situation it applies to when known (``When `pnpm build` fails with
        ERR_X:``, in the lesson's language, only in the room the lesson
        leaves) and its preference, then its anti-pattern indented below.
        Every line is one line of at most ``line_cap`` characters, the
        repair's text in it sanitised (``sanitize_line``); an item that
        would take the block past ``char_budget`` goes without its
        situation, and is left out if even that does not fit.
        """
        lines = [line for _, entry in self._entries() for line in entry]
        if not lines:
            return ""
        return "\n".join([OPEN_TAG, _HEADER, *lines, CLOSE_TAG])

    def shown(self) -> tuple[GuidanceItem, ...]:
        """The items ``render`` puts in the block (those with text, within the budget)."""
        return tuple(item for item, _ in self._entries())

    def _entries(self) -> list[tuple[GuidanceItem, list[str]]]:
        frame = len(OPEN_TAG) + len(CLOSE_TAG) + len(_HEADER) + 3
        out: list[tuple[GuidanceItem, list[str]]] = []
        used = frame
        for item in self.items:
            # The repair's text is sanitised on its own and the number, label
            # and indent are put in front afterwards: sanitising them with it
            # would strip them as a line's leading list markup.
            label = sanitize_line(f"{item.category or 'lesson'}, {item.severity}", 40)
            head = f"{len(out) + 1}. [{label}] "
            prefer = sanitize_line(item.preference, max(1, self.line_cap - len(head)))
            avoid = sanitize_line(item.anti_pattern, max(1, self.line_cap - len(_INDENT)))
            texts = [t for t in (prefer, avoid) if t]
            if not texts:
                continue
            room = self.line_cap - len(head) - len(texts[0]) - 1
            clause = item.situation.clause(chinese=has_cjk(" ".join(texts)), cap=room) if room > 0 else ""
            entry = self._entry(head, clause, texts)
            if clause and used + _cost(entry) > self.char_budget:
                entry = self._entry(head, "", texts)  # the lesson before what it applies to
            if used + _cost(entry) > self.char_budget:
                break
            out.append((item, entry))
            used += _cost(entry)
        return out

    def _entry(self, head: str, clause: str, texts: list[str]) -> list[str]:
        """An item's lines; the clause goes between the head and the lesson it belongs to."""
        first = f"{clause}{'' if clause.endswith('：') else ' '}{texts[0]}" if clause else texts[0]
        # (A line cap shorter than the head itself cuts the head too.)
        return [(head + first)[: self.line_cap], *((_INDENT + t)[: self.line_cap] for t in texts[1:])]


def _cost(entry: list[str]) -> int:
    return sum(len(ln) + 1 for ln in entry)


def _opt_str(name: str, value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInputError(f"{name} must be a str or None, got {type(value).__name__}")
    return value.strip() or None


def _limit(value: object, cfg: RecallConfig) -> int:
    if value is None:
        return cfg.default_limit
    return min(check_int("limit", value, lo=1), cfg.max_limit)


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
    user: str | None = None,
    config: RecallConfig | None = None,
    now: int | None = None,
    record: bool = True,
    judge: RelevanceJudge | None = None,
) -> Guidance:
    """Past repairs that apply to (tool, context, query), best first (module docstring).

    ``project`` and ``user`` are the caller's scope: repairs of no project
    (global) or of ``project``, of no user or of ``user`` (docs/RECALL.md, "Scope").

    With ``session_id`` and ``record`` (the default), the items served are
    written to ``repair_served`` in one short transaction after the read
    (outcomes; skipped on a read-only store). ``FeedbackSubscriber.guidance_for``
    passes ``record=False`` and hands them to its background writer instead.

    ``judge`` (a ``RelevanceJudge``) lets a model read the borderline
    items, after the database read, within ``config.judge_timeout_s``.
    """
    cfg = config if config is not None else _DEFAULT_CONFIG
    if not isinstance(cfg, RecallConfig):
        raise InvalidInputError(f"config must be a RecallConfig, got {type(cfg).__name__}")
    if not isinstance(store, Store):
        raise InvalidInputError(f"store must be a Store, got {type(store).__name__}")
    tool = _opt_str("tool_id", tool_id)
    ctx = _opt_str("context", context)
    text = _opt_str("query", query)
    proj = _opt_str("project", project)
    who = _opt_str("user", user)
    session = _opt_str("session_id", session_id)
    n = _limit(limit, cfg)
    emb = check_embedder(embedder)
    if judge is not None and not isinstance(judge, RelevanceJudge):
        raise InvalidInputError(f"judge must be a RelevanceJudge or None, got {type(judge).__name__}")
    if now is not None and (isinstance(now, bool) or not isinstance(now, int) or now < 0):
        raise InvalidInputError(f"now must be epoch milliseconds, got {now!r}")
    mode = "semantic" if emb is not None else "lexical"
    evidence_text = text or ctx
    if evidence_text is None:
        return Guidance((), mode, cfg.render_char_budget, cfg.render_line_cap)

    qvec = emb.embed([glossed(evidence_text)])[0] if emb is not None else None
    at = now_ms() if now is None else now
    where = eligible(proj, at, cfg.unvalidated_max_age_ms, who)
    terms = query_terms(evidence_text)
    situation = query_terms(" ".join(part for part in (tool, ctx) if part))
    identifiers = error_identifiers(evidence_text)
    # A tool's report is its own problem; words of the caller's own are read
    # in the light of the situation they share (ALGORITHMS.md, "Recall").
    report = is_tool_report(evidence_text[:_REPORT_SCAN])
    exact_hash = context_hash_of(tool, ctx) if tool is not None and ctx is not None else None
    with store.reading(action="recalling guidance") as s:
        reads = search_reader(s)
        total = _df.total(store, s)
        lookup = tuple(dict.fromkeys(terms.indexed + situation.indexed))
        matched: dict[str, list[str]] = {}  # the ids of terms counted just now (when few)
        # PostgreSQL: a few terms not counted yet are counted in the candidates'
        # statement, not in a round trip of their own (``read_candidates``).
        counting: list[str] = []
        dfs = _df.of(store, s, lookup, matched, defer=counting)
        sims = _NO_VECTORS
        # PostgreSQL: whether repairs were embedded since the matrix was last
        # read is asked in the candidates' statement, not in a round trip of its own.
        ask = reads.folds_into_candidates and emb is not None
        if emb is not None and qvec is not None:
            sims = similarities(store, s, emb.model_name, qvec, proj, cfg.neighbour_limit, refresh=not ask)

        def read(vectors: Similarities) -> CandidateRead:
            # Every source and the rows in one statement (a round trip each on PostgreSQL).
            return read_candidates(
                s,
                where,
                cfg.candidate_limit,
                terms=terms.indexed,
                frequencies=dfs,
                total=total,
                context_hash=exact_hash,
                tool_id=tool,
                vector_ids=[i for i, _ in vectors.top],
                matched=matched,
                newer_than=(emb.model_name, vectors.last_id) if ask and emb is not None else None,
                counting=counting,
            )

        got = read(sims)
        if got.counted:
            dfs.update(got.counted)
            _df.remember(store, got.counted)
            counting = []  # a second read (below) takes them as counted
        if ask and emb is not None and qvec is not None and got.newer_embedded is not False:
            # Newer embeddings (or no row to say): read them, and the rows
            # again if they change the nearest repairs.
            fresh = similarities(store, s, emb.model_name, qvec, proj, cfg.neighbour_limit)
            if {i for i, _ in fresh.top} != {i for i, _ in sims.top}:
                got = read(fresh)
            sims = fresh
        found = got.rows
        scorer = Scorer(
            tool=tool,
            exact_hash=exact_hash,
            no_query=text is None,
            session=session,
            weights=Weights(terms.words, terms.short, dfs, total),
            situation_weights=Weights(situation.words, situation.short, dfs, total),
            identifiers=identifiers,
            report=report,
            cfg=cfg,
            gate=_problem_gate(tool, ctx, evidence_text, cfg),
            semantic_min=_model_minimum(emb, cfg),
        )
        passed = scorer.passed(found, sims.cosines([c.id for c in found]))
        # Outcomes: they reorder related repairs, never make an unrelated one
        # related. Read with the rows on PostgreSQL; on SQLite only for what
        # passed the gate (one grouped query).
        outcome_counts = got.outcomes
        if outcome_counts is None:
            outcome_counts = counts_for(s, (p.candidate.id for p in passed))

    scored: list[tuple[tuple[int, int, float], Passed, float]] = []
    prior = cfg.outcome_prior  # recall configures it; outcomes owns the estimate
    for p in passed:
        c = p.candidate
        factor = rank_factor(c.ts, outcome_counts.get(c.id, _NO_OUTCOMES), c.validated, at, prior)
        scored.append(((p.tier, int(c.validated), p.score * factor), p, factor))
    scored.sort(key=lambda entry: entry[0], reverse=True)
    ranked = user_word_first([(p.candidate, (p, factor)) for _, p, factor in scored], _candidate)
    # With a judge, room for the ones it may drop (each dropped one's place goes to the next).
    room = n if judge is None else n + cfg.judge_max_candidates
    kept = _collapse(ranked, sims, cfg.duplicate_similarity, room)
    kept, verdict = consult(
        judge,
        kept,
        query=evidence_text,
        tool_id=tool,
        context=ctx,
        timeout=cfg.judge_timeout_s,
        cap=cfg.judge_max_candidates,
        limit=n,
        no_query=text is None,
        sure=cfg.judge_sure_probability,
    )
    items = [_item(p, factor) for p, factor in kept]
    if record and session is not None and items and not store.read_only:
        record_served(store, items, session, tool, ctx, at)
    return Guidance(tuple(items), mode, cfg.render_char_budget, cfg.render_line_cap, verdict)


def _problem_gate(
    tool: str | None, ctx: str | None, text: str, cfg: RecallConfig
) -> tuple[GateModel, QueryParts] | None:
    """The problem gate's model and the query's parts, or None when the gate is off (threshold 0)."""
    if cfg.problem_gate_threshold <= 0.0:
        return None
    return shipped_model(), QueryParts.of(tool, ctx, text)


def _model_minimum(emb: Embedder | None, cfg: RecallConfig) -> float | None:
    """The semantic minimum of the embedder's model, where it differs from ``min_score_semantic``."""
    if emb is not None and emb.model_name.startswith(_E5_MODEL_PREFIX):
        return cfg.min_score_multilingual_e5
    return None


def _candidate(entry: tuple[Candidate, object]) -> Candidate:
    return entry[0]


def _item(p: Passed, factor: float) -> GuidanceItem:
    c = p.candidate
    return GuidanceItem(
        repair_id=c.id,
        category=c.category,
        preference=c.preference,
        anti_pattern=c.anti_pattern,
        severity=c.severity,
        confidence=c.confidence,
        validated=c.validated,
        created_at=c.ts,
        score=round(p.score, 4),
        why=p.why,
        tool_id=c.tool_id,
        project=c.project,
        effectiveness=round(factor, 4),
        situation=situation_of(c.tool_id, c.context, c.source_text),
    )


@functools.lru_cache(maxsize=4_096)
def _tokens(preference: str, anti_pattern: str) -> frozenset[str]:
    """A repair's lesson as a set of terms (near duplicates without embeddings), cached."""
    return frozenset(query_terms(f"{preference} {anti_pattern}", limit=10_000).all())


def _collapse(
    ranked: list[tuple[Candidate, _T]],
    sims: Similarities,
    threshold: float,
    limit: int,
) -> list[_T]:
    """Keep the better-ranked of near-duplicate repairs, up to ``limit`` (what goes with each)."""
    kept: list[tuple[_T, Candidate]] = []
    for cand, item in ranked:
        if any(_duplicate(cand, other, sims, threshold) for _, other in kept):
            continue
        kept.append((item, cand))
        if len(kept) >= limit:
            break
    return [item for item, _ in kept]


def _duplicate(a: Candidate, b: Candidate, sims: Similarities, threshold: float) -> bool:
    cosine = sims.between(a.id, b.id)
    if cosine is not None:
        return cosine >= threshold
    a_tokens, b_tokens = _tokens(a.preference, a.anti_pattern), _tokens(b.preference, b.anti_pattern)
    if not a_tokens or not b_tokens:
        return a.preference == b.preference and a.anti_pattern == b.anti_pattern
    return len(a_tokens & b_tokens) / len(a_tokens | b_tokens) >= threshold
