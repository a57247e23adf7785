"""Page views per page and hour of event time. Clicks uploaded late by mobile clients arrive
after their hour's window was closed (allowed lateness one minute): they go to a side output
(side_output_late_data) for a correction job instead of being dropped."""

from pyflink.common import Duration, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import OutputTag, StreamExecutionEnvironment
from pyflink.datastream.functions import ProcessWindowFunction
from pyflink.datastream.window import Time, TumblingEventTimeWindows

PAGES = ["/home", "/search", "/cart", "/pay"]


def click_type():
    # a type of its own for each use: PyFlink 2.3 cannot pickle a tag whose type was already
    # handed to Java (by from_collection)
    return Types.TUPLE([Types.STRING(), Types.LONG()])


class ClickTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[1]


class ViewsPerHour(ProcessWindowFunction):
    def process(self, key, context, elements):
        window = context.window()
        hour = window.start // 3_600_000
        yield f"{key} hour {hour}: {len(list(elements))} views"


def clicks():
    """A click every 1.5 seconds for five hours, then three uploads from the first hours."""
    stream = [(PAGES[(n * 7 + n // 5) % len(PAGES)], n * 1_500) for n in range(12_000)]
    return [*stream, ("/cart", 600_000), ("/home", 4_100_000), ("/pay", 3_500_000)]


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    env.get_config().set_auto_watermark_interval(1)
    late = OutputTag("late-clicks", click_type())
    views = (
        env.from_collection(clicks(), type_info=click_type())
        .assign_timestamps_and_watermarks(
            WatermarkStrategy.for_bounded_out_of_orderness(
                Duration.of_seconds(5)
            ).with_timestamp_assigner(ClickTime())
        )
        .key_by(lambda click: click[0])
        .window(TumblingEventTimeWindows.of(Time.hours(1)))
        .allowed_lateness(60_000)
        .side_output_late_data(late)
        .process(ViewsPerHour(), Types.STRING())
    )
    views.print("views")
    views.get_side_output(late).map(
        lambda click: f"late click on {click[0]} at {click[1] // 1000} s", Types.STRING()
    ).print("late")
    env.execute("late clicks")


if __name__ == "__main__":
    main()
