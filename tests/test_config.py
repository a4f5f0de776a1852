"""``FeedbackConfig``: defaults (PIPELINE.md §1), validation, env and TOML loading."""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memos_feedback.config import ENV_PREFIX, FeedbackConfig
from memos_feedback.errors import ConfigError, MemosFeedbackError

DOCS = Path(__file__).resolve().parents[1] / "docs"
ALL_KEYS = FeedbackConfig.keys()

# The table in PIPELINE.md §1, verbatim.
SPEC_DEFAULTS: dict[str, Any] = {
    "failure_threshold": 3,
    "failure_window": 5,
    "value_delta": 0.5,
    "min_low_value_threshold": 0.01,
    "use_llm": True,
    "attach_to_policy": True,
    "cooldown_ms": 60_000,
    "trace_char_cap": 500,
    "evidence_limit": 4,
    "max_tracked_contexts": 10_000,
}


def assert_names(err: ConfigError, key: str, value: object) -> None:
    """The error carries, and its message shows, the key and the value."""
    assert err.key == key
    if isinstance(value, float) and math.isnan(value):
        assert isinstance(err.value, float) and math.isnan(err.value)
    else:
        assert err.value == value
        assert type(err.value) is type(value)
    message = str(err)
    assert key in message
    assert repr(value) in message


# -- defaults ---------------------------------------------------------------


def test_defaults_match_the_spec_table() -> None:
    cfg = FeedbackConfig()
    for key, expected in SPEC_DEFAULTS.items():
        actual = getattr(cfg, key)
        assert actual == expected, key
        assert type(actual) is type(expected), key


def test_keys_lists_every_field_in_declaration_order() -> None:
    keys = FeedbackConfig.keys()
    assert keys[: len(SPEC_DEFAULTS)] == tuple(SPEC_DEFAULTS)
    assert keys == tuple(f.name for f in dataclasses.fields(FeedbackConfig))
    assert len(set(keys)) == len(keys)


def test_durations_are_int_milliseconds() -> None:
    cfg = FeedbackConfig()
    for key in ALL_KEYS:
        if key.endswith("_ms"):
            assert type(getattr(cfg, key)) is int, key


def test_config_is_frozen() -> None:
    cfg = FeedbackConfig()
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.failure_threshold = 7  # type: ignore[misc]


def test_valid_overrides_are_kept() -> None:
    cfg = FeedbackConfig(failure_threshold=2, failure_window=2, cooldown_ms=0, use_llm=False, value_delta=0)
    assert (cfg.failure_threshold, cfg.failure_window, cfg.cooldown_ms, cfg.use_llm) == (2, 2, 0, False)
    # An int where a float is expected is accepted and stored as float.
    assert cfg.value_delta == 0.0
    assert type(cfg.value_delta) is float


def test_replace_revalidates() -> None:
    with pytest.raises(ConfigError) as info:
        dataclasses.replace(FeedbackConfig(), evidence_limit=0)
    assert_names(info.value, "evidence_limit", 0)


# -- validation -------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value"),
    [
        # negative or zero counts
        ("failure_threshold", -1),
        ("failure_threshold", 0),
        ("failure_window", -5),
        ("evidence_limit", 0),
        ("evidence_limit", -1),
        ("trace_char_cap", 0),
        ("max_tracked_contexts", 0),
        ("max_attempts", 0),
        ("lease_ms", 0),
        ("stale_after_ms", 0),
        ("buffer_flush_ms", 0),
        # negative durations and thresholds
        ("cooldown_ms", -1),
        ("retry_initial_ms", -1),
        ("value_delta", -0.1),
        ("min_low_value_threshold", -0.01),
        ("retry_multiplier", 0.5),
        # jitter must be in [0, 1)
        ("retry_jitter", -0.1),
        ("retry_jitter", 1.0),
        ("retry_jitter", 1.5),
        # wrong types, including bool for an int and str for anything
        ("failure_threshold", True),
        ("cooldown_ms", False),
        ("failure_threshold", 3.0),
        ("cooldown_ms", "60000"),
        ("evidence_limit", None),
        ("use_llm", 1),
        ("use_llm", "true"),
        ("attach_to_policy", None),
        ("value_delta", "0.5"),
        ("value_delta", True),
        ("min_low_value_threshold", None),
        # non-finite floats
        ("value_delta", math.nan),
        ("value_delta", math.inf),
        ("min_low_value_threshold", -math.inf),
        ("retry_jitter", math.nan),
    ],
)
def test_invalid_value_names_key_and_value(key: str, value: object) -> None:
    with pytest.raises(ConfigError) as info:
        FeedbackConfig(**{key: value})
    assert_names(info.value, key, value)
    assert info.value.reason


