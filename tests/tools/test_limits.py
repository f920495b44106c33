"""Truncation strategies and the token estimate, unit level and fuzzed (SPEC T-18, T-19, T-20).

The agent-level behaviour (what the model reads next) is in ``test_limits_agent.py``.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bastion.tools import (
    MIN_RESULT_TOKENS,
    ToolTrustClass,
    TruncationStrategy,
    default_strategy,
    estimate_tokens,
    tool,
    truncate_json,
    truncate_text,
)

_MIDDLE = re.compile(r"\n\[\.\.\. ([\d,]+) characters omitted \.\.\.\]\n")


def _noop() -> str:
    """Return nothing."""
    return ""


@pytest.mark.parametrize(
    ("text", "tokens"),
    [("", 0), ("abcd", 1), ("abcde", 2), ("é", 1), ("日本語", 3), ("x" * 4096, 1024)],
)
def test_estimate_is_utf8_bytes_over_four_rounded_up(text: str, tokens: int) -> None:
    # covers C10
    assert estimate_tokens(text) == tokens


def test_middle_keeps_head_and_tail_and_says_how_much_was_cut() -> None:
    # covers T-18, T-20
    text = "a" * 300 + "b" * 400 + "c" * 300

    out = truncate_text(text, 128)

    assert out == "a" * 238 + "\n[... 524 characters omitted ...]\n" + "c" * 238
    assert estimate_tokens(out) <= 128


def test_tail_keeps_the_end() -> None:
    # covers T-18
    text = "a" * 300 + "b" * 400 + "c" * 300

    out = truncate_text(text, 128, keep="tail")

    assert out == "[... 523 characters omitted ...]\n" + "b" * 177 + "c" * 300


def test_text_that_fits_is_returned_unchanged() -> None:
    # covers T-18
    text = "é" * 512  # 1,024 bytes: exactly 256 tokens
    assert truncate_text(text, 256) is text
    assert truncate_json('{"a": 1}', 128) == '{"a": 1}'


def test_cuts_fall_on_character_boundaries() -> None:
    # covers T-18
    text = "é" * 300  # two bytes each

    out = truncate_text(text, 128)

    assert out == "é" * 119 + "\n[... 62 characters omitted ...]\n" + "é" * 119
    assert len(out.encode()) == 509


def test_a_note_goes_inside_the_marker() -> None:
    # covers T-20
    out = truncate_text("z" * 1000, 128, note="full result not stored")
    assert "\n[... 548 characters omitted; full result not stored ...]\n" in out


def test_json_smart_slices_arrays_and_shortens_strings_keeping_valid_json() -> None:
    # covers C10
    doc = json.dumps(
        {"items": [{"id": i, "name": f"item {i}"} for i in range(200)], "note": "x" * 3000}
    )

    out = truncate_json(doc, 128)

    assert out is not None
    assert json.loads(out) == {
        "items": [{"id": i, "name": f"item {i}"} for i in range(8)]
        + ["[... 192 more items omitted ...]"],
        "note": "x" * 32 + "[... 2,968 characters omitted ...]",
    }
    assert estimate_tokens(out) <= 128


def test_json_smart_trims_wide_objects_and_deep_nesting() -> None:
    # covers C10
    wide = json.dumps({f"key{i:04}": i for i in range(2000)})
    out = truncate_json(wide, 128)
    assert out is not None
    parsed = json.loads(out)
    assert list(parsed)[:3] == ["key0000", "key0001", "key0002"]
    assert list(parsed)[-1].endswith(" more keys omitted ...]")

    deep: Any = "leaf" * 200
    for level in range(100):
        deep = {"level": level, "child": deep}
    out = truncate_json(json.dumps(deep), 128)
    assert out is not None
    assert estimate_tokens(out) <= 128
    assert json.loads(out)["child"]["child"]["level"] == 97
    assert '"[... object with 2 keys omitted ...]"' in out


@pytest.mark.parametrize("text", ["not json " * 200, '{"a": NaN, "pad": "' + "x" * 2000 + '"}'])
def test_json_smart_declines_what_is_not_json(text: str) -> None:
    assert truncate_json(text, 128) is None


@pytest.mark.parametrize(
    ("trust_class", "name", "strategy"),
    [
        ("first_party_built_in", "code_execute", "tail"),
        ("first_party_built_in", "bash", "tail"),
        ("first_party_built_in", "shell_run", "tail"),
        ("first_party_built_in", "read_result", "middle"),
        ("first_party_user_defined", "bash", "middle"),
        ("web_search", "search", "summarize"),
        ("mcp_derived", "fetch", "middle"),
    ],
)
def test_default_strategy_follows_the_trust_class(
    trust_class: ToolTrustClass, name: str, strategy: TruncationStrategy
) -> None:
    # covers T-19
    t = tool(_noop, name=name, side_effect_class="pure", trust_class=trust_class)
    assert default_strategy(t) == strategy


def test_an_explicit_strategy_wins_over_the_trust_class_default() -> None:
    # covers T-19
    t = tool(_noop, side_effect_class="pure", trust_class="web_search", truncation_strategy="tail")
    assert default_strategy(t) == "tail"


def test_markers_never_match_the_injection_catalogue() -> None:
    # covers T-20
    from bastion.security import find_injections

    handle = "spill:run_0123456789abcdef0123456789abcdef/AbCdEfGhIjKlMnOpQrStUvWx"
    samples = [
        truncate_text("q" * 5000, 128),
        truncate_text("q" * 5000, 128, keep="tail"),
        truncate_text("q" * 5000, 128, note="full result not stored (sensitivity 'secret')"),
        truncate_text("q" * 5000, 128, note="summary unavailable (ModelTimeout)"),
        truncate_text("q" * 5000, 128, note="not summarized (sensitivity 'secret')"),
        truncate_text(
            "q" * 5000,
            256,
            keep="head",
            note=f"full result (5,000 bytes, 1 lines) stored as {handle}; read_result returns "
            "byte ranges (offset, length) or line ranges (start_line, end_line) of it",
        ),
        truncate_json(
            json.dumps({"a": list(range(2000)), "b": {str(i): i for i in range(500)}}), 128
        ),
        truncate_json(json.dumps([[[[[[[[[["q" * 900]]]]]]]]]]), 128),
        "[summary of a 12,345-character result]\n",
    ]
    for sample in samples:
        assert sample is not None
        assert find_injections(sample) == (), sample


# Fuzzing: every cut stays within the limit, ``middle`` keeps exact head and tail, and
# ``json_smart`` always yields valid JSON.

_limits = st.integers(min_value=MIN_RESULT_TOKENS, max_value=600)
_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=30)
        | st.dictionaries(st.text(max_size=20), children, max_size=30)
    ),
    max_leaves=300,
)


@settings(max_examples=300, deadline=None)
@given(text=st.text(min_size=0, max_size=6000), limit=_limits)
def test_truncation_never_exceeds_the_limit(text: str, limit: int) -> None:
    # covers T-18
    for keep in ("middle", "head", "tail"):
        assert estimate_tokens(truncate_text(text, limit, keep=keep)) <= limit


@settings(max_examples=300, deadline=None)
@given(text=st.text(min_size=0, max_size=6000), limit=_limits)
def test_middle_keeps_head_and_tail_exactly(text: str, limit: int) -> None:
    # covers T-18
    out = truncate_text(text, limit)
    if estimate_tokens(text) <= limit:
        assert out == text
        return
    match = _MIDDLE.search(out)
    assert match is not None
    head, tail = out[: match.start()], out[match.end() :]
    omitted = int(match.group(1).replace(",", ""))
    assert text.startswith(head)
    assert text.endswith(tail)
    assert len(head) + omitted + len(tail) == len(text)
    assert (
        abs(len(head.encode("utf-8", "surrogatepass")) - len(tail.encode("utf-8", "surrogatepass")))
        <= 4
    )


@settings(max_examples=300, deadline=None)
@given(value=_json, limit=_limits)
def test_json_smart_always_yields_valid_json_within_the_limit(value: Any, limit: int) -> None:
    # covers C10
    out = truncate_json(json.dumps(value), limit)
    assert out is not None
    json.loads(out)
    assert estimate_tokens(out) <= limit
