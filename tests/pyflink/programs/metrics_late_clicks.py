"""Click counting per page in one-minute windows kept with event-time timers. A click more
than 10 s behind the newest click seen for its page is late: it is counted (a counter in a
"clicks" group), its delay goes into a distribution, and it goes to a side output, where a
map tags it. Open windows are a gauge, clicks per second a meter."""

from pyflink.common import Duration, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import OutputTag, StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedProcessFunction, MapFunction, RuntimeContext
from pyflink.datastream.state import MapStateDescriptor, ValueStateDescriptor

WINDOW = 60_000
LATENESS = 10_000
PAGES = ["/home", "/cart", "/checkout", "/search", "/product/7"]
USERS = [f"u{i}" for i in range(6)]


class ClickTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[2]


class WindowedClicks(KeyedProcessFunction):
    def __init__(self, late_tag):
        self.late_tag = late_tag

    def open(self, runtime_context: RuntimeContext):
        self.counts = runtime_context.get_map_state(
            MapStateDescriptor("counts", Types.LONG(), Types.INT())
        )
        self.newest = runtime_context.get_state(ValueStateDescriptor("newest", Types.LONG()))
        metrics = runtime_context.get_metrics_group()
        clicks = metrics.add_group("clicks")
        self.late = clicks.counter("late")
        self.on_time = clicks.counter("onTime")
        self.delay = clicks.distribution("lateDelayMs")
        self.rate = metrics.meter("clicksPerSecond")
        self.open_windows = 0
        metrics.gauge("openWindows", lambda: self.open_windows)

    def process_element(self, value, ctx):
        user, page, ts = value
        self.rate.mark_event()
        newest = self.newest.value()
        if newest is not None and ts < newest - LATENESS:
            self.late.inc()
            self.delay.update(newest - ts)
            yield self.late_tag, (user, page, ts, newest - ts)
            return
        self.on_time.inc()
        if newest is None or ts > newest:
            self.newest.update(ts)
        end = ts - ts % WINDOW + WINDOW
        count = self.counts.get(end)
        if count is None:
            count = 0
            self.open_windows += 1
            ctx.timer_service().register_event_time_timer(end - 1)
        self.counts.put(end, count + 1)

    def on_timer(self, timestamp, ctx):
        end = timestamp + 1
        count = self.counts.get(end)
        self.counts.remove(end)
        self.open_windows -= 1
        yield f"{ctx.get_current_key()} [{end - WINDOW}, {end}): {count} clicks"


class TagLate(MapFunction):
    def open(self, runtime_context: RuntimeContext):
        self.tagged = runtime_context.get_metrics_group().counter("lateTagged")

    def map(self, value):
        self.tagged.inc()
        user, page, ts, behind = value
        return f"late click of {user} on {page} at {ts}, {behind} ms behind"


def clicks():
    out = []
    base = 1_700_000_000_000
    for n in range(300):
        ts = base + n * 1_500
        if n % 17 == 5:
            ts -= 25_000  # a late one
        elif n % 7 == 2:
            ts -= 4_000  # a bit out of order, within the lateness
        out.append((USERS[(n * 7) % len(USERS)], PAGES[(n * 3 + n // 10) % len(PAGES)], ts))
    return out


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    # parallelism 1 up to the keyed function: PyFlink's key_by runs its key selector in a map
    # of the default parallelism, and two of them would interleave each page's clicks
    env.set_parallelism(1)
    late = OutputTag(
        "late", Types.TUPLE([Types.STRING(), Types.STRING(), Types.LONG(), Types.LONG()])
    )
    strategy = WatermarkStrategy.for_bounded_out_of_orderness(
        Duration.of_days(1)  # the windows fire at the end of the input
    ).with_timestamp_assigner(ClickTime())
    windows = (
        env.from_collection(
            clicks(), type_info=Types.TUPLE([Types.STRING(), Types.STRING(), Types.LONG()])
        )
        .assign_timestamps_and_watermarks(strategy)
        .key_by(lambda click: click[1], key_type=Types.STRING())
        .process(WindowedClicks(late), Types.STRING())
        .set_parallelism(2)
    )
    windows.print("window")
    windows.get_side_output(late).map(TagLate(), Types.STRING()).print("late")
    env.execute("late clicks")


if __name__ == "__main__":
    main()