def test_window_smaller_than_threshold_is_rejected() -> None:
    with pytest.raises(ConfigError) as info:
        FeedbackConfig(failure_threshold=4, failure_window=3)
    assert_names(info.value, "failure_window", 3)
    assert "failure_threshold" in str(info.value)
    # equal is fine
    assert FeedbackConfig(failure_threshold=4, failure_window=4).failure_window == 4


def test_retry_max_below_initial_is_rejected() -> None:
    with pytest.raises(ConfigError) as info:
        FeedbackConfig(retry_initial_ms=5_000, retry_max_ms=1_000)
    assert_names(info.value, "retry_max_ms", 1_000)


def test_boundary_values_are_accepted() -> None:
    cfg = FeedbackConfig(
        cooldown_ms=0,
        value_delta=0.0,
        min_low_value_threshold=0.0,
        retry_jitter=0.0,
        retry_multiplier=1.0,
        failure_threshold=1,
        failure_window=1,
        evidence_limit=1,
    )
    assert cfg.cooldown_ms == 0
    assert FeedbackConfig(retry_jitter=0.999).retry_jitter == 0.999


def test_unknown_key_in_mapping_is_rejected() -> None:
    with pytest.raises(ConfigError) as info:
        FeedbackConfig.from_mapping({"failure_threshold": 3, "failure_treshold": 4})
    assert_names(info.value, "failure_treshold", 4)
    assert "unknown" in str(info.value)


def test_from_mapping_applies_over_base() -> None:
    base = FeedbackConfig(use_llm=False)
    cfg = FeedbackConfig.from_mapping({"evidence_limit": 2}, base)
    assert cfg.evidence_limit == 2
    assert cfg.use_llm is False
    assert base.evidence_limit == 4


def test_config_error_is_a_library_error() -> None:
    assert issubclass(ConfigError, MemosFeedbackError)
    assert not issubclass(ConfigError, ValueError)  # one hierarchy, caught via the root


# -- environment --------------------------------------------------------------


def env(**values: str) -> dict[str, str]:
    return {ENV_PREFIX + key.upper(): value for key, value in values.items()}


def test_from_env_without_variables_gives_defaults() -> None:
    assert FeedbackConfig.from_env({}) == FeedbackConfig()


def test_from_env_reads_every_key() -> None:
    raw = env(
        failure_threshold="4",
        failure_window="8",
        value_delta="0.25",
        min_low_value_threshold="1e-3",
        use_llm="false",
        attach_to_policy="0",
        cooldown_ms="30_000",
        trace_char_cap=" 200 ",
        evidence_limit="6",
        max_tracked_contexts="100",
    )
    cfg = FeedbackConfig.from_env(raw)
    assert cfg.failure_threshold == 4
    assert cfg.failure_window == 8
    assert cfg.value_delta == 0.25
    assert cfg.min_low_value_threshold == 0.001
    assert cfg.use_llm is False
    assert cfg.attach_to_policy is False
    assert cfg.cooldown_ms == 30_000
    assert cfg.trace_char_cap == 200
    assert cfg.evidence_limit == 6
    assert cfg.max_tracked_contexts == 100


def test_every_key_has_an_env_variable() -> None:
    defaults = FeedbackConfig()
    for key in ALL_KEYS:
        value = getattr(defaults, key)
        text = ("false" if value else "true") if isinstance(value, bool) else str(value)
        cfg = FeedbackConfig.from_env({f"MEMOS_FEEDBACK_{key.upper()}": text})
        if isinstance(value, bool):
            assert getattr(cfg, key) is (not value), key
        else:
            assert getattr(cfg, key) == value, key


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("true", True),
        ("TRUE", True),
        ("1", True),
        ("yes", True),
        ("On", True),
        (" true ", True),
        ("false", False),
        ("0", False),
        ("no", False),
        ("OFF", False),
    ],
)
def test_from_env_parses_booleans(text: str, expected: bool) -> None:
    assert FeedbackConfig.from_env(env(use_llm=text)).use_llm is expected


