"""fresh41b: from_generator's count and rate as a new user may pass them. Flink's
RateLimiterStrategy.perSecond (Guava's RateLimiter) refuses a rate that is not > 0 or is NaN;
ckptsim accepts any: 0 means unlimited, a negative rate never emits, and NaN, inf, a str rate
or a float count fail the source task at run time, so under execute's default restart strategy
(Flink's exponential-delay, unlimited) the bounded job restarts forever."""

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
@pytest.mark.xfail(
    strict=True,
    reason="fresh41b: from_generator accepts a rate that is not a positive number: 0 means "
    "unlimited, a negative one never emits (the job never ends), NaN and '50' fail the source "
    "task at run time (restarting forever); Flink's RateLimiterStrategy.perSecond refuses "
    "rate <= 0 and NaN when the job is built",
)
def test_bad_rate_is_refused_in_one_line(rate: object) -> None:
    with pytest.raises(BAD):
        _run(10, rate)


@pytest.mark.xfail(
    strict=True,
    reason="fresh41b: rate=math.inf (no bound, which Guava's RateLimiter accepts) fails the source "
    "task (float infinity to int) again at every restart: a bounded job of 10 records never ends",
)
def test_infinite_rate_finishes() -> None:
    result = _run(10, math.inf)
    assert result.succeeded  # type: ignore[attr-defined]
    assert sorted(result.collected("o")) == list(range(10))  # type: ignore[attr-defined]


@pytest.mark.xfail(
    strict=True,
    reason="fresh41b: from_generator(fn, 10.0) is accepted and its task fails at every restart "
    "('float' object cannot be interpreted as an integer): the job never ends; a count that "
    "is not an int should be refused in one line naming count, as "
    "count='10' is not either (it raises \"'<' not supported between instances of 'str' "
    "and 'int'\")",
)
@pytest.mark.parametrize("count", [10.0, "10"])
def test_non_int_count_is_refused_clearly(count: object) -> None:
    with pytest.raises(BAD, match="count"):
        _run(count, None)
