"""Which nodes a launch ran on (issue 39): Slurm's hostlist expanded as Slurm expands it
(checked against `scontrol show hostnames`), a launch under Slurm naming its nodes from
SLURM_JOB_NODELIST, a stop naming its node, and torch.distributed's hostnames in rank order."""

import json
import shutil
import socket
import subprocess

import pytest

from flightplan_client import Tracker, expand_hostlist, slurm_nodes, torch_nodes

from daemon_helpers import RUN, daemon, free_port  # noqa: F401

CASES = {
    "gpu-node-[001-004,009]": ["gpu-node-001", "gpu-node-002", "gpu-node-003", "gpu-node-004", "gpu-node-009"],
    "a[1-2]b[3-4]": ["a1b3", "a1b4", "a2b3", "a2b4"],
    "n1,n[3-4] x[08-11]": ["n1", "n3", "n4", "x08", "x09", "x10", "x11"],
    "rack[1-2]-n[01-02]": ["rack1-n01", "rack1-n02", "rack2-n01", "rack2-n02"],
    "a[9-11]": ["a9", "a10", "a11"],
    "x[1-2,1]": ["x1", "x2", "x1"],
    "node7": ["node7"],
}
REFUSED = ["node[1-3]ib", "node[3-1]", "node[a-b]", "node[]", "n[1-100000000]"]


def scontrol(expression, tmp_path):
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=hostlist\nSlurmctldHost=localhost\nNodeName=localhost CPUs=1\n"
                    "PartitionName=p Nodes=localhost\n")
    out = subprocess.run(["scontrol", "show", "hostnames", expression], capture_output=True, text=True,
                         env={"SLURM_CONF": str(conf), "PATH": "/usr/bin:/bin"})
    text = out.stdout + out.stderr
    if "Invalid hostlist" in text or "error:" in text:
        return None
    return out.stdout.split()


def test_expands_as_slurm_does(tmp_path):
    assert shutil.which("scontrol"), "scontrol (slurm-client) is missing: deploy/install-deps.sh installs it"
    for expression, hosts in CASES.items():
        assert expand_hostlist(expression) == hosts
        assert scontrol(expression, tmp_path) == hosts, expression
    for expression in REFUSED:
        with pytest.raises(ValueError, match=r"hostlist '"):
            expand_hostlist(expression)
        assert scontrol(expression, tmp_path) is None, f"scontrol accepts {expression}"
    assert expand_hostlist("") == []
    assert slurm_nodes({"SLURM_JOB_NODELIST": "g[1-2]"}) == ["g1", "g2"]
    assert slurm_nodes({"SLURM_NODELIST": "g3"}) == ["g3"]
    assert slurm_nodes({"SLURM_JOB_NODELIST": "g[2-1]"}) == []  # unreadable: not known, never a wrong list
    assert slurm_nodes({}) == []


def stored(d):
    out = d.cli("retract", RUN, "--after", "2000-01-01", "--dry-run", "--json").stdout
    return [e["event"] for e in json.loads(out[out.index("{"):out.rindex("}") + 1])["events"]]


def test_a_launch_under_slurm_names_its_nodes_and_a_stop_its_node(daemon, monkeypatch):
    monkeypatch.setenv("SLURM_JOB_ID", "77")
    monkeypatch.setenv("SLURM_JOB_NODELIST", "gpu-node-[116-117]")
    with Tracker(RUN, server=daemon.address) as t:
        t.job_started(restored_step=0, gpus=16)
        for step in range(1, 4):
            t.step(step, step * 1000)
        t.interruption("gpu", detail="Xid 79 on gpu-node-117", nodes=["gpu-node-117"])
    events = stored(daemon)
    started = [e["job_started"] for e in events if "job_started" in e]
    assert [(s.get("launch"), s.get("nodes"), s.get("gpus")) for s in started] == [
        ("slurm:77.0", ["gpu-node-116", "gpu-node-117"], 16)], started
    stops = [e["interruption"] for e in events if "interruption" in e]
    assert [s.get("nodes") for s in stops] == [["gpu-node-117"]], stops
    # An explicit list wins over the environment's.
    monkeypatch.setenv("SLURM_RESTART_COUNT", "1")
    with Tracker(RUN, server=daemon.address) as t:
        t.job_started(nodes=["spare-001", "gpu-node-116"])
    started = [e["job_started"] for e in stored(daemon) if "job_started" in e]
    assert started[-1]["nodes"] == ["spare-001", "gpu-node-116"], started


def test_the_slowest_rank_is_sent_and_the_status_says_the_nodes(daemon):
    with Tracker(RUN, server=daemon.address) as t:
        t.job_started(restored_step=0, nodes=["gpu-node-116", "gpu-node-117"], gpus=16)
        t.step(1, 1000, rank_spread=0.04, slowest_rank=13)
        t.step(2, 2000)
        with pytest.raises(ValueError, match="slowest_rank -2"):
            t.step(3, 3000, slowest_rank=-2)
    steps = [e["steps"] for e in stored(daemon) if "steps" in e]
    assert [s.get("slowest_rank") for s in steps] == [13, None], steps
    nodes = daemon.status()["nodes"]
    assert nodes["named"] and nodes["nodes"] == 2 and not nodes.get("suspects"), nodes


def test_a_bad_node_name_is_refused_naming_it(daemon, tmp_path):
    with Tracker(RUN, server=daemon.address, spool_dir=str(tmp_path)) as t:
        t.job_started(nodes=["gpu-node-[1-2]"])  # a list left unexpanded
    assert t.rejected == 1
    refused = (tmp_path / f"{RUN}.rejected.jsonl").read_text()
    assert "job_started.nodes[0] 'gpu-node-[1-2]' is not a hostname" in refused, refused


def test_torch_gives_the_process_groups_hosts_in_rank_order():
    dist = pytest.importorskip("torch.distributed")
    assert torch_nodes() == []  # no process group: not known
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{free_port()}", rank=0, world_size=1)
    try:
        assert torch_nodes() == [socket.gethostname()]
    finally:
        dist.destroy_process_group()