def test_from_env_float_key_accepts_an_integer_text() -> None:
    cfg = FeedbackConfig.from_env(env(value_delta="1"))
    assert cfg.value_delta == 1.0
    assert type(cfg.value_delta) is float


@pytest.mark.parametrize(
    ("key", "text"),
    [
        ("use_llm", "maybe"),
        ("use_llm", ""),
        ("failure_threshold", "three"),
        ("failure_threshold", "3.5"),
        ("cooldown_ms", "1e3"),
        ("cooldown_ms", ""),
        ("value_delta", "half"),
        ("value_delta", ""),
    ],
)
def test_from_env_unparsable_value_names_key_and_raw_text(key: str, text: str) -> None:
    with pytest.raises(ConfigError) as info:
        FeedbackConfig.from_env(env(**{key: text}))
    assert_names(info.value, key, text)


@pytest.mark.parametrize(
    ("key", "text", "value"),
    [
        ("failure_threshold", "-1", -1),
        ("cooldown_ms", "-5", -5),
        ("value_delta", "nan", math.nan),
        ("value_delta", "inf", math.inf),
        ("retry_jitter", "1", 1.0),
    ],
)
def test_from_env_parsed_but_invalid_value_is_rejected(key: str, text: str, value: object) -> None:
    with pytest.raises(ConfigError) as info:
        FeedbackConfig.from_env(env(**{key: text}))
    assert_names(info.value, key, value)


def test_from_env_window_below_threshold_is_rejected() -> None:
    with pytest.raises(ConfigError) as info:
        FeedbackConfig.from_env(env(failure_threshold="6"))
    assert_names(info.value, "failure_window", 5)


def test_from_env_ignores_other_prefixed_variables() -> None:
    raw = {
        "MEMOS_FEEDBACK_DB_URL": "sqlite:///x.db",
        "MEMOS_FEEDBACK_TEST_PG_URL": "postgresql+psycopg://localhost/x",
        "MEMOS_FEEDBACK_NOT_A_KEY": "1",
        "failure_threshold": "9",  # no prefix
        "memos_feedback_failure_threshold": "9",  # wrong case
    }
    assert FeedbackConfig.from_env(raw) == FeedbackConfig()


def test_from_env_applies_over_base() -> None:
    base = FeedbackConfig(evidence_limit=2)
    cfg = FeedbackConfig.from_env(env(use_llm="no"), base)
    assert (cfg.evidence_limit, cfg.use_llm) == (2, False)


def test_from_env_defaults_to_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMOS_FEEDBACK_EVIDENCE_LIMIT", "7")
    assert FeedbackConfig.from_env().evidence_limit == 7


# -- TOML ---------------------------------------------------------------------


def write(tmp_path: Path, text: str, name: str = "feedback.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_from_toml_top_level_keys(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "failure_threshold = 2\nfailure_window = 4\nuse_llm = false\nvalue_delta = 1\ncooldown_ms = 0\n",
    )
    cfg = FeedbackConfig.from_toml(path)
    assert (cfg.failure_threshold, cfg.failure_window, cfg.use_llm, cfg.cooldown_ms) == (2, 4, False, 0)
    assert cfg.value_delta == 1.0 and type(cfg.value_delta) is float
    assert cfg.evidence_limit == 4  # untouched keys keep their defaults


def test_from_toml_memos_feedback_table(tmp_path: Path) -> None:
    path = write(tmp_path, "[memos_feedback]\nevidence_limit = 2\ntrace_char_cap = 100\n")
    cfg = FeedbackConfig.from_toml(str(path))
    assert (cfg.evidence_limit, cfg.trace_char_cap) == (2, 100)


