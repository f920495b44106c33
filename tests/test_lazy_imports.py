"""Packages load a name's module on first use; every public name still resolves."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from bastion._lazy import lazy_module

LAZY = ("agent", "tools", "governance", "stores", "security", "context", "providers")


@pytest.mark.parametrize("package", LAZY)
def test_every_public_name_resolves_and_unknown_names_fail(package: str) -> None:
    module = importlib.import_module(f"bastion.{package}")
    for name in module.__all__:
        assert getattr(module, name) is not None, name
    with pytest.raises(AttributeError, match=f"module 'bastion.{package}' has no attribute"):
        _ = module.no_such_name


def test_importing_agent_and_tool_leaves_optional_parts_unloaded() -> None:
    code = "import sys\nfrom bastion import Agent, tool\nprint(' '.join(sorted(sys.modules)))\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(out.stdout.split())
    assert "bastion.agent._agent" in loaded
    optional = {
        "bastion.governance._governor",
        "bastion.stores._protocols",
        "bastion.context._compact",
        "bastion.tools._code_mode",
        "bastion.providers._registry",
        "bastion.graph",
        "bastion.multi",
        "bastion.agent._assemble",  # an agent's parts are checked and built when it is made
        "bastion.agent._loop",  # the loop and its steps load with the first run
        "bastion.agent._journal",
        "bastion.tools._executor",
        "bastion.security._policy",
        "difflib",  # only for tool()'s unknown-keyword error
        "typing_extensions",  # only for type checkers (tool()'s ToolKeywords)
    }
    assert loaded & optional == set()


def test_an_agent_with_a_store_url_loads_the_stores_it_needs() -> None:
    code = (
        "import sys\n"
        "from bastion import Agent\n"
        "from bastion.testing import ScriptedModel\n"
        "agent = Agent('a', model=ScriptedModel(['x']), store='memory://')\n"
        "print(agent.config.store is not None, 'bastion.stores._protocols' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "True"]


def test_a_lazy_module_imports_on_first_read_then_is_the_module_itself() -> None:
    code = (
        "import sys\n"
        "from bastion._lazy import lazy_module\n"
        "lazy = lazy_module('bastion.filters')\n"
        "print(repr(lazy), 'bastion.filters' in sys.modules)\n"
        "compose = lazy.compose\n"
        "print(lazy is sys.modules['bastion.filters'], compose is lazy.compose)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == [
        "<lazy module 'bastion.filters' (not loaded)> False",
        "True True",
    ]


def test_a_lazy_module_that_does_not_exist_fails_when_read() -> None:
    missing = lazy_module("bastion.no_such_module")
    with pytest.raises(ModuleNotFoundError, match=r"bastion\.no_such_module"):
        _ = missing.anything
