"""What a history point holds and how it is written: a queue's gauges, a task type's counts and coarse
histograms; and reading one back strictly, so that a point another program or a broken disk wrote is an
error of that point alone (:func:`decode_queue_point`, :func:`decode_task_point` raise ``ValueError``).

A task point is kept *coarse*: its histograms on buckets :data:`HISTORY_COARSENING` times wider than the
telemetry's, at most :data:`HISTORY_BUCKETS` of them. Increments are computed and added in that form
(:mod:`tqadmin.store.history.increments`), and refined only when read (:func:`decode_task_point`).
"""

from __future__ import annotations

import json
import math
from typing import Any

from tqadmin.plugin.models import QueueStats
from tqadmin.show.finite import finite
from tqadmin.telemetry.counters import COUNTERS, TaskStats
from tqadmin.telemetry.histogram import Histogram

QUEUE_FIGURES = (
    "messages",
    "ready",
    "in_flight",
    "oldest_age_s",
    "publish_rate",
    "deliver_rate",
    "ack_rate",
)
"""A queue point's gauges, in the order they are stored (a JSON array: no names repeated per point)."""

HISTORY_COARSENING = 8
"""A stored histogram bucket is 8 of the telemetry's 1 % buckets (``GAMMA ** 8``, a factor of 1.17): a
percentile read from history is within about 9 % of the exact value, and a point is 8 times smaller than
the live histogram's. Charts of a day or a week need no finer resolution; the live panel keeps 1 %."""
HISTORY_BUCKETS = 64
"""Coarse buckets a stored histogram keeps (more than four orders of magnitude); lower ones fold into the
lowest kept one."""
LARGEST_COUNT = 2**63 - 1
"""A stored count is at most a signed 64-bit integer (a sum of increments past it is held there)."""
_DECIMALS = 3

Figures = dict[str, float]
"""A queue point: the figures of :data:`QUEUE_FIGURES` the broker reported (missing ones are absent)."""


# -- queues ------------------------------------------------------------------------------------------------


def queue_figures(stats: QueueStats) -> list[float | None]:
    """The stored figures of one queue, in :data:`QUEUE_FIGURES` order (``None``: not reported)."""
    values: list[float | None] = [
        stats.messages,
        stats.ready,
        stats.unacked,
        stats.oldest_age_s,
        stats.publish_rate,
        stats.deliver_rate,
        stats.ack_rate,
    ]
    return [_compact(value) for value in values]


def _compact(value: float | None) -> float | None:
    if value is None or isinstance(value, int):
        return value
    if not math.isfinite(value):
        return None  # no JSON for it, and no figure either
    rounded = round(value, _DECIMALS)
    return int(rounded) if rounded.is_integer() else rounded


def encode_queue_point(stats: QueueStats) -> str:
    return dumps(queue_figures(stats))


def decode_queue_point(text: str | bytes) -> Figures:
    values = _loads(text)
    if not isinstance(values, list) or len(values) > len(QUEUE_FIGURES):
        raise ValueError("a queue point is a list of its figures")
    figures: Figures = {}
    for name, value in zip(QUEUE_FIGURES, values, strict=False):
        if value is not None:
            figures[name] = _number(value)
    return figures


# -- task types --------------------------------------------------------------------------------------------


def clamp_histogram(histogram: Histogram, keep: int = HISTORY_BUCKETS) -> Histogram:
    """``histogram`` with at most ``keep`` buckets, counts below them folded into the lowest kept one: the
    high percentiles a chart shows keep their accuracy, and a stored point has a bounded size."""
    if not histogram.buckets or max(histogram.buckets) - min(histogram.buckets) < keep:
        return histogram
    return folded_below(histogram, max(histogram.buckets) - keep + 1)


def folded_below(histogram: Histogram, floor: int) -> Histogram:
    """``histogram`` with the counts of the buckets below ``floor`` in bucket ``floor``: two readings of
    one cumulative histogram clamped at different heights are compared at the higher floor."""
    if not histogram.buckets or min(histogram.buckets) >= floor:
        return histogram
    clamped = histogram.copy()
    low = sum(n for index, n in clamped.buckets.items() if index < floor)
    clamped.buckets = {index: n for index, n in clamped.buckets.items() if index >= floor}
    clamped.buckets[floor] = clamped.buckets.get(floor, 0) + low
    return clamped


