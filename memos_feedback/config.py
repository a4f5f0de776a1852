"""``FeedbackConfig``: every tunable of the pipeline in one frozen dataclass.

Values come from defaults, environment variables ``MEMOS_FEEDBACK_<KEY>``
or a TOML file. All of them go through the same validation, so a bad value
fails loudly with the key and the value named, wherever it came from —
always as ``ConfigError``, whatever the type of what was passed (a
non-mapping, a non-str environment value, an unreadable or non-UTF-8 file,
a path with NUL or lone surrogates).
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from .errors import ConfigError

__all__ = ["DB_URL_ENV", "ENV_PREFIX", "RECALL_TABLE", "FeedbackConfig", "default_db_url", "toml_table"]

ENV_PREFIX = "MEMOS_FEEDBACK_"
DB_URL_ENV = "MEMOS_FEEDBACK_DB_URL"
# The table (in TOML) or key (in a mapping) that holds RecallConfig's keys.
RECALL_TABLE = "recall"

# Integer settings are milliseconds or counts that end up in BIGINT columns
# and float arithmetic: beyond 2**53 they are a mistake, not a setting.
MAX_INT = 2**53

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


@dataclass(frozen=True, slots=True)
class FeedbackConfig:
    """Pipeline settings; see ``docs/CONFIG.md``. Durations are int milliseconds."""

    failure_threshold: int = 3
    failure_window: int = 5
    value_delta: float = 0.5
    min_low_value_threshold: float = 0.01
    use_llm: bool = True
    attach_to_policy: bool = True
    cooldown_ms: int = 60_000
    trace_char_cap: int = 500
    evidence_limit: int = 4
    max_tracked_contexts: int = 10_000
    # Durable queue (retry schedule and housekeeping).
    retry_initial_ms: int = 1_000
    retry_multiplier: float = 2.0
    retry_max_ms: int = 300_000
    retry_jitter: float = 0.2
    max_attempts: int = 5
    lease_ms: int = 120_000
    stale_after_ms: int = 7 * 24 * 3_600_000
    # Done jobs finished longer ago than this are deleted by the worker's
    # housekeeping, a small batch at a time; 0 keeps them for ever.
    done_retention_ms: int = 7 * 24 * 3_600_000
    # Jobs a worker claims per transaction (each of a different context),
    # then runs one after another; 1 claims one at a time.
    claim_batch: int = 8
    buffer_flush_ms: int = 50
    # How long close() (and leaving a ``with`` block) keeps trying to store
    # buffered triggers and waits for jobs in flight, when given no timeout.
    close_timeout_ms: int = 30_000
    # Durable event log (memos_feedback.feed; docs/EVENTS.md "Event log").
    events_log: bool = True
    events_flush_ms: int = 200
    events_max_age_ms: int = 30 * 24 * 3_600_000
    events_max_count: int = 1_000_000
    events_prune_every_ms: int = 60_000
    # Outcomes (ALGORITHMS.md, "Outcomes"): an unvalidated repair that
    # recurred this many times and never held is retired as stale.
    stale_after_recurrences: int = 3
    # A serving not settled within this long is left open for good (it is
    # no longer reloaded on start, and says nothing about the repair).
    served_open_ms: int = 24 * 3_600_000

    def __post_init__(self) -> None:
        _validate(self)

    # -- constructors -------------------------------------------------------

    @classmethod
    def keys(cls) -> tuple[str, ...]:
        """Names of every public key, in declaration order."""
        return tuple(f.name for f in fields(cls) if not f.name.startswith("_"))

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any], base: FeedbackConfig | None = None) -> FeedbackConfig:
        """Build from a plain mapping; unknown keys raise ``ConfigError``."""
        if not isinstance(values, Mapping):
            raise ConfigError("values", values, "must be a mapping of setting name to value")
        _check_base(base)
        known = set(cls.keys())
        for key in values:
            if not isinstance(key, str) or key not in known:
                raise ConfigError(repr(key) if not isinstance(key, str) else key, values[key], "unknown key")
        return dataclasses.replace(base or cls(), **dict(values))

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, base: FeedbackConfig | None = None
    ) -> FeedbackConfig:
        """Read ``MEMOS_FEEDBACK_<KEY>`` variables over ``base`` (defaults).

        Variables with the prefix that name no key are ignored, because the
        prefix is shared with other settings (``MEMOS_FEEDBACK_DB_URL``).
        """
        env = os.environ if environ is None else environ
        if not isinstance(env, Mapping):
            raise ConfigError("environ", env, "must be a mapping of variable name to str")
        _check_base(base)
        types = _field_types()
        values: dict[str, Any] = {}
        for key in cls.keys():  # noqa: SIM118 (a classmethod, not dict.keys)
            raw = env.get(ENV_PREFIX + key.upper())
            if raw is None:
                continue
            if not isinstance(raw, str):
                raise ConfigError(key, raw, f"{ENV_PREFIX + key.upper()} must be a str")
            values[key] = _parse_text(key, raw, types[key])
        return cls.from_mapping(values, base)

    @classmethod
    def from_toml(cls, path: str | os.PathLike[str], base: FeedbackConfig | None = None) -> FeedbackConfig:
        """Read keys from a TOML file.

        Keys may sit at the top level or in a ``[memos_feedback]`` table
        (also ``[tool.memos_feedback]``, so ``pyproject.toml`` works).
        """
        _check_base(base)
        table = toml_table(path)
        # The ``recall`` sub-table holds RecallConfig's keys (recall.config.load_config).
        return cls.from_mapping({k: v for k, v in table.items() if k != RECALL_TABLE}, base)


def toml_table(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The ``memos_feedback`` table of a TOML file (see ``from_toml``); ``ConfigError`` else."""
    if not isinstance(path, (str, os.PathLike)):
        raise ConfigError("path", path, "must be a str or os.PathLike")
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError("path", str(path), f"cannot read file: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        reason = f"not UTF-8 text ({exc.reason} at byte {exc.start})"
        raise ConfigError("path", str(path), reason) from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError("path", str(path), f"not valid TOML: {exc}") from exc
    except (ValueError, UnicodeError) as exc:
        # A path with NUL or lone surrogates (``embedded null byte``,
        # ``surrogates not allowed``) names no file.
        raise ConfigError("path", str(path), f"not a usable file name: {exc}") from exc
    table: Any = data
    if isinstance(data.get("tool"), dict) and "memos_feedback" in data["tool"]:
        table = data["tool"]["memos_feedback"]
    elif "memos_feedback" in data:
        table = data["memos_feedback"]
    elif any(key in data for key in ("tool", "project", "build-system")):
        # A pyproject.toml without our table: nothing to override.
        table = {}
    if not isinstance(table, dict):
        raise ConfigError("memos_feedback", table, "must be a TOML table")
    return table


def _check_base(base: object) -> None:
    if base is not None and not isinstance(base, FeedbackConfig):
        raise ConfigError("base", base, "must be a FeedbackConfig or None")


def _field_types() -> dict[str, type]:
    defaults = FeedbackConfig()
    return {k: type(getattr(defaults, k)) for k in FeedbackConfig.keys()}  # noqa: SIM118


def _parse_text(key: str, raw: str, kind: type) -> object:
    text = raw.strip()
    if kind is bool:
        low = text.lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
        raise ConfigError(key, raw, "expected a boolean (true/false/1/0/yes/no/on/off)")
    try:
        if kind is int:
            return int(text.replace("_", ""))
        return float(text)
    except ValueError:
        raise ConfigError(key, raw, f"expected {'an integer' if kind is int else 'a number'}") from None


def _validate(cfg: FeedbackConfig) -> None:
    types = {f.name: f.default for f in fields(cfg) if not f.name.startswith("_")}
    for key, default in types.items():
        value = getattr(cfg, key)
        if isinstance(default, bool):
            if not isinstance(value, bool):
                raise ConfigError(key, value, "expected a boolean")
        elif isinstance(default, int):
            # bool is an int subclass; True as a count is a mistake.
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(key, value, "expected an integer")
            if not -MAX_INT <= value <= MAX_INT:
                raise ConfigError(key, value, f"must be <= 2**53 ({MAX_INT})")
        elif isinstance(default, float):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ConfigError(key, value, "expected a number")
            try:
                number = float(value)  # an int beyond the float range overflows
            except OverflowError:
                raise ConfigError(key, value, "must be finite") from None
            if number != number or number in (float("inf"), float("-inf")):
                raise ConfigError(key, value, "must be finite")
            object.__setattr__(cfg, key, number)

    def at_least(key: str, low: float) -> None:
        value = getattr(cfg, key)
        if value < low:
            raise ConfigError(key, value, f"must be >= {low}")

    at_least("failure_threshold", 1)
    at_least("failure_window", 1)
    if cfg.failure_window < cfg.failure_threshold:
        raise ConfigError(
            "failure_window",
            cfg.failure_window,
            f"must be >= failure_threshold ({cfg.failure_threshold})",
        )
    at_least("value_delta", 0)
    at_least("min_low_value_threshold", 0)
    at_least("cooldown_ms", 0)
    at_least("trace_char_cap", 1)
    at_least("evidence_limit", 1)
    at_least("max_tracked_contexts", 1)
    at_least("retry_initial_ms", 0)
    at_least("retry_multiplier", 1)
    at_least("retry_max_ms", 0)
    at_least("max_attempts", 1)
    at_least("lease_ms", 1)
    at_least("stale_after_ms", 1)
    at_least("done_retention_ms", 0)
    at_least("claim_batch", 1)
    if cfg.claim_batch > 64:
        raise ConfigError("claim_batch", cfg.claim_batch, "must be <= 64")
    at_least("buffer_flush_ms", 1)
    at_least("close_timeout_ms", 0)
    at_least("events_flush_ms", 1)
    at_least("events_max_age_ms", 1)
    at_least("events_max_count", 1)
    at_least("events_prune_every_ms", 1)
    at_least("stale_after_recurrences", 1)
    at_least("served_open_ms", 1)
    if not 0 <= cfg.retry_jitter < 1:
        raise ConfigError("retry_jitter", cfg.retry_jitter, "must be in [0, 1)")
    if cfg.retry_max_ms < cfg.retry_initial_ms:
        raise ConfigError(
            "retry_max_ms", cfg.retry_max_ms, f"must be >= retry_initial_ms ({cfg.retry_initial_ms})"
        )


def default_db_url() -> str:
    """``MEMOS_FEEDBACK_DB_URL`` if set, else a SQLite file in the user data dir."""
    env = os.environ.get(DB_URL_ENV)
    if env:
        return env
    import platformdirs

    data_dir = Path(platformdirs.user_data_dir("memos-feedback", appauthor=False))
    return f"sqlite:///{data_dir / 'memos_feedback.db'}"
