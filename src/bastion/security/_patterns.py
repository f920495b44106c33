r"""The catalogue of imperative / prompt-injection patterns.

Each :class:`InjectionPattern` has a stable id and a category; :func:`catalogue` compiles
them once, case-insensitively. The sanitiser (``_inbound.py``) scans tool output with them.

The shapes come from what public indirect-injection benchmarks plant in tool output:
instruction overrides ("ignore all previous instructions", InjecAgent's "strictly adhere to
the following instruction", AgentDojo's "the task I gave you" information block), fake role
and turn boundaries (chat-template tokens, ``[INST]``, ``### (system_message)``, closing
``</tool_result>`` tags), exfiltration and tool coercion ("send the conversation to
https://...", "you must call the ... tool", "do not tell the user"), and hidden channels
(zero-width runs, bidi overrides, Unicode tag characters, HTML comments addressed to the
model, encoded instructions).

Balance: ordinary tool output (code, JSON, logs, READMEs, business e-mail) must not match.
So verbs like "send" or "run" only count with an addressee or object that betrays an
injection (the conversation, credentials, "the following command" said to the model...).

Linear time: patterns are alternations of literals joined by single-class bounded gaps
(``[^\n]{0,60}``) and ``\s+``; there are no nested unbounded quantifiers, so the regex
engine cannot backtrack catastrophically. Gaps never cross a newline.

Speed: :func:`derive_starts` reads, from each pattern's syntax tree, the literals a match
must begin with (``\b(?:ignore|disregard|...)`` begins with one of those words), so the
scanner tries a pattern only where they occur instead of at every position.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal, TypeAlias

__all__ = [
    "NON_ASCII",
    "InjectionCategory",
    "InjectionPattern",
    "Starts",
    "Triggers",
    "catalogue",
    "derive_starts",
]

InjectionCategory: TypeAlias = Literal[
    "instruction_override",
    "role_impersonation",
    "exfiltration",
    "tool_coercion",
    "hidden_channel",
]


Triggers: TypeAlias = tuple[tuple[str, ...], ...] | None
NON_ASCII: Triggers = None
"""Triggers of a pattern that only matches characters outside ASCII."""

Starts: TypeAlias = tuple[tuple[str, str | None], ...] | None
"""Where the matches of a pattern can begin, as ``(literal, skip)`` pairs (see
:func:`derive_starts`); ``None`` when that cannot be told from the pattern."""


@dataclass(kw_only=True, slots=True, frozen=True)
class InjectionPattern:
    """One entry of the catalogue.

    Attributes:
        id: Stable identifier (``category.name``), reported in hits and audit rows.
        category: What kind of injection it detects.
        regex: The compiled pattern (case-insensitive), for any text.
        lowered: The same pattern compiled case-sensitively for lower-cased text (the
            regex engine skips ahead on a leading literal only without ``IGNORECASE``;
            this is several times faster).
        triggers: Lower-case literals of which every match holds at least one from each
            group; a text lacking any group is not scanned with this pattern. ``None``:
            the pattern only matches non-ASCII characters.
        starts: Where a match of ``lowered`` can begin (:func:`derive_starts`): the
            scanner tries the pattern only there instead of at every position.
    """

    id: str
    category: InjectionCategory
    regex: re.Pattern[str]
    lowered: re.Pattern[str]
    triggers: Triggers
    starts: Starts = None

    def may_match(self, lowered: str) -> bool:
        """Whether a lower-cased text can hold a match (a cheap substring prefilter)."""
        triggers = self.triggers
        if triggers is None:
            return not lowered.isascii()
        return all(any(word in lowered for word in group) for group in triggers)


_GAP = r"[^\n]{0,60}?"
_MODEL = r"(?:AI|LLM|language\s+model|AI\s+assistant|AI\s+agent|chatbot|GPT|Claude)"
_RULES = (
    r"(?:instructions?|prompts?|directions|directives?|rules|guidelines|commands|"
    r"context|messages|guidance|programming|constraints)"
)

_SOURCES: tuple[tuple[str, InjectionCategory, str, Triggers], ...] = (
    # --- instruction overrides -------------------------------------------------------------
    (
        "override.ignore_previous",
        "instruction_override",
        r"\b(?:ignore|disregard|forget|bypass|override|neglect|skip)\s+"
        r"(?:(?:all|any|the|your|my|these|those|every|of)\s+){0,3}"
        r"(?:previous|prior|above|earlier|preceding|original|initial|foregoing|system|existing)"
        r"\s+" + _RULES + r"\b",
        (("ignore", "disregard", "forget", "bypass", "override", "neglect", "skip"),),
    ),
    (
        "override.ignore_above",
        "instruction_override",
        r"\b(?:ignore|disregard|forget)\s+(?:(?:all|everything)\s+(?:of\s+)?)?(?:the\s+)?"
        r"(?:above|foregoing)(?=\s*(?:[.,;:!]|$|and\b|instead\b|text\b|content\b))",
        (("ignore", "disregard", "forget"), ("above", "foregoing")),
    ),
    (
        "override.forget_instructions",
        "instruction_override",
        r"\bforget\s+(?:(?:all|about|everything)\s+){0,2}(?:your|the|my)\s+"
        r"(?:(?:previous|prior|earlier|original|initial)\s+)?"
        r"(?:instructions?|rules|guidelines|prompt|programming|training|directives?|task)\b",
        (("forget",),),
    ),
    (
        "override.stop_following",
        "instruction_override",
        r"\b(?:do\s+not|don't|stop|no\s+longer)\s+(?:follow|obey)(?:ing)?\s+"
        r"(?:(?:the|your|any|its)\s+)?(?:previous|prior|original|system|user's|user|developer)"
        r"\s+(?:instructions?|prompt|request|rules)\b",
        (("follow", "obey"),),
    ),
    (
        "override.new_goal",
        "instruction_override",
        r"\byour\s+(?:new|real|actual|true|only|updated)\s+"
        r"(?:instructions?|task|goal|objective|mission|directive|purpose|role)\s+(?:is|are)\b",
        (("your",),),
    ),
    (
        "override.new_instructions_header",
        "instruction_override",
        r"\b(?:new|updated|revised|override|overriding)\s+(?:system\s+)?"
        r"(?:instructions?|directives?)\s*:",
        (("instruction", "directive"), (":",)),
    ),
    (
        "override.strictly_adhere",
        "instruction_override",
        r"\bstrictly\s+(?:adhere|obey)\s+(?:to\s+)?the\s+following\s+instructions?\b",
        (("strictly",),),
    ),
    (
        "override.task_i_gave_you",
        "instruction_override",
        r"\b(?:before|after)\s+you\s+(?:can\s+)?(?:solve|do|complete|finish)\s+the\s+task\s+"
        r"(?:that\s+)?I\s+gave\s+you\b|\bimportant\s+message\s+from\s+me\b"
        + _GAP
        + r"\bto\s+you\b",
        (("gave", "important"),),
    ),
    (
        "override.persona_switch",
        "instruction_override",
        r"\bfrom\s+now\s+on,?\s+you\s+(?:are|will|must|shall|should)\s+"
        r"(?:act|behave|respond|pretend|roleplay|play|ignore|answer|only\s+respond|be\s+an?)\b"
        r"|\byou\s+are\s+(?:now\s+)?(?:in\s+)?(?:DAN|developer\s+mode|jailbroken|unrestricted|"
        r"an?\s+unrestricted|no\s+longer\s+bound)\b"
        r"|\bdeveloper\s+mode\s+(?:is\s+)?(?:enabled|activated|on)\b",
        (("now", "dan", "developer", "jailbroken", "unrestricted", "bound"),),
    ),
    (
        "override.addressed_to_model",
        "instruction_override",
        r"\bif\s+you\s+are\s+an?\s+" + _MODEL + r"\b"
        r"|\b(?:note|message|instructions?)\s+(?:to|for)\s+(?:the\s+|any\s+)?" + _MODEL + r"\b"
        r"|\b(?:dear|attention|hey)\s+(?:AI|LLM|language\s+model|AI\s+assistant|chatbot)\b",
        (("ai", "llm", "language", "chatbot", "gpt", "claude"),),
    ),
    # --- role / system impersonation, fake transcript boundaries ---------------------------
    (
        "role.chat_template_token",
        "role_impersonation",
        r"<\|\s*(?:im_start|im_end|system|user|assistant|endoftext|eot_id|start_header_id|"
        r"end_header_id|begin_of_text|end_of_turn|start_of_turn)\s*\|>"
        r"|<(?:start|end)_of_turn>",
        (("<|", "_of_turn>"),),
    ),
    (
        "role.inst_tag",
        "role_impersonation",
        r"\[/?INST\]|<</?SYS>>",
        (("inst]", "sys>>"),),
    ),
    (
        "role.system_header",
        "role_impersonation",
        r"#{1,6}\s*\(\s*system[ _]?message\s*\)"
        r"|^[ \t]*#{1,6}[ \t]*(?:system|developer)"
        r"(?:[ \t_](?:message|prompt|instructions?|override))?[ \t]*:"
        r"|^[ \t]*#{1,6}[ \t]*(?:system|developer)[ _](?:message|prompt|override)"
        r"[ \t]*$"
        r"|\[\s*(?:system|admin|administrator|developer)\s+"
        r"(?:message|note|override|instructions?|prompt)\s*\]"
        r"|^[ \t]*(?:system|developer)[ \t]*(?:message|prompt|override|instructions?)[ \t]*:"
        r"|^[ \t]*\[?(?:system|developer)\]?[ \t]*:[ \t]*"
        r"(?:you\s+(?:are|must|will|should)|ignore|disregard|forget|from\s+now|new\s+instructions)",
        (("system", "developer", "admin"),),
    ),
    (
        "role.transcript_boundary",
        "role_impersonation",
        r"</?\s*(?:tool_result|tool_response|tool_output|tool_call|function_results?|"
        r"function_response|function_calls|system_prompt|system-reminder|"
        r"INFORMATION|IMPORTANT|user_query)\s*>",
        (("tool_", "function_", "system", "information", "important", "user_query"), (">",)),
    ),
    (
        "role.fake_assistant_turn",
        "role_impersonation",
        r"^[ \t]*(?:assistant|AI|model)[ \t]*:[ \t]*"
        r"(?:sure|ok(?:ay)?|certainly|understood|of\s+course|I\s+will|I'll|absolutely)\b"
        r"|^[ \t]*(?:human|user)[ \t]*:[ \t]*(?:ignore|disregard|forget|new\s+task)\b",
        ((":",), ("assistant", "ai", "model", "human", "user")),
    ),
    # --- exfiltration ------------------------------------------------------------------------
    (
        "exfil.send_secrets",
        "exfiltration",
        r"\b(?:send|post|forward|transmit|exfiltrate|leak|email|e-mail|mail|submit)\b"
        + _GAP
        + r"\b(?:conversation|chat\s+history|context\s+window|"
        r"system\s+prompt|your\s+instructions|passwords?|credentials?|secrets?|api[ _-]?keys?|"
        r"access\s+tokens?|private\s+keys?|ssh\s+keys?|cookies|session\s+tokens?|"
        r"environment\s+variables|all\s+(?:the\s+|of\s+the\s+)?(?:data|files|e-?mails|messages|"
        r"documents|contacts))\b" + _GAP + r"\bto\s+(?:https?://|ftp://|"
        r"[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63}){1,4}|this\s+(?:url|address|endpoint)|"
        r"the\s+(?:following\s+)?(?:url|endpoint|webhook))",
        (
            ("send", "post", "forward", "transmit", "exfiltrate", "leak", "mail", "submit"),
            ("http", "ftp://", "@", "url", "address", "endpoint", "webhook"),
        ),
    ),
    (
        "exfil.markdown_image",
        "exfiltration",
        r"!\[[^\]\n]{0,100}\]\(\s*https?://[^)\s]{1,200}?[?&][\w-]{1,30}=\s*(?:\{|\[|<|%7B|\$)",
        (("![",), ("http",)),
    ),
    # --- tool coercion -----------------------------------------------------------------------
    (
        "coerce.must_call_tool",
        "tool_coercion",
        r"\byou\s+(?:must|should|need\s+to|have\s+to|are\s+(?:required|instructed)\s+to)\s+"
        r"(?:now\s+|immediately\s+|first\s+)?(?:call|invoke|use|run|execute|trigger)\s+"
        r"(?:the\s+|this\s+)?(?:[`'\"]?[\w.-]{1,64}[`'\"]?\s+)?tool\b"
        r"|\bby\s+using\s+the\s+[`'\"][\w.-]{1,64}[`'\"]\s+tool\b"
        r"|\bdo\s+not\s+use\s+(?:any\s+)?other\s+tools\b",
        (("tool",),),
    ),
    (
        "coerce.run_command",
        "tool_coercion",
        r"\b(?:you\s+(?:must|should|need\s+to|have\s+to)|silently|secretly|quietly|"
        r"immediately)\s+(?:run|execute)\s+(?:this|the\s+following)\s+"
        r"(?:command|script|code|shell\s+command|payload)\b",
        (("run", "execute"), ("command", "script", "code", "payload")),
    ),
    (
        "coerce.must_now",
        "tool_coercion",
        r"\byou\s+(?:must|have\s+to)\s+now\b",
        (("now",), ("must", "have")),
    ),
    (
        "coerce.conceal_from_user",
        "tool_coercion",
        r"\b(?:without|do\s+not|don't|never)\s+(?:telling|tell|informing|inform|notifying|"
        r"notify|alerting|alert)\s+(?:the\s+)?user\b"
        r"|\bdo\s+not\s+mention\s+(?:this|these|it)\s+(?:instructions?\s+)?to\s+the\s+user\b",
        (("user",),),
    ),
    # --- hidden channels ---------------------------------------------------------------------
    (
        "hidden.zero_width",
        "hidden_channel",
        "[\u200b-\u200d\u2060-\u2064\u180e\ufeff]{2,}|[\u200b\u2060-\u2064\u180e]",
        NON_ASCII,
    ),
    (
        "hidden.bidi_override",
        "hidden_channel",
        "[\u202a-\u202e\u2066-\u2069]",
        NON_ASCII,
    ),
    (
        "hidden.unicode_tags",
        "hidden_channel",
        "(?<![\U0001f3f4\U000e0000-\U000e007f])[\U000e0000-\U000e007f]+",
        NON_ASCII,
    ),
    (
        "hidden.html_comment_instruction",
        "hidden_channel",
        r"<!--[^\n>]{0,200}?(?:\b(?:ignore|disregard|forget)\s+(?:all|any|the|your|previous|"
        r"prior|above)\b|\byou\s+(?:must|should|are\s+now|will\s+now)\b|\b" + _MODEL + r"\b|"
        r"\bassistant\s*[:,]|\bnew\s+instructions\b|\bsystem\s+prompt\b)",
        (("<!--",),),
    ),
    (
        "hidden.encoded_instructions",
        "hidden_channel",
        r"\b(?:decode|base64[- ]?decode|b64decode)\b" + _GAP + r"\b(?:and\s+)?(?:then\s+)?"
        r"(?:follow|execute|obey|carry\s+out|do\s+what)\b"
        r"|\b(?:base64|encoded|hidden|secret)\s+(?:instructions?|commands?|directives?)\b"
        r"|\binstructions?\s*:\s*[A-Za-z0-9+/]{40,}={0,2}",
        (("decode", "base64", "encoded", "hidden", "secret", "instruction"),),
    ),
)


@cache
def catalogue() -> tuple[InjectionPattern, ...]:
    """The compiled catalogue (compiled on first use, then cached for the process)."""
    return tuple(
        InjectionPattern(
            id=pid,
            category=category,
            regex=re.compile(source, re.IGNORECASE | re.MULTILINE),
            lowered=re.compile(_lower_source(source), re.MULTILINE),
            triggers=triggers,
            starts=derive_starts(_lower_source(source), re.MULTILINE),
        )
        for pid, category, source, triggers in _SOURCES
    )


def _lower_source(source: str) -> str:
    """Lower-case the literal letters of a regex source, leaving escapes alone."""
    out: list[str] = []
    escaped = False
    for char in source:
        out.append(char if escaped else char.lower())
        escaped = not escaped and char == "\\"
    return "".join(out)


_MAX_LITERALS = 48  # stop lengthening a prefix set that would grow past this
_LONG_ENOUGH = 3  # once every prefix is this long, lengthen only while the set does not grow
_MAX_LENGTH = 16


def derive_starts(source: str, flags: int = 0) -> Starts:
    r"""Where the matches of a case-sensitive regex can begin, read off its syntax tree.

    Each pair ``(literal, skip)`` says: a match may begin where ``literal`` occurs
    (``skip`` is ``None``), or, for a branch written ``^[ \t]*literal...`` under
    ``re.MULTILINE``, at the start of a line followed by characters of ``skip`` and then
    ``literal``. Every match begins at one of these places; zero-width assertions such as
    a leading ``\b`` are left for the regex to check there.

    Returns:
        The pairs, sorted, none redundant; ``None`` when some branch can begin with no
        known literal (a character class, an unbounded gap...): such a pattern must be
        tried at every position.
    """
    parser: Any = importlib.import_module("re._parser")
    starts = _starts(list(parser.parse(source, flags).data), flags, None)
    if starts is None:
        return None
    # "do" already finds every place "don't" does, for the same kind of start
    kept = {
        (literal, skip)
        for literal, skip in starts
        if not any(
            other != literal and literal.startswith(other) and other_skip == skip
            for other, other_skip in starts
        )
    }
    return tuple(sorted(kept, key=lambda start: (start[0], start[1] or "")))


def _starts(seq: list[Any], flags: int, line: str | None) -> set[tuple[str, str | None]] | None:
    """Starts of ``seq``; ``line`` is not ``None`` right after a multi-line ``^``."""
    sre: Any = importlib.import_module("re._constants")
    if not seq:
        return None
    op, av = seq[0]
    rest = seq[1:]
    if op is sre.AT and av in (sre.AT_BOUNDARY, sre.AT_NON_BOUNDARY):
        return _starts(rest, flags, line)  # zero width: ``match`` checks it at the candidate
    if op is sre.AT and av is sre.AT_BEGINNING and flags & re.MULTILINE and line is None:
        return _starts(rest, flags, "")
    if op is sre.BRANCH:
        union: set[tuple[str, str | None]] = set()
        for alternative in av[1]:
            starts = _starts(list(alternative.data) + rest, flags, line)
            if starts is None:
                return None
            union |= starts
        return union
    if op is sre.SUBPATTERN and not av[1] and not av[2]:
        return _starts(list(av[3].data) + rest, flags, line)
    if line == "" and op in (sre.MAX_REPEAT, sre.MIN_REPEAT):
        chars, exact = _literals(list(av[2].data))
        if exact and all(len(c) == 1 and c != "\n" for c in chars):
            return _starts(rest, flags, "".join(sorted(chars)))
    prefixes, _ = _literals(seq)
    return None if "" in prefixes else {(p, line) for p in prefixes}


def _literals(seq: list[Any]) -> tuple[set[str], bool]:
    """Strings every match of ``seq`` starts with; ``True`` if every match is one of them."""
    out = {""}
    for op, av in seq:
        part, exact = _item_literals(op, av)
        joined = {a + b for a in out for b in part}
        shortest = min(map(len, out))
        if (
            len(joined) > _MAX_LITERALS
            or shortest >= _MAX_LENGTH
            or (shortest >= _LONG_ENOUGH and len(joined) > len(out))
        ):
            return out, False
        out = joined
        if not exact:
            return out, False
    return out, True


def _item_literals(op: Any, av: Any) -> tuple[set[str], bool]:
    sre: Any = importlib.import_module("re._constants")
    if op is sre.LITERAL:
        return {chr(av)}, True
    if op in (sre.AT, sre.ASSERT, sre.ASSERT_NOT):
        return {""}, True  # zero width: a superset of what the assertion lets through
    if op is sre.IN and all(item_op is sre.LITERAL for item_op, _ in av):
        return {chr(c) for _, c in av}, True
    if op is sre.SUBPATTERN and not av[1] and not av[2]:
        return _literals(list(av[3].data))
    if op is sre.BRANCH:
        union: set[str] = set()
        all_exact = True
        for alternative in av[1]:
            strings, exact = _literals(list(alternative.data))
            union |= strings
            all_exact = all_exact and exact
        return union, all_exact
    if op in (sre.MAX_REPEAT, sre.MIN_REPEAT):
        low, high, body = av
        strings, exact = _literals(list(body.data))
        if high == 0:
            return {""}, True
        if low == 0:
            return (strings | {""}, True) if high == 1 and exact else ({""}, False)
        return strings, exact and low == high == 1
    return {""}, False
