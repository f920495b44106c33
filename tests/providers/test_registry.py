"""The ``provider:model`` registry: built-ins resolve lazily; unknown prefixes are clear errors."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncGenerator

import pytest

from bastion.core import FinishChunk, Model, ModelRequest, StreamChunk, UserError
from bastion.providers import register_provider, registered_providers, resolve_model


def test_built_in_prefixes_are_listed() -> None:
    assert {
        "openai",
        "openai-responses",
        "anthropic",
        "ollama",
        "gemini",
        "openai-compatible",
    } <= set(registered_providers())


def test_unknown_and_malformed_specs_are_user_errors() -> None:
    with pytest.raises(UserError, match="Unknown model provider 'nowhere'"):
        resolve_model("nowhere:x")
    with pytest.raises(UserError, match="provider:model"):
        resolve_model("gpt-4")


async def test_registered_factories_resolve() -> None:
    class Echo(Model):
        def __init__(self, name: str) -> None:
            self.provider, self.name = "echo", name

        async def stream(self, request: ModelRequest) -> AsyncGenerator[StreamChunk, None]:
            yield FinishChunk(finish_reason="stop")

    register_provider("echo-test", Echo, replace=True)
    model = resolve_model("echo-test:model:with:colons")
    assert model.key == "echo:model:with:colons"
    assert (await model.request(ModelRequest(messages=[]))).finish_reason == "stop"
    with pytest.raises(UserError, match="already registered"):
        register_provider("echo-test", Echo)


def test_importing_providers_imports_no_adapter_and_no_http_library() -> None:
    code = (
        "import sys, bastion.providers\n"
        "bastion.providers.resolve_model  # names load on first use\n"
        "print(sorted(m for m in sys.modules if m.startswith(('httpx', 'bastion.providers.'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(["bastion.providers._registry"])


def test_base_urls_come_from_the_conventional_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    # covers issue 3 (keys and base URLs from arguments or the conventional variables)
    from bastion.providers import HttpModel

    monkeypatch.setenv("OPENAI_BASE_URL", "http://proxy.local/v1/")
    for spec in ("openai:gpt-4.1-mini", "openai-responses:gpt-4.1-mini"):
        model = resolve_model(spec)
        assert isinstance(model, HttpModel)
        assert model.base_url == "http://proxy.local/v1"
    explicit = resolve_model("openai:gpt-4.1-mini", base_url="http://other/v1")
    assert isinstance(explicit, HttpModel)
    assert explicit.base_url == "http://other/v1"
