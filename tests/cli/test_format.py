from inline_snapshot import snapshot

from bastion.cli._format import format_call, format_duration, format_summary, preview
from bastion.core import Usage


def test_preview_flattens_whitespace_and_cuts_with_an_ellipsis():
    assert preview("a\n  b\tc") == "a b c"
    assert preview("x" * 100, width=10) == "xxxxxxxxx…"
    assert len(preview("y" * 500)) == 72


def test_format_call_shows_arguments_as_json_values():
    assert format_call("count_lines", '{"path": "README.md"}') == 'count_lines(path="README.md")'
    assert (
        format_call("f", '{"n": 3, "flag": true, "xs": [1, 2]}') == "f(n=3, flag=true, xs=[1, 2])"
    )
    assert format_call("f", "") == "f()"


def test_format_call_shows_malformed_or_non_object_arguments_raw():
    assert format_call("f", '{"path": ') == 'f({"path":)'
    assert format_call("f", "[1, 2]") == "f([1, 2])"


def test_format_call_shortens_long_values():
    shown = format_call("read_file", '{"path": "' + "d/" * 60 + '"}')
    assert shown.endswith("…)")
    assert len(shown) < 70


def test_format_duration_picks_a_readable_unit():
    assert [format_duration(s) for s in (0.0004, 0.012, 0.5, 1.234, 125)] == snapshot(
        ["0.4 ms", "12 ms", "500 ms", "1.23 s", "2m 05s"]
    )


def test_format_summary_counts_with_plurals_and_shows_cost_when_known():
    usage = Usage(prompt_tokens=1000, completion_tokens=234)
    assert format_summary(
        status="completed", steps=1, tool_calls=1, usage=usage, duration=0.05
    ) == snapshot("completed · 1 step · 1 tool call · 1,234 tokens · 50 ms")
    usage.cost_usd = 0.0123
    assert format_summary(
        status="failed", steps=3, tool_calls=0, usage=usage, duration=2
    ) == snapshot("failed · 3 steps · 0 tool calls · 1,234 tokens · $0.0123 · 2.00 s")


def test_format_summary_says_not_reported_instead_of_zero_tokens():
    # covers issue 12 ("0 tokens" when a server reports no usage reads "not reported")
    unreported = Usage(requests=2, unreported_requests=2, cost_usd=0.0)
    assert format_summary(
        status="completed", steps=2, tool_calls=1, usage=unreported, duration=0.05
    ) == snapshot("completed · 2 steps · 1 tool call · tokens not reported · 50 ms")
    partly = Usage(
        prompt_tokens=1000, completion_tokens=234, requests=3, unreported_requests=1, cost_usd=0.01
    )
    assert format_summary(
        status="completed", steps=3, tool_calls=2, usage=partly, duration=0.05
    ) == snapshot(
        "completed · 3 steps · 2 tool calls · ≥ 1,234 tokens (1 call not reported) · "
        "≥ $0.0100 · 50 ms"
    )
