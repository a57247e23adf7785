"""Restart strategies (Flink's ``RestartBackoffTimeStrategy`` implementations) and the
``restart-strategy.*`` configuration that selects them: pure, no actors."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from runtime.config import ConfigError, Configuration
from runtime.restart import (
    ExponentialDelay,
    FailureRate,
    FixedDelay,
    NoRestart,
    RestartStrategy,
    restart_strategy,
)

INT_MAX = 2**31 - 1  # Java's Integer.MAX_VALUE


def strategy(settings: Mapping[str, object], *, checkpointing: bool = True) -> RestartStrategy:
    return restart_strategy(Configuration(settings), checkpointing=checkpointing, seed=0)


def delays(s: RestartStrategy, failures_at: list[int]) -> list[int | None]:
    """The backoff after each failure, or None where the strategy gives up."""
    out: list[int | None] = []
    for now in failures_at:
        s.notify_failure(now)
        out.append(s.backoff_ms if s.can_restart else None)
    return out


# --- which strategy, and Flink's defaults ------------------------------------------------------


def test_without_checkpointing_and_no_strategy_set_a_job_never_restarts() -> None:
    s = strategy({}, checkpointing=False)
    assert isinstance(s, NoRestart)
    s.notify_failure(0)
    assert not s.can_restart


def test_with_checkpointing_and_no_strategy_set_it_is_exponential_delay_with_flinks_defaults() -> (
    None
):
    """Flink 1.19+ (FLIP-364): exponential-delay, 1 s doubling by 1.5 up to 1 min, 10% jitter,
    reset after 1 h without failure, Integer.MAX_VALUE attempts (Flink up to 1.18 took
    fixed-delay with Integer.MAX_VALUE attempts here)."""
    s = strategy({})
    assert isinstance(s, ExponentialDelay)
    assert (s.initial_ms, s.max_ms, s.multiplier) == (1_000, 60_000, 1.5)
    assert (s.reset_ms, s.jitter, s.attempts) == (3_600_000, 0.1, INT_MAX)
    assert delays(s, [0])[0] in range(1_000, 1_101)


def test_fixed_delay_defaults_are_one_attempt_after_one_second() -> None:
    s = strategy({"restart-strategy.type": "fixed-delay"})
    assert s == FixedDelay(attempts=1, delay_ms=1_000)


def test_failure_rate_defaults_are_one_failure_per_minute_and_one_second_delay() -> None:
    s = strategy({"restart-strategy.type": "failure-rate"})
    assert isinstance(s, FailureRate)
    assert (s.max_failures, s.interval_ms, s.delay_ms) == (1, 60_000, 1_000)


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        ("none", NoRestart),
        ("off", NoRestart),
        ("disable", NoRestart),
        ("fixed-delay", FixedDelay),
        ("fixeddelay", FixedDelay),
        ("Failure-Rate", FailureRate),
        ("failurerate", FailureRate),
        (" exponential-delay ", ExponentialDelay),
        ("exponentialdelay", ExponentialDelay),
    ],
)
def test_every_flink_spelling_of_restart_strategy_type_selects_its_strategy(
    value: str, kind: type
) -> None:
    assert isinstance(strategy({"restart-strategy.type": value}), kind)


def test_the_deprecated_key_restart_strategy_still_selects_the_strategy() -> None:
    assert isinstance(strategy({"restart-strategy": "fixed-delay"}), FixedDelay)


def test_a_configured_strategy_applies_whether_or_not_checkpointing_is_enabled() -> None:
    assert isinstance(strategy({"restart-strategy.type": "none"}), NoRestart)
    assert isinstance(
        strategy({"restart-strategy.type": "fixed-delay"}, checkpointing=False), FixedDelay
    )


def test_durations_take_flinks_syntax() -> None:
    s = strategy(
        {
            "restart-strategy.type": "failure-rate",
            "restart-strategy.failure-rate.failure-rate-interval": "5 min",
            "restart-strategy.failure-rate.delay": "10 s",
            "restart-strategy.failure-rate.max-failures-per-interval": "3",
        }
    )
    assert isinstance(s, FailureRate)
    assert (s.max_failures, s.interval_ms, s.delay_ms) == (3, 300_000, 10_000)


# --- bad values ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("restart-strategy.type", "sometimes", "expected one of disable (none, off), fixed-delay"),
        ("restart-strategy.type", 3, "expected one of disable"),
        ("restart-strategy.fixed-delay.attempts", -1, "must be at least 0"),
        ("restart-strategy.fixed-delay.attempts", "many", "expected an integer"),
        ("restart-strategy.fixed-delay.delay", "soon", "expected a duration"),
        ("restart-strategy.fixed-delay.delay", "5 fortnights", "unknown time unit"),
        ("restart-strategy.failure-rate.max-failures-per-interval", 0, "must be at least 1"),
        ("restart-strategy.failure-rate.failure-rate-interval", 0, "must be at least 1 ms"),
        ("restart-strategy.exponential-delay.backoff-multiplier", 0.5, "must be at least 1"),
        ("restart-strategy.exponential-delay.jitter-factor", "lots", "expected a number"),
    ],
)
def test_a_bad_value_is_a_config_error_naming_the_key_and_what_is_allowed(
    key: str, value: object, message: str
) -> None:
    with pytest.raises(ConfigError, match=f"'{key}'") as caught:
        Configuration({key: value})
    assert message in str(caught.value)
    assert repr(value) in str(caught.value)


def test_a_misspelt_restart_key_is_refused_with_a_suggestion() -> None:
    with pytest.raises(
        ConfigError, match=r"Did you mean 'restart-strategy\.fixed-delay\.attempts'"
    ):
        Configuration({"restart-strategy.fixed-delay.attempt": 3})


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("jitter-factor", 1.5, "must be between 0 and 1"),
        ("backoff-multiplier", 1, "must be greater than 1"),
        ("initial-backoff", 0, "must be at least 1 ms"),
        ("max-backoff", 0, "must be at least 1 ms"),
        ("initial-backoff", "2 min", "cannot be higher than"),
        ("attempts-before-reset-backoff", 0, "must be at least 1"),
    ],
)
def test_exponential_delay_refuses_what_flink_refuses(
    key: str, value: object, message: str
) -> None:
    settings = {
        "restart-strategy.type": "exponential-delay",
        f"restart-strategy.exponential-delay.{key}": value,
    }
    with pytest.raises(ConfigError, match=f"restart-strategy.exponential-delay.{key}") as caught:
        strategy(settings)
    assert message in str(caught.value)


def test_exponential_delay_values_are_only_checked_when_it_is_the_strategy() -> None:
    settings = {"restart-strategy.exponential-delay.jitter-factor": 5.0}
    assert isinstance(strategy({**settings, "restart-strategy.type": "none"}), NoRestart)
    with pytest.raises(ConfigError, match="jitter-factor"):
        strategy(settings)  # the default with checkpointing


# --- none and fixed-delay -------------------------------------------------------------------------


def test_none_gives_up_at_the_first_failure_and_says_so() -> None:
    s = NoRestart()
    assert delays(s, [5]) == [None]
    assert "disable" in s.describe()


def test_fixed_delay_restarts_attempts_times_each_after_the_same_delay() -> None:
    s = FixedDelay(attempts=3, delay_ms=250)
    assert delays(s, [0, 10, 10_000, 10_000_000]) == [250, 250, 250, None]
    assert "fixed-delay, 3 attempt(s)" in s.describe()


def test_fixed_delay_with_zero_attempts_never_restarts() -> None:
    assert delays(FixedDelay(attempts=0, delay_ms=0), [0]) == [None]


# --- failure-rate ---------------------------------------------------------------------------------


def test_failure_rate_gives_up_when_more_failures_than_allowed_fall_in_one_interval() -> None:
    s = FailureRate(max_failures=2, interval_ms=1_000, delay_ms=30)
    assert delays(s, [0, 400, 900]) == [30, 30, None]


def test_failure_rate_restarts_for_ever_while_failures_are_spread_out() -> None:
    s = FailureRate(max_failures=2, interval_ms=1_000, delay_ms=30)
    assert delays(s, [t * 600 for t in range(20)]) == [30] * 20


def test_failure_rate_counts_a_failure_exactly_one_interval_back() -> None:
    """Flink restarts only when the oldest of the last max+1 failures lies *more* than the
    interval back (``now - earliest > interval``)."""
    assert delays(FailureRate(1, 1_000, 0), [0, 1_000]) == [0, None]
    assert delays(FailureRate(1, 1_000, 0), [0, 1_001]) == [0, 0]


# --- exponential-delay ----------------------------------------------------------------------------


def exponential(**overrides: float) -> ExponentialDelay:
    values: dict[str, float] = {
        "initial_ms": 10,
        "max_ms": 1_000,
        "multiplier": 1.5,
        "reset_ms": 10_000,
        "jitter": 0.0,
        "attempts": INT_MAX,
    }
    values.update(overrides)
    return ExponentialDelay(**values)  # type: ignore[arg-type]


def test_exponential_delay_grows_as_initial_times_multiplier_to_the_attempt() -> None:
    """Flink computes ``(long) (initial * multiplier^attempt)``, not a compounded rounding."""
    assert delays(exponential(), [0, 1, 2, 3, 4, 5, 6]) == [10, 15, 22, 33, 50, 75, 113]


def test_exponential_delay_stops_growing_at_the_maximum() -> None:
    assert delays(exponential(max_ms=60), [0, 1, 2, 3, 4, 5, 6]) == [10, 15, 22, 33, 50, 60, 60]


def test_exponential_delay_resets_after_a_quiet_period_counted_from_the_restart() -> None:
    s = exponential(reset_ms=1_000)
    assert delays(s, [0, 100, 200]) == [10, 15, 22]
    # the last restart was at 222: 1221 is 999 ms later, not yet a reset
    assert delays(s, [1_221]) == [33]
    # restarted at 1254; 2254 is 1000 ms later: back to the initial delay
    assert delays(s, [2_254]) == [10]


def test_exponential_delay_gives_up_after_its_attempts_until_a_reset() -> None:
    s = exponential(attempts=2, reset_ms=1_000)
    assert delays(s, [0, 100, 200]) == [10, 15, None]
    fresh = exponential(attempts=2, reset_ms=1_000)
    assert delays(fresh, [0, 100, 5_000, 5_100]) == [10, 15, 10, 15]


def test_exponential_jitter_stays_within_its_share_and_never_below_initial_or_above_max() -> None:
    """As Flink: the jitter is a share of the grown delay, and the sum is clamped to
    initial .. max (a grown delay well past the maximum is the maximum, unjittered)."""
    seen: set[int] = set()
    for seed in range(200):
        s = exponential(initial_ms=1_000, max_ms=2_300, jitter=0.1, seed=seed)
        first, second, third, fourth = delays(s, [0, 1, 2, 3])
        assert first is not None and 1_000 <= first <= 1_100  # 1000 +- 100, never below 1000
        assert second is not None and 1_350 <= second <= 1_650  # 1500 +- 150
        assert third is not None and 2_025 <= third <= 2_300  # 2250 +- 225, at most the max
        assert fourth == 2_300  # 3375 +- 337: always past the maximum
        seen.add(first)
    assert 1_000 in seen and len(seen) > 20


def test_exponential_jitter_is_seeded() -> None:
    def run(seed: int) -> list[int | None]:
        return delays(exponential(initial_ms=1_000, max_ms=60_000, jitter=0.5, seed=seed), [0] * 8)

    assert run(1) == run(1)
    assert run(1) != run(2)


def test_exponential_delay_survives_very_many_failures_at_the_maximum() -> None:
    s = exponential(multiplier=2.0, max_ms=5_000)
    assert delays(s, list(range(5_000)))[-1] == 5_000
