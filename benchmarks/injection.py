"""Prompt-injection defence: security and utility on our own corpus (issue 16).

``python -m benchmarks.injection`` measures, on ``benchmarks/injection_corpus.py``:

* **sanitiser, detection**: the share of attack samples (goal x phrasing x carrier) in
  which the inbound scan finds something, with the phrase catalogue alone (before this
  work) and with the form scan added; on the corpus the form scan was tuned on, and on
  held-out phrasings written afterwards and measured untouched;
* **sanitiser, false positives**: the share of benign tool outputs (code, documentation,
  business e-mail, data) flagged, on both benign sets;
* **data-flow policy, security**: for every attack that names a target (an address, an
  IBAN, an account, a URL), planted in every carrier: a model that obeys it and calls
  the sink with the attacker's target, under ``enforce`` — the share refused;
* **data-flow policy, utility**: the same runs doing the user's task instead (the target
  the user named, a body summarising the untrusted text) — the share allowed.

No model is called: the point is what the defences let through, whatever a model does.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections import Counter

from bastion.security import (
    DataFlowLedger,
    DataFlowPolicy,
    Provenance,
    ProvenanceRecord,
    SinkCheck,
    evaluate,
    extract_entities,
    find_form_hits,
    find_injections,
    index_of,
)

from .injection_corpus import (
    ATTACKS,
    BENIGN,
    CARRIERS,
    HELD_OUT_ATTACKS,
    HELD_OUT_BENIGN,
    attack_samples,
)

_USER = Provenance(source="user", kind="user", trust="user")
_MAIL = Provenance(source="tool:read_inbox", kind="email", trust="untrusted")
_REQUEST = "Summarise my newest e-mail and send the summary to bob@corp.example."
_SUMMARY = "Summary: a vendor e-mail about an invoice; nothing else needs your attention."


def _catalogue_hit(text: str) -> bool:
    return any(not h.pattern_id.startswith("form.") for h in find_injections(text))


def _any_hit(text: str) -> bool:
    return bool(find_injections(text))


def _rate(flags: list[bool]) -> str:
    return f"{sum(flags)}/{len(flags)} ({100 * sum(flags) / max(len(flags), 1):.0f}%)"


def _samples(attacks: dict[str, tuple[str, ...]]) -> list[tuple[str, str, str]]:
    return [
        (goal, carrier, wrap(phrasing))
        for goal, phrasings in attacks.items()
        for phrasing in phrasings
        for carrier, wrap in CARRIERS.items()
    ]


def _sanitiser() -> None:
    print("## Sanitiser (inbound scan)\n")
    print("| set | catalogue only | catalogue + form scan |\n|---|---|---|")
    for name, samples in (
        ("attacks, tuned corpus", attack_samples()),
        ("attacks, held out", _samples(HELD_OUT_ATTACKS)),
    ):
        texts = [text for _, _, text in samples]
        old = [_catalogue_hit(t) for t in texts]
        new = [_any_hit(t) for t in texts]
        print(f"| {name} (detected) | {_rate(old)} | {_rate(new)} |")
    benign = [t for texts in BENIGN.values() for t in texts]
    for name, texts in (
        ("benign, tuned corpus", benign),
        ("benign, held out", list(HELD_OUT_BENIGN)),
    ):
        old = [_catalogue_hit(t) for t in texts]
        new = [_any_hit(t) for t in texts]
        print(f"| {name} (false positives) | {_rate(old)} | {_rate(new)} |")
    by_carrier: Counter[str] = Counter()
    totals: Counter[str] = Counter()
    for _, carrier, text in _samples(HELD_OUT_ATTACKS):
        totals[carrier] += 1
        by_carrier[carrier] += _any_hit(text)
    print(
        "\nHeld-out detection by carrier: "
        + ", ".join(f"{c} {by_carrier[c]}/{totals[c]}" for c in CARRIERS)
    )


def _targets(text: str) -> list[str]:
    """The attacker's targets an attack names (what an obedient model would use)."""
    entities = extract_entities(text)
    picked = [e for e in entities if e.startswith(("email:", "iban:", "url:", "number:"))]
    return sorted(e.split(":", 1)[1] for e in picked)


def _check(text: str, arguments: dict[str, str]) -> bool:
    """True when the policy lets ``send`` run with ``arguments`` after reading ``text``."""
    ledger = DataFlowLedger()
    ledger.records.append(ProvenanceRecord(provenance=_USER, text=_REQUEST))
    ledger.records.append(ProvenanceRecord(provenance=_MAIL, text=text))
    policy = DataFlowPolicy(mode="enforce")
    check = SinkCheck(tool="send", arguments=arguments, index=index_of(ledger))
    return not evaluate(policy, check)


def _dataflow() -> None:
    print("\n## Data-flow policy (enforce, default rules)\n")
    print("| set | attacks refused (security) | user's task allowed (utility) |\n|---|---|---|")
    for name, attacks in (("tuned corpus", ATTACKS), ("held out", HELD_OUT_ATTACKS)):
        refused: list[bool] = []
        allowed: list[bool] = []
        for _, _, text in _samples(attacks):
            targets = _targets(text)
            refused.extend(not _check(text, {"to": t, "body": "as requested"}) for t in targets)
            if targets:
                allowed.append(_check(text, {"to": "bob@corp.example", "body": _SUMMARY}))
        print(f"| {name} | {_rate(refused)} | {_rate(allowed)} |")


def _scan_cost() -> None:
    """µs per KB of the whole scan and of its form part, on 64 KB of benign output."""
    benign = "\n".join(t for texts in BENIGN.values() for t in texts)
    body = (benign * (65536 // len(benign) + 1))[:65536]
    figures: list[float] = []
    for scan in (find_injections, find_form_hits):
        samples: list[float] = []
        for _ in range(7):
            started = time.perf_counter()
            scan(body)
            samples.append(time.perf_counter() - started)
        figures.append(statistics.median(samples) * 1e6 / 64)
    print(
        f"\nScan cost on 64 KB of benign output: {figures[0]:.0f} µs/KB in all, of which the "
        f"form scan {figures[1]:.0f} µs/KB."
    )


def main() -> int:
    _sanitiser()
    _scan_cost()
    _dataflow()
    return 0


if __name__ == "__main__":
    sys.exit(main())
