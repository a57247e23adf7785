"""Timers a timer registers, due at once: PyFlink fires them in rounds.

When the watermark jumps (here from the start to the end of time, as a small bounded input
gives it), PyFlink's Java operator fires every timer already due, lets the Python worker
finish its bundle, and only then gets the timers that worker registered meanwhile: those fire
in the next round, after every timer of the round before, whatever their times
(``AbstractPythonFunctionOperator.advanceWatermark``). A ``ContinuousEventTimeTrigger`` fires
its window's first interval and the window's end in the first round, and the end's clean-up
deletes the next interval's timer: two results per window, not one per interval.
"""

from pyflink.common import Time, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import AggregateFunction, KeyedProcessFunction
from pyflink.datastream.window import ContinuousEventTimeTrigger, TumblingEventTimeWindows


class EventTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class Reminders(KeyedProcessFunction):
    """A reminder 10 ms after each event, then every 100 ms up to 1 s."""

    def process_element(self, value, ctx):
        ctx.timer_service().register_event_time_timer(value[1] + 10)
        yield f"event {value[0]} at {value[1]}"

    def on_timer(self, timestamp, ctx):
        yield f"reminder {ctx.get_current_key()} at {timestamp}"
        if timestamp < 1000:
            ctx.timer_service().register_event_time_timer(timestamp + 100)


class Total(AggregateFunction):
    def create_accumulator(self):
        return 0

    def add(self, value, accumulator):
        return accumulator + value[2]

    def get_result(self, accumulator):
        return f"total {accumulator}"

    def merge(self, a, b):
        return a + b


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    events = env.from_collection(
        [("a", 1, 1), ("b", 5, 2), ("a", 500, 3), ("b", 4000, 4), ("a", 9300, 5)],
        type_info=Types.TUPLE([Types.STRING(), Types.LONG(), Types.INT()]),
    ).assign_timestamps_and_watermarks(
        WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(EventTime())
    )
    keyed = events.key_by(lambda e: e[0], key_type=Types.STRING())
    keyed.process(Reminders(), output_type=Types.STRING()).print("timers")
    keyed.window(TumblingEventTimeWindows.of(Time.seconds(10))).trigger(
        ContinuousEventTimeTrigger.of(Time.seconds(2))
    ).aggregate(Total(), accumulator_type=Types.INT(), output_type=Types.STRING()).print(
        "continuous"
    )
    env.execute("timer rounds")


if __name__ == "__main__":
    main()
