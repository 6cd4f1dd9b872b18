#!/usr/bin/python3
"""`flightplan slurm` against a real Slurm: Debian 12's slurmctld, slurmd and munge on a
one-node cluster this test starts (cluster.py), the real flightpland, and a real job: the tiny
PyTorch trainer (clients/python/examples/train_tiny.py, Debian's python3-torch) reporting
through the Python client, which names its launches from the job's environment as the watcher
does. Its SIGTERM hook reports each stop as a preemption; the watcher says what it was.

The job (--requeue) lives through what a pre-training job meets, each done the way an operator
or Slurm itself does it:
  1. it runs;
  2. an operator requeues it (`scontrol requeue`);
  3. it runs again; its node is set DOWN with a reason, and Slurm requeues it (NODE_FAIL);
     the watcher is killed (SIGKILL) while the job waits, and started again;
  4. the node is resumed and the job runs a third time, until a time limit of one minute.
The daemon (on the events clock, so its "now" is the run's latest event) must then hold what
Slurm's own record says: three attempts (the training's and the watcher's report of each launch
joined) at the start times squeue showed, to the second; interruptions operator (planned), node
(naming the node and its reason) and time_limit, each joined with the trainer's own report of
it, at the times Slurm ended each run (the completion log's EndTime, whole seconds: within one);
down time equal to the waits between the runs and elapsed time to the first start to the last
end, within a second; no event rejected by the daemon, from the watchers or the trainer; and
the restarted watcher sending only what the daemon lacked.

Bounded: about two and a half minutes (the time limit is Slurm's whole minute); gives up after
280 s, and stops every daemon it started.
Usage: slurm_watch_test.py FLIGHTPLAND FLIGHTPLAN REPO_DIR
"""
import os
import shutil
import signal
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
sys.path.insert(0, os.path.join(here, ".."))
from cluster import Cluster  # noqa: E402
from e2e_support import set_deadline, wait_for  # noqa: E402
from watch_support import Tracked, check, utc  # noqa: E402

set_deadline(280)
daemon_bin, cli_bin, repo = sys.argv[1:4]
work = tempfile.mkdtemp(prefix="flightplan-slurm-test-")
RUN = "slurm-run"

