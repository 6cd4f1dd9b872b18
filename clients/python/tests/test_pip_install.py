"""`pip install ./clients/python` into a fresh venv (made with --system-site-packages, so
Debian's grpcio and protobuf serve), offline, and the installed client against a real
flightpland: no PYTHONPATH, no build tree."""

import os
import subprocess
import sys
import textwrap

from daemon_helpers import RUN, daemon  # noqa: F401

CLIENT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_pip_install_gives_an_importable_client_with_its_stubs(daemon, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", str(venv)], check=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PIP_NO_INDEX"] = "1"  # offline: nothing may come from an index
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    install = subprocess.run([str(venv / "bin" / "pip"), "install", CLIENT_DIR], env=env,
                             capture_output=True, text=True, cwd=tmp_path)
    assert install.returncode == 0, install.stdout + install.stderr
    assert "Successfully installed flightplan-client" in install.stdout
    script = textwrap.dedent(f"""
        import flightplan_client, flightplan.v1.tracker_pb2_grpc
        from flightplan_client import Tracker
        assert "site-packages" in flightplan_client.__file__, flightplan_client.__file__
        with Tracker({RUN!r}, server={daemon.address!r}) as t:
            t.job_started(attempt=1, restored_step=0)
            t.step(10, 12345)
        print("sent")
    """)
    run = subprocess.run([str(venv / "bin" / "python"), "-c", script], env=env, capture_output=True,
                         text=True, cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    s = daemon.status()
    assert int(s["progress"]["tokens"]) == 12345
    # Nothing was written into the source tree by the build.
    stray = [n for n in os.listdir(CLIENT_DIR) if n.endswith((".egg-info", ".dist-info")) or n in ("build", "dist")]
    assert not stray, stray
