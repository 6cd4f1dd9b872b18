#!/usr/bin/python3
"""Records the fixtures of slurm_follow_test from a real Slurm: Debian 12's Slurm 22.05 on a
one-node cluster of this machine (cluster.py). Each stage of one job's life is saved as squeue
--json and sinfo --json printed them, and the job completion log (jobcomp/filetxt) at the end:

  1-running        submitted with --requeue, running (restart 0)
  2-requeued       `scontrol requeue` by an operator: pending, restart 1
  3-running        released (StartTime=now), running again
  4-node-down      its node set DOWN with a reason: requeued by Slurm, pending, restart 2
  5-running        the node resumed, the job released: running (restart 2)
  6-timeout        its time limit set to 1 minute: TIMEOUT once a minute has run

And a job array of two tasks run one at a time (--array=1-2%1, each `sleep 4`, as BLOOM's
chain of 100-hour jobs ran), every change of `squeue --json --states=all --name=chain`:
array-1.json (the array waits) to array-5.json (both tasks completed).

Usage: record_fixtures.py [DIR] (default: tests/slurm/fixtures). About two minutes (the time
limit is Slurm's whole minute). The test reads what this wrote; rerun it to record anew and the
test's expectations follow the files (they are read from them, not typed in).
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster import Cluster  # noqa: E402

out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
os.makedirs(out_dir, exist_ok=True)


def save(c, stage):
    for tool in ("squeue", "sinfo"):
        text = c.run(tool, "--json", *(["--states=all"] if tool == "squeue" else []))
        json.loads(text)  # it is JSON
        with open(os.path.join(out_dir, f"{stage}-{tool}.json"), "w") as f:
            f.write(text)
    print(f"recorded {stage}", flush=True)


with Cluster() as c:
    job = c.sbatch("--requeue", "--job-name=fixture", "-o", c.path("out-%j.txt"), "--wrap", "sleep 600")
    c.wait_job(job, "RUNNING", 0)
    time.sleep(2)  # so that each run lasts a few seconds, and its start and end differ
    save(c, "1-running")
    c.scontrol("requeue", job)
    c.wait_job(job, "PENDING", 1)
    save(c, "2-requeued")
    time.sleep(1)
    c.release(job)
    c.wait_job(job, "RUNNING", 1)
    time.sleep(2)
    save(c, "3-running")
    c.scontrol("update", f"nodename={c.node}", "state=down", "reason=gpu_xid_79_on_gpu3")
    c.wait_job(job, "PENDING", 2)
    save(c, "4-node-down")
    time.sleep(1)
    c.scontrol("update", f"nodename={c.node}", "state=resume")
    c.wait(f"node {c.node} to return", lambda: c.node_state() == "idle")
    c.release(job)
    c.wait_job(job, "RUNNING", 2)
    time.sleep(2)
    save(c, "5-running")
    c.scontrol("update", f"jobid={job}", "TimeLimit=1")
    c.wait("the time limit", lambda: (c.job(job) or {}).get("job_state") == "TIMEOUT", timeout=150)
    save(c, "6-timeout")
    with open(os.path.join(out_dir, "jobcomp.log"), "w") as f:
        with open(c.jobcomp) as src:
            f.write(src.read())
    with open(os.path.join(out_dir, "node"), "w") as f:
        f.write(c.node + "\n")
with Cluster() as c:
    c.sbatch("--array=1-2%1", "--job-name=chain", "-o", c.path("out-%A_%a.txt"), "--wrap", "sleep 4")
    last, n = None, 0
    end = time.time() + 60
    while time.time() < end:
        text = c.run("squeue", "--json", "--states=all", "--name=chain")
        jobs = json.loads(text)["jobs"]
        shape = [(j["job_id"], j["job_state"]) for j in jobs]
        if shape != last:
            n += 1
            with open(os.path.join(out_dir, f"array-{n}.json"), "w") as f:
                f.write(text)
            print(f"recorded array-{n}: {shape}", flush=True)
            last = shape
        if sum(1 for j in jobs if j["job_state"] == "COMPLETED") == 2:
            break
        time.sleep(0.2)
print(f"fixtures in {out_dir}")
