#!/usr/bin/python3
"""Records the fixtures of slurm_follow_test from a real Slurm: Debian 12's Slurm 22.05 on a
one-node cluster of this machine (cluster.py), with accounting (slurmdbd on MariaDB). Each stage
of one job's life is saved as squeue --json and sinfo --json printed them, and at the end the
job completion log (jobcomp/filetxt), accounting's record of its runs (sacct.txt: sacct -D -P
-X, as `flightplan slurm` asks for it) and the node's events (node-events.txt: sacctmgr show
event):

  1-running        submitted with --requeue, running (restart 0)
  2-requeued       `scontrol requeue` by an operator: pending, restart 1
  3-running        released (StartTime=now), running again
  4-node-down      its node set DOWN with a reason: requeued by Slurm, pending, restart 2
  5-running        the node resumed, the job released: running (restart 2)
  6-timeout        its time limit set to 1 minute: TIMEOUT once a minute has run

And a job array of two tasks run one at a time (--array=1-2%1, each `sleep 4`, as BLOOM's
chain of 100-hour jobs ran), every change of `squeue --json --states=all --name=chain`:
array-1.json (the array waits) to array-5.json (both tasks completed).

And, on a cluster that keeps accounting only (no completion log), the other ends a job meets:
  preempted.json   `pretrain` (--requeue) preempted by a job of the higher-tier partition
                   (squeue --json --name=pretrain: pending again, restart 1)
  chain-1.json     released and running again; `fails` (exit 3), then `killed` (signal 9),
                   queued behind it with --dependency=afterany, both of the name pretrain
  chain-2.json     `pretrain` cancelled by an operator (scancel); the chain run and ended
  accounting.txt   sacct -D -P -X of the four jobs at the end

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


def write(name, text):
    with open(os.path.join(out_dir, name), "w") as f:
        f.write(text)
    print(f"recorded {name}", flush=True)


def squeue(c, name):
    text = c.run("squeue", "--json", "--states=all", f"--name={name}")
    json.loads(text)
    return text


with Cluster(accounting=True) as c:
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
    time.sleep(1)  # slurmctld sends the run's end to slurmdbd
    write("sacct.txt", c.sacct(job))
    write("node-events.txt", c.node_events())
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
with Cluster(accounting=True, jobcomp=False) as c:
    job = c.sbatch("--requeue", "--job-name=pretrain", "-o", c.path("out-%j.txt"), "--wrap", "sleep 600")
    c.wait_job(job, "RUNNING", 0)
    time.sleep(2)
    c.sbatch("--partition=urgent", "--job-name=urgent", "-o", c.path("out-%j.txt"), "--wrap", "sleep 2")
    c.wait_job(job, "PENDING", 1)
    write("preempted.json", squeue(c, "pretrain"))
    c.wait("the urgent job to end", lambda: not c.run("squeue", "-h", "--states=RUNNING").strip())
    c.release(job)
    c.wait_job(job, "RUNNING", 1)
    fails = c.sbatch("--job-name=pretrain", f"--dependency=afterany:{job}", "-o", c.path("out-%j.txt"),
                     "--wrap", "sleep 2; exit 3")
    killed = c.sbatch("--job-name=pretrain", f"--dependency=afterany:{fails}", "-o", c.path("out-%j.txt"),
                      "--wrap", "sleep 2; kill -9 $$")
    time.sleep(2)
    write("chain-1.json", squeue(c, "pretrain"))
    c.run("scancel", str(job))
    c.wait_job(killed, "FAILED")
    time.sleep(1)
    write("chain-2.json", squeue(c, "pretrain"))
    write("accounting.txt", c.sacct(job, fails, killed))
print(f"fixtures in {out_dir}")
