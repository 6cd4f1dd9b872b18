"""A real flightpland on loopback for the client's tests."""

import json
import os
import socket
import subprocess
import time

import pytest

DAEMON = os.environ["FLIGHTPLAN_DAEMON"]
CLI = os.environ["FLIGHTPLAN_CLI"]
PLAN = os.path.join(os.environ["FLIGHTPLAN_EXAMPLES"], "dense-70b-10t.yaml")
RUN = "dense-70b-10t"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Daemon:
    def __init__(self, tmp_path, port, extra=()):
        self.address = f"127.0.0.1:{port}"
        self.log = open(tmp_path / f"daemon-{port}.log", "w+")
        self.proc = subprocess.Popen([DAEMON, "--db", str(tmp_path / "f.db"), "--listen", self.address,
                                      "--metrics", "", *extra], stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            self.log.seek(0)
            if "serving gRPC" in self.log.read():
                break
            time.sleep(0.05)
        else:
            raise RuntimeError("flightpland did not start")

    def cli(self, *args, check=True):
        return subprocess.run([CLI, "--server", self.address, *args], capture_output=True, text=True,
                              check=check)

    def status(self, run=RUN):
        return json.loads(self.cli("status", run, "--json").stdout)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=20)


@pytest.fixture
def daemon(tmp_path):
    d = Daemon(tmp_path, free_port())
    d.cli("create", PLAN)
    yield d
    d.stop()


def wait_for(check, seconds=20):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.1)
    return False


