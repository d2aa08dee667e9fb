"""Rounds and the report every worker benchmark prints: each contender runs ``--rounds`` times, the order
rotated each round (and each before/after pair swapped every other round) so that a burst of load on the
shared machine does not fall on one contender only; then each row's median, its min-max spread, its set-up,
the jobs its counters saw, and ratios against the fastest configuration of each peer. A row with a failed
run says FAILED and what failed, and has no ratio; :func:`finish` returns the exit code (1 on any failure).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from drain import BEFORE, CHECKOUT, CLOCK, Contender, Outcome

Group = list[Contender]
"""Contenders that run back to back in a round: one, or the before and after of a tqadmin worker."""
Target = tuple[str, str, float | None]
"""A ratio to print: a tqadmin row's label, a peer family (or another tqadmin label), its target."""
PerJob = tuple[str, str, float]
"""A cost per job to hold to a ceiling: a row's label, the row's figure (``store_round_trips_per_job``,
``api_calls_per_job``), the most it may be."""


def groups(
    tqadmin: Callable[[Path], list[Contender]], peers: list[Contender], before: Path | None
) -> list[Group]:
    """tqadmin's contenders from this checkout (each beside its twin from ``before`` when given), and the
    peers one a group."""
    after = tqadmin(CHECKOUT)
    if before is None:
        return [[c] for c in after] + [[p] for p in peers]
    twins = [Contender(c.label + BEFORE, c.peer, c.setup, c.run, c.once) for c in tqadmin(before)]
    return [[b, a] for b, a in zip(twins, after, strict=True)] + [[p] for p in peers]


def in_turn(found: list[Group], round_no: int) -> Group:
    """Round ``round_no``'s order: the groups rotated by one a round, each pair swapped every other round."""
    shift = round_no % len(found)
    rotated = found[shift:] + found[:shift]
    return [item for group in rotated for item in (group if round_no % 2 == 0 else group[::-1])]


def run_rounds(found: list[Group], rounds: int) -> dict[str, list[Outcome]]:
    """Every contender's outcomes, round by round (each said on stderr as it ends)."""
    results: dict[str, list[Outcome]] = {c.label: [] for group in found for c in group}
    for round_no in range(rounds):
        for contender in in_turn(found, round_no):
            outcome = contender.run()
            results[contender.label].append(outcome)
            said = (
                "FAILED: " + "; ".join(outcome.failures)
                if outcome.rate is None
                else f"{outcome.rate:,.0f} jobs/s"
            )
            print(f"  round {round_no + 1}: {contender.label}: {said}", file=sys.stderr)
    return results


def row(contender: Contender, outcomes: Sequence[Outcome]) -> dict[str, object]:
    """A contender's line of the report (and of the JSON copy)."""
    rates = [o.rate for o in outcomes if o.rate is not None]
    failures = sorted({f for o in outcomes for f in o.failures})
    trips = [o.trips_per_job for o in outcomes if o.trips_per_job is not None]
    calls = [o.calls_per_job for o in outcomes if o.calls_per_job is not None]
    return {
        "label": contender.label,
        "peer": contender.peer,
        "setup": contender.setup.text(),
        "median": statistics.median(rates) if rates and not failures else None,
        "min": min(rates, default=None),
        "max": max(rates, default=None),
        "runs": len(outcomes),
        "jobs_ran": min(o.ran for o in outcomes),
        "executions": max(o.runs for o in outcomes),
        "exactly_once_checked": contender.once,
        "dlq_checked": all(o.dlq_checked for o in outcomes),
        "store_round_trips_per_job": statistics.median(trips) if trips else None,
        "api_calls_per_job": statistics.median(calls) if calls else None,
        "failed": failures,
    }


def ratios(rows: list[dict[str, object]], targets: list[Target]) -> list[dict[str, object]]:
    """Each wanted ratio whose two sides passed: a tqadmin row against another row (by label) or against
    the fastest configuration of a peer family (none when one of its configurations failed)."""
    medians = {str(r["label"]): r["median"] for r in rows}
    found = []
    for label, other, target in targets:
        theirs = [r for r in rows if r["label"] == other] or [r for r in rows if r["peer"] == other]
        mine, best = (
            medians.get(label),
            max((r["median"] for r in theirs), key=lambda m: m or 0, default=None),
        )
        if not isinstance(mine, float) or not theirs or any(r["median"] is None for r in theirs):
            continue
        fastest = next(r["label"] for r in theirs if r["median"] == best)
        found.append({"label": f"{label} / {fastest}", "ratio": mine / float(best), "target": target})  # type: ignore[arg-type]
    return found


