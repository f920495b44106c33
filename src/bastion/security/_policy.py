"""The data-flow policy: declarative rules per sink argument, checked before a sink runs.

A *sink* is a tool that changes something outside the run (``side_effecting`` or
``external_stateful``, or the tools :attr:`DataFlowPolicy.sinks` names). Before a sink
runs, each argument value is traced through the run's index (``_index.py``) and the rules
decide:

* ``trusted``: the argument's targets (addresses, URLs, accounts, numbers, paths) must come
  from the user, a trusted source or the allowlist. Arguments named like a target
  (``to``, ``recipient``, ``url``, ``iban``, ``account``, ...) get this rule by default;
* ``no_secret``: the value may carry untrusted text but not secret data (every argument
  of every sink by default);
* ``no_untrusted``: the value may not copy untrusted content at all;
* the *lethal trifecta*: once the run read untrusted content and secret data, no sink runs
  (untrusted instructions could make it carry the secret out);
* *plan mode*: the user's request (trusted input only) fixes which sinks and targets the
  run may use; later content, even from a trusted tool, cannot add any.

``declassify_sinks`` are exempt from every rule; ``declassify_sources`` are tools whose
output counts as trusted and public.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from bastion.core import UserError

from ._entities import allow_keys
from ._index import DataFlowIndex, ValueTrace
from ._provenance import DEFAULT_TRUST, Sensitivity, SourceKind, TrustLevel, Violation

__all__ = [
    "TARGET_WORDS",
    "ArgumentRule",
    "DataFlowPolicy",
    "Plan",
    "Planner",
    "Requirement",
    "Source",
    "evaluate",
    "from_user",
    "no_secret",
    "no_untrusted",
]

Requirement: TypeAlias = Literal["trusted", "no_secret", "no_untrusted"]
Action: TypeAlias = Literal["refuse", "approve"]

TARGET_WORDS = frozenset(
    str.split(
        "to cc bcc recipient recipients email emails address addresses destination dest "
        "target account accounts iban bic swift url urls uri link endpoint webhook host "
        "domain phone number payee beneficiary receiver"
    )
)
"""Argument names (or ``_``-separated words of them) that name where a sink acts."""

_COPY_SHARE = 0.5  # a value with at least this share of copied words is a copy
_RULE_CACHE = 4096  # (tool, argument) pairs whose rules a policy remembers


@dataclass(kw_only=True, slots=True, frozen=True)
class ArgumentRule:
    """One declarative rule on sink arguments.

    Attributes:
        require: ``trusted``, ``no_secret`` or ``no_untrusted`` (see the module doc).
        tool: Sink name pattern (``fnmatch``).
        argument: Argument pattern (``fnmatch`` on the dotted path: ``to``, ``payment.*``).
        allow: Values allowed whatever their source (addresses, domains, numbers...).
        action: When enforced: ``refuse`` the call (a tool error the model reads) or
            ``approve`` (a durable approval interrupt). ``None``: the policy's default.
    """

    require: Requirement
    tool: str = "*"
    argument: str = "*"
    allow: tuple[str, ...] = ()
    action: Action | None = None

    def __post_init__(self) -> None:
        if self.require not in ("trusted", "no_secret", "no_untrusted"):
            raise UserError(
                f"ArgumentRule.require must be 'trusted', 'no_secret' or 'no_untrusted', "
                f"got {self.require!r}."
            )
        if self.action not in (None, "refuse", "approve"):
            raise UserError(
                f"ArgumentRule.action must be 'refuse' or 'approve', got {self.action!r}."
            )

    def applies(self, tool: str, argument: str) -> bool:
        """True when this rule covers ``argument`` of ``tool``."""
        return fnmatch.fnmatchcase(tool, self.tool) and fnmatch.fnmatchcase(argument, self.argument)


def from_user(
    tool: str, *arguments: str, allow: Sequence[str] = (), action: Action | None = None
) -> tuple[ArgumentRule, ...]:
    """Rules: these arguments of ``tool`` must come from the user or ``allow``."""
    return tuple(
        ArgumentRule(require="trusted", tool=tool, argument=a, allow=tuple(allow), action=action)
        for a in arguments or ("*",)
    )


def no_secret(
    tool: str = "*", *arguments: str, action: Action | None = None
) -> tuple[ArgumentRule, ...]:
    """Rules: these arguments of ``tool`` (default all) may not carry secret data."""
    return tuple(
        ArgumentRule(require="no_secret", tool=tool, argument=a, action=action)
        for a in arguments or ("*",)
    )


def no_untrusted(
    tool: str = "*", *arguments: str, action: Action | None = None
) -> tuple[ArgumentRule, ...]:
    """Rules: these arguments of ``tool`` (default all) may not copy untrusted content."""
    return tuple(
        ArgumentRule(require="no_untrusted", tool=tool, argument=a, action=action)
        for a in arguments or ("*",)
    )


@dataclass(kw_only=True, slots=True, frozen=True)
class Source:
    """How to label a tool's output (``DataFlowPolicy.sources``).

    Attributes:
        kind: ``web``, ``email``, ``file``, ``mcp``, ``tool``, ...
        trust: ``None``: the kind's default (only ``tool`` is trusted).
        sensitivity: ``None``: the tool's own ``sensitivity``.
    """

    kind: SourceKind
    trust: TrustLevel | None = None
    sensitivity: Sensitivity | None = None


@dataclass(kw_only=True, slots=True, frozen=True)
class Plan:
    """What the user's request allows the run to act on (plan mode).

    Attributes:
        sinks: Sink names (patterns) the run may call; ``None``: any sink.
        targets: Addresses, URLs, accounts, ... the run may name in target arguments
            (normalised on use; domains allow every address on them).
    """

    sinks: tuple[str, ...] | None = None
    targets: tuple[str, ...] = ()


Planner: TypeAlias = Callable[[str], "Plan | Awaitable[Plan]"]
"""Given the text of the user's messages (trusted input only), the run's plan."""


@dataclass(kw_only=True, slots=True, frozen=True)
class DataFlowPolicy:
    """The data-flow policy of an agent (``SecurityConfig(dataflow=...)``).

    Attributes:
        mode: ``shadow`` (violations are audited, counted and reported as events; the call
            runs) or ``enforce`` (the call is refused, or waits for a human).
        rules: Explicit argument rules (see :func:`from_user`, :func:`no_secret`).
        target_arguments: Arguments named like targets (:data:`TARGET_WORDS`) must come
            from the user, a trusted source or the allowlist.
        secret_content: No sink argument may carry secret data.
        trifecta: No sink runs once the run read untrusted content and secret data.
        allowlist: Values any target argument may name (addresses, domains, numbers...).
        declassify_sinks: Sinks exempt from every rule (name patterns).
        declassify_sources: Tools whose output counts as trusted and public.
        sinks: Which tools are sinks (name patterns); ``None``: every ``side_effecting``
            or ``external_stateful`` tool.
        sources: How to label the output of tools, by name pattern (say which tool reads
            e-mail: ``{"read_inbox": Source(kind="email")}``).
        action: The default ``action`` of rules when enforced: ``refuse`` or ``approve``.
        plan: Plan mode: a :class:`Plan`, a :data:`Planner`, or ``"auto"`` (targets: what
            the user's messages name; sinks: any). ``None``: no plan.
    """

    mode: Literal["shadow", "enforce"] = "shadow"
    rules: Sequence[ArgumentRule] = ()
    target_arguments: bool = True
    secret_content: bool = True
    trifecta: bool = True
    allowlist: Sequence[str] = ()
    declassify_sinks: Sequence[str] = ()
    declassify_sources: Sequence[str] = ()
    sinks: Sequence[str] | None = None
    sources: Mapping[str, Source] = field(default_factory=dict[str, Source])
    action: Action = "refuse"
    plan: Plan | Planner | Literal["auto"] | None = None
    _allowed: frozenset[str] = field(init=False, repr=False, compare=False, default=frozenset())
    # The rules of each (tool, argument) met so far: policies are fixed, arguments recur.
    _rules: dict[tuple[str, str], list[ArgumentRule]] = field(
        init=False,
        repr=False,
        compare=False,
        default_factory=dict[tuple[str, str], list[ArgumentRule]],
    )

    def __post_init__(self) -> None:
        if self.mode not in ("shadow", "enforce"):
            raise UserError(
                f"DataFlowPolicy.mode must be 'shadow' or 'enforce', got {self.mode!r}."
            )
        if self.action not in ("refuse", "approve"):
            raise UserError(
                f"DataFlowPolicy.action must be 'refuse' or 'approve', got {self.action!r}."
            )
        if isinstance(self.plan, str) and self.plan != "auto":
            raise UserError(
                f"DataFlowPolicy.plan must be a Plan, a function or 'auto', got {self.plan!r}."
            )
        for rule in self.rules:
            if not isinstance(rule, ArgumentRule):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise UserError(f"DataFlowPolicy.rules holds {rule!r}, not an ArgumentRule.")
        object.__setattr__(self, "_allowed", allow_keys(self.allowlist))

    @property
    def allowed(self) -> frozenset[str]:
        """The allowlist's normalised entities."""
        return self._allowed

    def is_sink(self, tool: str, side_effect_class: str) -> bool:
        """True when ``tool`` is a sink under this policy."""
        if self.sinks is not None:
            return _matches(tool, self.sinks)
        return side_effect_class in ("side_effecting", "external_stateful")

    def label(self, tool: str) -> Source | None:
        """The configured label of ``tool``'s output, if any."""
        for pattern, source in self.sources.items():
            if fnmatch.fnmatchcase(tool, pattern):
                return source
        return None

    def trust_of(self, kind: SourceKind, trust: TrustLevel | None) -> TrustLevel:
        """The trust of an output of ``kind``: as configured, else the kind's default."""
        return trust if trust is not None else DEFAULT_TRUST[kind]

    def declassifies_sink(self, tool: str) -> bool:
        """True when ``tool`` is a sink exempt from every rule."""
        return _matches(tool, self.declassify_sinks)

    def declassifies(self, tool: str) -> bool:
        """True when ``tool``'s output counts as trusted and public."""
        return _matches(tool, self.declassify_sources)


def _matches(name: str, patterns: Sequence[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


@dataclass(kw_only=True, slots=True, frozen=True)
class SinkCheck:
    """What :func:`evaluate` needs about one sink call and the run."""

    tool: str
    arguments: Mapping[str, Any]
    index: DataFlowIndex
    plan_sinks: Sequence[str] | None = None
    plan_targets: frozenset[str] | None = None
    secrets_used: bool = False


def evaluate(policy: DataFlowPolicy, check: SinkCheck) -> list[Violation]:
    """The violations of one sink call (empty: it may run)."""
    tool = check.tool
    if policy.declassifies_sink(tool):
        return []
    found: list[Violation] = []
    if check.plan_sinks is not None and not _matches(tool, check.plan_sinks):
        found.append(
            _call_violation(
                policy, tool, "plan_sink", f"the user's request did not ask for {tool!r}"
            )
        )
    index = check.index
    if policy.trifecta and index.untrusted_seen and (index.secret_seen or check.secrets_used):
        found.append(
            _call_violation(
                policy,
                tool,
                "trifecta",
                "the run has read untrusted content and secret data, so no outbound action "
                "may run without a human",
            )
        )
    for path, value in _leaves(check.arguments):
        found.extend(_argument_violations(policy, check, path, value))
    return found


def _call_violation(policy: DataFlowPolicy, tool: str, rule: str, why: str) -> Violation:
    return Violation(rule=rule, tool=tool, argument=None, message=why, action=policy.action)


def _leaves(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """``(dotted path, text)`` of every scalar in the arguments."""
    if isinstance(value, Mapping):
        for key, item in value.items():  # pyright: ignore[reportUnknownVariableType]
            yield from _leaves(item, f"{path}.{key}" if path else str(key))  # pyright: ignore[reportUnknownArgumentType]
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
            yield from _leaves(item, f"{path}[{i}]")
    elif value is not None and not isinstance(value, bool):
        yield path, str(value)


_SPLIT = re.compile(r"[_\-.\[\]0-9]+")


def _is_target(path: str) -> bool:
    name = path.rsplit(".", 1)[-1].lower()
    return any(word in TARGET_WORDS for word in _SPLIT.split(name) if word)


_DEFAULT_TRUSTED = ArgumentRule(require="trusted")
_DEFAULT_NO_SECRET = ArgumentRule(require="no_secret")


def _requirements(policy: DataFlowPolicy, tool: str, path: str) -> list[ArgumentRule]:
    """The rules on one argument: the explicit ones, then the policy's defaults."""
    key = (tool, path)
    cached = policy._rules.get(key)
    if cached is not None:
        return cached
    rules = [r for r in policy.rules if r.applies(tool, path)]
    explicit = {r.require for r in rules}
    if policy.target_arguments and "trusted" not in explicit and _is_target(path):
        rules.append(_DEFAULT_TRUSTED)
    if policy.secret_content and "no_secret" not in explicit:
        rules.append(_DEFAULT_NO_SECRET)
    if len(policy._rules) < _RULE_CACHE:
        policy._rules[key] = rules
    return rules


def _argument_violations(
    policy: DataFlowPolicy, check: SinkCheck, path: str, value: str
) -> Iterator[Violation]:
    rules = _requirements(policy, check.tool, path)
    if not rules:
        return
    trace = check.index.trace(value, untrusted_spans=any(r.require != "no_secret" for r in rules))
    for rule in rules:
        why, sources = _breach(policy, check, rule, trace, value)
        if why is not None:
            yield Violation(
                rule=_RULE_NAMES[rule.require] if why != "plan" else "plan_target",
                tool=check.tool,
                argument=path,
                message=_message(path, value, why),
                sources=check.index.source_names(sources),
                action=rule.action or policy.action,
            )


_RULE_NAMES = {
    "trusted": "trusted_argument",
    "no_secret": "secret_content",
    "no_untrusted": "untrusted_content",
}


def _breach(
    policy: DataFlowPolicy, check: SinkCheck, rule: ArgumentRule, trace: ValueTrace, value: str
) -> tuple[str | None, frozenset[int]]:
    """Why ``trace`` breaks ``rule`` (``None``: it does not), and the records to blame."""
    if rule.require == "no_secret":
        if trace.secret_entities or trace.secret_share >= _COPY_SHARE:
            return "it carries secret data", trace.secret_sources
        return None, frozenset()
    if rule.require == "no_untrusted":
        if trace.untrusted_entities or trace.untrusted_share >= _COPY_SHARE:
            return "it copies untrusted content", trace.untrusted_sources
        return None, frozenset()
    allowed = policy.allowed | allow_keys(rule.allow)
    if check.plan_targets is not None:
        outside = _outside(trace.entities, trace, check.plan_targets | allowed, value)
        if outside:
            return "plan", trace.untrusted_sources
        return None, frozenset()
    bad = _outside(trace.untrusted_entities | trace.unknown_entities, trace, allowed, value)
    if bad:
        where = "untrusted content" if bad & trace.untrusted_entities else "no trusted source"
        return (
            f"it names {', '.join(sorted(_shown(bad)))}, which came from {where}",
            trace.untrusted_sources,
        )
    if (
        not trace.entities
        and trace.untrusted_share >= _COPY_SHARE
        and f"raw:{value.strip().lower()}" not in allowed
    ):
        return "it was copied from untrusted content", trace.untrusted_sources
    return None, frozenset()


def _outside(
    entities: frozenset[str], trace: ValueTrace, allowed: frozenset[str], value: str
) -> frozenset[str]:
    """The ``entities`` not covered by ``allowed`` (a domain covers its addresses and URLs).

    The domain of an address or URL in the value is judged with it, not on its own.
    """
    if f"raw:{value.strip().lower()}" in allowed:
        return frozenset()
    hosts = {_domain(e) for e in trace.entities if e.startswith(("email:", "url:"))}
    out: set[str] = set()
    for entity in entities:
        if entity in hosts or entity in allowed:
            continue
        if entity.startswith("domain:") and _domain_allowed(entity, allowed):
            continue
        if entity.startswith(("email:", "url:")) and _domain_allowed(_domain(entity), allowed):
            continue
        out.add(entity)
    return frozenset(out)


def _domain(entity: str) -> str:
    value = entity.split(":", 1)[1]
    host = value.rsplit("@", 1)[1] if entity.startswith("email:") else value.split("/", 1)[0]
    return f"domain:{host}"


def _domain_allowed(domain: str, allowed: frozenset[str]) -> bool:
    host = domain.split(":", 1)[1]
    parts = host.split(".")
    return any(f"domain:{'.'.join(parts[i:])}" in allowed for i in range(len(parts) - 1))


def _shown(entities: frozenset[str]) -> list[str]:
    return [e.split(":", 1)[1] for e in entities if not e.startswith("domain:")] or [
        e.split(":", 1)[1] for e in entities
    ]


def _message(path: str, value: str, why: str) -> str:
    if why == "plan":
        return f"argument {path!r} names a target the user's request did not name"
    shown = value if len(value) <= 80 else value[:77] + "..."
    return f"argument {path!r} ({shown!r}): {why}"


def plan_targets(plan: Plan) -> frozenset[str]:
    """A plan's targets, normalised (an address allows itself, not its whole domain)."""
    return allow_keys(plan.targets)
