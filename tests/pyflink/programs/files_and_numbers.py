"""A file source, a number sequence and a file sink, checkpointed: the committed files hold
every record once. Arguments: --input FILE --output FOLDER."""

import argparse

from pyflink.common import Encoder, Types, WatermarkStrategy
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.connectors import NumberSequenceSource
from pyflink.datastream.connectors.file_system import (
    FileSink,
    FileSource,
    OutputFileConfig,
    RollingPolicy,
    StreamFormat,
)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--input", required=True)
    parser.add_argument("--output", required=True)
    args = parser.parse_args()

    env = StreamExecutionEnvironment.get_execution_environment()
    env.enable_checkpointing(20)
    lines = env.from_source(
        FileSource.for_record_stream_format(StreamFormat.text_line_format(), args.input)
        .process_static_file_set()
        .build(),
        WatermarkStrategy.no_watermarks(),
        "lines",
    )
    numbers = env.from_source(
        NumberSequenceSource(1, 500), WatermarkStrategy.no_watermarks(), "numbers"
    )
    words = lines.flat_map(lambda line: line.split(), output_type=Types.STRING())
    lengths = words.map(
        lambda w: (w, len(w)), output_type=Types.TUPLE([Types.STRING(), Types.INT()])
    )
    squares = numbers.map(
        lambda n: (str(n), n * n), output_type=Types.TUPLE([Types.STRING(), Types.INT()])
    )
    lengths.union(squares).key_by(lambda t: t[0]).sum(1).filter(lambda t: t[1] % 3 == 0).sink_to(
        FileSink.for_row_format(args.output, Encoder.simple_string_encoder())
        .with_output_file_config(
            OutputFileConfig.builder().with_part_prefix("out").with_part_suffix(".txt").build()
        )
        .with_rolling_policy(RollingPolicy.default_rolling_policy())
        .build()
    )
    env.execute("files and numbers")


if __name__ == "__main__":
    main()
