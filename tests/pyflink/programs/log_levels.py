"""Log lines routed by level into side outputs: errors and warnings each to a side output of
their own (a ProcessFunction yielding (tag, line)), the rest on the main output; lines that do
not parse go to a side output of the parsing map. Errors are then counted per service."""

from pyflink.common import Types
from pyflink.datastream import OutputTag, StreamExecutionEnvironment
from pyflink.datastream.functions import ProcessFunction

ERRORS = OutputTag("errors", Types.TUPLE([Types.STRING(), Types.STRING()]))
WARNINGS = OutputTag("warnings", Types.STRING())
MALFORMED = OutputTag("malformed", Types.STRING())

LOG = """\
2026-01-05T10:00:01 INFO payments started
2026-01-05T10:00:02 ERROR payments card declined by issuer
2026-01-05T10:00:02 WARN search slow query 1200 ms
2026-01-05T10:00:03 DEBUG search cache miss
this line was cut off
2026-01-05T10:00:04 ERROR search index unavailable
2026-01-05T10:00:05 ERROR payments timeout calling bank
2026-01-05T10:00:05 INFO cart item added
2026-01-05T10:00:06 WARN cart retrying checkout
2026-01-05T10:00:07 FATAL
2026-01-05T10:00:08 ERROR payments card declined by issuer
2026-01-05T10:00:09 INFO payments stopped"""


LEVELS = ("DEBUG", "INFO", "WARN", "ERROR")


def parse(line):
    parts = line.split(" ", 3)
    if len(parts) < 4 or parts[1] not in LEVELS:
        return MALFORMED, line
    return tuple(parts)


class ByLevel(ProcessFunction):
    def process_element(self, value, ctx):
        _at, level, service, message = value
        if level == "ERROR":
            yield ERRORS, (service, message)
        elif level == "WARN":
            yield WARNINGS, f"{service}: {message}"
        else:
            yield f"{level.lower()} {service}: {message}"


def main():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    lines = env.from_collection(LOG.splitlines(), type_info=Types.STRING())
    parsed = lines.map(parse)
    routed = parsed.process(ByLevel(), Types.STRING())
    routed.print("other")
    routed.get_side_output(WARNINGS).print("warnings")
    parsed.get_side_output(MALFORMED).print("malformed")
    errors = routed.get_side_output(ERRORS)
    errors.map(lambda e: (e[0], 1), Types.TUPLE([Types.STRING(), Types.INT()])).key_by(
        lambda e: e[0]
    ).sum(1).set_parallelism(2).print("errors per service").set_parallelism(2)
    env.execute("log levels")


if __name__ == "__main__":
    main()
