#!/usr/bin/python3
"""Two clusters joined through Prometheus, as deploy/prometheus/federation/ sets them up.

Starts two flightpland (clusters a and b, loopback, the event clock), each with the flagship
run under the same name (fed different cuts of a simulated crisis, so their figures differ)
and a run of its own (only-a, only-b); a Prometheus per cluster from
deploy/prometheus/federation/cluster.yml (its external label, the project's rules, remote
write); a global Prometheus that federates both (global-federate.yml) and one that receives
their remote writes (global-receive.yml, --web.enable-remote-write-receiver). Then, on each
global one, every query of deploy/grafana/flightplan-run.json and every recording rule must
return each cluster's data: with $cluster set to a or b only that cluster's series, with All
both, the flagship's tokens under each label equal to that cluster's own Prometheus's, and a
cluster's own run never under the other's label. Bounded: gives up after 170 seconds.
Usage: federation_test.py FLIGHTPLAND FLIGHTPLAN REPO_DIR
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
from e2e_support import START, free_port, query, set_deadline, start_daemon, stop, wait_for  # noqa: E402

set_deadline(170)
RUN = "dense-70b-10t"


def prometheus(work, name, config, extra=()):
    """Debian's Prometheus with `config` (text) on a free port: (process, port)."""
    port = free_port()
    path = os.path.join(work, f"{name}.yml")
    with open(path, "w") as f:
        f.write(config)
    log = open(os.path.join(work, f"{name}.log"), "w")
    proc = subprocess.Popen(["prometheus", f"--config.file={path}", f"--storage.tsdb.path={work}/{name}-tsdb",
                             f"--web.listen-address=127.0.0.1:{port}", *extra], stdout=log,
                            stderr=subprocess.STDOUT)
    return proc, port


def from_deploy(text, replacements):
    """A deploy/ config with its addresses and intervals made the test's; each must be there."""
    for old, new in replacements:
        if old not in text:
            raise SystemExit(f"FAIL: the deploy config no longer says {old!r}")
        text = text.replace(old, new)
    return text


