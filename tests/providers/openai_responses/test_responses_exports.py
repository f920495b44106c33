"""The adapter's public surface and its registry entry.

SPEC G-63.
"""

from __future__ import annotations

import bastion.providers.openai_responses as package
from bastion.providers import HttpModel, resolve_model
from bastion.providers.openai_responses import ResponsesProtocol


def test_public_names_are_pinned() -> None:
    # covers G-63
    assert package.__all__ == ["ResponsesProtocol", "openai_responses_model"]


def test_registry_resolves_openai_responses_models() -> None:
    # covers G-63
    model = resolve_model("openai-responses:o4-mini")
    assert isinstance(model, HttpModel)
    assert isinstance(model.protocol, ResponsesProtocol)
    assert model.key == "openai-responses:o4-mini"
    assert model.base_url == "https://api.openai.com/v1"
    assert model.profile.reasoning


def test_headers_without_a_key_send_no_authorization() -> None:
    # covers G-63
    assert ResponsesProtocol().headers(None) == {"Accept": "text/event-stream"}