def test_from_toml_tool_table_in_pyproject(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        '[project]\nname = "host"\n\n[tool.ruff]\nline-length = 100\n\n'
        "[tool.memos_feedback]\nattach_to_policy = false\nmax_tracked_contexts = 50\n",
        name="pyproject.toml",
    )
    cfg = FeedbackConfig.from_toml(path)
    assert cfg.attach_to_policy is False
    assert cfg.max_tracked_contexts == 50


def test_from_toml_pyproject_without_our_table_gives_defaults(tmp_path: Path) -> None:
    path = write(
        tmp_path, '[project]\nname = "host"\n\n[tool.ruff]\nline-length = 100\n', name="pyproject.toml"
    )
    assert FeedbackConfig.from_toml(path) == FeedbackConfig()


def test_from_toml_applies_over_base(tmp_path: Path) -> None:
    path = write(tmp_path, "[memos_feedback]\nevidence_limit = 3\n")
    cfg = FeedbackConfig.from_toml(path, base=FeedbackConfig(use_llm=False))
    assert (cfg.evidence_limit, cfg.use_llm) == (3, False)


def test_from_toml_empty_file_gives_defaults(tmp_path: Path) -> None:
    assert FeedbackConfig.from_toml(write(tmp_path, "")) == FeedbackConfig()


def test_from_toml_unknown_key(tmp_path: Path) -> None:
    path = write(tmp_path, "[memos_feedback]\ncooldown = 5\n")
    with pytest.raises(ConfigError) as info:
        FeedbackConfig.from_toml(path)
    assert_names(info.value, "cooldown", 5)


@pytest.mark.parametrize(
    ("body", "key", "value"),
    [
        ('failure_threshold = "3"', "failure_threshold", "3"),
        ("failure_threshold = true", "failure_threshold", True),
        ("use_llm = 1", "use_llm", 1),
        ("cooldown_ms = -1", "cooldown_ms", -1),
        ("cooldown_ms = 1.5", "cooldown_ms", 1.5),
        ("value_delta = nan", "value_delta", math.nan),
        ("retry_jitter = 2.0", "retry_jitter", 2.0),
    ],
)
def test_from_toml_invalid_value(tmp_path: Path, body: str, key: str, value: object) -> None:
    path = write(tmp_path, f"[memos_feedback]\n{body}\n")
    with pytest.raises(ConfigError) as info:
        FeedbackConfig.from_toml(path)
    assert_names(info.value, key, value)


def test_from_toml_section_that_is_not_a_table(tmp_path: Path) -> None:
    path = write(tmp_path, "memos_feedback = 3\n")
    with pytest.raises(ConfigError) as info:
        FeedbackConfig.from_toml(path)
    assert_names(info.value, "memos_feedback", 3)