tracked = None
try:
    with Cluster() as c:
        tracked = t = Tracked(daemon_bin, cli_bin, repo, work, RUN, c)
        # Bad usage and bad references: named, the right exit status, nothing sent.
        r = t.slurm_cli("--run", RUN)
        check(r.returncode == 2 and "--job ID or --name NAME" in r.stderr, f"no job named: exit 2 ({r.stderr.strip()})")
        r = t.slurm_cli("--run", RUN, "--job", "12abc")
        check(r.returncode == 2 and "--job '12abc' is not a Slurm job id" in r.stderr,
              f"a job id that is not one: exit 2 ({r.stderr.strip()})")
        r = t.slurm_cli("--run", RUN, "--job", "1", "--records", "slurmdb")
        check(r.returncode != 0 and "--records" in r.stderr, f"an unknown --records: refused ({r.stderr.strip()})")
        r = t.slurm_cli("--run", "no-such-run", "--job", "1")
        check(r.returncode == 1 and "NOT_FOUND" in r.stderr, f"an unknown run: exit 1 ({r.stderr.strip()})")
        r = t.slurm_cli("--run", RUN, "--job", "99999", "--once")
        check(r.returncode == 1 and "no job 99999" in r.stderr, f"a job Slurm does not have: exit 1 ({r.stderr.strip()})")
        check(t.status()["events"] in ("0", 0), "nothing was sent")
        job = c.sbatch("--requeue", "--job-name=pretrain", "-o", c.path("out-%j.txt"), "--wrap", t.train_command())
        first = t.watcher(1, "--job", str(job))

        starts = [c.wait_job(job, "RUNNING", 0)["start_time"]]
        t.trained(1)
        time.sleep(2)
        c.scontrol("requeue", job)
        c.wait_job(job, "PENDING", 1)
        time.sleep(2)
        c.release(job)
        starts.append(c.wait_job(job, "RUNNING", 1)["start_time"])
        t.trained(2)
        time.sleep(2)
        c.scontrol("update", f"nodename={c.node}", "state=down", "reason=gpu_xid_79")
        c.wait_job(job, "PENDING", 2)
        wait_for("the node's failure in the daemon", lambda: t.status()["state"] == "down")
        # Without accounting, the node's reason lasts in Slurm only while the node is down: the
        # first watcher reports it before it dies (the restarted one could not).
        wait_for("the first watcher to report the node's failure", lambda: "interruption node" in t.log(1))
        first.send_signal(signal.SIGKILL)  # the watcher dies hard while the job waits
        first.wait()
        time.sleep(2)
        c.scontrol("update", f"nodename={c.node}", "state=resume")
        c.wait("the node to return", lambda: c.node_state() == "idle")
        c.release(job)
        starts.append(c.wait_job(job, "RUNNING", 2)["start_time"])
        second = t.watcher(2, "--job", str(job))  # started again: sends what the daemon lacks, and goes on
        t.trained(3)
        c.scontrol("update", f"jobid={job}", "TimeLimit=1")
        c.wait("the time limit", lambda: (c.job(job) or {}).get("job_state") == "TIMEOUT", timeout=150)
        second.wait(timeout=30)  # it exits once the job has ended
        check(second.returncode == 0, f"the restarted watcher exits 0 (exit {second.returncode})")
        summary = t.log(2)
        print(summary)
        check(" 0 rejected" in summary, "no event rejected")
        check(t.trainer_rejected_nothing(), "no event of the trainer rejected")
        check("rejected:" not in t.log(1), "no event of the first watcher rejected")

        # Slurm's own record of the job's three runs.
        records = c.jobcomp_records()
        check([r["JobState"] for r in records] == ["PENDING", "NODE_FAIL", "TIMEOUT"],
              f"Slurm's completion log: {[r['JobState'] for r in records]}")
        ends = [utc(r["EndTime"]) for r in records]

        s = t.status()
        attempts = t.attempts()
        check(attempts == [(1, starts[0]), (2, starts[1]), (3, starts[2])],
              f"three attempts at squeue's start times: {attempts} vs {starts}")
        causes = {(i["cause"], i["planned"]): i["count"] for i in s["interruptions"]}
        check(causes == {("operator", True): 1, ("node", False): 1, ("time_limit", False): 1},
              f"interruptions by cause: {causes}")
        ts = s["time_seconds"]
        # Slurm's times are whole seconds; the trainer's last report before each stop may be
        # up to a second past the record's end (the stop is placed there).
        check(abs(ts["down_planned"] - (starts[1] - ends[0])) < 1,
              f"down_planned {ts['down_planned']:.3f} s = the wait after the requeue {starts[1] - ends[0]} s")
        check(abs(ts["down_unplanned"] - (starts[2] - ends[1])) < 1,
              f"down_unplanned {ts['down_unplanned']:.3f} s = the wait after the node failure {starts[2] - ends[1]} s")
        check(abs(ts["elapsed"] - (ends[2] - starts[0])) < 1,
              f"elapsed {ts['elapsed']:.3f} s = first start to last end {ends[2] - starts[0]} s")
        ran = ts["startup"] + ts["productive"] + ts["checkpoint"] + ts["lost"] + ts["stalled"]
        check(abs(ran - sum(e - b for b, e in zip(starts, ends))) < 3,
              f"the three runs' {sum(e - b for b, e in zip(starts, ends))} s are work, saves, startup or loss "
              f"({ran:.3f} s)")
        check(ts["lost"] > 0, f"each relaunch resumed from its checkpoint, and lost the steps after it ({ts['lost']:.3f} s)")
        check(s["state"] == "down", f"the run is down after its time limit ({s['state']})")
        # The node's failure names the node and the reason it was set down with.
        detail = t.interruption_detail(f"slurm-{job}-1-end")
        check(c.node in detail and "gpu_xid_79" in detail, f"the node's failure names the node and its reason: {detail}")
        # Every stored event: the trainer's own stops (its SIGTERM hook's "preemption") are
        # there beside the watcher's, and joined with them (three interruptions above, not more).
        stored = t.stored("--after", "2000-01-01")
        own = [e for e in stored if "interruption" in e["event"] and not e["event"].get("source")]
        launches = [e for e in stored if "job_started" in e["event"] and not e["event"].get("source")]
        check(len(launches) == 3 and len(own) >= 1,
              f"the trainer reported its {len(launches)} launches and {len(own)} of its stops itself, "
              f"each joined with the watcher's")
        # Which nodes each launch ran on (issue 39): the watcher's from the job's NodeList, the
        # trainer's from SLURM_JOB_NODELIST, both expanded; the node's failure names the node.
        watched = [e for e in stored if "job_started" in e["event"] and e["event"].get("source") == "slurm"]
        check(len(watched) == 3 and all(e["event"]["job_started"].get("nodes") == [c.node] for e in watched),
              f"the watcher's launches name their node {c.node}: "
              f"{[e['event']['job_started'].get('nodes') for e in watched]}")
        check(all(e["event"]["job_started"].get("nodes") == [c.node] for e in launches),
              f"the trainer's launches name their node {c.node}: "
              f"{[e['event']['job_started'].get('nodes') for e in launches]}")
        failed = t.stored("--id", f"slurm-{job}-1-end")[0]["event"]["interruption"]
        check(failed.get("nodes") == [c.node], f"the node's failure names {c.node} in its nodes: {failed}")
        print("PASS")
finally:
    if tracked:
        tracked.stop()
    if os.environ.get("KEEP_SLURM_DIR") != "1":
        shutil.rmtree(work, ignore_errors=True)
