"""The @repair block: parse / render / strip / merge (PIPELINE.md §7)."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from memos_feedback.boundary import (
    REPAIR_MARKER,
    RepairBlock,
    merge_repair_block,
    parse_repair_block,
    render_repair_block,
    strip_repair_block,
)

lines = st.lists(st.text(min_size=1).map(str.strip).filter(bool), max_size=5, unique=True).map(tuple)
blocks = st.builds(RepairBlock, preference=lines, anti_pattern=lines).filter(
    lambda b: bool(b.preference or b.anti_pattern)
)


@given(host=st.text(), block=blocks)
def test_parse_render_round_trip(host: str, block: RepairBlock) -> None:
    rendered = render_repair_block(host, block)
    assert parse_repair_block(rendered) == (host, block)
    assert strip_repair_block(rendered) == host
    assert rendered.startswith(host)
    assert rendered.rsplit("\n", 1)[-1].startswith(REPAIR_MARKER)


@given(host=st.text(), pref=lines, anti=lines)
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


def test_malformed_blocks_are_replaced_not_crashing() -> None:
    for bad in (
        "@repair {not json",
        "@repair []",
        '@repair {"preference": "not a list"}',
        '@repair {"preference": [1, 2]}',
        "@repair",
        "@repair " + "x" * 300_000,
    ):
        boundary = "host text\n" + bad
        host, block = parse_repair_block(boundary)
        assert (host, block) == ("host text", None)
        merged = merge_repair_block(boundary, ["Prefer: a"], ["Avoid: b"])
        assert merged == 'host text\n@repair {"preference":["Prefer: a"],"anti_pattern":["Avoid: b"]}'


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
