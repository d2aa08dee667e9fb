"""Log-bucketed histograms: percentiles within 2 % of exact quantiles, and merging that is exact."""

import math
import random
import statistics
from collections.abc import Callable

import pytest

from tqadmin.telemetry.histogram import Histogram

QUANTILES = (0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 1.0)


def _exact(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[math.floor(q * (len(ordered) - 1))]


DISTRIBUTIONS: dict[str, Callable[[random.Random], float]] = {
    "uniform 1ms-2s": lambda r: r.uniform(0.001, 2.0),
    "exponential mean 50ms": lambda r: r.expovariate(20.0),
    "lognormal heavy tail": lambda r: r.lognormvariate(-3.0, 1.5),
    "pareto": lambda r: 0.01 * r.paretovariate(1.2),
    "bimodal fast and slow": lambda r: r.gauss(0.005, 0.0005) if r.random() < 0.9 else r.gauss(3.0, 0.3),
    "constant": lambda r: 0.25,
}


@pytest.mark.parametrize("name", list(DISTRIBUTIONS))
def test_percentiles_are_within_2_percent_of_exact_quantiles(name: str) -> None:
    rng = random.Random(name)
    values = [abs(DISTRIBUTIONS[name](rng)) + 1e-5 for _ in range(20_000)]
    histogram = Histogram()
    for value in values:
        histogram.record(value)
    for q in QUANTILES:
        exact = _exact(values, q)
        estimate = histogram.quantile(q)
        assert estimate is not None
        assert abs(estimate - exact) <= 0.02 * exact, (q, exact, estimate)


def test_merging_is_associative_commutative_and_equals_recording_everything_in_one() -> None:
    rng = random.Random(11)
    parts = [[rng.expovariate(5.0) for _ in range(500)] for _ in range(3)]
    histograms = []
    for part in parts:
        h = Histogram()
        for value in part:
            h.record(value)
        histograms.append(h)
    a, b, c = histograms
    left = Histogram.merged([Histogram.merged([a, b]), c])
    right = Histogram.merged([a, Histogram.merged([b, c])])
    swapped = Histogram.merged([c, a, b])
    whole = Histogram()
    for value in parts[0] + parts[1] + parts[2]:
        whole.record(value)
    assert left == right == swapped == whole
    assert whole.count == 1500


def test_a_later_reading_minus_an_earlier_one_is_what_was_recorded_in_between() -> None:
    h = Histogram()
    for value in (0.1, 0.2, 0.3):
        h.record(value)
    earlier = h.copy()
    between = Histogram()
    for value in (5.0, 6.0, 0.0):
        h.record(value)
        between.record(value)
    assert h.minus(earlier) == between
    assert earlier.minus(h).count == 0  # never negative


def test_the_compact_json_form_round_trips() -> None:
    h = Histogram()
    for value in (0.0, 0.001, 0.5, 0.51, 120.0):
        h.record(value)
    document = h.to_json()
    assert set(document) == {"z", "s", "o", "c"}
    assert Histogram.from_json(document) == h
    assert Histogram.from_json(Histogram().to_json()) == Histogram()


def test_empty_histograms_have_no_percentiles_and_odd_values_count_as_zero() -> None:
    assert Histogram().percentiles() == {"p50": None, "p95": None, "p99": None}
    h = Histogram()
    h.record(-2.0)  # a publisher whose clock runs ahead
    h.record(float("nan"))
    h.record(float("inf"))
    assert h.count == 3
    assert h.quantile(0.5) == 0.0
    assert h.quantile(1.0) == pytest.approx(1e9, rel=0.02)
    with pytest.raises(ValueError):
        h.quantile(1.5)


@pytest.mark.parametrize(
    "name", ["uniform 1ms-2s", "exponential mean 50ms", "lognormal heavy tail", "pareto"]
)
def test_percentiles_are_within_2_percent_of_interpolated_quantiles_too(name: str) -> None:
    rng = random.Random(f"interpolated {name}")
    values = [DISTRIBUTIONS[name](rng) for _ in range(20_000)]
    histogram = Histogram()
    for value in values:
        histogram.record(value)
    cuts = statistics.quantiles(values, n=100, method="inclusive")  # p1 .. p99, linear interpolation
    for percentile in (50, 90, 95, 99):
        exact = cuts[percentile - 1]
        estimate = histogram.quantile(percentile / 100)
        assert estimate is not None
        assert abs(estimate - exact) <= 0.02 * exact, (percentile, exact, estimate)
