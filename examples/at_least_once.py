"""At-least-once checkpointing: barriers are tracked, never aligned, so no channel ever waits.

After a failure and restore an at-least-once job may see some records twice (those processed
after a barrier on one channel but before the checkpoint completed); with no failure the result
is the same as exactly-once.

    ckptsim run examples/at_least_once.py
"""


def build(env):
    env.enable_checkpointing("20 ms", "AT_LEAST_ONCE")
    (
        env.from_generator(
            lambda i: {"user": f"u{i % 50}", "amount": i % 13}, 100_000, name="Clicks"
        )
        .key_by(lambda click: click["user"])
        .reduce(lambda a, b: {"user": a["user"], "amount": a["amount"] + b["amount"]}, name="Spend")
        .filter(lambda total: total["amount"] > 12_000, name="BigSpenders")
        .collect("big_spenders")
    )