def test_from_toml_bad_syntax(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A relative path: the message shows the value cut to 80 characters, and tmp_path's
    # length is the runner's (an xdist worker adds "popen-gw0/"), not the test's.
    monkeypatch.chdir(tmp_path)
    path = Path(write(tmp_path, "[memos_feedback\nfailure_threshold = \n").name)
    with pytest.raises(ConfigError) as info:
        FeedbackConfig.from_toml(path)
    assert_names(info.value, "path", str(path))
    assert "TOML" in str(info.value)


def test_from_toml_missing_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # a relative path, as in test_from_toml_bad_syntax
    path = Path("nope.toml")
    with pytest.raises(ConfigError) as info:
        FeedbackConfig.from_toml(path)
    assert_names(info.value, "path", str(path))
    assert "cannot read" in str(info.value)


# -- docs ---------------------------------------------------------------------


def test_config_doc_lists_every_key_env_var_and_default() -> None:
    doc = (DOCS / "CONFIG.md").read_text(encoding="utf-8")
    defaults = FeedbackConfig()
    for key in ALL_KEYS:
        row = next((line for line in doc.splitlines() if line.startswith(f"| `{key}` ")), None)
        assert row is not None, f"docs/CONFIG.md has no table row for {key}"
        assert f"`MEMOS_FEEDBACK_{key.upper()}`" in row, key
        value = getattr(defaults, key)
        shown = ("true" if value else "false") if isinstance(value, bool) else str(value)
        cells = [re.sub(r"[`_]", "", c.strip()) for c in row.split("|")]
        assert shown.replace("_", "") in cells, f"default of {key} ({shown}) not in {row!r}"
    assert "MEMOS_FEEDBACK_DB_URL" in doc


# -- issue 9, item 15: wrong types anywhere are ConfigError, never a raw error ----

S = "\ud83d"


def _toml(tmp_path: Path, body: bytes) -> Path:
    path = tmp_path / "bad.toml"
    path.write_bytes(body)
    return path


BAD_CONFIG_CALLS: list[tuple[str, Callable[[Path], object]]] = [
    ("constructor int huge", lambda p: FeedbackConfig(cooldown_ms=2**70)),
    ("constructor int gigantic", lambda p: FeedbackConfig(lease_ms=10**5000)),
    ("constructor float huge int", lambda p: FeedbackConfig(value_delta=2**1100)),
    ("constructor str", lambda p: FeedbackConfig(failure_threshold="3")),  # type: ignore[arg-type]
    ("constructor surrogate", lambda p: FeedbackConfig(use_llm=S)),  # type: ignore[arg-type]
    ("from_mapping non-mapping", lambda p: FeedbackConfig.from_mapping(5)),  # type: ignore[arg-type]
    ("from_mapping list", lambda p: FeedbackConfig.from_mapping([("cooldown_ms", 1)])),  # type: ignore[arg-type]
    ("from_mapping int key", lambda p: FeedbackConfig.from_mapping({1: 2})),  # type: ignore[dict-item]
    ("from_mapping tuple key", lambda p: FeedbackConfig.from_mapping({("a",): 2})),  # type: ignore[dict-item]
    ("from_mapping surrogate key", lambda p: FeedbackConfig.from_mapping({S: 2})),
    ("from_mapping wrong value", lambda p: FeedbackConfig.from_mapping({"cooldown_ms": [1]})),
    ("from_mapping bad base", lambda p: FeedbackConfig.from_mapping({}, base="x")),  # type: ignore[arg-type]
    ("from_env non-mapping", lambda p: FeedbackConfig.from_env(environ=5)),  # type: ignore[arg-type]
    ("from_env int value", lambda p: FeedbackConfig.from_env({"MEMOS_FEEDBACK_LEASE_MS": 5})),  # type: ignore
    ("from_env surrogate", lambda p: FeedbackConfig.from_env({"MEMOS_FEEDBACK_COOLDOWN_MS": S})),
    ("from_env huge", lambda p: FeedbackConfig.from_env({"MEMOS_FEEDBACK_COOLDOWN_MS": "9" * 30})),
    ("from_env digits", lambda p: FeedbackConfig.from_env({"MEMOS_FEEDBACK_COOLDOWN_MS": "9" * 5000})),
    ("from_env bad base", lambda p: FeedbackConfig.from_env({}, base=5)),  # type: ignore[arg-type]
    ("from_toml int path", lambda p: FeedbackConfig.from_toml(5)),  # type: ignore[arg-type]
    ("from_toml surrogate path", lambda p: FeedbackConfig.from_toml(str(p / S))),
    ("from_toml NUL path", lambda p: FeedbackConfig.from_toml(str(p / "a\x00b"))),
    ("from_toml directory", lambda p: FeedbackConfig.from_toml(p)),
    ("from_toml not UTF-8", lambda p: FeedbackConfig.from_toml(_toml(p, b"cooldown_ms = 1 # \xff"))),
    ("from_toml huge int", lambda p: FeedbackConfig.from_toml(_toml(p, b"lease_ms = 9223372036854775000"))),
    ("from_toml array", lambda p: FeedbackConfig.from_toml(_toml(p, b"cooldown_ms = [1]\n"))),
]


@pytest.mark.parametrize("call", [c for _, c in BAD_CONFIG_CALLS], ids=[n for n, _ in BAD_CONFIG_CALLS])
def test_bad_config_input_is_a_config_error(tmp_path: Path, call: Callable[[Path], object]) -> None:
    with pytest.raises(ConfigError) as info:
        call(tmp_path)
    assert len(str(info.value)) < 400  # one readable line, whatever was passed
