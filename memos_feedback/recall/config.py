"""``RecallConfig``: the tunables of guidance recall, validated like ``FeedbackConfig``.

Every weight and threshold here is documented in ALGORITHMS.md ("Recall");
the defaults are round numbers calibrated on ``tests/data/recall_dev.jsonl``
(odd and even cases separately, to check they generalise).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from ..config import RECALL_TABLE, FeedbackConfig, toml_table
from ..errors import ConfigError
from ..outcomes.estimate import OutcomePrior

__all__ = ["RECALL_ENV_PREFIX", "RecallConfig", "load_config"]

RECALL_ENV_PREFIX = "MEMOS_FEEDBACK_RECALL_"

_DAY_MS = 24 * 3_600_000


@dataclass(frozen=True, slots=True)
class RecallConfig:
    """Recall settings (``docs/CONFIG.md``, section "Recall"). Durations are ms."""

    # Unvalidated repairs are offered only while younger than this.
    unvalidated_max_age_ms: int = 7 * _DAY_MS
    default_limit: int = 5
    max_limit: int = 20
    # Relatedness gate (see ALGORITHMS.md): below it, nothing is returned.
    min_score_semantic: float = 0.20
    min_score_lexical: float = 0.15
    # The semantic minimum with the multilingual-e5 embedder instead: its
    # cosines sit higher (0.8-0.9 for any two engineering texts), so at
    # 0.20 far queries pass. Chosen on the training domains (the lowest
    # whose far injection there is within 0.05).
    min_score_multilingual_e5: float = 0.5
    # Weight of the embedding cosine against the lexical coverage (the share
    # of the query's IDF mass found in the repair's lesson, error and trace)
    # when both exist.
    semantic_weight: float = 0.5
    # A repair must be related by more than the situation it shares with the
    # caller: evidence >= situation_weight * (share of the caller's tool and
    # context terms found in the repair's tool and context). Near misses —
    # same tool and context, different problem — fail here.
    situation_weight: float = 0.7
    # The same test for a query in the caller's own words (no tool report in
    # it: no error word, code, class, log level or HTTP status): sharing the
    # situation is then a reason to believe the repair applies, not a sign
    # of a near miss, so the bar is lower. One per evidence scale, like the
    # minimum scores.
    described_situation_weight_semantic: float = 0.3
    described_situation_weight_lexical: float = 0.2
    # The problem gate (``recall.problem_gate``): the probability that a
    # candidate which passed the text gate is about the query's problem, at
    # least this, or it is dropped; 0 turns the gate off. The default is
    # the threshold chosen on the training domains (``problem_gate.json``).
    problem_gate_threshold: float = 0.26
    # Small boosts inside the ranking (never enough to pass the gate alone).
    same_tool_bonus: float = 0.05
    exact_context_bonus: float = 0.1
    # With an embedder, a session trace without the repair's keyword is still
    # evidence when its text is at least this close (cosine) to the repair's
    # tool, context, user words and failure reasons.
    evidence_similarity: float = 0.5
    # Two items this similar (cosine, or token Jaccard without embeddings) collapse.
    duplicate_similarity: float = 0.92
    # Candidates fetched from each source before ranking (text search, the
    # exact context, the tool) ...
    candidate_limit: int = 50
    # ... and from the nearest embeddings. Fewer: the nearest by meaning are
    # ranked by the same cosine that weighs half their score, so the few
    # nearest hold the ones that can make the top items, while a text match
    # or a tool's repair can rank high however far down its own list it was.
    neighbour_limit: int = 25
    # Total characters of the rendered <memory-context> block, and per line.
    render_char_budget: int = 1_200
    render_line_cap: int = 200
    # Effectiveness (ALGORITHMS.md, "Outcomes"): a Beta(prior_held,
    # prior_failed) prior over "following this repair holds", updated by
    # its outcomes; unvalidated repairs also halve in weight every
    # half-life since they were written or last held.
    effectiveness_prior_held: float = 1.0
    effectiveness_prior_failed: float = 1.0
    unvalidated_half_life_ms: int = 3 * _DAY_MS
    # The optional reading judge (``recall.judge``; only when a host passes
    # one): the deadline of its one request per call, in seconds, and how
    # many borderline candidates that request may list.
    judge_timeout_s: float = 2.0
    judge_max_candidates: int = 8
    # A candidate the problem gate gives at least this probability is not
    # borderline: on the training domains 97 % of the served repairs this
    # sure were relevant (1 asks about every "similar text" candidate).
    judge_sure_probability: float = 0.6
    # Project given to a repair whose trigger names none (None = global).
    default_project: str | None = None

    def __post_init__(self) -> None:
        _validate(self)

    @property
    def outcome_prior(self) -> OutcomePrior:
        """The effectiveness prior and half-life, as outcomes takes them."""
        return OutcomePrior(
            held=self.effectiveness_prior_held,
            failed=self.effectiveness_prior_failed,
            half_life_ms=self.unvalidated_half_life_ms,
        )

    @classmethod
    def keys(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any], base: RecallConfig | None = None) -> RecallConfig:
        """Build from a mapping; unknown keys raise ``ConfigError``."""
        if not isinstance(values, Mapping):
            raise ConfigError("values", values, "must be a mapping of setting name to value")
        if base is not None and not isinstance(base, RecallConfig):
            raise ConfigError("base", base, "must be a RecallConfig or None")
        known = set(cls.keys())
        for key in values:
            if key not in known:
                raise ConfigError(str(key), values[key], "unknown key")
        return dataclasses.replace(base or cls(), **dict(values))

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, base: RecallConfig | None = None
    ) -> RecallConfig:
        """Read ``MEMOS_FEEDBACK_RECALL_<KEY>`` variables over ``base``."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for f in fields(cls):
            raw = env.get(RECALL_ENV_PREFIX + f.name.upper())
            if raw is None:
                continue
            if not isinstance(raw, str):
                raise ConfigError(f.name, raw, f"{RECALL_ENV_PREFIX + f.name.upper()} must be a str")
            values[f.name] = _parse(f.name, raw, f.default)
        return cls.from_mapping(values, base)

    @classmethod
    def from_toml(cls, path: str | os.PathLike[str], base: RecallConfig | None = None) -> RecallConfig:
        """Read keys from the ``recall`` sub-table of the file's ``memos_feedback`` table.

        ``[memos_feedback.recall]`` (or ``[tool.memos_feedback.recall]``, or a
        top-level ``[recall]`` in a file of our own); no such table: ``base``.
        """
        table = toml_table(path).get(RECALL_TABLE, {})
        if not isinstance(table, dict):
            raise ConfigError(RECALL_TABLE, table, "must be a TOML table")
        return cls.from_mapping(table, base)


