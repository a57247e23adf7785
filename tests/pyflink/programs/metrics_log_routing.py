"""Log routing with side outputs: a ProcessFunction parses log lines and routes ERROR and WARN
lines to side outputs, counting lines per level (a key-value group "level"), their lengths
(a distribution) and unparsable lines; errors are then counted per service by a
KeyedProcessFunction whose event-time timer prints each service's total at the end of the
input; warnings are shortened by a map with its own counter and meter."""

from pyflink.common import Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import OutputTag, StreamExecutionEnvironment
from pyflink.datastream.functions import (
    KeyedProcessFunction,
    MapFunction,
    ProcessFunction,
    RuntimeContext,
)
from pyflink.datastream.state import ValueStateDescriptor

SERVICES = ["auth", "billing", "search", "gateway"]
LEVELS = ["INFO", "INFO", "DEBUG", "WARN", "INFO", "ERROR", "INFO", "WARN"]


class LineTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        head = value.split(" ", 1)[0]
        return int(head) if head.isdigit() else 0


class Router(ProcessFunction):
    def __init__(self, errors, warnings):
        self.errors = errors
        self.warnings = warnings

    def open(self, runtime_context: RuntimeContext):
        metrics = runtime_context.get_metrics_group()
        self.per_level = {
            level: metrics.add_group("level", level).counter("lines")
            for level in ("DEBUG", "INFO", "WARN", "ERROR")
        }
        self.bad = metrics.add_group("parse").counter("failures")
        self.lengths = metrics.distribution("lineLength")
        self.last_error_ts = 0
        metrics.gauge("lastErrorTimestamp", lambda: self.last_error_ts)

    def process_element(self, value, ctx):
        self.lengths.update(len(value))
        parts = value.split(" ", 3)
        if len(parts) < 4 or parts[1] not in self.per_level:
            self.bad.inc()
            yield f"unparsable: {value!r}"
            return
        ts, level, service, message = parts
        self.per_level[level].inc()
        if level == "ERROR":
            self.last_error_ts = int(ts)
            yield self.errors, (service, int(ts), message)
        elif level == "WARN":
            yield self.warnings, f"{service}: {message}"
        elif level == "INFO":
            yield f"{service} {message}"
        # DEBUG lines are dropped


class ErrorsPerService(KeyedProcessFunction):
    def open(self, runtime_context: RuntimeContext):
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.INT()))
        self.first = runtime_context.get_state(ValueStateDescriptor("first", Types.LONG()))
        group = runtime_context.get_metrics_group().add_group("errors")
        self.seen = group.counter("seen")
        self.reported = group.counter("servicesReported")

    def process_element(self, value, ctx):
        service, ts, message = value
        self.seen.inc()
        count = self.count.value() or 0
        if count == 0:
            ctx.timer_service().register_event_time_timer(ts + 3_600_000)
        first = self.first.value()
        if first is None or ts < first:  # the router's subtasks interleave: the earliest
            self.first.update(ts)
        self.count.update(count + 1)
        if "timeout" in message:
            yield f"{service} timeout at {ts}: {message}"

    def on_timer(self, timestamp, ctx):
        self.reported.inc()
        yield (f"{ctx.get_current_key()}: {self.count.value()} errors since {self.first.value()}")


class ShortenWarning(MapFunction):
    def open(self, runtime_context: RuntimeContext):
        metrics = runtime_context.get_metrics_group()
        self.shortened = metrics.counter("shortened")
        self.rate = metrics.meter("warningsPerSecond", time_span_in_seconds=10)

    def map(self, value):
        self.rate.mark_event()
        if len(value) > 30:
            self.shortened.inc()
            return value[:27] + "..."
        return value


def log_lines():
    lines = []
    ts = 1_700_000_000_000
    for n in range(200):
        ts += 250 + (n % 5) * 100
        level = LEVELS[(n * 3) % len(LEVELS)]
        service = SERVICES[(n * 7 + n // 3) % len(SERVICES)]
        if n % 23 == 4:
            lines.append(f"garbage line number {n}")
            continue
        if level == "ERROR":
            what = "upstream timeout after 30s" if n % 3 == 0 else f"failed request #{n}"
        elif level == "WARN":
            what = f"slow response of {100 + n * 13 % 900} ms for request #{n} on shard {n % 4}"
        else:
            what = f"request #{n} ok"
        lines.append(f"{ts} {level} {service} {what}")
    return lines


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    errors = OutputTag("errors", Types.TUPLE([Types.STRING(), Types.LONG(), Types.STRING()]))
    warnings = OutputTag("warnings", Types.STRING())
    routed = (
        env.from_collection(log_lines(), type_info=Types.STRING())
        .assign_timestamps_and_watermarks(
            WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(LineTime())
        )
        .process(Router(errors, warnings), Types.STRING())
        .name("route logs")
    )
    routed.print("info")
    (
        routed.get_side_output(errors)
        .key_by(lambda e: e[0], key_type=Types.STRING())
        .process(ErrorsPerService(), Types.STRING())
        .name("errors per service")
        .print("errors")
    )
    routed.get_side_output(warnings).map(ShortenWarning(), Types.STRING()).print("warn")
    env.execute("log routing")


if __name__ == "__main__":
    main()
