"""The Python client against a real flightpland on loopback (Debian's /usr/bin/python3)."""

import json
import subprocess

import pytest

from flightplan_client import Tracker

from daemon_helpers import PLAN, RUN, Daemon, daemon, free_port, wait_for  # noqa: F401


def test_events_reach_the_daemon(daemon):
    with Tracker(RUN, server=daemon.address) as t:
        t.job_started(attempt=1, restored_step=0)
        for step in range(1, 11):
            t.step(step, step * 1000)
        t.checkpoint_saved(10, blocking_seconds=0.01)
    s = daemon.status()
    assert int(s["progress"]["tokens"]) == 10000
    assert int(s["events"]) == 12
    assert s["attempt"] == 1


def test_a_rank_spread_reaches_the_status(daemon):
    with Tracker(RUN, server=daemon.address) as t:
        t.job_started(attempt=1, restored_step=0)
        for step in range(1, 6):
            t.step(step, step * 1000, rank_spread=0.02 if step < 5 else 0.07)
    s = daemon.status()
    assert abs(s["slowdown"]["rank_spread"] - 0.07) < 1e-9
    assert 0.02 < s["slowdown"]["typical_rank_spread"] < 0.07


def test_spools_while_the_daemon_is_away_and_replays_in_order(tmp_path):
    port = free_port()
    t = Tracker(RUN, server=f"127.0.0.1:{port}", spool_dir=str(tmp_path / "spool"), flush_seconds=0.2)
    t.job_started(attempt=1)
    for step in range(1, 101):
        t.step(step, step * 100)
    t.flush(timeout=5)
    spool = tmp_path / "spool" / f"{RUN}.jsonl"
    assert wait_for(spool.exists, 10), "nothing was spooled while the daemon was away"
    assert sum(1 for _ in open(spool)) == 101
    d = Daemon(tmp_path, port)
    try:
        d.cli("create", PLAN)
        t.step(101, 10100)  # newer than the spool: delivered after it
        assert wait_for(lambda: int(d.status().get("events", 0)) == 102, 30)
        assert int(d.status()["progress"]["tokens"]) == 10100
        t.close()
        assert not spool.exists()
    finally:
        d.stop()


def test_a_refused_event_is_kept_with_its_reason_and_the_rest_delivered(daemon, tmp_path):
    t = Tracker(RUN, server=daemon.address, spool_dir=str(tmp_path / "spool"))
    t.job_started(attempt=1)
    t.step(10, 1000)
    t.step(5, 500)  # backwards without a restore: refused by the daemon
    t.step(20, 2000)
    t.close()
    assert t.rejected == 1 and t.dropped == 0
    s = daemon.status()
    assert int(s["progress"]["tokens"]) == 2000
    assert int(s["events"]) == 3
    kept = [json.loads(line) for line in open(tmp_path / "spool" / f"{RUN}.rejected.jsonl")]
    assert len(kept) == 1
    assert kept[0]["event"]["steps"]["step"] == 5
    assert kept[0]["code"] == "FAILED_PRECONDITION"
    assert "goes backwards" in kept[0]["reason"]


def test_a_save_between_reports_reports_its_step_first(daemon):
    # A loop that reports every 10 steps and saves at step 23 on its way out.
    with Tracker(RUN, server=daemon.address) as t:
        t.job_started(attempt=1, restored_step=0)
        for step in (10, 20):
            t.step(step, step * 1000)
        t.checkpoint_saved(23, tokens=23000)   # the client knows the tokens: the step goes first
        t.checkpoint_saved(26)                 # it does not: the daemon infers them
    s = daemon.status()
    assert int(s["progress"]["step"]) == 26
    assert int(s["progress"]["tokens"]) == 26000
    assert any("checkpoint_saved.step 26 is ahead" in f for f in s.get("flags", [])), s.get("flags")
    assert not any("checkpoint_saved.step 23" in f for f in s.get("flags", [])), s.get("flags")


