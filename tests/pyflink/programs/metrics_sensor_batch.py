"""A BATCH job over sensor readings: a map parses "sensor,region,celsius,ts" lines and counts
parsed and invalid ones (nested groups: sensors -> region=<r>), a KeyedProcessFunction keeps
each sensor's statistics and reports them from an event-time timer (in BATCH mode timers fire
at the end of each key), counting alarms over 40 C and reporting the readings' values as a
distribution and the hottest reading as a gauge."""

from pyflink.common import Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import RuntimeExecutionMode, StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedProcessFunction, MapFunction, RuntimeContext
from pyflink.datastream.state import ValueStateDescriptor

REGIONS = ["eu", "us", "apac"]


class Parse(MapFunction):
    def open(self, runtime_context: RuntimeContext):
        sensors = runtime_context.get_metrics_group().add_group("sensors")
        self.parsed = {r: sensors.add_group("region", r).counter("parsed") for r in REGIONS}
        self.invalid = sensors.counter("invalid")

    def map(self, value):
        parts = value.split(",")
        try:
            sensor, region, celsius, ts = parts[0], parts[1], float(parts[2]), int(parts[3])
        except (IndexError, ValueError):
            self.invalid.inc()
            return ("invalid", "none", 0.0, 0)
        self.parsed[region].inc()
        return (sensor, region, celsius, ts)


class ReadingTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[3]


class SensorStats(KeyedProcessFunction):
    def open(self, runtime_context: RuntimeContext):
        self.stats = runtime_context.get_state(
            ValueStateDescriptor(
                "stats", Types.TUPLE([Types.INT(), Types.DOUBLE(), Types.DOUBLE(), Types.DOUBLE()])
            )
        )
        metrics = runtime_context.get_metrics_group()
        self.alarms = metrics.add_group("alarms").counter("overheat")
        self.values = metrics.distribution("tenthsOfDegree")
        self.hottest = 0
        metrics.gauge("hottestTenths", lambda: self.hottest)
        self.reports = metrics.meter("reportsPerSecond")

    def process_element(self, value, ctx):
        sensor, region, celsius, ts = value
        if sensor == "invalid":
            return
        tenths = round(celsius * 10)
        self.values.update(tenths)
        self.hottest = max(self.hottest, tenths)
        stats = self.stats.value()
        if stats is None:
            stats = (0, 0.0, celsius, celsius)
            ctx.timer_service().register_event_time_timer(ts + 1)
        n, total, low, high = stats
        self.stats.update((n + 1, total + celsius, min(low, celsius), max(high, celsius)))
        if celsius > 40.0:
            self.alarms.inc()
            yield f"ALARM {sensor} ({region}) {celsius:.1f} C at {ts}"

    def on_timer(self, timestamp, ctx):
        self.reports.mark_event()
        n, total, low, high = self.stats.value()
        yield f"{ctx.get_current_key()}: {n} readings, avg {total / n:.2f}, min {low:.1f}, max {high:.1f}"


def lines():
    out = []
    for n in range(400):
        sensor = f"s{n % 12:02d}"
        region = REGIONS[(n % 12) % 3]
        celsius = 15.0 + ((n * 37) % 290) / 10.0
        if n % 97 == 13:
            out.append(f"{sensor},{region},n/a,{1000 * n}")
            continue
        out.append(f"{sensor},{region},{celsius:.1f},{1_700_000_000_000 + 1000 * n}")
    return out


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_runtime_mode(RuntimeExecutionMode.BATCH)
    env.set_parallelism(2)
    (
        env.from_collection(lines(), type_info=Types.STRING())
        .map(Parse(), Types.TUPLE([Types.STRING(), Types.STRING(), Types.DOUBLE(), Types.LONG()]))
        .assign_timestamps_and_watermarks(
            WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(ReadingTime())
        )
        .key_by(lambda r: r[0], key_type=Types.STRING())
        .process(SensorStats(), Types.STRING())
        .print("sensors")
    )
    env.execute("sensor batch")


if __name__ == "__main__":
    main()
