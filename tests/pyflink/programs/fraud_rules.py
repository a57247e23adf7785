"""Card transactions checked against fraud rules that change while the job runs: the rules
are broadcast to every subtask of the keyed check (broadcast(MapStateDescriptor) and a
KeyedBroadcastProcessFunction). Each rule has versions, valid from an event time on; a
transaction is checked against the versions valid at its own time, once the watermark has
passed it (an event-time timer), so the outcome does not depend on which input arrives first.
Every rule change is also written to an audit side output, by every subtask."""

from pyflink.common import Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import OutputTag, StreamExecutionEnvironment
from pyflink.datastream.functions import KeyedBroadcastProcessFunction, RuntimeContext
from pyflink.datastream.state import ListStateDescriptor, MapStateDescriptor

RULES = MapStateDescriptor("rules", Types.STRING(), Types.PICKLED_BYTE_ARRAY())
AUDIT = OutputTag("audit", Types.STRING())


class TransactionTime(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[2]


class FraudCheck(KeyedBroadcastProcessFunction):
    def open(self, runtime_context: RuntimeContext):
        self.pending = runtime_context.get_list_state(
            ListStateDescriptor("pending", Types.PICKLED_BYTE_ARRAY())
        )
        self.seen = runtime_context.get_list_state(ListStateDescriptor("seen", Types.LONG()))

    def process_element(self, value, ctx):
        self.pending.add(value)
        ctx.timer_service().register_event_time_timer(value[2])

    def process_broadcast_element(self, value, ctx):
        rule, valid_from, limit = value
        rules = ctx.get_broadcast_state(RULES)
        versions = sorted((rules.get(rule) or []) + [(valid_from, limit)])
        rules.put(rule, versions)
        yield AUDIT, f"{rule} = {limit} from {valid_from // 1000} s ({len(versions)} versions)"

    def on_timer(self, timestamp, ctx):
        rules = ctx.get_broadcast_state(RULES)
        due = [t for t in self.pending.get() if t[2] == timestamp]
        self.pending.update([t for t in self.pending.get() if t[2] != timestamp])
        for card, amount, at in due:
            self.seen.add(at)
            recent = [s for s in self.seen.get() if at - 60_000 < s <= at]
            max_amount = limit_at(rules.get("max_amount"), at)
            per_minute = limit_at(rules.get("max_per_minute"), at)
            if max_amount is not None and amount > max_amount:
                yield f"{card} at {at // 1000} s: {amount} over the limit of {max_amount}"
            if per_minute is not None and len(recent) > per_minute:
                yield f"{card} at {at // 1000} s: {len(recent)} payments in a minute"


def limit_at(versions, at):
    valid = [limit for valid_from, limit in versions or [] if valid_from <= at]
    return valid[-1] if valid else None


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    rules = env.from_collection(
        [("max_amount", 0, 900), ("max_per_minute", 0, 3), ("max_amount", 120_000, 400)],
        type_info=Types.TUPLE([Types.STRING(), Types.LONG(), Types.INT()]),
    )
    cards = ["4111", "5500", "3400", "6011"]
    transactions = [
        (cards[n % 4], (n * 37) % 1000 + 50, n * 9_000 + (n % 4) * 100) for n in range(40)
    ]
    transactions += [("5500", 120, 30_500 + n * 1_000) for n in range(4)]
    transactions.sort(key=lambda t: t[2])
    checked = (
        env.from_collection(
            transactions, type_info=Types.TUPLE([Types.STRING(), Types.INT(), Types.LONG()])
        )
        .assign_timestamps_and_watermarks(
            WatermarkStrategy.for_monotonous_timestamps().with_timestamp_assigner(TransactionTime())
        )
        .key_by(lambda t: t[0])
        .connect(rules.broadcast(RULES))
        .process(FraudCheck(), Types.STRING())
    )
    checked.print("alert")
    checked.get_side_output(AUDIT).print("audit")
    env.execute("fraud rules")


if __name__ == "__main__":
    main()
