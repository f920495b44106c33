"""``bastion models``: every provider, its protocol and the variables it reads."""

import json

import pytest
from typer.testing import CliRunner

from bastion.cli import app
from bastion.providers.openai import PRESETS


def test_models_lists_every_preset_with_its_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BASTION_GROQ_API_KEY", "sk-secret-value")
    monkeypatch.delenv("GROQ_API_KEY", raising=False)
    result = CliRunner().invoke(app, ["models", "--plain"])
    assert result.exit_code == 0, result.output
    out = result.stdout
    for name in PRESETS:
        assert f"openai-compatible:{name}:<model>" in out
        assert f"BASTION_{name.upper()}_BASE_URL" in out
    for spec in ("openai:", "openai-responses:", "anthropic:", "gemini:", "ollama:"):
        assert f"\n{spec}<model>" in f"\n{out}"
    assert "BASTION_GROQ_API_KEY (set), GROQ_API_KEY" in out
    assert "sk-secret-value" not in out  # names only, never values
    assert "BASTION_<NAME>_BASE_URL" in out


def test_models_json_has_one_object_per_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BASTION_VLLM_BASE_URL", "http://gpu:8000/v1")
    result = CliRunner().invoke(app, ["models", "--json"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    by_spec = {row["spec"]: row for row in rows}
    vllm = by_spec["openai-compatible:vllm:<model>"]
    assert vllm["base_url"] == "http://localhost:8000/v1"
    assert vllm["base_url_variables"] == ["BASTION_VLLM_BASE_URL", "VLLM_BASE_URL"]
    assert vllm["api_key_variables"] == ["BASTION_VLLM_API_KEY", "VLLM_API_KEY"]
    assert vllm["set"] == ["BASTION_VLLM_BASE_URL"]
    assert len(rows) == 5 + len(PRESETS) + 1


def test_models_usage_mistake_exits_2_without_a_traceback() -> None:
    result = CliRunner().invoke(app, ["models", "--nope"])
    assert result.exit_code == 2
    assert "Traceback" not in result.output
