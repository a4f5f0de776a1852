"""The public API is a decision: ``memos_feedback.__all__`` lists exactly the
names a host imports from the package root, every event the bus emits and
every error of the tree among them."""

from __future__ import annotations

import inspect
import types

import memos_feedback
from memos_feedback import errors, events


def test_all_lists_every_public_root_name_once() -> None:
    # The order is ruff's (RUF022, checked by `make lint`). The names load
    # on first use (the package's ``__getattr__``): resolve them all first.
    for name in memos_feedback.__all__:
        getattr(memos_feedback, name)
    public = [
        name
        for name, value in vars(memos_feedback).items()
        if (not name.startswith("_") or name == "__version__")
        and not isinstance(value, types.ModuleType)
        and name not in ("TYPE_CHECKING", "Any", "annotations")
    ]
    assert len(memos_feedback.__all__) == len(set(memos_feedback.__all__))
    assert set(memos_feedback.__all__) == set(public)
    assert set(memos_feedback.__all__) == {*memos_feedback._LAZY, "__version__"}


def test_import_loads_no_submodule_until_asked() -> None:
    import subprocess
    import sys

    code = "import sys, memos_feedback; print(sorted(m for m in sys.modules if 'memos_feedback' in m))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['memos_feedback']"


def test_every_exported_name_resolves() -> None:
    for name in memos_feedback.__all__:
        assert getattr(memos_feedback, name) is not None, name


def test_every_event_class_is_exported() -> None:
    emitted = {
        name
        for name, value in vars(events).items()
        if inspect.isclass(value) and issubclass(value, events.FeedbackEvent)
    }
    assert emitted <= set(memos_feedback.__all__)


def test_every_error_is_exported_and_under_the_root() -> None:
    tree = {
        name
        for name, value in vars(errors).items()
        if inspect.isclass(value) and issubclass(value, BaseException)
    }
    assert tree == set(errors.__all__)
    assert tree <= set(memos_feedback.__all__)
    for name in tree:
        assert issubclass(getattr(errors, name), errors.MemosFeedbackError), name


def test_internals_stay_out() -> None:
    # Job finalisers, queue rows and the store's statements are the
    # library's own plumbing, reached through their subpackages if at all.
    for name in ("Finalizer", "JobRow", "EnqueueResult", "Prepared", "EventWriter"):
        assert name not in memos_feedback.__all__
