"""``memos-feedback train``: fit the classifier's learned tiers and write their artefacts.

    memos-feedback train [--data-dir tests/data] [--tier both|semantic|ngrams|clauses] [--out PATH] [--check]
    python -m memos_feedback.devtools.train [same options]   (the same code: ``add_arguments`` / ``run``)

The semantic tier is fitted by ``semantic_train``, the n-gram tier by
``ngram_train``; the labelled files both read are named in ``labels``.
``--tier clauses`` fits the lesson clause scorer instead (``clause_train``,
from the recall corpus's references; never part of ``both``).
scikit-learn is needed here only (``pip install 'memos-feedback[train]'``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from ..classify.learned import MODEL_PATH
from ..errors import TrainingUnavailableError
from .labels import data_sha256, default_data_dir
from .ngram_train import MISSING_SKLEARN, to_json, train

__all__ = ["add_arguments", "main", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``memos-feedback train`` and ``memos-feedback train`` (one definition)."""
    parser.add_argument("--data-dir", type=Path, default=None, help="labelled data (default: tests/data)")
    parser.add_argument(
        "--tier",
        choices=("both", "semantic", "ngrams", "clauses", "recall-gate"),
        default=None,
        help="which artefact to write: the semantic tier (needs the e5 extra), the n-gram tier, or both "
        "(the default; with --out, the n-gram tier, as before there were two); the lesson clause scorer; or "
        "recall's problem gate",
    )
    parser.add_argument("--out", type=Path, default=None, help="artefact path (one tier only)")
    parser.add_argument(
        "--check", action="store_true", help="exit 1 when the shipped artefact's data hash is stale"
    )


def run(args: argparse.Namespace) -> int:
    """Train and write the artefact (or, with ``--check``, only compare the data hash).

    Raises ``TrainingUnavailableError`` when scikit-learn is missing; both
    command lines turn it into one line naming the extra to install.
    """
    data_dir = args.data_dir or default_data_dir()
    tier = args.tier or ("ngrams" if args.out is not None else "both")
    tiers = ("semantic", "ngrams") if tier == "both" else (tier,)
    if args.out is not None and len(tiers) > 1:
        raise TrainingUnavailableError("--out names one artefact: pass --tier semantic or --tier ngrams")
    paths = {tier: Path(args.out) if args.out else _default_path(tier) for tier in tiers}
    if args.check:
        return max(_check(path, data_dir, tier) for tier, path in paths.items())
    try:
        import sklearn  # type: ignore[import-untyped]  # noqa: F401
    except ImportError:
        raise TrainingUnavailableError(MISSING_SKLEARN) from None
    for tier, out in paths.items():
        started = time.perf_counter()
        text = _train_tier(tier, data_dir)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
        seconds = time.perf_counter() - started
        print(f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB) in {seconds:.0f} s", flush=True)
    return 0


def _default_path(tier: str) -> Path:
    from ..classify.semantic import SEMANTIC_PATH
    from ..synthesis.clause_scorer import WEIGHTS_PATH
    from .recall_gate import GATE_PATH

    return {"semantic": SEMANTIC_PATH, "clauses": WEIGHTS_PATH, "recall-gate": GATE_PATH}.get(
        tier, MODEL_PATH
    )


def _check(path: Path, data_dir: Path, tier: str) -> int:
    if tier == "clauses":
        from .clause_train import stale

        is_stale = stale(path, data_dir)
    elif tier == "recall-gate":
        from .recall_gate import stale as gate_stale

        is_stale = gate_stale(path, data_dir)
    else:
        is_stale = json.loads(path.read_text(encoding="utf-8")).get("data_sha256") != data_sha256(data_dir)
    if is_stale:
        again = (
            f"memos-feedback train --tier {tier}"
            if tier in ("clauses", "recall-gate")
            else "memos-feedback train"
        )
        print(f"{path} is stale; retrain with: {again}")
        return 1
    print(f"{path} is up to date")
    return 0


def _train_tier(tier: str, data_dir: Path) -> str:
    def log(message: str) -> None:
        print(f"[{tier}] {message}", flush=True)

    if tier == "ngrams":
        return to_json(train(data_dir, log=log)[0])
    if tier == "clauses":
        from .clause_train import fitted_json

        return fitted_json(data_dir)
    if tier == "recall-gate":
        from .recall_gate import trained_json

        return trained_json(data_dir, log=log)
    from ..embeddings.e5 import E5_EXTRA_HINT, e5_available

    if not e5_available():
        raise TrainingUnavailableError(f"the semantic tier needs the multilingual model: {E5_EXTRA_HINT}")
    from .semantic_train import train_semantic

    return train_semantic(data_dir, log=log).to_json()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="memos-feedback train", description="Train the classifier's learned tier."
    )
    add_arguments(parser)
    try:
        return run(parser.parse_args(argv))
    except TrainingUnavailableError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
