"""``bastion.multi`` loads on first use (not with ``Agent``), and every public name resolves."""

from __future__ import annotations

import subprocess
import sys

import pytest

import bastion.agent
import bastion.multi

MULTI_AGENT = (
    "bastion.multi",
    "bastion.multi._fanout",
    "bastion.multi._team",
    "bastion.multi._external",
    "bastion.multi._evaluator",
    "bastion.multi._judge",
)


def test_importing_agent_leaves_the_multi_agent_modules_unloaded() -> None:
    code = (
        "import sys\n"
        "from bastion import Agent, tool\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('bastion.'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert set(out.stdout.split()) & set(MULTI_AGENT) == set()


def test_every_public_name_of_bastion_agent_resolves() -> None:
    for name in bastion.agent.__all__:
        assert getattr(bastion.agent, name) is not None, name
    with pytest.raises(AttributeError, match=r"module 'bastion\.agent' has no attribute"):
        _ = bastion.agent.no_such_name  # pyright: ignore[reportAttributeAccessIssue, reportUnknownVariableType, reportUnknownMemberType]


def test_every_public_name_of_bastion_multi_resolves() -> None:
    for name in bastion.multi.__all__:
        assert getattr(bastion.multi, name) is not None, name
    with pytest.raises(AttributeError, match=r"module 'bastion\.multi' has no attribute"):
        _ = bastion.multi.no_such_name  # pyright: ignore[reportAttributeAccessIssue]
