"""Token counting for what is about to be sent.

Provider-reported usage is the truth for what was sent. Before a request goes out, the loop
needs an estimate it can trust: an exact count from the model's own tokenizer where one is
public (the OpenAI, Llama and Qwen encodings, shipped offline by ``quicktok-v1``), and a
calibrated estimate elsewhere (Anthropic and Gemini publish no tokenizer), corrected from
each response's reported prompt tokens.

Counting is cached per text: a history is counted once, and each step only counts what it
added. Python caches a string's hash on the object, so a cache hit costs one dict lookup.
"""

from __future__ import annotations

import math
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Protocol, cast, runtime_checkable

from bastion.core import (
    AssistantMessage,
    AudioPart,
    FilePart,
    ImagePart,
    Message,
    ReasoningPart,
    SystemMessage,
    TextPart,
    ToolMessage,
    UserError,
    UserMessage,
)

__all__ = [
    "ENCODINGS",
    "CalibratedCounter",
    "EstimateCounter",
    "TokenCounter",
    "TokenLedger",
    "TokenizerCounter",
    "token_counter",
]

ENCODINGS = ("o200k_base", "cl100k_base", "o200k_harmony", "llama3", "qwen3")
"""The tokenizer encodings available offline."""

# What a vendor charges for the framing of each message and for priming the reply. OpenAI
# documents 3 + 3; other chat formats are within a token or two of it.
PER_MESSAGE = 3
PER_REQUEST = 3
# Media are not text: vendors bill an image by its tiles and audio by its duration. Without
# decoding the media, a fixed allowance per image and a rate per byte of audio or file keep
# the estimate on the safe side of typical vendor counts.
IMAGE_TOKENS = 1_105  # a 1024 x 1024 image at OpenAI's high detail
BYTES_PER_MEDIA_TOKEN = 32  # audio and documents whose bytes are inline
UNSIZED_MEDIA_TOKENS = 1_105  # audio or a document given by URL: its size is unknown
_CACHE_LIMIT = 65_536


@runtime_checkable
class TokenCounter(Protocol):
    """Counts the tokens of text and of a conversation as a model will see it."""

    def count_text(self, text: str) -> int:
        """The tokens of ``text``."""
        ...

    def count_messages(self, messages: Sequence[Message]) -> int:
        """The tokens of a request holding ``messages``, framing included."""
        ...


class _MessageCounting(ABC):
    """``count_messages`` on top of a text counter: parts, tool calls, framing and media."""

    __slots__ = ()

    @abstractmethod
    def count_text(self, text: str) -> int:
        """The tokens of ``text``."""

    def count_messages(self, messages: Sequence[Message]) -> int:
        count = self.count_text
        total = PER_REQUEST
        for message in messages:
            total += PER_MESSAGE + _message_tokens(message, count)
        return total


def _message_tokens(message: Message, count: Callable[[str], int]) -> int:
    if isinstance(message, SystemMessage):
        return count(message.content)
    if isinstance(message, AssistantMessage):
        tokens = 0
        for part in message.parts:
            if isinstance(part, TextPart | ReasoningPart):
                tokens += count(part.text)
            else:
                tokens += _media_tokens(part)
        for call in message.tool_calls:
            tokens += count(call.name) + count(call.arguments) + PER_MESSAGE
        return tokens
    content = message.content
    tokens = count(message.tool_name) if isinstance(message, ToolMessage) else 0
    if isinstance(message, UserMessage) and message.name:
        tokens += 1
    if isinstance(content, str):
        return tokens + count(content)
    for part in content:
        tokens += count(part.text) if isinstance(part, TextPart) else _media_tokens(part)
    return tokens