def test_each_job_continues_the_runs_attempts(daemon):
    # Three jobs of one run, none told its attempt number (a launcher that does not count).
    for job in range(3):
        with Tracker(RUN, server=daemon.address) as t:
            t.job_started(restored_step=job * 10)
            for step in range(job * 10 + 1, job * 10 + 11):
                t.step(step, step * 1000)
            t.interruption("xid79")
        assert t.attempt == job + 1
    s = daemon.status()
    assert s["attempt"] == 3
    assert int(s["progress"]["tokens"]) == 30000
    assert sum(int(i["count"]) for i in s["interruptions"]) == 3


def test_a_launch_under_slurm_joins_the_schedulers_report(daemon, monkeypatch):
    # Inside a Slurm job the launch is named as `flightplan slurm` names it; the scheduler's
    # report of it (dated when Slurm started the job, before the training said so) and the
    # training's are one attempt, at Slurm's time, with the training's restored step.
    import grpc
    from google.protobuf import timestamp_pb2
    from flightplan.v1 import event_pb2, tracker_pb2, tracker_pb2_grpc

    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    monkeypatch.delenv("SLURM_RESTART_COUNT", raising=False)
    with Tracker(RUN, server=daemon.address) as t:
        t.job_started(restored_step=0)
        for step in range(1, 6):
            t.step(step, step * 1000)
    assert t.attempt == 1
    stub = tracker_pb2_grpc.TrackerStub(grpc.insecure_channel(daemon.address))
    info = stub.GetRun(tracker_pb2.GetRunRequest(run=RUN))
    assert [(a.attempt, a.launch) for a in info.attempts] == [(1, "slurm:4242.0")]
    trained = info.attempts[0].started.ToDatetime()
    slurm_start = timestamp_pb2.Timestamp(seconds=info.attempts[0].started.seconds - 30)
    scheduler = event_pb2.Event(run=RUN, id="slurm-4242-0-start", source="slurm", time=slurm_start,
                                job_started=event_pb2.JobStarted(attempt=1, launch="slurm:4242.0"))
    ack = stub.ReportBatch(tracker_pb2.EventBatch(events=[scheduler]))
    assert ack.accepted == 1
    info = stub.GetRun(tracker_pb2.GetRunRequest(run=RUN))
    assert [(a.attempt, a.started.seconds) for a in info.attempts] == [(1, slurm_start.seconds)]
    s = daemon.status()
    assert s["attempt"] == 1
    assert int(s["progress"]["tokens"]) == 5000
    # The thirty seconds before the training spoke are the launch's startup too.
    assert float(s["time_seconds"]["startup"]) + float(s["time_seconds"]["productive"]) >= 30
    assert trained.timestamp() - slurm_start.seconds >= 30


def test_a_batch_over_the_daemons_limit_is_split(tmp_path):
    d = Daemon(tmp_path, free_port(), extra=("--max-batch-events", "7"))
    try:
        d.cli("create", PLAN)
        t = Tracker(RUN, server=d.address, batch_size=100, flush_seconds=5)
        t.job_started(attempt=1)
        for step in range(1, 50):
            t.step(step, step * 10)
        t.close()
        assert t.rejected == 0 and t.dropped == 0
        assert int(d.status()["events"]) == 50
    finally:
        d.stop()


def test_never_raises_whatever_the_daemon_does():
    t = Tracker(RUN, server="127.0.0.1:1", call_timeout_seconds=0.5, flush_seconds=0.1)
    t.job_started(attempt=1)
    for step in range(1, 1000):
        t.step(step, step)
    t.interruption("gpu", detail="x" * 10000)
    t.close(timeout=2)
    assert t.dropped > 0  # no spool: dropped, with a warning in the log, not raised


def test_only_rank_zero_reports(daemon, monkeypatch):
    monkeypatch.setenv("RANK", "3")
    t = Tracker(RUN, server=daemon.address)
    assert not t.enabled
    t.job_started(attempt=1)
    t.close()
    monkeypatch.setenv("RANK", "0")
    with Tracker(RUN, server=daemon.address) as t0:
        t0.job_started(attempt=1)
    assert int(daemon.status()["events"]) == 1


def test_an_uncaught_exception_is_an_unplanned_interruption(daemon):
    with pytest.raises(RuntimeError):
        with Tracker(RUN, server=daemon.address) as t:
            t.job_started(attempt=1)
            t.step(1, 100)
            raise RuntimeError("CUDA error: an illegal memory access")
    s = daemon.status()
    assert s["state"] == "down"
    assert s["interruptions"][0]["cause"] == "software"


