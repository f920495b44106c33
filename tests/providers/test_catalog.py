"""The provider catalog says what the factories really do."""

import pytest

from bastion.providers import resolve_model
from bastion.providers._catalog import provider_catalog


def test_catalog_defaults_match_the_protocols() -> None:
    from bastion.providers.anthropic import MessagesProtocol
    from bastion.providers.gemini._protocol import GeminiProtocol
    from bastion.providers.openai import ChatCompletionsProtocol
    from bastion.providers.openai_responses._protocol import ResponsesProtocol

    rows = {info.spec.partition(":")[0]: info for info in provider_catalog()[:5]}
    for prefix, protocol in (
        ("openai", ChatCompletionsProtocol()),
        ("openai-responses", ResponsesProtocol),
        ("anthropic", MessagesProtocol),
        ("gemini", GeminiProtocol),
    ):
        assert rows[prefix].base_url == protocol.default_base_url
        assert protocol.api_key_env in rows[prefix].api_key_variables


@pytest.mark.parametrize("info", provider_catalog()[:-1], ids=lambda info: info.spec)
def test_the_first_base_url_variable_of_every_provider_is_honoured(
    info: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bastion.providers._catalog import ProviderInfo

    assert isinstance(info, ProviderInfo)
    variable = info.base_url_variables[0]
    monkeypatch.setenv(variable, "http://configured.test/v1")
    spec = info.spec.replace("<model>", "m")
    model = resolve_model(spec, api_key="k")
    assert model.base_url == "http://configured.test/v1"  # type: ignore[attr-defined]