def load_config(
    *,
    toml: str | os.PathLike[str] | None = None,
    environ: Mapping[str, str] | None = None,
    mapping: Mapping[str, Any] | None = None,
) -> tuple[FeedbackConfig, RecallConfig]:
    """Both configs from one set of sources, each over the one before.

    Defaults, then the TOML file (when given), then the environment
    (``MEMOS_FEEDBACK_<KEY>`` and ``MEMOS_FEEDBACK_RECALL_<KEY>``;
    ``os.environ`` unless ``environ`` is given), then ``mapping``: the
    pipeline's keys, and the recall keys under ``"recall"``. What a
    subscriber given no config uses (``attach_feedback_subscriber``).
    """
    feedback, recall = FeedbackConfig(), RecallConfig()
    if toml is not None:
        feedback, recall = FeedbackConfig.from_toml(toml), RecallConfig.from_toml(toml)
    feedback = FeedbackConfig.from_env(environ, feedback)
    recall = RecallConfig.from_env(environ, recall)
    if mapping is not None:
        if not isinstance(mapping, Mapping):
            raise ConfigError("mapping", mapping, "must be a mapping of setting name to value")
        nested = mapping.get(RECALL_TABLE, {})
        if not isinstance(nested, Mapping):
            raise ConfigError(RECALL_TABLE, nested, "must be a mapping of recall setting to value")
        feedback = FeedbackConfig.from_mapping(
            {k: v for k, v in mapping.items() if k != RECALL_TABLE}, feedback
        )
        recall = RecallConfig.from_mapping(nested, recall)
    return feedback, recall


def _parse(key: str, raw: str, default: object) -> object:
    text = raw.strip()
    if default is None or isinstance(default, str):
        return text or None
    try:
        if isinstance(default, int):
            return int(text.replace("_", ""))
        return float(text)
    except ValueError:
        raise ConfigError(key, raw, "expected a number") from None


def _validate(cfg: RecallConfig) -> None:
    for f in fields(cfg):
        value = getattr(cfg, f.name)
        if f.default is None:
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise ConfigError(f.name, value, "expected a non-empty str or None")
        elif isinstance(f.default, int):
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(f.name, value, "expected an integer")
        elif isinstance(f.default, float):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
                raise ConfigError(f.name, value, "expected a finite number")
            if value in (float("inf"), float("-inf")):
                raise ConfigError(f.name, value, "expected a finite number")
            object.__setattr__(cfg, f.name, float(value))
    for key in ("effectiveness_prior_held", "effectiveness_prior_failed"):
        if not 0.0 < getattr(cfg, key) <= 1_000.0:
            raise ConfigError(key, getattr(cfg, key), "must be in (0, 1000]")
    for key in (
        "unvalidated_max_age_ms",
        "unvalidated_half_life_ms",
        "candidate_limit",
        "neighbour_limit",
        "render_char_budget",
        "render_line_cap",
    ):
        if getattr(cfg, key) < 1:
            raise ConfigError(key, getattr(cfg, key), "must be >= 1")
    if not 1 <= cfg.default_limit <= cfg.max_limit:
        raise ConfigError("default_limit", cfg.default_limit, f"must be in [1, max_limit={cfg.max_limit}]")
    if cfg.max_limit > 100:
        raise ConfigError("max_limit", cfg.max_limit, "must be <= 100")
    for key in (
        "min_score_semantic",
        "min_score_lexical",
        "min_score_multilingual_e5",
        "semantic_weight",
        "situation_weight",
        "described_situation_weight_semantic",
        "described_situation_weight_lexical",
        "problem_gate_threshold",
        "judge_sure_probability",
        "evidence_similarity",
        "duplicate_similarity",
    ):
        if not 0.0 <= getattr(cfg, key) <= 1.0:
            raise ConfigError(key, getattr(cfg, key), "must be in [0, 1]")
    if not 0.0 < cfg.judge_timeout_s <= 60.0:
        raise ConfigError("judge_timeout_s", cfg.judge_timeout_s, "must be in (0, 60] seconds")
    if not 1 <= cfg.judge_max_candidates <= 20:
        raise ConfigError("judge_max_candidates", cfg.judge_max_candidates, "must be in [1, 20]")
    for key in ("same_tool_bonus", "exact_context_bonus"):
        if not 0.0 <= getattr(cfg, key) <= 0.5:
            raise ConfigError(key, getattr(cfg, key), "must be in [0, 0.5]")