def test_token(tmp_path):
    token = tmp_path / "token"
    token.write_text("py-t0ken\n")
    d = Daemon(tmp_path, free_port(), extra=["--token-file", str(token)])
    try:
        d.cli("--token-file", str(token), "create", PLAN)
        refused = Tracker(RUN, server=d.address)
        refused.job_started(attempt=1)
        refused.close()
        assert refused.dropped == 1  # UNAUTHENTICATED: refused, logged, not raised
        with Tracker(RUN, server=d.address, token="py-t0ken") as t:
            t.job_started(attempt=1)
        assert int(d.status()["events"]) == 1
    finally:
        d.stop()


def test_tls(tmp_path):
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["/usr/bin/openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
                    "-out", str(cert), "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"], check=True, capture_output=True)
    d = Daemon(tmp_path, free_port(), extra=["--tls-cert", str(cert), "--tls-key", str(key)])
    try:
        d.cli("--tls-ca", str(cert), "create", PLAN)
        with Tracker(RUN, server=d.address, tls_ca=str(cert)) as t:
            t.job_started(attempt=1)
            t.step(1, 100)
        s = json.loads(d.cli("--tls-ca", str(cert), "status", RUN, "--json").stdout)
        assert int(s["events"]) == 2
    finally:
        d.stop()


def test_a_typoed_run_loses_nothing_every_event_is_kept_as_refused(daemon, tmp_path):
    """Issue 37: the run is RUN; the job names it in capitals. Before, the launch's batch (the
    launch and the steps sent with it) went nowhere: only the later batches were kept."""
    typo = RUN.upper()
    t = Tracker(typo, server=daemon.address, spool_dir=str(tmp_path / "spool"), flush_seconds=0.2)
    t.job_started()
    for step in range(1, 6):
        t.step(step, step * 1000)
    t.flush(timeout=10)
    for step in range(6, 9):
        t.step(step, step * 1000)
    t.checkpoint_saved(8, blocking_seconds=0.5)
    t.close()
    kept = [json.loads(line) for line in open(tmp_path / "spool" / f"{typo}.rejected.jsonl")]
    assert (t.sent, t.rejected, t.dropped) == (0, 10, 0)
    assert len(kept) == 10
    assert [next(k for k in ("job_started", "steps", "checkpoint_saved") if k in r["event"]) for r in kept] == \
        ["job_started"] + ["steps"] * 8 + ["checkpoint_saved"]
    assert all(r["code"] == "NOT_FOUND" and typo in r["reason"] for r in kept)
    assert int(daemon.status()["events"]) == 0


def test_check_run_fails_fast_on_an_unknown_run_naming_the_nearest(daemon):
    from flightplan_client.tracker import UnknownRunError
    with pytest.raises(UnknownRunError) as err:
        Tracker(RUN.upper(), server=daemon.address, check_run=True)
    assert repr(RUN) in str(err.value) and "flightplan create" in str(err.value)
    assert err.value.runs == [RUN]
    with Tracker(RUN, server=daemon.address, check_run=True) as t:  # the right name passes
        t.job_started(attempt=1)
    assert int(daemon.status()["events"]) == 1


def test_check_run_does_not_fail_when_the_daemon_is_away(tmp_path):
    t = Tracker(RUN, server=f"127.0.0.1:{free_port()}", spool_dir=str(tmp_path), check_run=True,
                call_timeout_seconds=0.5)
    t.close(timeout=1)


def test_the_daemons_flags_reach_the_clients_log(daemon, caplog):
    """Per-step tokens instead of cumulative ones: flagged by the daemon, naming the step, and
    logged by the client."""
    with caplog.at_level("WARNING", logger="flightplan_client"):
        with Tracker(RUN, server=daemon.address) as t:
            t.job_started(attempt=1)
            for step in range(1, 4):
                t.step(step, 4194304)
    assert len(t.flags) == 1 and "from step 1 to step 2" in t.flags[0], t.flags
    assert any("did not grow from step 1 to step 2" in r.getMessage() for r in caplog.records)
    assert any("did not grow" in f for f in daemon.status()["flags"])