def per_job_costs(rows: list[dict[str, object]], per_job: Sequence[PerJob]) -> list[dict[str, object]]:
    """Each ceiling of ``per_job`` against its row's median: met or MISSED (none for a row that failed)."""
    found: list[dict[str, object]] = []
    for label, figure, target in per_job:
        (r,) = [r for r in rows if r["label"] == label]
        value = r[figure]
        if isinstance(value, float) and not r["failed"]:
            met = "met" if value <= target else "MISSED"
            found.append({"label": label, "figure": figure, "value": value, "target": target, "met": met})
    return found


def cost_text(cost: dict[str, object]) -> str:
    """One line for a ceiling of :func:`per_job_costs`: its row, figure, median, target and met or MISSED."""
    value, target = cost["value"], cost["target"]
    assert isinstance(value, float) and isinstance(target, float)
    return f"{cost['label']}: {cost['figure']} {value:.3f} (at most {target:g}: {cost['met']})"


def print_report(title: str, rows: list[dict[str, object]], found: list[dict[str, object]]) -> None:
    print(f"\n{title}\n{CLOCK}; every job counted in its own process and checked after the stop\n")
    width = max(len(str(r["label"])) for r in rows)
    setup = max(len(str(r["setup"])) for r in rows)
    print(f"  {'':<{width}}  {'set-up':<{setup}}  {'jobs/s':>9}  {'(min-max)':>17}  checked")
    for r in rows:
        head = f"  {r['label']:<{width}}  {r['setup']:<{setup}}"
        if r["failed"]:
            print(f"{head}  {'FAILED':>9}  {'':>17}  " + "; ".join(map(str, r["failed"])))
            continue
        spread = f"({r['min']:,.0f}-{r['max']:,.0f})"
        once = ", each once" if r["exactly_once_checked"] else ""
        trips = r["store_round_trips_per_job"]
        trips_text = "" if trips is None else f"; {trips:.3f} store round trips/job"
        if r["api_calls_per_job"] is not None:
            trips_text += f"; {r['api_calls_per_job']:.3f} API calls/job"
        dlq = "DLQ empty" if r["dlq_checked"] else "no DLQ"
        checked = f"{r['jobs_ran']:,} jobs ran{once}, {dlq}, none left{trips_text}"
        print(f"{head}  {r['median']:>9,.0f}  {spread:>17}  {checked}")
    if found:
        print("\nratios (against the fastest passing configuration of each peer)")
        lw = max(len(str(r["label"])) for r in found)
        for r in found:
            target = r["target"]
            ratio = float(r["ratio"])  # type: ignore[arg-type]
            goal = (
                "" if target is None else f"(target >= {target:g}x: {'met' if ratio >= target else 'MISSED'})"
            )  # type: ignore[operator]
            print(f"  {r['label']:<{lw}}  {ratio:5.2f}x  {goal}")


def print_comparison(results: dict[str, list[Outcome]], before: Path) -> None:
    """Before (``--compare-with``) against after (this checkout): medians, min-max spreads, and whether the
    after-median lies within the before-spread or above it."""
    print(f"\nbefore: {before}\nafter:  {CHECKOUT}\n")
    pairs = [label for label in results if label + BEFORE in results]
    width = max(map(len, pairs), default=0)
    for label in pairs:
        was = [o.rate for o in results[label + BEFORE] if o.rate is not None]
        now = [o.rate for o in results[label] if o.rate is not None]
        if len(was) < len(results[label + BEFORE]) or len(now) < len(results[label]):
            print(f"  {label:<{width}}  FAILED runs: no comparison")
            continue
        a, b = statistics.median(was), statistics.median(now)
        verdict = "SLOWER" if b < min(was) else "above" if b > max(was) else "within"
        print(
            f"  {label:<{width}}  before {a:>9,.0f} ({min(was):,.0f}-{max(was):,.0f})"
            f"  after {b:>9,.0f} ({min(now):,.0f}-{max(now):,.0f})"
            f"  after/before {b / a:5.2f}x  {verdict} the before-spread"
        )


def finish(
    broker: str,
    args: argparse.Namespace,
    found: list[Group],
    results: dict[str, list[Outcome]],
    targets: list[Target],
    title: str,
    per_job: Sequence[PerJob] = (),
) -> int:
    """Print the report, write ``--json``, and say the exit code: 1 when a run failed a check."""
    rows = [row(c, results[c.label]) for group in found for c in group]
    found_ratios = ratios(rows, targets)
    print_report(title, rows, found_ratios)
    costs = per_job_costs(rows, per_job)
    for cost in costs:
        print(cost_text(cost))
    if args.compare_with is not None:
        print_comparison(results, args.compare_with)
    failed = [r["label"] for r in rows if r["failed"]]
    if args.json is not None:
        data = {
            "broker": broker,
            "jobs": args.jobs,
            "rounds": args.rounds,
            "rows": rows,
            "ratios": found_ratios,
            "per_job_targets": costs,
        }
        args.json.write_text(json.dumps(data, indent=2) + "\n")
    if failed:
        print(f"\nFAILED: {', '.join(map(str, failed))}", file=sys.stderr)
        return 1
    return 0
