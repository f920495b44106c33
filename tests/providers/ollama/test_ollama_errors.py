"""HTTP error answers of Ollama mapped to the model-error taxonomy. SPEC G-09."""

from __future__ import annotations

import pytest

from bastion.core import BadRequest, ContextLengthExceeded, ModelError, Overloaded, RateLimited

from ._support import Recorder, ask, model_with, transcript


@pytest.mark.parametrize(
    ("status", "name", "expected", "message"),
    [
        (404, "error_404.json", BadRequest, r"not found.*ollama pull llama3\.2"),
        (400, "error_400_context.json", ContextLengthExceeded, "maximum context length"),
        (400, "error_400.json", BadRequest, "num_predict must be an integer"),
        (500, "error_500.json", Overloaded, "llama runner process has terminated"),
    ],
)
async def test_http_errors_are_mapped_with_status_and_body(
    status: int, name: str, expected: type[ModelError], message: str
) -> None:
    # covers G-09
    body = transcript(name)
    model = model_with(Recorder(body, status=status, content_type="application/json"))
    with pytest.raises(expected, match=message) as raised:
        await model.request(ask())
    assert type(raised.value) is expected
    assert raised.value.status == status
    assert raised.value.body == body.decode()


async def test_404_without_model_name_still_hints_at_pulling() -> None:
    # covers G-09
    model = model_with(Recorder(b"404 page not found", status=404, content_type="text/plain"))
    with pytest.raises(BadRequest, match=r"ollama pull <model>"):
        await model.request(ask())


async def test_429_from_a_hosted_ollama_is_rate_limited() -> None:
    # covers G-09
    recorder = Recorder(b'{"error":"too many requests"}', status=429)
    with pytest.raises(RateLimited) as raised:
        await model_with(recorder).request(ask())
    assert raised.value.retryable
