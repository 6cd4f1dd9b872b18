#!/usr/bin/python3
"""Every Grafana panel query and every recording rule returns data from a real Prometheus.

Starts flightpland (loopback, free ports, the event clock), creates the flagship run, feeds
it the first quarter of a simulated crisis (failures rising to 10x the plan's, so that the
two futures are drawn too), starts Debian's Prometheus with the project's rules scraping
the daemon every second, then evaluates each query of deploy/grafana/flightplan-run.json
(with $run set) and each recording rule of deploy/prometheus/rules.yml. Bounded: gives up
after 90 seconds. Usage: dashboard_test.py FLIGHTPLAND FLIGHTPLAN REPO_DIR
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from e2e_support import START, query, set_deadline, start_daemon, start_prometheus, stop, wait_for  # noqa: E402

set_deadline(140)


def main():
    daemon_bin, cli_bin, repo = sys.argv[1], sys.argv[2], os.path.abspath(sys.argv[3])
    plan = os.path.join(repo, "deploy/examples/dense-70b-10t.yaml")
    rules = os.path.join(repo, "deploy/prometheus/rules.yml")
    dashboard = json.load(open(os.path.join(repo, "deploy/grafana/flightplan-run.json")))
    work = tempfile.mkdtemp(prefix="flightplan-prom-")
    procs = []
    try:
        # No backfill history (--backfill-spacing 0): every panel reads a current value, and the
        # latest forecast (the two futures) would wait for each backfilled point first: over
        # the 45 s a panel waits under ASan with both cores loaded (the fresh-clone series).
        daemon, grpc_port, metrics_port = start_daemon(daemon_bin, work,
                                                       ["--clock", "events", "--backfill-spacing", "0"])
        procs.append(daemon)
        server = ["--server", f"127.0.0.1:{grpc_port}"]
        subprocess.run([cli_bin, *server, "create", plan], check=True, stdout=subprocess.DEVNULL)
        sim = subprocess.run([cli_bin, "simulate", plan, "--seed", "11", "--scenario", "crisis-then-settle"],
                             check=True, capture_output=True, text=True).stdout.splitlines()
        half = os.path.join(work, "half.jsonl")
        with open(half, "w") as f:
            f.write("\n".join(sim[: len(sim) // 4]) + "\n")
        subprocess.run([cli_bin, *server, "replay", half, "--no-progress"], check=True,
                       stdout=subprocess.DEVNULL)

        prometheus, prom_port = start_prometheus(work, metrics_port, rules)
        procs.append(prometheus)

        def ready():
            try:
                return query(prom_port, 'up{job="flightpland"} == 1')
            except OSError:
                return None

        wait_for("Prometheus to scrape flightpland", ready)
        run = "dense-70b-10t"
        exprs = []
        for panel in dashboard["panels"]:
            for target in panel["targets"]:
                # One cluster's Prometheus: the variable's All (.*) matches series without the label.
                expr = target["expr"].replace("$run", run).replace("$cluster", ".*")
                exprs.append((f'panel "{panel["title"]}"', expr))
        import_rules = open(rules).read()
        for record in re.findall(r"^\s*- record: (\S+)", import_rules, re.M):
            exprs.append(("recording rule", f'{record}{{run="{run}"}}'))
        variables = {v["name"]: v for v in dashboard["templating"]["list"]}
        m = re.match(r"label_values\((.+), run\)", variables["run"]["query"]["query"])
        exprs.append(("variable $run", m.group(1).replace("$cluster", ".*")))

        failures = []
        # Grafana keys a panel's queries by refId: two alike and one hides the other.
        for panel in dashboard["panels"]:
            ids = [target["refId"] for target in panel["targets"]]
            if len(ids) != len(set(ids)):
                failures.append(f'panel "{panel["title"]}": refIds {ids} repeat')
        for where, expr in exprs:
            try:
                result = wait_for(f"{where}: {expr}", lambda: query(prom_port, expr), interval=0.5,
                                  timeout=45)
                print(f"ok   {where}: {expr} ({len(result)} series) at {time.monotonic() - START:.1f} s")
            except SystemExit as e:
                failures.append(f"{where}: {expr}")
                print(f"FAIL {where}: {expr}: {e}")
        if failures:
            print(f"{len(failures)} failed, {len(exprs) - len(failures)} passed")
            return 1
        print(f"{len(exprs)} passed, 0 failed")
        return 0
    finally:
        stop(procs)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