def main():
    daemon_bin, cli_bin, repo = sys.argv[1], sys.argv[2], os.path.abspath(sys.argv[3])
    plan_path = os.path.join(repo, "deploy/examples/dense-70b-10t.yaml")
    rules = os.path.join(repo, "deploy/prometheus/rules.yml")
    federation = os.path.join(repo, "deploy/prometheus/federation")
    dashboard = json.load(open(os.path.join(repo, "deploy/grafana/flightplan-run.json")))
    work = tempfile.mkdtemp(prefix="flightplan-federation-")
    procs = []
    try:
        sim = subprocess.run([cli_bin, "simulate", plan_path, "--seed", "11", "--scenario", "crisis-then-settle"],
                             check=True, capture_output=True, text=True).stdout.splitlines()
        plan_text = open(plan_path).read()
        receiver, receiver_port = prometheus(work, "global-receive",
                                             open(os.path.join(federation, "global-receive.yml")).read(),
                                             ["--web.enable-remote-write-receiver"])
        procs.append(receiver)
        cluster_ports = {}
        for name, cut in (("a", len(sim) // 4), ("b", len(sim) // 4 + 400)):
            d = os.path.join(work, name)
            os.makedirs(d)
            daemon, grpc_port, metrics_port = start_daemon(daemon_bin, d,
                                                           ["--clock", "events", "--backfill-spacing", "0"])
            procs.append(daemon)
            server = ["--server", f"127.0.0.1:{grpc_port}"]
            own = os.path.join(d, "own.yaml")
            with open(own, "w") as f:
                f.write(re.sub(r"^name: .*$", f"name: only-{name}", plan_text, flags=re.M))
            for plan, lines, run in ((plan_path, sim[:cut], RUN), (own, sim[:300], f"only-{name}")):
                subprocess.run([cli_bin, *server, "create", plan], check=True, stdout=subprocess.DEVNULL)
                log = os.path.join(d, f"{run}.jsonl")
                with open(log, "w") as f:
                    f.write("\n".join(line.replace(f'"run":"{RUN}"', f'"run":"{run}"') for line in lines) + "\n")
                subprocess.run([cli_bin, *server, "replay", log, "--no-progress"], check=True,
                               stdout=subprocess.DEVNULL)
            config = from_deploy(open(os.path.join(federation, "cluster.yml")).read(), [
                ("scrape_interval: 15s", "scrape_interval: 1s"),
                ("evaluation_interval: 15s", "evaluation_interval: 1s"),
                ("cluster: a ", f"cluster: {name} "),
                ("../rules.yml", rules),
                ('targets: ["127.0.0.1:9093"]', f'targets: ["127.0.0.1:{free_port()}"]'),
                ("127.0.0.1:9464", f"127.0.0.1:{metrics_port}"),
                ("http://global-prometheus.example:9090", f"http://127.0.0.1:{receiver_port}"),
                ("batch_send_deadline: 5s", "batch_send_deadline: 1s"),
            ])
            proc, port = prometheus(work, f"cluster-{name}", config)
            procs.append(proc)
            cluster_ports[name] = port
        federate, federate_port = prometheus(work, "global-federate", from_deploy(
            open(os.path.join(federation, "global-federate.yml")).read(), [
                ("scrape_interval: 30s", "scrape_interval: 1s"),
                ("scrape_timeout: 20s", "scrape_timeout: 1s"),
                ("prometheus-a.example:9090", f"127.0.0.1:{cluster_ports['a']}"),
                ("prometheus-b.example:9090", f"127.0.0.1:{cluster_ports['b']}"),
            ]))
        procs.append(federate)

        def up(port, expr):
            try:
                return query(port, expr)
            except OSError:
                return None

        for name, port in cluster_ports.items():
            wait_for(f"cluster {name}'s Prometheus to scrape its flightpland",
                     lambda p=port: up(p, 'up{job="flightpland"} == 1'))
        # What each cluster's own Prometheus holds: the flagship's tokens there.
        own_tokens = {}
        for name, port in cluster_ports.items():
            result = wait_for(f"cluster {name}'s tokens", lambda p=port: up(p, f'flightplan_progress_tokens{{run="{RUN}"}}'))
            own_tokens[name] = float(result[0]["value"][1])
        if own_tokens["a"] == own_tokens["b"]:
            raise SystemExit(f"FAIL: the two clusters' runs should differ: {own_tokens}")

        templates = []
        for panel in dashboard["panels"]:
            for target in panel["targets"]:
                templates.append((f'panel "{panel["title"]}"', target["expr"]))
        for record in re.findall(r"^\s*- record: (\S+)", open(rules).read(), re.M):
            templates.append(("recording rule", f'{record}{{cluster=~"$cluster",run="$run"}}'))
        variables = {v["name"]: v for v in dashboard["templating"]["list"]}
        templates.append(("variable $run", re.match(r"label_values\((.+), run\)",
                                                   variables["run"]["query"]["query"]).group(1)))
        cluster_variable = re.match(r"label_values\((.+), cluster\)", variables["cluster"]["query"]["query"]).group(1)

        failures = []
        checks = 0

        def check(where, expr, port, want):
            """The query returns series, and their clusters are exactly `want`."""
            nonlocal checks
            checks += 1

            def clusters():
                result = up(port, expr)
                got = {s["metric"].get("cluster", "") for s in result or []}
                return got if got == want else None

            try:
                wait_for(f"{where}: {expr}", clusters, interval=0.5, timeout=45)
            except SystemExit:
                result = up(port, expr) or []
                failures.append(f"{where}: {expr}: clusters {sorted({s['metric'].get('cluster', '') for s in result})}, "
                                f"want {sorted(want)}")
                print(f"FAIL {failures[-1]}")

        for global_name, port in (("federate", federate_port), ("receive", receiver_port)):
            check(f"{global_name}: variable $cluster", cluster_variable, port, {"a", "b"})
            for where, template in templates:
                for selected, want in (("a", {"a"}), ("b", {"b"}), (".*", {"a", "b"})):
                    expr = template.replace("$run", RUN).replace("$cluster", selected)
                    check(f"{global_name}: {where}, cluster {selected}", expr, port, want)
            # Each cluster's figures under its own label, and its own run under no other.
            for name in ("a", "b"):
                expr = f'flightplan_progress_tokens{{cluster="{name}",run="{RUN}"}}'
                result = up(port, expr) or []
                values = [float(s["value"][1]) for s in result]
                checks += 1
                if values != [own_tokens[name]]:
                    failures.append(f"{global_name}: {expr} = {values}, cluster {name}'s own Prometheus has "
                                    f"{own_tokens[name]}")
                check(f"{global_name}: a cluster's own run", f'flightplan_progress_tokens{{run="only-{name}"}}', port,
                      {name})
            print(f"ok   {global_name}: {checks} checks so far at {time.monotonic() - START:.1f} s")
        if failures:
            print(f"{len(failures)} failed of {checks}")
            return 1
        print(f"{checks} passed, 0 failed")
        return 0
    finally:
        stop(procs)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
