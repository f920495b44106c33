"""Identifiers for runs and calls."""

import asyncio
import contextvars
import re

from bastion.core import id_source, new_id


def test_new_id_is_prefixed_and_random():
    #
    ids = {new_id("run") for _ in range(100)}
    assert len(ids) == 100
    assert all(re.fullmatch(r"run_[0-9a-f]{32}", i) for i in ids)


async def test_an_id_source_gives_the_random_part_in_its_context_and_tasks():
    numbers = iter(range(10))
    with id_source(lambda: f"n{next(numbers)}"):
        inside = new_id("run")
        in_task = await asyncio.create_task(_make("call"))
    assert (inside, in_task) == ("run_n0", "call_n1")
    assert new_id("run") != "run_n2"  # random again once the context is left


async def _make(prefix: str) -> str:
    return new_id(prefix)


def test_an_id_source_closed_from_another_context_does_not_raise() -> None:
    # A workflow coroutine finalized by the garbage collector exits its block elsewhere.
    block = id_source(lambda: "fixed")
    entered = contextvars.copy_context()
    entered.run(block.__enter__)
    assert entered.run(new_id, "run") == "run_fixed"
    contextvars.copy_context().run(block.__exit__, None, None, None)
    assert new_id("run") != "run_fixed"  # this context never had the source
