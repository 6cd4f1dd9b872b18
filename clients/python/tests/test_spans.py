"""Deliberate work from the training loop (issue 40): `with tracker.span(...)` makes its time
custom, a silent evaluation within its promise is no stall, a launch on fewer GPUs than the
plan's says so, and bad values are refused in the client, naming them."""

import time

import pytest

from flightplan_client import Tracker

from daemon_helpers import RUN, daemon, wait_for  # noqa: F401


def test_a_span_is_custom_time_of_its_kind(daemon):
    with Tracker(RUN, server=daemon.address) as t:
        t.job_started(restored_step=0, gpus=3584)
        t.step(0, 0)
        t.step(1, 1000)
        with t.span("eval", expected_seconds=60):
            time.sleep(1.5)  # an evaluation that reports nothing
        t.step(2, 2000)
        t.flush()

    assert wait_for(lambda: daemon.status()["time_seconds"].get("custom", 0) > 0)
    status = daemon.status()
    times = status["time_seconds"]
    assert 1.4 < times["custom"] < 5, times
    assert times["custom_seconds_by_kind"] == [{"kind": "eval", "seconds": times["custom"]}], times
    assert times.get("stalled", 0) == 0, times
    assert status["gpus"] == 3584 and status["plan_gpus"] == 4096, status
    assert "open span" not in daemon.cli("status", RUN).stdout


def test_bad_values_are_refused_in_the_client(daemon):
    with Tracker(RUN, server=daemon.address) as t:
        with pytest.raises(ValueError, match="gpus 0"):
            t.job_started(gpus=0)
        with pytest.raises(ValueError, match="span kind 'Eval!'"):
            t.span_started("Eval!")
        with pytest.raises(ValueError, match="expected_seconds -1"):
            t.span_started("eval", expected_seconds=-1)
