"""Usage arithmetic and aliases (SPEC C2)."""

from bastion.core import FinishChunk, ResponseAssembler, TextChunk, Usage


def test_total_is_prompt_plus_completion_and_excludes_reasoning():
    # covers C2, A-12
    usage = Usage(prompt_tokens=100, completion_tokens=40, reasoning_tokens=30)
    assert usage.total_tokens == 140


def test_aliases_read_the_canonical_fields():
    # covers C2
    usage = Usage(prompt_tokens=7, completion_tokens=3, cached_read_tokens=5)
    assert (usage.input_tokens, usage.output_tokens, usage.cached_tokens) == (7, 3, 5)


def test_adding_sums_every_counter():
    # covers C2, A-12
    a = Usage(
        prompt_tokens=1,
        completion_tokens=2,
        reasoning_tokens=3,
        cached_read_tokens=4,
        cache_write_tokens=5,
        audio_input_tokens=6,
        audio_output_tokens=7,
        requests=1,
        cost_usd=0.25,
        provider_metrics={"raw": 1},
    )
    b = Usage(
        prompt_tokens=10,
        completion_tokens=20,
        reasoning_tokens=30,
        cached_read_tokens=40,
        cache_write_tokens=50,
        audio_input_tokens=60,
        audio_output_tokens=70,
        requests=2,
        cost_usd=0.5,
    )
    assert a + b == Usage(
        prompt_tokens=11,
        completion_tokens=22,
        reasoning_tokens=33,
        cached_read_tokens=44,
        cache_write_tokens=55,
        audio_input_tokens=66,
        audio_output_tokens=77,
        requests=3,
        cost_usd=0.75,
    )
    assert (a + b).total_tokens == a.total_tokens + b.total_tokens


def test_adding_leaves_the_operands_unchanged():
    # covers C2
    a = Usage(prompt_tokens=1)
    b = Usage(prompt_tokens=2)
    _ = a + b
    assert (a.prompt_tokens, b.prompt_tokens) == (1, 2)


def test_unknown_cost_stays_unknown_and_a_known_cost_wins():
    # covers C2
    unknown = Usage(prompt_tokens=1)
    priced = Usage(prompt_tokens=1, cost_usd=0.2)
    assert (unknown + unknown).cost_usd is None
    assert (unknown + priced).cost_usd == 0.2
    assert (priced + unknown).cost_usd == 0.2
    assert (Usage(cost_usd=0.0) + unknown).cost_usd == 0.0


def test_summing_many_calls_from_an_empty_start():
    # covers C2
    calls = [Usage(prompt_tokens=i, completion_tokens=1, requests=1) for i in range(1, 5)]
    total = sum(calls, Usage())
    assert (total.prompt_tokens, total.completion_tokens, total.requests) == (10, 4, 4)
    assert total.cost_usd is None


def test_is_empty_until_something_is_counted():
    # covers C2
    assert Usage().is_empty()
    assert Usage(provider_metrics={"raw": 1}).is_empty()
    assert not Usage(requests=1).is_empty()
    assert not Usage(cost_usd=0.01).is_empty()


def test_describe_tokens_never_shows_zero_for_unreported_usage() -> None:
    # covers issue 12 (unreported usage reads "not reported")
    assert Usage(prompt_tokens=10, completion_tokens=5, requests=1).describe_tokens() == (
        "15 tokens"
    )
    assert Usage(requests=1, unreported_requests=1).describe_tokens() == "tokens not reported"
    assert not Usage(requests=1, unreported_requests=1).reported
    summed = Usage(prompt_tokens=10, requests=1) + Usage(requests=1, unreported_requests=1)
    assert summed.reported
    assert summed.describe_tokens() == "≥ 10 tokens (1 call not reported)"
    assert Usage().describe_tokens() == "0 tokens"  # no call at all: nothing to report


def test_a_finish_without_usage_counts_as_one_unreported_call() -> None:
    # covers issue 12 (a model whose server sent no usage)
    assembler = ResponseAssembler("test:m")
    assembler.add(TextChunk(text="hi"))
    assembler.add(FinishChunk(finish_reason="stop"))
    usage = assembler.response().usage
    assert (usage.requests, usage.unreported_requests) == (1, 1)
    reported = ResponseAssembler("test:m")
    reported.add(FinishChunk(finish_reason="stop", usage=Usage(prompt_tokens=3)))
    assert reported.response().usage.unreported_requests == 0
