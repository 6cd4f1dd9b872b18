#!/usr/bin/python3
"""`flightplan slurm` on a real Slurm that keeps accounting (slurmdbd on MariaDB) and no job
completion log, as many sites run it: Debian 12's slurmctld, slurmd, slurmdbd, munge and
MariaDB on a one-node cluster this test starts (cluster.py), the real flightpland, the tiny
PyTorch trainer reporting through the Python client, and the watcher following the jobs by
name (`--name pretrain`), a chain of jobs of one name.

What the jobs meet, each done as an operator or Slurm itself does it:
  1. `pretrain` (--requeue, the trainer) runs;
  2. a job of the higher-tier partition preempts it (PreemptMode=REQUEUE): back to the queue;
  3. it runs again; the watcher is killed (SIGKILL); the node is set DOWN with a reason, Slurm
     requeues the job (NODE_FAIL), the node is resumed, the job runs a third time, and only
     then is the watcher started again: it was away for the whole failure, and sinfo no
     longer has the reason;
  4. a second job of the name waits on the first (--dependency=afterany); an operator cancels
     the first (scancel), and the second runs and exits with code 3.
The daemon (on the events clock) must then hold what accounting says (sacct -D: one row per
run): four attempts at sacct's start times, to the second; interruptions preemption, node
(naming the node and the reason it was set down with, from sacctmgr's node events), operator
(planned) and exit_code_3, at sacct's end times; down time equal to the waits between the runs
and elapsed time from the first start to the last end, within a second; the restarted watcher
exiting 0 once both jobs have ended, and no event rejected.

Bounded: about a minute and a half; gives up after 240 s, and stops every daemon it started.
Usage: slurm_accounting_test.py FLIGHTPLAND FLIGHTPLAN REPO_DIR
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

set_deadline(240)
daemon_bin, cli_bin, repo = sys.argv[1:4]
work = tempfile.mkdtemp(prefix="flightplan-slurm-acct-test-")
RUN = "slurm-acct-run"

tracked = None
try:
    with Cluster(accounting=True, jobcomp=False) as c:
        tracked = t = Tracked(daemon_bin, cli_bin, repo, work, RUN, c)
        job = c.sbatch("--requeue", "--job-name=pretrain", "-o", c.path("out-%j.txt"), "--wrap", t.train_command())
        first = t.watcher(1, "--name", "pretrain")
        c.wait_job(job, "RUNNING", 0)
        t.trained(1)
        time.sleep(2)
        # 2. Preempted by a job of the higher-tier partition.
        c.sbatch("--partition=urgent", "--job-name=urgent", "-o", c.path("out-%j.txt"), "--wrap", "sleep 2")
        c.wait_job(job, "PENDING", 1)
        c.wait("the urgent job to end", lambda: not c.run("squeue", "-h", "--states=RUNNING").strip())
        c.release(job)
        c.wait_job(job, "RUNNING", 1)
        t.trained(2)
        wait_for("the watcher to report the preemption", lambda: "interruption preemption" in t.log(1))
        # 3. The watcher dies; the node fails and comes back while it is away.
        first.send_signal(signal.SIGKILL)
        first.wait()
        time.sleep(1)
        c.scontrol("update", f"nodename={c.node}", "state=down", "reason=gpu_xid_79")
        c.wait_job(job, "PENDING", 2)
        time.sleep(2)
        c.scontrol("update", f"nodename={c.node}", "state=resume")
        c.wait("the node to return", lambda: c.node_state() == "idle")
        c.release(job)
        c.wait_job(job, "RUNNING", 2)
        t.trained(3)
        check("gpu_xid_79" not in c.run("sinfo", "-R", "-h"), "the node's reason is gone from sinfo")
        second = t.watcher(2, "--name", "pretrain")
        # 4. A second job of the name waits on the first; the first is cancelled.
        fails = c.sbatch("--job-name=pretrain", f"--dependency=afterany:{job}", "-o", c.path("out-%j.txt"), "--wrap",
                         "sleep 2; exit 3")
        wait_for("the restarted watcher to see the chain", lambda: os.path.getsize(t.log_path(2)) > 0)
        time.sleep(2)
        c.run("scancel", str(job))
        second.wait(timeout=60)  # it exits once both jobs have ended
        summary = t.log(2)
        print(summary)
        check(second.returncode == 0, f"the restarted watcher exits 0 (exit {second.returncode})")
        check("ended runs from accounting (sacct)" in summary, "the watcher reads accounting")
        check(" 0 rejected" in summary, "no event rejected")
        check("rejected:" not in t.log(1), "no event of the first watcher rejected")
        check(t.trainer_rejected_nothing(), "no event of the trainer rejected")

        # Accounting's own record: one row per run.
        time.sleep(1)
        rows = c.sacct_rows(job, fails)
        check([r["State"].split()[0] for r in rows] == ["PREEMPTED", "NODE_FAIL", "CANCELLED", "FAILED"] and
              rows[3]["ExitCode"] == "3:0", f"sacct: {[(r['State'], r['ExitCode']) for r in rows]}")
        starts = [utc(r["Start"]) for r in rows]
        ends = [utc(r["End"]) for r in rows]

        s = t.status()
        attempts = t.attempts()
        # Slurm's times are whole seconds: a launch in the second of the training's last report
        # (here the chain's job, started as the cancelled one stopped) starts at that report.
        check([a for a, _ in attempts] == [1, 2, 3, 4] and
              all(0 <= a - s < 1 for (_, a), s in zip(attempts, starts)),
              f"four attempts at sacct's start times, within its second: {attempts} vs {starts}")
        causes = {(i["cause"], i["planned"]): i["count"] for i in s["interruptions"]}
        check(causes == {("preemption", False): 1, ("node", False): 1, ("operator", True): 1,
                         ("exit_code_3", False): 1}, f"interruptions by cause: {causes}")
        ts = s["time_seconds"]
        waits_unplanned = (starts[1] - ends[0]) + (starts[2] - ends[1])
        # Each wait ends at a whole second and starts at the training's own stop, up to a second
        # past Slurm's: within a second each.
        check(abs(ts["down_unplanned"] - waits_unplanned) < 2,
              f"down_unplanned {ts['down_unplanned']:.3f} s = the waits after the preemption and the node's "
              f"failure {waits_unplanned} s")
        check(abs(ts["down_planned"] - (starts[3] - ends[2])) < 1,
              f"down_planned {ts['down_planned']:.3f} s = the wait after the cancel {starts[3] - ends[2]} s")
        check(abs(ts["elapsed"] - (ends[3] - starts[0])) < 1,
              f"elapsed {ts['elapsed']:.3f} s = first start to last end {ends[3] - starts[0]} s")
        # The node's failure, reported by the watcher that was away for all of it.
        detail = t.interruption_detail(f"slurm-{job}-1-end")
        check(c.node in detail and "gpu_xid_79" in detail, f"the node's failure names the node and its reason: {detail}")
        check("interruption node" in summary and "gpu_xid_79" in summary,
              "the restarted watcher sent the node's failure, with its reason")
        print("PASS")
finally:
    if tracked:
        tracked.stop()
    if os.environ.get("KEEP_SLURM_DIR") != "1":
        shutil.rmtree(work, ignore_errors=True)
