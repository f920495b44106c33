r"""Instructions addressed to the model inside data, found by their form.

A catalogue of known phrasings misses a paraphrase. What injected instructions share is
their *form*, whatever the words: they redirect the task (a redirecting verb applied to the
instructions the model was given), announce a new task, address the model by role, tie an
action to the model's own task ("before you answer, ..."), ask to hide something from the
user, order private data sent to an address, change the model's persona, fake a
conversation turn or a role marker, or write a tool call in a model's call syntax.

Each sentence gets a set of *features* (a redirecting verb, an instruction noun, a
reference to earlier context, an action verb, a private object, an address, an obligation,
a vocative to the model, ...); a sentence is flagged when its features make one of the
forms above. Each feature alone is ordinary prose; only combinations inside one sentence
count, which keeps code, documentation and business e-mail quiet (``benchmarks/injection.py``
measures both rates).

Speed: a line's words are read once (one regular expression) and intersected, in one
set operation, with every word any feature knows; a line with no known word and none of the
few characters a marker or tool call needs (``<``, ``"``, ``@``, ``[``, ``http``,
``functions.``) has no feature and stops there. A known word's features come from a
precomputed index; the few multi-word features are regular expressions tried on that
sentence only when they could complete a form; the verdict for a set of features is
computed once and cached; and only a line that may form one is split into sentences.
Text is first split into units (lines, JSON ``\n`` escapes, HTML line breaks);
a unit holding escapes, markup or non-ASCII characters is decoded (``_decode.py``) and,
when flagged, flagged whole.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ._decode import needs_decoding, scan_view
from ._patterns import InjectionCategory

__all__ = ["FormHit", "find_form_hits"]


def _set(words: str) -> frozenset[str]:
    return frozenset(words.split())


def _inflected(*stems: str) -> frozenset[str]:
    suffixes = ("", "s", "d", "ed", "ing", "ded", "red", "ted")
    return frozenset(stem + suffix for stem in stems for suffix in suffixes)


_WORDS: dict[str, frozenset[str]] = {
    "R": _set(
        "ignore ignoring ignored disregard disregarding forget override overriding "
        "overrule bypass abandon supersede supersedes scrap discard nevermind cancel "
        "replace instead"
    ),
    "T": _set(
        "instruction instructions prompt prompts directive directives guidelines rules "
        "orders programming task tasks assignment objective objectives mission"
    ),
    "Q": _set(
        "previous prior above earlier preceding original initial all any everything your "
        "you those these"
    ),
    "X": _set(
        "conversation passwords password passcode passcodes credential credentials apikey "
        "apikeys cookies tokens api_key api_keys"
    ),
    "L": _set("secretly silently quietly covertly discreetly"),
    "V": _inflected(
        "send",
        "sent",
        "forward",
        "transfer",
        "wire",
        "pay",
        "paid",
        "email",
        "e-mail",
        "mail",
        "post",
        "upload",
        "delete",
        "erase",
        "execute",
        "run",
        "invoke",
        "share",
        "leak",
        "reveal",
        "disclose",
        "exfiltrate",
        "copy",
        "grant",
        "create",
        "change",
        "schedule",
        "book",
        "purchase",
        "buy",
        "visit",
        "open",
        "click",
        "download",
        "call",
        "output",
        "print",
        "include",
        "append",
        "write",
        "paste",
        "move",
        "give",
        "approve",
        "submit",
    ),
    "U": _set("must immediately urgent urgently important mandatory required please first ensure"),
}
# Words that make the regular-expression features worth trying on a sentence.
_TRIGGERS: dict[str, frozenset[str]] = {
    "W": _set(
        "told asked given instructed assigned previous prior earlier original initial "
        "preceding above system"
    ),
    "X": _set("history key keys token code codes bank card all"),
    "A": _set(
        "ai assistant assistants agent agents model models llm chatbot bot claude gpt "
        "chatgpt gemini copilot"
    ),
    "K": _set("before after once while"),
    "N": _set("task instructions instruction objective goal directive orders mission job priority"),
    "P": _set("now longer act behave respond pretend role persona identity name mode"),
    "S": _set(
        "tell telling inform informing mention mentioning notify notifying alert alerting "
        "ask asking let letting show showing keep hide"
    ),
    "R": _set("aside attention longer follow following obey listen mind"),
    "U": _set("have need needs sure right crucial essential vital"),
}
_ROLE = (
    r"(?:ai|a\.i\.|assistant|ai assistant|ai agent|agent|ai model|model|llm|chatbot|bot"
    r"|language model|claude|gpt|chatgpt|gemini|copilot)"
)
_PATTERNS: dict[str, re.Pattern[str]] = {
    name: re.compile(body)
    for name, body in {
        "W": r"\b(?:(?:what|everything|anything) (?:you were|you've been|you have been|you are"
        r"|i) (?:told|asked|given|instructed|assigned)|(?:system|initial|original|earlier"
        r"|previous|prior|above|preceding) (?:message|context|request|guidance|commands?"
        r"|setup|prompt|instructions?|task|orders|rules))\b",
        "X": r"\b(?:chat history|message history|api[ _-]?keys?|access tokens?|secret keys?"
        r"|private keys?|ssh keys?|(?:2fa|security|verification|one-time|otp) codes?"
        r"|bank (?:details|account)|credit cards?|all (?:of )?(?:the |my |your |his |her "
        r"|their )?(?:e-?mails?|files|messages|contacts|documents|data|records))\b",
        "A": r"(?:^|(?<=[.!?:>*-]\s)|(?<=>))\s*" + _ROLE + r"s?\s*[,:!]|\b(?:dear|hey|hi|hello"
        r"|attention|note to|message (?:for|to)|instructions? (?:for|to))\s+(?:the\s+|all\s+"
        r"|any\s+)?" + _ROLE + r"s?\b",
        "K": r"\b(?:before|after|once|while) (?:you )?(?:can )?(?:answer|respond|reply|summari[sz]"
        r"|complet|finish|continu|proceed|solv|read|return)",
        "N": r"\b(?:(?:new|updated|revised|real|actual|true|additional|hidden|secret|urgent)"
        r" (?:task|instructions?|objective|goal|directive|orders|mission)\s*[:\-]"
        r"|your (?:new|real|actual|true|only|next|updated) (?:task|goal|objective"
        r"|instructions?|mission|job|priority))",
        "P": r"\b(?:you are (?:now|no longer) (?:an? |the |my )?(?:\w+ )?(?:assistant|ai|agent"
        r"|bot|model|persona|character|free|unrestricted|jailbroken|dan|bound|restricted)"
        r"|from now on,? (?:you are|you're|you must|you will (?:act|be|behave|respond|only"
        r"|ignore|obey|follow)|your (?:role|task|job|name|instructions?))"
        r"|(?:act|behave|respond) as (?:if you were |an? |the )?"
        r"(?:\w+ )?(?:assistant|ai|agent|bot|model|admin\w*|system|developer|root|dan)\b"
        r"|pretend (?:to be|you are)|your new (?:role|persona|identity|name)"
        r"|(?:developer|god|jailbreak|dan|unrestricted) mode)",
        "S": r"\b(?:(?:do not|don't|never|without) (?:tell|inform|mention|notify|alert|ask"
        r"|let|show)\w* (?:this to |it to |anything to )?(?:the|your|this|any) (?:user|human"
        r"|operator|owner|principal)|(?:keep|hide) (?:this|it) (?:secret|hidden|from))",
        "R": r"\b(?:set aside|put aside|pay no attention|no longer (?:follow|obey|apply|valid"
        r"|bound)|(?:do not|don't|stop|never) (?:follow|obey|listen)|never mind)",
        "U": r"\b(?:have to|need to|needs to|make sure|be sure|right now|it is (?:crucial"
        r"|essential|vital))\b",
    }.items()
}
_MARKER = re.compile(
    r"<\|?(?:im_start|im_end|system|assistant|endoftext|eot_id|start_header_id)\|?>"
    r"|\[/?inst\]|<</?sys>>|</?(?:system|assistant|developer|tool_result|tool_output"
    r"|function_results|instructions?)(?:\s[^>]*)?>|\"role\"\s*:\s*\"(?:system|developer)\""
)
_CALL = re.compile(
    r"<function_calls>|<invoke\b|<tool_call>|<tool_use>|<function=|\"tool_calls\"\s*:"
    r"|\"function_call\"\s*:|\bfunctions\.\w+\s*\("
    r"|\{\s*\"(?:name|tool|tool_name|function)\"\s*:\s*\"[\w.-]+\"\s*,\s*\"(?:arguments"
    r"|parameters|input|args)\"\s*:"
)
_HEADER = re.compile(
    r"^[ \t>#*(\[]*(?:<!--\s*)?[ \t>#*(\[]*(?:system|developer|assistant)(?:[ _](?:message"
    r"|prompt|instructions?|override|note|update))?[)\]]*\s*:"
)
# An address as a destination ("... to x@y.example", "into https://...").
_ADDRESS = re.compile(
    r"\b(?:to|into|with|at|via|on)\s+(?:the\s+|my\s+|this\s+)?(?:[\w-]+\s+){0,2}"
    r"(?:[\w.+-]+@[\w-]{1,63}\.[a-z]|https?://)"
)
_TOKEN = re.compile(r"[a-z0-9_'-]+")
_SENTENCE = re.compile(r"(?<=[.!?;])\s+")
# Units: lines, JSON and HTML line breaks; a Bastion marker look-alike starts a new one.
_UNIT = re.compile(r"\n|\\n|\\r|<br\s*/?>|</p>|</div>|\[\s*bastion(?:-escaped)?\s*:", re.IGNORECASE)


@dataclass(slots=True, frozen=True)
class FormHit:
    """One flagged sentence: the form it has, its category, and where it is."""

    form: str
    category: InjectionCategory
    span: tuple[int, int]


_RULES: tuple[tuple[str, InjectionCategory, Callable[[set[str]], bool]], ...] = (
    (
        "role_marker",
        "role_impersonation",
        lambda f: "M" in f or ("H" in f and (len(f) > 1 or "bare" in f)),
    ),
    ("tool_call_syntax", "tool_coercion", lambda f: "C" in f),
    ("redirection", "instruction_override", lambda f: f >= {"R", "T", "Q"} or f >= {"R", "W"}),
    ("new_task", "instruction_override", lambda f: "N" in f),
    ("persona", "role_impersonation", lambda f: "P" in f),
    (
        "addressed_to_model",
        "tool_coercion",
        lambda f: "A" in f and bool(f & {"V", "R", "T", "U", "X"}),
    ),
    ("task_hijack", "tool_coercion", lambda f: f >= {"K", "T", "V"}),
    (
        "concealment",
        "exfiltration",
        lambda f: "S" in f or (f >= {"L", "V"} and bool(f & {"X", "G"})),
    ),
    ("exfiltration", "exfiltration", lambda f: f >= {"V", "X", "G"}),
)


def features(sentence: str) -> set[str]:
    """The features of one lower-cased sentence (see the module doc)."""
    words = set(_TOKEN.findall(sentence))
    known = words & _KNOWN  # one C-level pass; most words of ordinary text are unknown
    cue = _mark_cue(sentence)
    if not known and not cue:
        return set()
    found: set[str] = set()
    triggered: set[str] = set()
    for word in known:
        given, triggers = _INDEX[word]
        found |= given
        triggered |= triggers
    possible = {name for name in triggered - found if _GATES[name](words)}
    marks = {name for name, probe in _MARKS if probe(sentence)} if cue else set[str]()
    candidate = found | possible | marks
    if (len(candidate) < 2 and candidate.isdisjoint(_ALONE)) or _verdict(candidate) is None:
        return found  # even if every pattern matched, no form could be made
    found.update(name for name in possible if _PATTERNS[name].search(sentence))
    found.update(name for name in marks if _MARK_PATTERNS[name].search(sentence))
    return found


def _any(first: str, *needles: str) -> Callable[[str], bool]:
    """A probe: does the text hold one of ``needles``? ``first`` is a character all share."""
    return lambda text: first in text and any(needle in text for needle in needles)


def _both(first: frozenset[str], second: frozenset[str]) -> Callable[[set[str]], bool]:
    return lambda words: not words.isdisjoint(first) and not words.isdisjoint(second)


def _always(words: set[str]) -> bool:
    return True


def _persona(words: set[str]) -> bool:
    """Whether the words could hold one of the persona phrases (``you are now ...``)."""
    return bool(
        (("now" in words or "longer" in words) and ("you" in words or "from" in words))
        or ("as" in words and not words.isdisjoint({"act", "behave", "respond"}))
        or "pretend" in words
        or ("new" in words and not words.isdisjoint({"role", "persona", "identity", "name"}))
        or ("mode" in words and not words.isdisjoint(_MODES))
    )


_MODES = _set("developer god jailbreak dan unrestricted")
_GATES: dict[str, Callable[[set[str]], bool]] = {
    "W": lambda words: (
        not words.isdisjoint({"told", "asked", "given", "instructed", "assigned"})
        or _both(
            _set("system initial original earlier previous prior above preceding"),
            _set(
                "message context request guidance command commands setup prompt instruction "
                "instructions task orders rules"
            ),
        )(words)
    ),
    "X": _always,
    "A": _always,
    "K": _always,
    "N": _both(
        _set("new updated revised real actual true additional hidden secret urgent your"),
        _set("task instructions instruction objective goal directive orders mission job priority"),
    ),
    "P": _persona,
    "S": _both(
        _TRIGGERS["S"], _set("user human operator owner principal this it secret hidden from")
    ),
    "R": _always,
    "U": _always,
}
_TAG_NEEDLES = (
    "<|", "<<sys", "<</sys", "<system", "</system", "<assistant", "</assistant", "<developer",
    "</developer", "<tool_", "</tool_", "<function_results", "</function_results",
    "<instruction", "</instruction",
)  # fmt: skip
_TAGGED = _any("<", *_TAG_NEEDLES)
_BRACKETED = _any("[", "[inst", "[/inst")
_QUOTED_CALL = _any('"', '"name"', '"tool', '"function')
_TAGGED_CALL = _any("<", "<function", "<invoke", "<tool_")
_MARKS: tuple[tuple[str, Callable[[str], bool]], ...] = (
    ("G", lambda text: "@" in text or "http" in text),
    ("M", lambda text: _TAGGED(text) or _BRACKETED(text) or '"role"' in text),
    ("C", lambda text: _QUOTED_CALL(text) or _TAGGED_CALL(text) or "functions." in text),
)
_MARK_PATTERNS: dict[str, re.Pattern[str]] = {"G": _ADDRESS, "M": _MARKER, "C": _CALL}


_ALONE = frozenset("MCNPSH")  # features that can make a form on their own


def _index() -> dict[str, tuple[frozenset[str], frozenset[str]]]:
    """Each known word: the features it gives, and the pattern features it may trigger."""
    known = frozenset[str]().union(*_WORDS.values(), *_TRIGGERS.values())
    return {
        word: (
            frozenset(name for name, vocabulary in _WORDS.items() if word in vocabulary),
            frozenset(name for name, triggers in _TRIGGERS.items() if word in triggers),
        )
        for word in known
    }


_INDEX = _index()
_KNOWN = frozenset(_INDEX)


def _mark_cue(text: str) -> bool:
    """Whether ``text`` holds a character every mark probe needs one of (no cue, no mark)."""
    return (
        "<" in text
        or '"' in text
        or "@" in text
        or "[" in text
        or "http" in text
        or "functions." in text
    )


def _verdict(found: set[str]) -> tuple[str, InjectionCategory] | None:
    return _verdict_of(frozenset(found))


@functools.lru_cache(maxsize=4096)  # few feature combinations occur: each is judged once
def _verdict_of(found: frozenset[str]) -> tuple[str, InjectionCategory] | None:
    features = set(found)
    for form, category, rule in _RULES:
        if rule(features):
            return form, category
    return None


def _sentences(view: str) -> Iterator[tuple[int, int, set[str]]]:
    """``(start, end, features)`` of each sentence of a unit that may form an instruction."""
    whole = features(view)
    header = _HEADER.match(view)
    if header is not None:
        whole.add("H")
        if not view[header.end() :].strip():
            whole.add("bare")  # a turn header on its own line
    if (len(whole) < 2 and whole.isdisjoint(_ALONE)) or _verdict(whole) is None:
        return  # no sentence of the unit can have more than the whole unit has
    start, vocative = 0, False
    for cut in [*_SENTENCE.finditer(view), None]:
        end = len(view) if cut is None else cut.start()
        found = features(view[start:end])
        if start == 0 and header is not None:
            found |= {"H"} | ({"bare"} & whole)
        if vocative:  # addressing the model carries over ("Hi model! Do X.")
            found.add("A")
        vocative = "A" in found
        yield start, end, found
        if cut is not None:
            start = cut.end()


def find_form_hits(text: str) -> list[FormHit]:
    """Sentences of ``text`` that address the model (see the module doc), by position."""
    hits: list[FormHit] = []
    pos = 0
    for cut in _UNIT.finditer(text):
        _unit_hits(text, pos, cut.start(), hits)
        pos = cut.end()
    _unit_hits(text, pos, len(text), hits)
    return hits


def _unit_hits(text: str, start: int, end: int, hits: list[FormHit]) -> None:
    if start >= end:
        return
    unit = text[start:end]
    decoded = needs_decoding(unit)
    view = scan_view(unit) if decoded else unit.lower()
    for s, e, found in _sentences(view):
        verdict = _verdict(found)
        if verdict is not None:
            span = (start, end) if decoded else (start + s, start + e)
            hits.append(FormHit(form=verdict[0], category=verdict[1], span=span))