def coarsened(histogram: Histogram, factor: int = HISTORY_COARSENING) -> Histogram:
    """``histogram`` on buckets ``factor`` times wider (fine bucket ``i`` in coarse bucket ``i // factor``):
    still mergeable bucket by bucket, and windows are still differences of two readings."""
    coarse = Histogram()
    for index, n in histogram.buckets.items():
        coarse.buckets[index // factor] = coarse.buckets.get(index // factor, 0) + n
    coarse.zero, coarse.count, coarse.sum = histogram.zero, histogram.count, histogram.sum
    return coarse


def refined(coarse: Histogram, factor: int = HISTORY_COARSENING) -> Histogram:
    """A coarse histogram back on the telemetry's buckets, each count at the middle of its coarse bucket."""
    fine = coarse.copy()
    fine.buckets = {index * factor + factor // 2: n for index, n in coarse.buckets.items()}
    return fine


def coarse_figures(stats: TaskStats) -> TaskStats:
    """``stats`` as a point keeps them: counters, and both histograms coarsened and clamped; the
    dead-letter reasons are not kept (their names are unbounded)."""
    kept = TaskStats(wait=clamp_histogram(coarsened(stats.wait)), run=clamp_histogram(coarsened(stats.run)))
    for name in COUNTERS:
        setattr(kept, name, getattr(stats, name))
    return kept


def coarse_document(coarse: TaskStats) -> list[Any]:
    """Coarse figures as stored (JSON): counts, then the wait and run histograms, each clamped again (a
    sum of increments may span more buckets than one) and every count held to :data:`LARGEST_COUNT`."""
    histograms = [_held(clamp_histogram(histogram)).to_json() for histogram in (coarse.wait, coarse.run)]
    return [[min(getattr(coarse, name), LARGEST_COUNT) for name in COUNTERS], *histograms]


def _held(histogram: Histogram) -> Histogram:
    if histogram.zero <= LARGEST_COUNT and all(n <= LARGEST_COUNT for n in histogram.buckets.values()):
        return histogram
    held = histogram.copy()
    held.buckets = {index: min(n, LARGEST_COUNT) for index, n in held.buckets.items()}
    held.zero = min(held.zero, LARGEST_COUNT)
    return held


def coarse_from_document(document: Any) -> TaskStats:
    """What :func:`coarse_document` wrote; ``ValueError`` for anything else."""
    if not isinstance(document, list) or len(document) != 3 or not isinstance(document[0], list):
        raise ValueError("a task point is [counts, wait, run]")
    counts, wait, run = document
    stats = TaskStats(wait=_histogram(wait), run=_histogram(run))
    for name, value in zip(COUNTERS, counts, strict=False):
        setattr(stats, name, _count(value))
    return stats


def encode_coarse(coarse: TaskStats) -> str:
    return dumps(coarse_document(coarse))


def decode_coarse(text: str | bytes) -> TaskStats:
    return coarse_from_document(_loads(text))


def encode_task_point(stats: TaskStats) -> str:
    """A task type's figures (on the telemetry's buckets) as a point."""
    return encode_coarse(coarse_figures(stats))


def decode_task_point(text: str | bytes) -> TaskStats:
    """A point's figures back on the telemetry's buckets."""
    coarse = decode_coarse(text)
    coarse.wait, coarse.run = refined(coarse.wait), refined(coarse.run)
    return coarse


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), allow_nan=False)


# -- strict reading ----------------------------------------------------------------------------------------


def _loads(text: str | bytes) -> Any:
    if not isinstance(text, str | bytes):
        raise ValueError(f"a point is text, not {type(text).__name__}")
    return json.loads(text)  # bytes that are not UTF-8 raise UnicodeDecodeError, a ValueError


def _number(value: Any) -> float:
    number = finite(value)
    if number is None:
        raise ValueError(f"not a finite number: {value!r:.40}")
    return number


def _count(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= LARGEST_COUNT:
        raise ValueError(f"not a count: {value!r:.40}")
    return value


def _histogram(document: Any) -> Histogram:
    if not isinstance(document, dict):
        raise ValueError("a stored histogram is an object")
    histogram = Histogram()
    histogram.zero = _count(document.get("z", 0))
    histogram.sum = _number(document.get("s", 0.0))
    offset = document.get("o", 0)
    counts = document.get("c", [])
    if not isinstance(offset, int) or isinstance(offset, bool) or not isinstance(counts, list):
        raise ValueError("a stored histogram's buckets are an offset and a list of counts")
    if len(counts) > HISTORY_BUCKETS:
        raise ValueError("a stored histogram keeps at most its top buckets")
    for i, n in enumerate(counts):
        if _count(n):
            histogram.buckets[offset + i] = n
    histogram.count = histogram.zero + sum(histogram.buckets.values())
    return histogram
