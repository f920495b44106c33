"""``gemini_model`` and the ``"gemini:<model>"`` registry entry."""

from __future__ import annotations

import pytest

from bastion.providers import HttpModel, resolve_model
from bastion.providers.gemini import GeminiProtocol, gemini_model


def test_registry_resolves_gemini_models() -> None:
    #
    model = resolve_model("gemini:gemini-2.5-pro")
    assert isinstance(model, HttpModel)
    assert model.key == "gemini:gemini-2.5-pro"
    assert isinstance(model.protocol, GeminiProtocol)
    assert model.base_url == "https://generativelanguage.googleapis.com"
    assert model.profile.reasoning


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"GEMINI_API_KEY": "g", "GOOGLE_API_KEY": "o"}, "g"),
        ({"GOOGLE_API_KEY": "o"}, "o"),
        ({}, None),
    ],
)
def test_api_key_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], expected: str | None
) -> None:
    #
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    model = gemini_model("gemini-2.5-flash")
    assert model.protocol.headers(model._api_key) == (
        {"x-goog-api-key": expected} if expected else {}
    )


def test_explicit_key_wins_and_models_prefix_is_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    #
    monkeypatch.setenv("GOOGLE_API_KEY", "o")
    model = gemini_model("models/gemini-2.5-flash", api_key="mine")
    assert model._api_key == "mine"
    assert model.protocol.path(model.name) == (
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    )
