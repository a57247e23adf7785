"""A task's IO metrics as Flink's views keep them (``runtime.metrics``), on a fake clock: the
rates are ``MeterView`` s (the count of the last minute, sampled every 5 s, divided by 60),
the times per second ``TimerGauge`` s (ms measured in the filled 5 s slots of the last minute,
per second), and a sample's counts and times are those as of its instant."""

from __future__ import annotations

from runtime.metrics import MeterView, TaskIOMetrics, TimerGauge


def test_a_meter_view_is_the_count_of_the_last_minute_over_sixty_seconds() -> None:
    meter = MeterView()
    for tick in range(1, 13):  # a minute of samples, 100 events a second
        meter.update(500 * tick)
        assert meter.rate == 500 * tick / 60  # the oldest sample is still 0
    meter.update(500 * 13)
    assert meter.rate == 100.0
    for _ in range(12):  # the input stops: the rate falls to 0 within a minute
        meter.update(500 * 13)
    assert meter.rate == 0.0
    assert MeterView(7).span_s == 5  # spans are whole 5 s steps, as Flink's


def test_a_timer_gauge_averages_over_the_slots_filled_so_far_and_forgets_after_a_minute() -> None:
    gauge = TimerGauge()
    assert gauge.value == 0
    gauge.update(5000)  # back-pressured the whole first 5 s
    assert gauge.value == 1000
    gauge.update(0)
    assert gauge.value == 500
    for _ in range(11):
        gauge.update(0)
    assert gauge.value == 0  # the back-pressured slot left the minute
    gauge.update(10_000)
    assert gauge.value == 166  # 10 000 ms in the minute's slots, per second, a whole number
    capped = TimerGauge()
    capped.update(6000)  # more than the interval's 5 s (a mail that overran it): at most 1000
    assert capped.value == 1000


def run(io: TaskIOMetrics, mails: list[tuple[int, int, int, bool]]) -> None:
    for start, end, records, backpressured in mails:
        io.observe(start, end, records_in=records, records_out=records, backpressured=backpressured)


def test_task_rates_come_from_samples_at_the_instants_they_fell_due() -> None:
    io = TaskIOMetrics()
    io.start(1000)
    # 1000 records in the first 5 s, 3000 by 7 s; a sample is due at 6000
    run(io, [(1000, 2000, 1000, False), (6500, 7000, 3000, False)])
    snap = io.snapshot(7000)
    # the sample at 6000 saw 1000 records (the next mail's came after it)
    assert snap["records_in_per_s"] == 1000 / 60
    # 1000 ms busy, then idle from 2000: 4000 ms of the first interval, as of 6000
    assert snap["idle_ms_per_s"] == 4000 // 5
    assert snap["backpressured_ms_per_s"] == 0
    assert (snap["busy_ms"], snap["idle_ms"]) == (1500, 4500)
    # nothing observed for a minute: the samples still come (the snapshot takes them)
    snap = io.snapshot(7000 + 60_000)
    assert snap["records_in_per_s"] == 2000 / 60  # 3000 - the 1000 of the sample 60 s before
    # the minute's slots: 11 idle ones and the one with the second mail's 500 ms busy
    assert snap["idle_ms_per_s"] == (11 * 5000 + 4500) // 60
    assert snap["records_in"] == 3000


def test_back_pressured_time_is_the_gap_after_a_mail_that_left_the_output_full() -> None:
    io = TaskIOMetrics(counters=lambda: {"map.numRecordsIn": 42})
    io.start(0)
    run(io, [(0, 1000, 10, True), (4000, 5000, 20, False)])
    snap = io.snapshot(5000)
    assert snap["backpressured_ms_per_s"] == 3000 // 5
    assert snap["idle_ms_per_s"] == 0
    assert snap["counter_rates"] == {"map.numRecordsIn": 42 / 60}
    io.end(6000)
    assert io.snapshot(100_000)["ended_at"] == 6000  # no samples after the end
    assert io.snapshot(100_000)["idle_ms"] == 1000
