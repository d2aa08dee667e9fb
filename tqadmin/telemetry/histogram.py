"""A log-bucketed latency histogram with a relative-error guarantee, mergeable by adding buckets.

Why this scheme (DDSketch's, Masson et al. 2019): a value ``v`` goes to bucket ``ceil(log_gamma(v))`` with
``gamma = (1 + a) / (1 - a)``; every value in a bucket is within relative error ``a`` of the bucket's estimate
``2 gamma^i / (gamma + 1)``. So any quantile read from the histogram is within ``a`` (here 1 %) of the exact
value at the same rank, whatever the distribution, and two histograms merge by adding counts bucket by bucket:
merging is associative and commutative, and a window is the bucket-wise difference of two cumulative readings.
Values at or below ``MIN_VALUE`` (1 microsecond) count in a zero bucket. Buckets are sparse; a latency spread
over three orders of magnitude uses about 350 of them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

RELATIVE_ACCURACY = 0.01
GAMMA = (1 + RELATIVE_ACCURACY) / (1 - RELATIVE_ACCURACY)
_LOG_GAMMA = math.log(GAMMA)
MIN_VALUE = 1e-6
MAX_VALUE = 1e9  # about 30 years: anything larger is a broken clock, kept finite


def bucket_of(value: float) -> int:
    return math.ceil(math.log(value) / _LOG_GAMMA)


def estimate_of(bucket: int) -> float:
    return 2 * GAMMA**bucket / (GAMMA + 1)


class Histogram:
    """Counts of values (seconds) per logarithmic bucket, plus a zero bucket, a count and a sum.

    Mutable, for a worker recording thousands of values a second; readers treat them as values and use
    :meth:`merged` and :meth:`minus`, which return new histograms.
    """

    __slots__ = ("buckets", "count", "sum", "zero")

    def __init__(self) -> None:
        self.buckets: dict[int, int] = {}
        self.zero = 0
        self.count = 0
        self.sum = 0.0

    def record(self, value: float, times: int = 1) -> None:
        """Add ``value`` seconds; negative values (clock skew between hosts) and NaN count as zero."""
        self.count += times
        if not value > MIN_VALUE:
            self.zero += times
            return
        self.sum += min(value, MAX_VALUE) * times
        index = bucket_of(min(value, MAX_VALUE))
        self.buckets[index] = self.buckets.get(index, 0) + times

    def add(self, other: Histogram) -> None:
        """Merge ``other`` into this one in place."""
        for index, n in other.buckets.items():
            self.buckets[index] = self.buckets.get(index, 0) + n
        self.zero += other.zero
        self.count += other.count
        self.sum += other.sum

    def copy(self) -> Histogram:
        clone = Histogram()
        clone.add(self)
        return clone

    @classmethod
    def merged(cls, histograms: Iterable[Histogram]) -> Histogram:
        total = cls()
        for histogram in histograms:
            total.add(histogram)
        return total

    def minus(self, earlier: Histogram) -> Histogram:
        """What was recorded since ``earlier`` (a previous reading of the same cumulative histogram).

        A bucket that went down (a reading from before a restart) counts as zero rather than negative.
        """
        delta = Histogram()
        for index, n in self.buckets.items():
            d = n - earlier.buckets.get(index, 0)
            if d > 0:
                delta.buckets[index] = d
        delta.zero = max(self.zero - earlier.zero, 0)
        delta.count = delta.zero + sum(delta.buckets.values())
        delta.sum = max(self.sum - earlier.sum, 0.0)
        return delta

    def quantile(self, q: float) -> float | None:
        """The value at rank ``floor(q * (count - 1))`` (0-based), within 1 % relative; None when empty."""
        if not 0.0 <= q <= 1.0:
            raise ValueError("quantile must be between 0 and 1")
        if self.count == 0:
            return None
        rank = math.floor(q * (self.count - 1))
        if rank < self.zero:
            return 0.0
        seen = self.zero
        for index in sorted(self.buckets):
            seen += self.buckets[index]
            if seen > rank:
                return estimate_of(index)
        return estimate_of(max(self.buckets))  # unreachable when count matches the buckets

    def percentiles(self) -> dict[str, float | None]:
        """p50, p95 and p99 as docs/interface.md's ``stats`` reports them."""
        return {"p50": self.quantile(0.5), "p95": self.quantile(0.95), "p99": self.quantile(0.99)}

    def mean(self) -> float | None:
        return self.sum / self.count if self.count else None

    def to_json(self) -> dict[str, Any]:
        """Compact: ``o`` the lowest bucket, ``c`` dense counts from there, ``z`` zeros, ``s`` the sum."""
        document: dict[str, Any] = {"z": self.zero, "s": round(self.sum, 6)}
        if self.buckets:
            low, high = min(self.buckets), max(self.buckets)
            document["o"] = low
            document["c"] = [self.buckets.get(i, 0) for i in range(low, high + 1)]
        return document

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> Histogram:
        histogram = cls()
        histogram.zero = int(document.get("z", 0))
        histogram.sum = float(document.get("s", 0.0))
        offset = int(document.get("o", 0))
        for i, n in enumerate(document.get("c", ())):
            if n:
                histogram.buckets[offset + i] = int(n)
        histogram.count = histogram.zero + sum(histogram.buckets.values())
        return histogram

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Histogram):
            return NotImplemented
        return (self.buckets, self.zero, self.count) == (
            other.buckets,
            other.zero,
            other.count,
        ) and math.isclose(self.sum, other.sum, rel_tol=1e-9, abs_tol=1e-9)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Histogram(count={self.count}, p50={self.quantile(0.5)}, p99={self.quantile(0.99)})"
