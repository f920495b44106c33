"""The OpenAPI schema fuzzed with schemathesis: no generated request gets a 5xx answer.

Every operation gets valid (positive) and invalid (negative) requests; each one whose path
names a run is sent twice, as generated and naming a real suspended run and its pending
call, so the handlers behind the 404 are fuzzed too.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, cast

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.python import asgi

from bastion.server import create_app

from ._agents import mailer

TOKEN = "fuzz-token"
EXAMPLES = 20  # per operation and mode: the whole test stays within seconds


@pytest.mark.timeout(300)  # every operation, twice: about a minute on a busy 2-core machine
def test_no_generated_request_gets_a_server_error(tmp_path: Path) -> None:
    app = create_app(mailer(), store=f"sqlite:///{tmp_path / 'fuzz.db'}", auth={TOKEN: "acme"})
    schema: Any = schemathesis.openapi.from_asgi("/openapi.json", app)
    operations: list[Any] = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 12
    client: Any = asgi.get_client(cast("Any", app), max_stream_events=10_000)
    with client as http:
        http.headers["Authorization"] = f"Bearer {TOKEN}"
        run_id = http.post("/runs", json={"input": "Mail Bob"}).json()["run_id"]
        assert "agent.end" in http.get(f"/runs/{run_id}/events").text  # suspended
        [pending] = http.get(f"/runs/{run_id}/approvals").json()
        real = {"run_id": run_id, "item_id": pending["id"]}
        for operation in operations:
            _fuzz(operation, http, real, GenerationMode.POSITIVE)
            # An operation with nothing to make invalid (no body, query or path) has no
            # negative case at all.
            with contextlib.suppress(Unsatisfiable):
                _fuzz(operation, http, real, GenerationMode.NEGATIVE)


def _fuzz(operation: Any, http: Any, real: dict[str, str], mode: GenerationMode) -> None:
    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    def check(case: Any) -> None:
        _send(case, http)
        names: dict[str, Any] = case.path_parameters or {}
        if "run_id" in names:
            names.update({k: v for k, v in real.items() if k in names})
            _send(case, http)

    check()


def _send(case: Any, http: Any) -> None:
    response = case.call(session=http)
    assert response.status_code < 500, (
        f"{case.method} {case.formatted_path} {case.body!r} {case.query!r} "
        f"{case.headers!r} -> {response.status_code}: {response.text[:400]}"
    )
