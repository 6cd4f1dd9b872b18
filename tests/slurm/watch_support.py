"""What the real-Slurm tests of `flightplan slurm` share (slurm_watch_test.py,
slurm_accounting_test.py): the real flightpland on the event clock with a run of the flagship
plan, the CLI against it, the watcher as a process logging to a file, the tiny PyTorch trainer's
command line, and reading back what the daemon holds.
"""
import datetime
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from e2e_support import start_daemon, stop, wait_for  # noqa: E402


def utc(s):
    """Slurm's local time (the test cluster runs in UTC) as Unix seconds."""
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc).timestamp()


def rfc3339(s):
    return datetime.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


def check(cond, what):
    if not cond:
        raise SystemExit(f"FAIL: {what}")
    print(f"ok: {what}", flush=True)


class Tracked:
    """flightpland (--clock events) under `work`, with the run `run` of the flagship plan."""

    def __init__(self, daemon_bin, cli_bin, repo, work, run, cluster):
        self.work, self.run, self.cluster, self.repo = work, run, cluster, repo
        self.daemon, port, _ = start_daemon(daemon_bin, work, ["--clock", "events"])
        self.server = f"127.0.0.1:{port}"
        self.cli = [cli_bin, "--server", self.server]
        self.build = os.path.dirname(os.path.dirname(os.path.abspath(cli_bin)))
        self.checkpoints = os.path.join(work, "ckpt")
        self.watchers = []
        subprocess.run(self.cli + ["create", f"{repo}/deploy/examples/dense-70b-10t.yaml", "--run", run], check=True,
                       stdout=subprocess.DEVNULL)

    def stop(self):
        for w in self.watchers:
            if w.poll() is None:
                w.kill()
        stop([self.daemon])

    def watcher(self, n, *select):
        """`flightplan slurm SELECT --run RUN` every half second, its output in watcherN.log."""
        log = open(self.log_path(n), "w")
        p = subprocess.Popen(self.cli + ["slurm", *select, "--run", self.run, "--interval", "0.5"], stdout=log,
                             stderr=subprocess.STDOUT, env=self.cluster.env)
        self.watchers.append(p)
        return p

    def log_path(self, n):
        return os.path.join(self.work, f"watcher{n}.log")

    def log(self, n):
        with open(self.log_path(n)) as f:
            return f.read()

    def slurm_cli(self, *args):
        return subprocess.run(self.cli + ["slurm", *args], capture_output=True, text=True, env=self.cluster.env)

    def status(self):
        out = subprocess.run(self.cli + ["status", self.run, "--json", "--no-wait"], check=True, capture_output=True,
                             text=True).stdout
        return json.loads(out)

    def run_info(self):
        out = subprocess.run(self.cli + ["plans", self.run, "--json"], check=True, capture_output=True,
                             text=True).stdout
        return json.loads(out)

    def attempts(self):
        return [(a["attempt"], rfc3339(a["started"])) for a in self.run_info()["attempts"]]

    def train_command(self):
        """The tiny PyTorch trainer (Debian's python3-torch) reporting through the client."""
        return (f"PYTHONPATH={self.build}/python exec /usr/bin/python3 {self.repo}/clients/python/examples/"
                f"train_tiny.py --run {self.run} --server {self.server} --checkpoint-dir {self.checkpoints} "
                f"--steps 1000000 --save-every 10 --step-sleep 0.1")

    def trained(self, attempt):
        """Waits until the daemon has the attempt, and the trainer's steps in it."""
        def done():
            st = self.status()
            return st["attempt"] == attempt and st["state"] == "running" and int(st["progress"]["tokens"]) > 0
        wait_for(f"attempt {attempt} training in the daemon", done, timeout=60)

    def trainer_rejected_nothing(self):
        rejected = os.path.join(self.checkpoints, "spool", f"{self.run}.rejected.jsonl")
        return not os.path.exists(rejected) or not open(rejected).read().strip()

    def stored(self, *selector):
        """The stored events a dry-run retraction of `selector` lists (it changes nothing)."""
        out = subprocess.run(self.cli + ["retract", self.run, *selector, "--dry-run", "--json"], check=True,
                             capture_output=True, text=True).stdout
        return json.loads(out[out.index("{"):out.rindex("}") + 1])["events"]

    def interruption_detail(self, event_id):
        return self.stored("--id", event_id)[0]["event"]["interruption"]["detail"]
