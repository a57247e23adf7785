"""Word count in PyFlink's spelling (the same job as examples/word_count.py): a PyFlink
program, unchanged, runs on ckptsim's actors with `ckptsim run`, and with `python` on Flink.

ckptsim run examples/pyflink_word_count.py
ckptsim run examples/pyflink_word_count.py -p 4 -D execution.checkpointing.unaligned.enabled=true
python examples/pyflink_word_count.py            # with apache-flink installed: real Flink
"""

import random

from pyflink.common import Types
from pyflink.datastream import CheckpointingMode, StreamExecutionEnvironment

LINES = [
    "to be or not to be that is the question",
    "whether tis nobler in the mind to suffer",
    "the slings and arrows of outrageous fortune",
    "or to take arms against a sea of troubles",
]


def word_count():
    env = StreamExecutionEnvironment.get_execution_environment()
    env.enable_checkpointing(100, CheckpointingMode.EXACTLY_ONCE)
    env.get_checkpoint_config().set_min_pause_between_checkpoints(50)
    rng = random.Random(7)
    text = [rng.choice(LINES) for _ in range(50_000)]
    (
        env.from_collection(text, type_info=Types.STRING())
        .flat_map(str.split, output_type=Types.STRING())
        .map(lambda word: (word, 1), output_type=Types.TUPLE([Types.STRING(), Types.INT()]))
        .key_by(lambda pair: pair[0], key_type=Types.STRING())
        .reduce(lambda a, b: (a[0], a[1] + b[1]))
        .filter(lambda pair: pair[1] % 5000 == 0)
        .print("count")
    )
    env.execute("pyflink_word_count")


if __name__ == "__main__":
    word_count()
