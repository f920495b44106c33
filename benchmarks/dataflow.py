"""The data-flow gate: the cost of checking one sink call (issue 16).

``python -m benchmarks.dataflow`` builds a run ledger holding the user's request, one
secret record and N KB of untrusted e-mail (addresses, IBANs, phone numbers, amounts,
prose), then times, per size:

* **index**: indexing the untrusted content once (µs per KB): it happens as each tool
  output arrives, never again;
* **sink call**: one check of a ``send_email(to, subject, body)`` call with a 400-character
  body (:func:`bastion.security.evaluate` on the up-to-date index): what the gate adds to
  a sink call, in µs (median and best of the repetitions);
* **sink call, injected**: the same with an attacker's address copied from the content.

The per-call figure must not grow with the content (the index answers lookups, nothing
is rescanned). Target: <= 50 µs per sink call with 100 KB of untrusted content.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable

from bastion.security import (
    DataFlowLedger,
    DataFlowPolicy,
    Provenance,
    ProvenanceRecord,
    SinkCheck,
    evaluate,
    index_of,
)

SIZES_KB = (10, 100, 1000)
REPEATS = 2000
TARGET_US = 50.0

_USER = Provenance(source="user", kind="user", trust="user")
_MAIL = Provenance(source="tool:read_inbox", kind="email", trust="untrusted", tool="read_inbox")
_SECRET = Provenance(source="tool:get_balance", kind="tool", trust="trusted", sensitivity="secret")
_BODY = (
    "Hi Bob, here is the summary of this week's customer e-mails. Three customers asked "
    "about the new pricing, two reported the export bug that engineering is fixing, and one "
    "wants to move the renewal meeting to Thursday afternoon. Nothing needs your decision "
    "before Friday; I will follow up on the export bug once the fix is deployed. Thanks!"
)


def _email(i: int) -> str:
    return (
        f"From: customer{i}@client{i % 37}.example\nSubject: order {1000 + i}\n\n"
        f"Hello, we paid EUR {i * 13 % 5000}.00 for order {1000 + i} from account "
        f"DE89370400440532013000. Call me on +44 20 7946 {i % 10000:04d} if anything is "
        f"missing. The delivery to warehouse {i % 11} in Rotterdam was late again and the "
        f"pallet labels were wrong; please check with logistics{i % 5}@client.example "
        "before the next shipment leaves on Monday morning.\n\n"
    )


def _ledger(size_kb: int) -> DataFlowLedger:
    ledger = DataFlowLedger()
    ledger.records.append(
        ProvenanceRecord(provenance=_USER, text="Summarise my inbox for bob@corp.example.")
    )
    ledger.records.append(
        ProvenanceRecord(provenance=_SECRET, text="Balance 12,345.67 EUR, credit line 50k.")
    )
    text: list[str] = []
    i = 0
    while sum(map(len, text)) < size_kb * 1024:
        text.append(_email(i))
        i += 1
    chunk = 5 * 1024  # one record per ~5 KB tool output
    joined = "".join(text)
    for start in range(0, len(joined), chunk):
        piece = joined[start : start + chunk]
        ledger.records.append(ProvenanceRecord(provenance=_MAIL, text=piece))
    return ledger


def _time(fn: Callable[[], object], repeats: int) -> list[float]:
    samples: list[float] = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - started)
    return samples


def _calibration_ms() -> float:
    """Milliseconds of a fixed pure-Python loop: ~40 on an idle core of these machines."""
    started = time.perf_counter()
    total = 0
    for i in range(1_000_000):
        total += i
    return (time.perf_counter() - started) * 1e3


def main() -> int:
    print(f"calibration: a 1M-iteration Python loop takes {_calibration_ms():.0f} ms here")
    policy = DataFlowPolicy(mode="enforce", trifecta=False)
    clean = {"to": "bob@corp.example", "subject": "Weekly inbox summary", "body": _BODY}
    injected = {**clean, "to": "logistics3@client.example"}
    header = f"{'untrusted':>10} {'index µs/KB':>12} {'sink call µs (median / best)':>30}"
    print(f"{header} {'injected':>18}")
    worst = 0.0
    for size in SIZES_KB:
        ledger = _ledger(size)
        started = time.perf_counter()
        index = index_of(ledger)
        indexed = (time.perf_counter() - started) * 1e6 / size
        figures: list[tuple[float, float]] = []
        for arguments in (clean, injected):
            check = SinkCheck(tool="send_email", arguments=arguments, index=index)
            found = evaluate(policy, check)
            assert bool(found) == (arguments is injected), found
            samples = _time(lambda check=check: evaluate(policy, check), REPEATS)
            figures.append((statistics.median(samples) * 1e6, min(samples) * 1e6))
        if size == 100:
            worst = figures[0][0]
        print(
            f"{size:>8} KB {indexed:>12.1f} {figures[0][0]:>20.1f} / {figures[0][1]:<7.1f}"
            f" {figures[1][0]:>9.1f} / {figures[1][1]:<7.1f}"
        )
    verdict = "met" if worst <= TARGET_US else "MISSED"
    print(
        f"target <= {TARGET_US:.0f} µs per sink call, 100 KB untrusted: {verdict} ({worst:.1f} µs)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
