"""``bastion worker`` serving graphs, ``graph run --temporal``, ``graph answer``: processes."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Generator
from contextlib import contextmanager

import pytest
from temporalio.testing import WorkflowEnvironment

from .test_cli import BASTION, ROOT, _address, _run

SPEC = "tests.distributed._graphs:served"


@contextmanager
def _worker(address: str) -> Generator[list[str]]:
    """A ``bastion worker`` process serving two graphs; yields what it printed at the end."""
    process = subprocess.Popen(
        [*BASTION, "worker", SPEC, "--temporal", address],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    ready = [process.stdout.readline() for _ in range(2)]
    printed: list[str] = []
    try:
        yield printed
    finally:
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=60)
        printed += [*ready, out, err, str(process.returncode)]


@pytest.mark.timeout(180)  # real processes and a dev server on a shared machine
async def test_a_worker_process_runs_graphs_and_a_paused_node_is_answered_from_the_cli(
    dev_server: WorkflowEnvironment,
) -> None:
    address = _address(dev_server)
    with _worker(address) as printed:
        done = await _run(
            "graph", "run", SPEC.replace("served", "pipeline"), "--input", "4",
            "--temporal", address, "--plain",
        )  # fmt: skip
        review = SPEC.replace("served", "review")
        parked = await _run(
            "graph", "run", review, "--input", "temporal", "--temporal", address, "--plain"
        )
        lines = parked.stdout.splitlines()
        workflow_id = lines[0].split()[1]
        command = lines[-1].split()
        answered = await _run(*("approved" if part == "VALUE" else part for part in command[1:]))
    first, second, out, err, code = printed
    assert [first.split(" on queue")[0], second.split(" on queue")[0]] == [
        "Serving graph pipeline",
        "Serving graph review",
    ]
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "24"
    assert "completed · 1 rounds" in done.stdout
    assert parked.returncode == 1, parked.stderr
    assert lines[0] == f"Graph {workflow_id} is waiting for an answer on:"
    assert lines[1].split("  ")[1:3] == ["review@0", "approve the draft"]
    assert command[:5] == ["bastion", "graph", "answer", workflow_id, "review@0"]
    assert answered.returncode == 0, answered.stderr
    assert answered.stdout.splitlines()[0] == "Draft on Temporal [approved]"
    assert (code, out.splitlines()[-1]) == ("0", "Stopped.")
    assert "Traceback" not in err
