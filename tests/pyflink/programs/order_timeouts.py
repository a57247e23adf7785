"""Orders that are not paid within fifteen minutes of event time time out (a
KeyedProcessFunction with event-time timers); a timed-out order worth more than 200 also
raises an alert on a side output (yield ALERTS, ...), and so does a payment that comes after
its order timed out."""

from pyflink.common import Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import OutputTag, StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedProcessFunction, RuntimeContext
from pyflink.datastream.state import ListStateDescriptor, ValueStateDescriptor

TIMEOUT = 15 * 60_000
ALERTS = OutputTag("alerts", Types.STRING())
EVENT = Types.TUPLE([Types.STRING(), Types.STRING(), Types.DOUBLE(), Types.LONG()])


class EventTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[3]


class PaymentDeadline(KeyedProcessFunction):
    """An order's events may arrive out of order (they reach the key's subtask through
    different channels): each is kept until the watermark passes its time (a timer at it), and
    handled then, in event-time order. The deadline's timer is registered with the order's
    creation (PyFlink hands a timer registered in on_timer to Java only after the timers
    already due have fired)."""

    def open(self, runtime_context: RuntimeContext):
        self.events = runtime_context.get_list_state(
            ListStateDescriptor("events", Types.PICKLED_BYTE_ARRAY())
        )
        self.order = runtime_context.get_state(
            ValueStateDescriptor("order", Types.PICKLED_BYTE_ARRAY())
        )

    def process_element(self, value, ctx):
        self.events.add(value)
        ctx.timer_service().register_event_time_timer(value[3])
        if value[1] == "created":
            ctx.timer_service().register_event_time_timer(value[3] + TIMEOUT)

    def on_timer(self, timestamp, ctx):
        events = list(self.events.get())
        self.events.update([e for e in events if e[3] != timestamp])
        for order_id, kind, amount, at in sorted(e for e in events if e[3] == timestamp):
            if kind == "created":
                self.order.update((amount, at + TIMEOUT))
            elif self.order.value() is not None:
                created = self.order.value()[1] - TIMEOUT
                self.order.clear()
                yield f"{order_id} paid {amount:.2f} after {(at - created) // 1000} s"
            else:
                yield ALERTS, f"{order_id} paid {amount:.2f} after it timed out"
        pending = self.order.value()
        if pending is not None and pending[1] == timestamp:
            self.order.clear()
            key = ctx.get_current_key()
            yield f"{key} timed out ({pending[0]:.2f} unpaid)"
            if pending[0] > 200:
                yield ALERTS, f"{key}: {pending[0]:.2f} unpaid for 15 minutes"


def events():
    out = []
    for n in range(12):
        order_id = f"order-{n:02d}"
        created = n * 120_000
        amount = 35.5 + (n * 61) % 400
        out.append((order_id, "created", amount, created))
        if n % 3 == 0:
            out.append((order_id, "paid", amount, created + 60_000 * (n % 7 + 2)))
        elif n % 4 == 1:
            out.append((order_id, "paid", amount, created + TIMEOUT + 300_000))
    return sorted(out, key=lambda e: e[3])


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    outcomes = (
        env.from_collection(events(), type_info=EVENT)
        .assign_timestamps_and_watermarks(
            WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(EventTime())
        )
        .key_by(lambda e: e[0])
        .process(PaymentDeadline(), Types.STRING())
    )
    outcomes.print("orders")
    outcomes.get_side_output(ALERTS).print("alerts")
    env.execute("order timeouts")


if __name__ == "__main__":
    main()
