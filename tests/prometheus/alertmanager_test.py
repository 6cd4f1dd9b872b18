#!/usr/bin/python3
"""Alerts delivered: the real flightpland, Prometheus with the project's rules and Alertmanager
with the project's routing, and a local webhook standing for the pager and the ticket queue.

Two runs of the flagship plan, on the wall clock. "quiet" trains on plan (a checkpoint after
every 10-minute step). "burning" trained nine hours without a checkpoint, then lost its job an
hour ago. The test expects:
  - the page FlightplanRunDown for "burning" on the page webhook (down 59 minutes, past its
    plan's 15-minute allowance), linking the run's page on flightpland (which serves it);
  - then, once it has arrived, "burning" relaunches from scratch and the nine hours of work are
    lost at once: FlightplanRunDown resolves (the webhook hears it), and the slow-burn page
    (FlightplanFailureBudgetBurnSlow: 10 of the last 6 hours' worth charged, rework included)
    arrives on the page webhook;
  - the day-burn ticket (FlightplanFailureBudgetBurnDay) firing in Prometheus for "burning",
    but held back by Alertmanager (inhibited by the page) and never on the ticket webhook;
  - nothing at all for "quiet".
No fast-burn page: it counts time out of training (not the rework a restore charges at once)
over the last hour, and this Prometheus has watched seconds of the outage, not an hour. In
production, watching the whole outage, it would have paged too, at about 56 minutes.

The rules and routing are the project's files with their waits scaled down, a minute to a
second (`for: 5m` -> 5s, group_wait 30s -> 1s), so the test takes a minute, not an hour;
expressions, labels, routes and inhibition are unchanged (the windows too: the relaunch's
charge stays in the 30-minute window for the whole test). Bounded: gives up after 120 s.
Usage: alertmanager_test.py FLIGHTPLAND FLIGHTPLAN REPO_DIR
"""
import datetime
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from e2e_support import (START, free_port, get_json, http_ok, query, set_deadline, start_daemon,  # noqa: E402
                         start_prometheus, stop, wait_for)

set_deadline(120)


