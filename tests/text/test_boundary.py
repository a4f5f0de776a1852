"""The @repair block: parse / render / strip / merge (PIPELINE.md §7)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memos_feedback.text.blocks import (
    MAX_BLOCK_CHARS,
    MAX_BLOCK_LINES,
    MAX_LINE_CHARS,
    MAX_RENDERED_CHARS,
    REPAIR_MARKER,
    RepairBlock,
    merge_repair_block,
    parse_repair_block,
    remove_repair_lines,
    render_repair_block,
    strip_repair_block,
)

# No lone surrogates: they are rejected (InvalidInputError), tested below.
_text = st.text(st.characters(exclude_categories=("Cs",)))
lines = st.lists(
    st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=200).map(str.strip).filter(bool),
    max_size=5,
    unique=True,
).map(tuple)
blocks = st.builds(RepairBlock, preference=lines, anti_pattern=lines).filter(
    lambda b: bool(b.preference or b.anti_pattern)
)
# Host texts whose own last line starts like our marker, or is almost a block.
_marker_lines = st.sampled_from(
    [
        "@repair crew: never deploy on Fridays",
        "@repair",
        "@repair ",
        "@repair {",
        "@repair {}",
        "@repair []",
        '@repair {"preference": "x"}',
        '@repair {"preference": ["x"], "extra": 1}',
        '@repair {"preference":["a"],"anti_pattern":[1]}',
        "@repair " + "x" * 100,
        "@REPAIR {}",
    ]
)
hosts = st.one_of(
    _text,
    st.tuples(_text, _marker_lines).map(lambda t: f"{t[0]}\n{t[1]}" if t[0] else t[1]),
    st.tuples(_text, _marker_lines, _text).map("".join),
)


@given(host=hosts, block=blocks)
def test_parse_render_round_trip(host: str, block: RepairBlock) -> None:
    rendered = render_repair_block(host, block)
    assert parse_repair_block(rendered) == (host, block)
    assert strip_repair_block(rendered) == host
    assert rendered.startswith(host)
    assert rendered.rsplit("\n", 1)[-1].startswith(REPAIR_MARKER)


@given(host=hosts, pref=lines, anti=lines)
def test_merging_twice_writes_once(host: str, pref: tuple[str, ...], anti: tuple[str, ...]) -> None:
    first = merge_repair_block(host, pref, anti)
    base = host if first is None else first
    assert merge_repair_block(base, pref, anti) is None
    if first is not None:
        assert strip_repair_block(first) == host


def test_host_text_around_block_is_byte_for_byte_unchanged() -> None:
    host = "Line one\r\n  indented\ttab\n\nTrailing spaces   \n"
    once = merge_repair_block(host, ["Prefer: pnpm"], ["Avoid: npm"])
    assert once is not None
    twice = merge_repair_block(once, ["Prefer: uv"], [])
    assert twice is not None
    assert twice[: len(host)] == host
    assert strip_repair_block(twice) == host
    _, block = parse_repair_block(twice)
    assert block == RepairBlock(preference=("Prefer: pnpm", "Prefer: uv"), anti_pattern=("Avoid: npm",))


def test_duplicates_by_trimmed_text_are_dropped_and_order_kept() -> None:
    b = merge_repair_block("", ["a", " b "], ["x"])
    assert b is not None
    b2 = merge_repair_block(b, ["b", "c", "a "], ["x", "y"])
    assert b2 is not None
    assert parse_repair_block(b2)[1] == RepairBlock(preference=("a", "b", "c"), anti_pattern=("x", "y"))


def test_block_is_one_compact_json_line() -> None:
    out = merge_repair_block("host", ["has\nnewline"], ['引号 "quoted"'])
    assert out is not None
    line = out.split("\n")[-1]
    assert line.startswith("@repair {")
    assert json.loads(line[len(REPAIR_MARKER) :]) == {
        "preference": ["has\nnewline"],
        "anti_pattern": ['引号 "quoted"'],
    }
    assert ", " not in line.split("{", 1)[1].replace('"引号 \\"quoted\\""', "")


@pytest.mark.parametrize(
    "last_line",
    [
        "@repair {not json",
        "@repair []",
        '@repair {"preference": "not a list"}',
        '@repair {"preference": [1, 2]}',
        '@repair {"preference": ["x"], "owner": "crew"}',
        "@repair {}",
        "@repair",
        "@repair crew: never deploy on Fridays",
        "@repair " + "x" * 300_000,
        '@repair {"preference":["' + "x" * MAX_BLOCK_CHARS + '"]}',
    ],
)
def test_a_last_line_that_is_not_our_block_stays_host_text(last_line: str) -> None:
    boundary = "host text\n" + last_line
    assert parse_repair_block(boundary) == (boundary, None)
    assert strip_repair_block(boundary) == boundary
    merged = merge_repair_block(boundary, ["Prefer: a"], ["Avoid: b"])
    assert merged == boundary + '\n@repair {"preference":["Prefer: a"],"anti_pattern":["Avoid: b"]}'
    assert parse_repair_block(merged) == (boundary, RepairBlock(("Prefer: a",), ("Avoid: b",)))


def test_host_line_starting_with_repair_survives_merges_byte_exact() -> None:
    host = "Deploy rules.\n@repair crew: never deploy on Fridays"
    once = merge_repair_block(host, ["Prefer: pnpm"], ["Avoid: npm"])
    assert once is not None and once.startswith(host + "\n@repair {")
    twice = merge_repair_block(once, ["Prefer: uv"], [])
    assert twice is not None and strip_repair_block(twice) == host
    assert parse_repair_block(twice)[1] == RepairBlock(("Prefer: pnpm", "Prefer: uv"), ("Avoid: npm",))


def test_block_growth_is_capped_newest_kept_never_malformed() -> None:
    boundary = "host"
    for i in range(MAX_BLOCK_LINES * 3):
        # Long lines with characters JSON escapes to six bytes: the worst case.
        pref = f"Prefer {i}: " + "\x01" * (MAX_LINE_CHARS + 50)
        merged = merge_repair_block(boundary, [pref], [f"Avoid {i}"])
        assert merged is not None
        boundary = merged
        host, block = parse_repair_block(boundary)
        assert host == "host" and block is not None, i
        last = boundary.rsplit("\n", 1)[1]
        assert len(last) <= MAX_RENDERED_CHARS < MAX_BLOCK_CHARS
        assert len(block.preference) <= MAX_BLOCK_LINES and len(block.anti_pattern) <= MAX_BLOCK_LINES
        assert all(len(line) <= MAX_LINE_CHARS for line in block.preference)
        # The newest pair is always there.
        assert block.preference[-1].startswith(f"Prefer {i}: ") and block.preference[-1].endswith("…")
        assert block.anti_pattern[-1] == f"Avoid {i}"
    _, block = parse_repair_block(boundary)
    assert block is not None
    # The size cap dropped the oldest lines, keeping the newest contiguous run.
    n, kept = MAX_BLOCK_LINES * 3, len(block.anti_pattern)
    assert block.anti_pattern == tuple(f"Avoid {i}" for i in range(n - kept, n))


def test_block_keeps_the_newest_lines_per_list() -> None:
    boundary = "host"
    for i in range(MAX_BLOCK_LINES + 10):
        merged = merge_repair_block(boundary, [f"Prefer {i}"], [f"Avoid {i}"])
        assert merged is not None
        boundary = merged
    _, block = parse_repair_block(boundary)
    assert block == RepairBlock(
        tuple(f"Prefer {i}" for i in range(10, MAX_BLOCK_LINES + 10)),
        tuple(f"Avoid {i}" for i in range(10, MAX_BLOCK_LINES + 10)),
    )


def test_one_huge_line_is_cut_not_dropping_the_block() -> None:
    out = merge_repair_block("h", ["p" * 500_000], ["a"])
    assert out is not None
    _, block = parse_repair_block(out)
    assert block is not None and block.preference == ("p" * (MAX_LINE_CHARS - 1) + "…",)


def test_remove_repair_lines_keeps_host_byte_exact() -> None:
    host = "Line one\r\n  indented\n@repair crew: no Fridays"
    boundary = merge_repair_block(host, ["Prefer: a", "Prefer: b"], ["Avoid: x", "Avoid: y"])
    assert boundary is not None
    out = remove_repair_lines(boundary, [" Prefer: a "], ["Avoid: y"])
    assert out is not None and strip_repair_block(out) == host
    assert parse_repair_block(out)[1] == RepairBlock(("Prefer: b",), ("Avoid: x",))
    # Removing the last lines removes the block and its newline.
    assert remove_repair_lines(out, ["Prefer: b"], ["Avoid: x"]) == host


def test_remove_repair_lines_returns_none_when_nothing_changes() -> None:
    boundary = merge_repair_block("h", ["p"], ["a"])
    assert boundary is not None
    assert remove_repair_lines(boundary, ["other"], []) is None
    assert remove_repair_lines(boundary) is None
    assert remove_repair_lines("no block here", ["p"], ["a"]) is None
    assert remove_repair_lines("h\n@repair crew: p", ["p"], []) is None


@given(host=hosts, block=blocks)
def test_property_remove_after_merge_restores_host(host: str, block: RepairBlock) -> None:
    merged = merge_repair_block(host, block.preference, block.anti_pattern)
    if merged is None:
        return
    out = remove_repair_lines(merged, block.preference, block.anti_pattern)
    base_host, base_block = parse_repair_block(host)
    if base_block is None:
        assert out == host
    else:
        assert out is None or strip_repair_block(out) == base_host


def test_missing_keys_in_block_default_to_empty() -> None:
    _, block = parse_repair_block('h\n@repair {"preference":["p"]}')
    assert block == RepairBlock(preference=("p",), anti_pattern=())


def test_empty_merge_changes_nothing() -> None:
    assert merge_repair_block("plain host", [], []) is None
    assert merge_repair_block("plain host", ["  "], [""]) is None


def test_marker_inside_host_text_is_not_the_block() -> None:
    host = "@repair this is the host's own line\nand the last line"
    out = merge_repair_block(host, ["p"], ["a"])
    assert out is not None and strip_repair_block(out) == host
