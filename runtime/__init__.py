"""ckptsim's protocol core: pure, clock-injected state machines (events in, effects out).

No threads, no sleeps, no wall clock (but ``clock.SystemClock``), no actor or Spark imports.
"""
