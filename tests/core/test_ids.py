"""Identifiers for runs and calls."""

import re

from bastion.core import new_id


def test_new_id_is_prefixed_and_random():
    #
    ids = {new_id("run") for _ in range(100)}
    assert len(ids) == 100
    assert all(re.fullmatch(r"run_[0-9a-f]{32}", i) for i in ids)