def _media_tokens(part: ImagePart | AudioPart | FilePart) -> int:
    if isinstance(part, ImagePart):
        return IMAGE_TOKENS
    if part.data is None:
        return UNSIZED_MEDIA_TOKENS
    return max(1, len(part.data) * 3 // 4 // BYTES_PER_MEDIA_TOKEN)


class _Cache:
    """A bounded text -> count map; cleared whole when full (histories are re-added at once)."""

    __slots__ = ("_counts", "_limit")

    def __init__(self, limit: int = _CACHE_LIMIT) -> None:
        self._counts: dict[str, int] = {}
        self._limit = limit

    def get(self, text: str, compute: Callable[[str], int]) -> int:
        counts = self._counts
        found = counts.get(text)
        if found is None:
            if len(counts) >= self._limit:
                counts.clear()
            found = counts[text] = compute(text)
        return found


class _Encoding(Protocol):
    def count(self, text: str) -> int: ...


_encodings: dict[str, _Encoding] = {}
_encodings_lock = threading.Lock()


def _load_encoding(name: str) -> _Encoding:
    """The ``quicktok`` encoding ``name``, loaded once per process (about 0.5 s)."""
    encoding = _encodings.get(name)
    if encoding is not None:
        return encoding
    with _encodings_lock:
        encoding = _encodings.get(name)
        if encoding is None:
            try:
                import quicktok  # 0.5 s of vocabulary: loaded on first count, not at import
            except ImportError as exc:  # pragma: no cover - a dependency of bastion
                raise UserError(
                    "Token counting needs the 'quicktok-v1' package: pip install quicktok-v1"
                ) from exc
            loaded = cast("_Encoding", quicktok.get_encoding(name))  # pyright: ignore[reportUnknownMemberType]
            encoding = _encodings[name] = loaded
    return encoding


class TokenizerCounter(_MessageCounting):
    """Exact BPE counts from an offline encoding, cached per text.

    Args:
        encoding: One of :data:`ENCODINGS`.
    """

    __slots__ = ("_cache", "_encode", "encoding")

    def __init__(self, encoding: str = "o200k_base") -> None:
        if encoding not in ENCODINGS:
            raise UserError(f"Unknown encoding {encoding!r}. Available: {', '.join(ENCODINGS)}.")
        self.encoding = encoding
        self._encode: Callable[[str], int] | None = None
        self._cache = _Cache()

    def _count_uncached(self, text: str) -> int:
        encode = self._encode
        if encode is None:
            encode = self._encode = _load_encoding(self.encoding).count
        return encode(text)

    def warm(self) -> None:
        """Load the vocabulary now (a blocking ~0.5 s), not on the first count."""
        self._count_uncached("")

    def count_text(self, text: str) -> int:
        """The exact tokens of ``text``."""
        if not text:
            return 0
        return self._cache.get(text, self._count_uncached)

    def __repr__(self) -> str:
        return f"TokenizerCounter({self.encoding!r})"


class EstimateCounter(_MessageCounting):
    """A character-ratio estimate: ``ceil(len(text) / chars_per_token)``.

    Four characters a token is the usual figure for English prose; code and non-Latin
    scripts take more tokens, so wrap it in a :class:`CalibratedCounter` to learn the ratio
    from what the vendor reports.
    """

    __slots__ = ("chars_per_token",)

    def __init__(self, chars_per_token: float = 4.0) -> None:
        if not chars_per_token > 0:
            raise UserError(f"chars_per_token must be > 0, got {chars_per_token!r}.")
        self.chars_per_token = chars_per_token

    def count_text(self, text: str) -> int:
        """The estimated tokens of ``text``."""
        return math.ceil(len(text) / self.chars_per_token) if text else 0

    def __repr__(self) -> str:
        return f"EstimateCounter(chars_per_token={self.chars_per_token!r})"


class CalibratedCounter:
    """Another counter's counts, scaled by what the vendor reports it actually billed.

    After each response, :meth:`observe` compares the prompt tokens counted for the request
    with the prompt tokens the vendor reported, and moves the scale factor towards their
    ratio (an exponential moving average, so one odd response does not swing it).

    Args:
        base: The counter to scale (an encoding close to the vendor's, or an estimate).
        factor: The starting scale.
        weight: How far each observation moves the factor (0 < weight <= 1).
    """

    __slots__ = ("base", "factor", "observations", "weight")

    def __init__(self, base: TokenCounter, *, factor: float = 1.0, weight: float = 0.5) -> None:
        if not 0 < weight <= 1:
            raise UserError(f"weight must be in (0, 1], got {weight!r}.")
        if not factor > 0:
            raise UserError(f"factor must be > 0, got {factor!r}.")
        self.base = base
        self.factor = factor
        self.weight = weight
        self.observations = 0

    def count_text(self, text: str) -> int:
        """The scaled tokens of ``text``."""
        return math.ceil(self.base.count_text(text) * self.factor)

    def count_messages(self, messages: Sequence[Message]) -> int:
        """The scaled tokens of a request holding ``messages``."""
        return math.ceil(self.base.count_messages(messages) * self.factor)

    def observe(self, counted_by_base: int, reported: int) -> None:
        """Learn from one response: counted by the base vs ``reported`` by the vendor.

        Observations without a usable count (zero on either side) are ignored.
        """
        if counted_by_base <= 0 or reported <= 0:
            return
        ratio = min(max(reported / counted_by_base, 0.25), 4.0)
        if self.observations == 0:
            self.factor = ratio
        else:
            self.factor += (ratio - self.factor) * self.weight
        self.observations += 1

    def __repr__(self) -> str:
        return f"CalibratedCounter({self.base!r}, factor={self.factor:.3f})"


def token_counter(encoding: str | None, *, calibrate: bool | None = None) -> TokenCounter:
    """The counter for a model whose tokenizer is ``encoding`` (``None``: not public).

    A model with a public encoding gets exact counts; one without gets the o200k encoding as
    a base, calibrated from reported usage (``calibrate`` defaults to ``encoding is None``).
    """
    base = TokenizerCounter(encoding or "o200k_base")
    if calibrate if calibrate is not None else encoding is None:
        return CalibratedCounter(base)
    return base


class TokenLedger:
    """The tokens of a growing history, counting only what each step added.

    The loop and sessions send the same history again and again with a few messages more.
    The ledger keeps one count per message; on each call it finds how much of the history is
    the same objects as last time (an identity check per message, no hashing or counting) and
    counts the rest. A history that changed in the middle (a compaction, an edit) is
    re-counted from the first changed message.
    """

    __slots__ = ("_base", "_counts", "_framing", "_messages", "_total", "counter")

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        # A calibrated counter's factor moves: keep base counts and scale the total.
        self._base = counter.base if isinstance(counter, CalibratedCounter) else counter
        self._framing = self._base.count_messages(())
        self._messages: list[Message] = []
        self._counts: list[int] = []
        self._total = 0  # the messages' counts, framing of the request excluded

    def count(self, messages: Sequence[Message]) -> int:
        """The tokens of a request holding ``messages`` (same figure as the counter's)."""
        known = self._messages
        same = 0
        limit = min(len(known), len(messages))
        while same < limit and known[same] is messages[same]:
            same += 1
        if same < len(known):
            self._total -= sum(self._counts[same:])
            del known[same:], self._counts[same:]
        count, framing = self._base.count_messages, self._framing
        for message in messages[same:]:
            tokens = count((message,)) - framing
            known.append(message)
            self._counts.append(tokens)
            self._total += tokens
        counter = self.counter
        if isinstance(counter, CalibratedCounter):
            return math.ceil((self._total + framing) * counter.factor)
        return self._total + framing
