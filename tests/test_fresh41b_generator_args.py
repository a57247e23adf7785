"""fresh41b: from_generator's count and rate as a new user may pass them. Flink's
RateLimiterStrategy.perSecond (Guava's RateLimiter) refuses a rate that is not > 0 or is NaN
when the job is built; so does ckptsim (it accepted any: 0 meant unlimited, a negative rate
never emitted, and NaN, a str rate or a float count failed the source task at every restart).
math.inf means no limit."""

from __future__ import annotations

import math

import pytest

from ckptsim import StreamExecutionEnvironment
from runtime.graph import GraphError

BAD = (GraphError, TypeError, ValueError)


def _run(count: object, rate: object) -> object:
    env = StreamExecutionEnvironment(parallelism=1)
    env.enable_checkpointing("100 ms")
    env.from_generator(lambda i: i, count, rate=rate).collect("o")  # type: ignore[arg-type]
    return env.execute("gen", runtime="simulation", seed=1, timeout=2.0)


@pytest.mark.parametrize("rate", [0, -5, math.nan, "50"])
def test_bad_rate_is_refused_in_one_line(rate: object) -> None:
    with pytest.raises(BAD):
        _run(10, rate)


def test_infinite_rate_finishes() -> None:
    result = _run(10, math.inf)
    assert result.succeeded  # type: ignore[attr-defined]
    assert sorted(result.collected("o")) == list(range(10))  # type: ignore[attr-defined]


@pytest.mark.parametrize("count", [10.0, "10"])
def test_non_int_count_is_refused_clearly(count: object) -> None:
    with pytest.raises(BAD, match="count"):
        _run(count, None)
