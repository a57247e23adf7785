"""Restart strategies: whether a failed job restarts, and after how long (Flink's
``RestartBackoffTimeStrategy`` implementations, keys ``restart-strategy.*``).

Pure: ``notify_failure(now)`` records a failure at ``now`` (ms), then ``can_restart`` and
``backoff_ms`` answer for it. The exponential strategy's jitter comes from a seeded generator.
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass, field
from typing import Protocol

from runtime.config import ConfigError, Configuration


class RestartStrategy(Protocol):
    def notify_failure(self, now: int) -> None: ...

    @property
    def can_restart(self) -> bool: ...

    @property
    def backoff_ms(self) -> int: ...

    def describe(self) -> str: ...


@dataclass
class NoRestart:
    """``disable`` (``none``, ``off``): the first failure fails the job."""

    def notify_failure(self, now: int) -> None:
        pass

    @property
    def can_restart(self) -> bool:
        return False

    @property
    def backoff_ms(self) -> int:
        return 0

    def describe(self) -> str:
        return "restart-strategy.type: disable"


@dataclass
class FixedDelay:
    """``fixed-delay``: up to ``attempts`` restarts, each after ``delay_ms``."""

    attempts: int
    delay_ms: int
    failures: int = 0

    def notify_failure(self, now: int) -> None:
        self.failures += 1

    @property
    def can_restart(self) -> bool:
        return self.failures <= self.attempts

    @property
    def backoff_ms(self) -> int:
        return self.delay_ms

    def describe(self) -> str:
        return f"fixed-delay, {self.attempts} attempt(s)"


@dataclass
class FailureRate:
    """``failure-rate``: restart unless more than ``max_failures`` failures fall within
    ``interval_ms``."""

    max_failures: int
    interval_ms: int
    delay_ms: int
    recent: deque[int] = field(default_factory=deque)
    _exceeded: bool = False

    def notify_failure(self, now: int) -> None:
        # Flink keeps the last max_failures + 1 failures and restarts only if the oldest of
        # them lies more than the interval back (a failure exactly one interval back counts)
        self.recent.append(now)
        while self.recent and now - self.recent[0] > self.interval_ms:
            self.recent.popleft()
        self._exceeded = len(self.recent) > self.max_failures

    @property
    def can_restart(self) -> bool:
        return not self._exceeded

    @property
    def backoff_ms(self) -> int:
        return self.delay_ms

    def describe(self) -> str:
        return f"failure-rate, at most {self.max_failures} failure(s) per {self.interval_ms} ms"


@dataclass
class ExponentialDelay:
    """``exponential-delay``: the delay starts at ``initial_ms`` and grows by ``multiplier``
    per failure up to ``max_ms``; a run of ``reset_ms`` without failure after the last
    restart resets it (and the attempt count); at most ``attempts`` restarts between resets;
    ±``jitter`` of the delay, the result kept within ``initial_ms`` .. ``max_ms`` (as Flink's
    ``ExponentialDelayRestartBackoffTimeStrategy``)."""

    initial_ms: int
    max_ms: int
    multiplier: float
    reset_ms: int
    jitter: float
    attempts: int
    seed: int = 0
    restarts: int = 0
    last_failure: int | None = None
    _delay: int = 0
    _rng: random.Random = field(init=False)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    def notify_failure(self, now: int) -> None:
        # the quiet time counts from the restart the last failure led to
        restarted = None if self.last_failure is None else self.last_failure + self._delay
        if restarted is None or now - restarted >= self.reset_ms:
            self.restarts = 0
        try:  # initial * multiplier ** restarts so far (not compounded rounding), as Flink
            grown: int | None = int(self.initial_ms * self.multiplier**self.restarts)
        except OverflowError:
            grown = None
        self.last_failure = now
        self.restarts += 1
        if grown is None:
            self._delay = self.max_ms
            return
        # the jitter is a share of the grown delay; the result is kept within initial .. max
        spread = int(grown * self.jitter)
        jittered = grown + self._rng.randint(-spread, spread)
        self._delay = max(self.initial_ms, min(jittered, self.max_ms))

    @property
    def can_restart(self) -> bool:
        return self.restarts <= self.attempts

    @property
    def backoff_ms(self) -> int:
        return self._delay

    def describe(self) -> str:
        return f"exponential-delay, {self.attempts} attempt(s) before the delay resets"


#: the restart strategy of a batch step (``run_topology``) and of a ``ckptsim run`` unless the
#: job configures one: Flink's default with checkpoints (exponential-delay, unlimited attempts)
#: would retry a deterministic error forever, and nobody at a terminal gets an answer
BOUNDED_RESTARTS: dict[str, object] = {
    "restart-strategy.type": "fixed-delay",
    "restart-strategy.fixed-delay.attempts": 3,
    "restart-strategy.fixed-delay.delay": "1 s",
}


def bound_restarts_by_default(conf: Configuration) -> bool:
    """Give a checkpointed job that configures no restart strategy (no ``restart-strategy*``
    key) ``BOUNDED_RESTARTS``; True if it did."""
    if conf["execution.checkpointing.interval"] is None:
        return False  # Flink's default without checkpoints is no restart at all
    if any(key.startswith("restart-strategy") for key in conf.explicit()):
        return False
    conf.update(BOUNDED_RESTARTS)
    return True


def restart_strategy(conf: Configuration, *, checkpointing: bool, seed: int = 0) -> RestartStrategy:
    """The strategy ``conf`` asks for; unset: exponential-delay when checkpointing is
    enabled, else none (Flink's defaults)."""
    kind = conf["restart-strategy.type"] or ("exponential-delay" if checkpointing else "disable")
    if kind == "fixed-delay":
        return FixedDelay(
            conf["restart-strategy.fixed-delay.attempts"],
            conf["restart-strategy.fixed-delay.delay"],
        )
    if kind == "failure-rate":
        return FailureRate(
            conf["restart-strategy.failure-rate.max-failures-per-interval"],
            conf["restart-strategy.failure-rate.failure-rate-interval"],
            conf["restart-strategy.failure-rate.delay"],
        )
    if kind == "exponential-delay":
        prefix = "restart-strategy.exponential-delay."
        _check_exponential_delay(conf, prefix)
        return ExponentialDelay(
            initial_ms=conf[prefix + "initial-backoff"],
            max_ms=conf[prefix + "max-backoff"],
            multiplier=conf[prefix + "backoff-multiplier"],
            reset_ms=conf[prefix + "reset-backoff-threshold"],
            jitter=conf[prefix + "jitter-factor"],
            attempts=conf[prefix + "attempts-before-reset-backoff"],
            seed=seed,
        )
    return NoRestart()


def _check_exponential_delay(conf: Configuration, prefix: str) -> None:
    """What Flink's ``ExponentialDelayRestartBackoffTimeStrategy`` refuses, as a ConfigError
    naming the key (each key's own minimum is checked when it is set)."""
    initial, longest = conf[prefix + "initial-backoff"], conf[prefix + "max-backoff"]
    problems = [
        (initial < 1, "initial-backoff", initial, "must be at least 1 ms"),
        (longest < 1, "max-backoff", longest, "must be at least 1 ms"),
        (
            initial > longest,
            "initial-backoff",
            initial,
            f"cannot be higher than {prefix}max-backoff ({longest} ms)",
        ),
        (
            conf[prefix + "backoff-multiplier"] <= 1,
            "backoff-multiplier",
            conf[prefix + "backoff-multiplier"],
            "must be greater than 1",
        ),
        (
            not 0 <= conf[prefix + "jitter-factor"] <= 1,
            "jitter-factor",
            conf[prefix + "jitter-factor"],
            "must be between 0 and 1",
        ),
        (
            conf[prefix + "attempts-before-reset-backoff"] < 1,
            "attempts-before-reset-backoff",
            conf[prefix + "attempts-before-reset-backoff"],
            "must be at least 1",
        ),
    ]
    for wrong, key, value, rule in problems:
        if wrong:
            raise ConfigError(
                f"Invalid value {value!r} for configuration key '{prefix}{key}': {rule} "
                "(restart-strategy.type: exponential-delay)."
            )
