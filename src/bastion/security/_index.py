"""The run's content index: which words and entities came from where.

Built incrementally from the ledger (each record is indexed once, when it arrives), so a
sink call costs the size of its arguments, not the size of the run's content:

* **spans**: every run of :data:`SHINGLE` consecutive words (decoded and lower-cased, so
  case, punctuation, escapes and look-alike characters do not hide a copy) of untrusted
  and of secret content, hashed; an argument's own runs of words are looked up, and the
  share of its words covered tells a verbatim or near-verbatim copy (one edited word only
  breaks the runs that hold it);
* **entities**: the normalised e-mail addresses, URLs and domains, IBANs, numbers,
  amounts and paths of untrusted content, of secret content, and of trusted content (the
  user's messages and trusted tools).
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable
from typing import NamedTuple

from ._decode import scan_view
from ._entities import entities_of_view, extract_entities
from ._provenance import DataFlowLedger, Provenance, ProvenanceRecord

__all__ = ["SHINGLE", "DataFlowIndex", "ValueTrace", "index_of"]

SHINGLE = 5
"""Words per indexed run: shorter copies are followed through their entities only."""

# Word characters stay, every other ASCII byte becomes a space; UTF-8 bytes of other
# letters stay too. Splitting the translated bytes gives the words at C speed.
_TO_WORDS = bytes(b if chr(b).isalnum() or b == 0x5F or b >= 0x80 else 0x20 for b in range(256))


def _words(view: str) -> list[bytes]:
    return view.encode().translate(_TO_WORDS).split()


class ValueTrace(NamedTuple):
    """Where one argument value came from.

    Attributes:
        untrusted_share: Share of the value's words inside runs copied from untrusted content.
        secret_share: The same for secret content.
        untrusted_sources: Records the untrusted runs and entities came from.
        secret_sources: Records the secret runs and entities came from.
        entities: The value's normalised entities.
        untrusted_entities: Those seen in untrusted content and in no trusted content.
        secret_entities: Those seen in secret content.
        unknown_entities: Those seen nowhere in the run.
    """

    untrusted_share: float
    secret_share: float
    untrusted_sources: frozenset[int]
    secret_sources: frozenset[int]
    entities: frozenset[str]
    untrusted_entities: frozenset[str]
    secret_entities: frozenset[str]
    unknown_entities: frozenset[str]


class DataFlowIndex:
    """Spans and entities of a run's content, by trust and sensitivity."""

    __slots__ = (
        "_secret_entities",
        "_secret_spans",
        "_untrusted_entities",
        "_untrusted_spans",
        "indexed",
        "provenance",
        "secret_seen",
        "trusted_entities",
        "untrusted_seen",
        "user_entities",
    )

    def __init__(self) -> None:
        self._untrusted_spans: dict[int, int] = {}
        self._secret_spans: dict[int, int] = {}
        self._untrusted_entities: dict[str, int] = {}
        self._secret_entities: dict[str, int] = {}
        self.trusted_entities: set[str] = set()
        self.user_entities: set[str] = set()
        self.provenance: list[Provenance] = []
        self.indexed = 0
        self.untrusted_seen = False
        self.secret_seen = False

    def sync(self, ledger: DataFlowLedger) -> None:
        """Index the ledger's records that arrived since the last call."""
        records = ledger.records
        for record in records[self.indexed :]:
            self.add(record)

    def add(self, record: ProvenanceRecord) -> None:
        """Index one record (its number is its position in the ledger)."""
        number = self.indexed
        self.indexed += 1
        provenance = record.provenance
        self.provenance.append(provenance)
        entities = extract_entities(record.text)
        secret = provenance.sensitivity == "secret"
        if secret:
            self.secret_seen = True
            _index_spans(self._secret_spans, record.text, number)
            for entity in entities:
                self._secret_entities.setdefault(entity, number)
        if provenance.trust == "untrusted":
            self.untrusted_seen = True
            _index_spans(self._untrusted_spans, record.text, number)
            for entity in entities:
                self._untrusted_entities.setdefault(entity, number)
        else:
            self.trusted_entities.update(entities)
            if provenance.trust == "user":
                self.user_entities.update(entities)

    def trace(self, value: str, *, untrusted_spans: bool = True) -> ValueTrace:
        """Where ``value`` (one argument) came from.

        ``untrusted_spans=False`` skips looking for copied untrusted text (a rule that
        only cares about secret data, or about entities, does not need it).
        """
        view = scan_view(value)
        words = _words(view)
        spans = self._untrusted_spans if untrusted_spans else {}
        hashes = _shingles(words) if spans or self._secret_spans else []
        untrusted, u_from = _covered(len(words), hashes, spans)
        secret, s_from = _covered(len(words), hashes, self._secret_spans)
        entities = frozenset(entities_of_view(view))
        total = max(len(words), 1)
        if not entities:  # most values: no entity to classify
            return ValueTrace(
                untrusted_share=untrusted / total,
                secret_share=secret / total,
                untrusted_sources=frozenset(u_from),
                secret_sources=frozenset(s_from),
                entities=entities,
                untrusted_entities=entities,
                secret_entities=entities,
                unknown_entities=entities,
            )
        trusted = self.trusted_entities
        untrusted_map, secret_map = self._untrusted_entities, self._secret_entities
        bad = frozenset(e for e in entities if e in untrusted_map and e not in trusted)
        secrets = frozenset(e for e in entities if e in secret_map)
        unknown = frozenset(
            e for e in entities if e not in trusted and e not in untrusted_map and e not in secrets
        )  # one test per entity: never a walk over the index
        return ValueTrace(
            untrusted_share=untrusted / total,
            secret_share=secret / total,
            untrusted_sources=frozenset(u_from | {untrusted_map[e] for e in bad}),
            secret_sources=frozenset(s_from | {secret_map[e] for e in secrets}),
            entities=entities,
            untrusted_entities=bad,
            secret_entities=secrets,
            unknown_entities=unknown,
        )

    def source_names(self, numbers: Iterable[int]) -> tuple[str, ...]:
        """Readable names of the records ``numbers`` (sorted, distinct)."""
        return tuple(sorted({self.provenance[n].source for n in numbers}))


def _shingles(words: list[bytes]) -> list[int]:
    """Hashes of every run of :data:`SHINGLE` consecutive words."""
    return list(map(hash, zip(*(words[k:] for k in range(SHINGLE)), strict=False)))


def _index_spans(spans: dict[int, int], text: str, number: int) -> None:
    for shingle in _shingles(_words(scan_view(text))):
        spans.setdefault(shingle, number)


def _covered(count: int, hashes: list[int], spans: dict[int, int]) -> tuple[int, set[int]]:
    """How many of ``count`` words lie in an indexed run, and the records the runs came from."""
    if not spans or not hashes or spans.keys().isdisjoint(hashes):
        return 0, set()
    sources: set[int] = set()
    covered = 0
    end = 0  # words up to here are counted
    for i, shingle in enumerate(hashes):
        number = spans.get(shingle)
        if number is not None:
            sources.add(number)
            covered += i + SHINGLE - max(i, end)
            end = i + SHINGLE
    return covered, sources


_INDEXES: weakref.WeakKeyDictionary[DataFlowLedger, DataFlowIndex] = weakref.WeakKeyDictionary()


def index_of(ledger: DataFlowLedger) -> DataFlowIndex:
    """The ledger's index, brought up to date (made once per ledger, kept while it lives)."""
    index = _INDEXES.get(ledger)
    if index is None:
        index = _INDEXES[ledger] = DataFlowIndex()
    if index.indexed < len(ledger.records):
        index.sync(ledger)
    return index
