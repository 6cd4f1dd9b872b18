#!/usr/bin/python3
"""How long a Tracker call takes in the training loop: the cost of step() over many calls,
with the daemon unreachable (the worst case: everything queues and spools), beside the cost
of an empty Python function call measured in the same run.

    PYTHONPATH=build/python /usr/bin/python3 clients/python/examples/bench_client.py
"""
import logging
import tempfile
import time

from flightplan_client import Tracker


def main(n=100_000):
    logging.disable(logging.CRITICAL)

    def nothing(step, tokens):
        return None

    s = time.perf_counter()
    for i in range(n):
        nothing(i, i)
    floor = (time.perf_counter() - s) / n
    with tempfile.TemporaryDirectory() as spool:
        t = Tracker("bench", server="127.0.0.1:1", spool_dir=spool, call_timeout_seconds=0.2)
        s = time.perf_counter()
        for i in range(n):
            t.step(i, i * 1000)
        per_call = (time.perf_counter() - s) / n
        t.close(timeout=2)
    print(f"Tracker.step(): {per_call * 1e6:.2f} us per call over {n:,} calls "
          f"(an empty function call: {floor * 1e6:.2f} us; ratio {per_call / floor:.0f}x)")


if __name__ == "__main__":
    main()
