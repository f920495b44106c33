"""Turning OpenTelemetry tracing on and off, and trace context for tools.

Off by default: nothing is imported from OpenTelemetry and runs do no per-event work until
:func:`instrument` installs the run tap.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from bastion.core import UserError, current_run_tap, set_run_tap

from ._run_view import RunView

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import TracerProvider

    from ._instrumentation import Instrumentation

__all__ = ["instrument", "trace_headers", "uninstrument"]


def instrument(
    *,
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    capture_content: bool = False,
    secret_keys: Sequence[str] = (),
    step_spans: bool = True,
) -> Instrumentation:
    """Trace every run that starts from now on, after the GenAI semantic conventions.

    Args:
        tracer_provider: Where spans go; the global provider when ``None``.
        meter_provider: Where the token usage and duration histograms go; the global one
            when ``None``.
        capture_content: Record messages, tool arguments and results on the spans, with
            secrets redacted. Off by default: spans then hold no content.
        secret_keys: More key names whose values are redacted (beside ``password``,
            ``api_key``, ``token``, ``authorization``...).
        step_spans: Give each step (a model call and the tools it asks for) a span of its
            own. ``False`` puts model and tool calls directly under the run's span: a third
            fewer spans, for a third less tracing cost.

    Returns:
        The installed instrumentation (it replaces any installed before).

    Raises:
        UserError: OpenTelemetry is not installed (``pip install 'bastion[otel]'``), or an
            argument has the wrong type.
    """
    for name, flag in (("capture_content", capture_content), ("step_spans", step_spans)):
        if not isinstance(flag, bool):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UserError(f"instrument({name}=...) must be a bool, not {flag!r}")
    keys: Sequence[object] = secret_keys
    if isinstance(keys, str) or not all(isinstance(k, str) and k for k in keys):
        raise UserError(f"instrument(secret_keys=...) must list non-empty names: {keys!r}")
    try:
        from ._instrumentation import Instrumentation
        from ._redact import Redactor
    except ImportError as exc:
        raise UserError(
            f"Tracing needs OpenTelemetry ({exc.name} is missing): pip install 'bastion[otel]'"
        ) from exc
    instrumentation = Instrumentation(
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        redactor=Redactor(secret_keys) if capture_content else None,
        step_spans=step_spans,
    )
    set_run_tap(instrumentation)
    return instrumentation


def uninstrument() -> None:
    """Stop tracing: runs that start from now on are not traced (running ones finish)."""
    set_run_tap(None)


def trace_headers(ctx: RunView) -> dict[str, str]:
    """W3C trace context headers for an outgoing request made inside a tool.

    Pass them on (``httpx.get(url, headers=trace_headers(ctx))``) so the service's spans
    join the tool call's trace. Empty when tracing is off.
    """
    tap = current_run_tap()
    headers = getattr(tap, "headers", None)
    if headers is None:
        return {}
    found: dict[str, str] = headers(ctx.run_id, ctx.tool_call_id)
    return found