def scaled_minutes(text, pattern):
    """`for: 15m` -> `for: 15s`, `for: 1h` -> `for: 60s`: a minute becomes a second."""
    def one(m):
        n, unit = int(m.group(2)), m.group(3)
        seconds = {"s": max(1, n // 60), "m": n, "h": n * 60}[unit]
        return f"{m.group(1)}{seconds}s"
    return re.sub(pattern, one, text)


class Webhook(http.server.BaseHTTPRequestHandler):
    received = []  # (path, alert) for every alert of every notification
    lock = threading.Lock()

    def do_POST(self):
        note = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        with Webhook.lock:
            for alert in note.get("alerts", []):
                Webhook.received.append((self.path, alert))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


def got(path, alertname, run, status=None):
    with Webhook.lock:
        return [a for p, a in Webhook.received
                if p == path and a["labels"].get("alertname") == alertname and a["labels"].get("run") == run
                and (status is None or a.get("status") == status)]


def events(run, now, burning):
    """JSON Lines: a launch 10 h ago, a step every 10 minutes at the plan's rate (3.45 Mtokens/s),
    a checkpoint after each for the quiet run (the plan's interval is 518 s: FlightplanCheckpointStale
    tickets past twice that); the burning one stops an hour ago."""
    t0 = now - datetime.timedelta(hours=10)
    out = []

    def add(t, kind, body, attempt=1):
        e = {"run": run, "time": t.strftime("%Y-%m-%dT%H:%M:%SZ"), kind: body}
        if kind != "job_started":
            e["attempt"] = attempt
        out.append(json.dumps(e))

    add(t0, "job_started", {"attempt": 1, "restored_step": 0})
    last = 9 * 6 if burning else 59  # 9 hours, or up to a minute ago
    for i in range(1, last + 1):
        t = t0 + datetime.timedelta(minutes=10 * i)
        add(t, "steps", {"step": str(100 * i), "tokens": str(int(3.45e6 * 600 * i))})
        if not burning:
            add(t + datetime.timedelta(seconds=10), "checkpoint_saved", {"step": str(100 * i), "blocking_seconds": 10})
    if burning:
        add(t0 + datetime.timedelta(hours=9, minutes=1), "interruption", {"cause": "gpu", "detail": "Xid 79"})
    return out


def main():
    daemon_bin, cli_bin, repo = sys.argv[1], sys.argv[2], os.path.abspath(sys.argv[3])
    work = tempfile.mkdtemp(prefix="flightplan-alerts-")
    procs = []
    try:
        now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
        start = (now - datetime.timedelta(hours=11)).strftime("%Y-%m-%dT%H:%M:%SZ")
        plan_text = open(os.path.join(repo, "deploy/examples/dense-70b-10t.yaml")).read()
        plan_text = re.sub(r'^start_time: .*$', f'start_time: "{start}"', plan_text, flags=re.M)
        plan_text = re.sub(r'^deadline: .*$', '', plan_text, flags=re.M)
        plan = os.path.join(work, "plan.yaml")
        open(plan, "w").write(plan_text)

        daemon, grpc_port, metrics_port = start_daemon(daemon_bin, work)
        procs.append(daemon)
        server = ["--server", f"127.0.0.1:{grpc_port}"]
        for run, burning in (("quiet", False), ("burning", True)):
            subprocess.run([cli_bin, *server, "create", plan, "--run", run], check=True, stdout=subprocess.DEVNULL)
            path = os.path.join(work, f"{run}.jsonl")
            open(path, "w").write("\n".join(events(run, now, burning)) + "\n")
            subprocess.run([cli_bin, *server, "replay", path, "--no-progress"], check=True, stdout=subprocess.DEVNULL)

        hook_port = free_port()
        hook = http.server.ThreadingHTTPServer(("127.0.0.1", hook_port), Webhook)
        threading.Thread(target=hook.serve_forever, daemon=True).start()

        am_port = free_port()
        am_config = open(os.path.join(repo, "deploy/alertmanager/alertmanager.yml")).read()
        am_config = am_config.replace("http://127.0.0.1:9099", f"http://127.0.0.1:{hook_port}")
        am_config = scaled_minutes(am_config, r"((?:group_wait|group_interval|repeat_interval): )(\d+)([smh])")
        open(os.path.join(work, "alertmanager.yml"), "w").write(am_config)
        am_log = open(os.path.join(work, "alertmanager.log"), "w")
        procs.append(subprocess.Popen(
            ["prometheus-alertmanager", f"--config.file={work}/alertmanager.yml", f"--storage.path={work}/am",
             f"--web.listen-address=127.0.0.1:{am_port}", "--cluster.listen-address="],
            stdout=am_log, stderr=subprocess.STDOUT))

        rules = scaled_minutes(open(os.path.join(repo, "deploy/prometheus/rules.yml")).read(),
                               r"(\bfor: )(\d+)([smh])")
        open(os.path.join(work, "rules.yml"), "w").write(rules)
        prometheus, prom_port = start_prometheus(work, metrics_port, f"{work}/rules.yml", am_port)
        procs.append(prometheus)
        wait_for("Alertmanager to serve", lambda: http_ok(f"http://127.0.0.1:{am_port}/-/ready"))
        wait_for("Prometheus to serve", lambda: http_ok(f"http://127.0.0.1:{prom_port}/-/ready"))

        def scraped():
            try:
                return len(query(prom_port, 'count_over_time(flightplan_failure_budget_consumed_seconds[1m]) >= 3')) == 2
            except OSError:
                return False

        # A few scrapes of the runs as they stand, so that the 30-minute window sees the loss.
        wait_for("Prometheus to scrape both runs", scraped)
        down = wait_for("the page FlightplanRunDown for 'burning' on the page webhook",
                        lambda: got("/page", "FlightplanRunDown", "burning", "firing"), timeout=30)
        print(f"ok   page delivered at {time.monotonic() - START:.1f} s: {down[0]['annotations']['summary']}")
        assert down[0]["labels"]["severity"] == "page", down[0]
        # The notification links the run's page, which flightpland serves.
        link = down[0]["annotations"].get("page")
        if link != f"http://127.0.0.1:{metrics_port}/runs/burning":
            raise SystemExit(f"FAIL: the page's link is {link}")
        with urllib.request.urlopen(link, timeout=10) as r:
            if r.status != 200 or b"Run burning" not in r.read():
                raise SystemExit(f"FAIL: {link} does not serve the run's page")
        print(f"ok   the notification links {link}, which serves the run's page")

        relaunch = os.path.join(work, "relaunch.jsonl")
        at = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        open(relaunch, "w").write(json.dumps({"run": "burning", "time": at,
                                              "job_started": {"attempt": 2, "restored_step": 0}}) + "\n")
        subprocess.run([cli_bin, *server, "replay", relaunch, "--no-progress"], check=True, stdout=subprocess.DEVNULL)
        print(f"relaunched 'burning' from scratch at {time.monotonic() - START:.1f} s")

        slow = wait_for("the slow-burn page for 'burning' on the page webhook",
                        lambda: got("/page", "FlightplanFailureBudgetBurnSlow", "burning", "firing"), timeout=60)
        print(f"ok   page delivered at {time.monotonic() - START:.1f} s: {slow[0]['annotations']['summary']}")
        wait_for("FlightplanRunDown for 'burning' to resolve on the page webhook",
                 lambda: got("/page", "FlightplanRunDown", "burning", "resolved"), timeout=30)
        print(f"ok   FlightplanRunDown resolved after the relaunch at {time.monotonic() - START:.1f} s")

        wait_for("the day-burn ticket to fire in Prometheus", lambda: query(
            prom_port, 'ALERTS{alertname="FlightplanFailureBudgetBurnDay",run="burning",alertstate="firing"}'),
            timeout=60)

        def inhibited():
            alerts = get_json(f"http://127.0.0.1:{am_port}/api/v2/alerts?inhibited=true&active=false&silenced=false")
            return [a for a in alerts if a["labels"].get("alertname") == "FlightplanFailureBudgetBurnDay"
                    and a["labels"].get("run") == "burning" and a["status"]["inhibitedBy"]]

        wait_for("Alertmanager to hold the ticket back", inhibited, timeout=30)
        time.sleep(8)  # past the scaled group_wait (1 s) and group_interval (5 s): an uninhibited ticket would be out
        print(f"ok   ticket firing and inhibited at {time.monotonic() - START:.1f} s")
        failures = []
        if got("/ticket", "FlightplanFailureBudgetBurnDay", "burning"):
            failures.append("the day-burn ticket was delivered despite the page")
        with Webhook.lock:
            quiet = [a["labels"].get("alertname") for _, a in Webhook.received if a["labels"].get("run") == "quiet"]
        if quiet:
            failures.append(f"the quiet run sent {quiet}")
        quiet_alerts = query(prom_port, 'ALERTS{run="quiet"}')
        if quiet_alerts:
            failures.append(f"the quiet run has alerts: {quiet_alerts}")
        for f in failures:
            print(f"FAIL {f}")
        if failures:
            return 1
        print("ok   nothing for the quiet run")
        return 0
    finally:
        stop(procs)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
