"""``RunContext``: session state, and progress reporting bound to one tool call."""

from typing import Any

from bastion.core import AgentEvent, RunContext, SystemClock, TextDeltaEvent, Usage


class RecordingSink:
    def __init__(self) -> None:
        self.reports: list[tuple[str, Any]] = []

    def progress(self, current: float, total: float | None, message: str | None) -> None:
        self.reports.append(("progress", (current, total, message)))

    def partial(self, content: str) -> None:
        self.reports.append(("partial", content))

    def subagent(self, agent_name: str, event: AgentEvent, ancestry: tuple[str, ...] = ()) -> None:
        self.reports.append(("subagent", (agent_name, event)))


def make_ctx() -> RunContext[None]:
    return RunContext(run_id="r", agent_name="a")


def test_defaults_of_a_new_context():
    # covers A-02, C15
    ctx = make_ctx()
    assert (ctx.run_id, ctx.agent_name, ctx.deps) == ("r", "a", None)
    assert ctx.metadata == {}
    assert ctx.session_state == {}
    assert ctx.usage == Usage()
    assert ctx.step == 0
    assert isinstance(ctx.clock, SystemClock)
    assert (ctx.tool_call_id, ctx.tool_name) == (None, None)


def test_get_state_and_set_state_work_over_session_state():
    # covers A-03, C15
    ctx = make_ctx()
    assert ctx.get_state("missing") is None
    assert ctx.get_state("missing", 5) == 5
    ctx.set_state("cart", ["apple"])
    assert ctx.get_state("cart") == ["apple"]
    assert ctx.session_state == {"cart": ["apple"]}


def test_contexts_do_not_share_state_by_default():
    #
    a, b = make_ctx(), make_ctx()
    a.set_state("k", 1)
    assert b.get_state("k") is None


def test_progress_and_streaming_are_ignored_outside_a_tool():
    # covers A-01, T-21
    ctx = make_ctx()
    ctx.report_progress(1, 2, "half")
    ctx.stream_content("piece")
    ctx.forward_event(TextDeltaEvent(run_id="child", seq=1, delta="x"), agent_name="helper")
    assert ctx.session_state == {}


def test_a_tool_bound_copy_reports_to_its_sink_and_shares_session_state():
    # covers A-01, T-21
    ctx = make_ctx()
    sink = RecordingSink()
    bound = ctx.for_tool_call("call_1", "search", sink)

    assert (bound.tool_call_id, bound.tool_name) == ("call_1", "search")
    assert (ctx.tool_call_id, ctx.tool_name) == (None, None)
    bound.report_progress(1, 4, "page 1")
    bound.report_progress(2)
    bound.stream_content("hello")
    delta = TextDeltaEvent(run_id="child", seq=3, delta="hi")
    bound.forward_event(delta, agent_name="helper")
    assert sink.reports == [
        ("progress", (1, 4, "page 1")),
        ("progress", (2, None, None)),
        ("partial", "hello"),
        ("subagent", ("helper", delta)),
    ]
    # State a tool sets is the run's state: the session persists it.
    bound.set_state("seen", True)
    assert ctx.get_state("seen") is True


def test_deps_are_typed_and_passed_through():
    # covers A-02, C15
    ctx: RunContext[dict[str, str]] = RunContext(run_id="r", agent_name="a", deps={"db": "x"})
    assert ctx.deps == {"db": "x"}
    assert ctx.for_tool_call("c", "t", None).deps is ctx.deps


def test_cancel_token_wakes_a_waiting_thread_and_keeps_the_first_reason() -> None:
    # covers C15 (cancel token)
    import threading

    from bastion.core import CancelToken

    token = CancelToken()
    assert not token.cancelled
    assert token.wait(0) is False
    woke = threading.Event()

    def waiter() -> None:
        if token.wait():
            woke.set()

    thread = threading.Thread(target=waiter)
    thread.start()
    token.cancel("aborted")
    token.cancel("second reason")
    thread.join()
    assert woke.is_set()
    assert (token.cancelled, token.reason) == (True, "aborted")
    late = CancelToken()
    late.cancel("early")
    assert late.wait() is True  # cancelled before anyone waited
