"""Maintainers' commands: ``train`` (the classifier's learned tier) and
``eval`` (score the classifier or recall on labelled files). Both run the
code in ``memos_feedback.devtools``."""

from __future__ import annotations

import argparse

from ..classify.learned import MODEL_PATH
from ._commands import Commands

__all__ = ["register"]


def register(cli: Commands) -> None:
    from ..devtools.train import add_arguments

    p = cli.add(
        "train",
        cmd_train,
        "retrain the classifier's learned tier from tests/data (extra [train]; same as python -m "
        "memos_feedback.devtools.train), or `train recall`: recall's relevance gate from tests/data/recall",
    )
    p.add_argument("what", nargs="?", choices=("classifier", "recall"), default="classifier")
    add_arguments(p)
    p.add_argument(
        "--lexical-only",
        action="store_true",
        help="recall: train the lexical gate only (no embeddings extra)",
    )
    p = cli.add("eval", cmd_eval, "score the classifier (or `eval recall ...`) on labelled JSONL")
    p.add_argument("rest", nargs=argparse.REMAINDER, help="the evaluation's own arguments (see eval --help)")


def cmd_train(args: argparse.Namespace) -> int:
    # Without scikit-learn it raises TrainingUnavailableError, printed as one line by ``main``.
    if args.what == "recall":
        from ..devtools import recall_train
        from ..recall.gate import GATE_PATH

        if args.out == MODEL_PATH:
            args.out = GATE_PATH
        return recall_train.run(args)
    from ..devtools.train import run

    return run(args)


def cmd_eval(args: argparse.Namespace) -> int:
    from ..devtools.eval import main

    return main(args.rest)
