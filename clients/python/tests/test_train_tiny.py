"""A real PyTorch training loop reporting through the client, killed and restarted, with
the daemon killed and restarted too: the daemon's count equals the trainer's own."""

import os
import re
import signal
import subprocess
import sys
import time

import pytest

from daemon_helpers import PLAN, Daemon, free_port, wait_for

torch = pytest.importorskip("torch", reason="python3-torch (deploy/install-deps.sh installs it)")

TRAIN = os.path.join(os.path.dirname(__file__), "..", "examples", "train_tiny.py")
RUN = "tiny"


def trainer(tmp_path, server, name, steps=60):
    log = open(tmp_path / f"{name}.log", "w+")
    proc = subprocess.Popen(
        [sys.executable, TRAIN, "--run", RUN, "--server", server, "--checkpoint-dir", str(tmp_path / "ckpt"),
         "--steps", str(steps), "--save-every", "10", "--step-sleep", "0.03"],
        stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ))
    return proc, log


def last_step(log):
    log.seek(0)
    steps = re.findall(r"^step (\d+) ", log.read(), re.M)
    return int(steps[-1]) if steps else 0


def test_kill_restart_trainer_and_daemon(tmp_path):
    port = free_port()
    d = Daemon(tmp_path, port)
    try:
        d.cli("create", PLAN, "--run", RUN)
        # First launch: killed without warning mid-way (after step 25, last save at 20).
        first, log1 = trainer(tmp_path, d.address, "first")
        assert wait_for(lambda: last_step(log1) >= 25, 120), log1.read()
        first.send_signal(signal.SIGKILL)
        first.wait()
        killed_at = last_step(log1)
        # Second launch resumes from its checkpoint; meanwhile the daemon dies and returns.
        second, log2 = trainer(tmp_path, d.address, "second")
        assert wait_for(lambda: last_step(log2) >= 35, 120), log2.read()
        d.proc.send_signal(signal.SIGKILL)
        d.proc.wait()
        time.sleep(1)
        d = Daemon(tmp_path, port)
        assert second.wait(timeout=180) == 0
        log2.seek(0)
        text = log2.read()
        assert "restored step 20" in text
        tokens = int(re.search(r"done tokens (\d+)", text).group(1))
        # The client delivers what it spooled while the daemon was away.
        assert wait_for(lambda: int(d.status(RUN).get("progress", {}).get("tokens", 0)) == tokens, 60)
        s = d.status(RUN)
        assert s["state"] == "finished"
        assert int(s["progress"]["tokens"]) == tokens == 60 * 8 * 32
        unplanned = [i for i in s["interruptions"] if not i.get("planned")]
        assert sum(i["count"] for i in unplanned) == 1  # the SIGKILL, implied by the relaunch
        assert unplanned[0]["cause"] == "unknown"
        # Steps 21..killed_at were rolled back: their time is lost.
        assert killed_at > 20
        assert s["time_seconds"]["lost"] > 0
    finally:
        d.stop()
