"""Word count: flat_map -> key_by -> reduce, checkpointed every 100 ms.

ckptsim run examples/word_count.py
ckptsim run examples/word_count.py -p 4 -D execution.checkpointing.interval=20ms --stats stats.json
"""

import random

LINES = [
    "to be or not to be that is the question",
    "whether tis nobler in the mind to suffer",
    "the slings and arrows of outrageous fortune",
    "or to take arms against a sea of troubles",
]


def build(env):
    env.enable_checkpointing("100 ms")
    rng = random.Random(7)
    text = [rng.choice(LINES) for _ in range(50_000)]
    (
        env.from_collection(text, name="Lines")
        .flat_map(str.split, name="Split")
        .map(lambda word: (word, 1), name="Pair")
        .key_by(lambda pair: pair[0])
        .reduce(lambda a, b: (a[0], a[1] + b[1]), name="Count")
        .collect("counts")
    )
