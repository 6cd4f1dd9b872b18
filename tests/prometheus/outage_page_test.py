#!/usr/bin/python3
"""A dead job is paged (issue 37): the real flightpland on the wall clock, and Prometheus with the
project's rules.yml unchanged (no wait scaled), scraping and evaluating every second.

The flagship plan (deploy/examples/dense-70b-10t.yaml: detect 120 s + restart 600 s, so the
allowance is the 15-minute floor). Its run's events, backdated: launched 6 h 14 m 40 s ago,
trained healthily for 6 hours (a step and a checkpoint every 10 minutes at the plan's rate),
then an unplanned stop (cause "node") 14 m 40 s ago, and no relaunch. The test expects:
  - the daemon's outage (flightplan_outage_seconds) just under 15 minutes, its allowance
    (flightplan_outage_allowance_seconds) 900 s, and the run's burn ceiling
    (flightplan_failure_budget_burn_rate_ceiling: schedule / budget = 3,572,486 / 384,150 s =
    9.30, from `flightplan plan deploy/examples/dense-70b-10t.yaml --json`) between 9 and 10:
    below the 14.4 the fast page used to need, which is why it could never page an outage;
  - FlightplanRunDown not firing at the first evaluation that sees the run (outage ~14m 40s);
  - FlightplanRunDown firing within about 20 s, once the outage passes 15 minutes, and not
    before: its activeAt is at or after the stop + 900 s;
  - no other page for the run.
Bounded: gives up after 120 s. Usage: outage_page_test.py FLIGHTPLAND FLIGHTPLAN REPO_DIR
"""
import calendar
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from e2e_support import START, get_json, http_ok, query, set_deadline, start_daemon, start_prometheus, stop, wait_for  # noqa: E402

set_deadline(120)

RUN = "flagship"
ALLOWANCE = 900  # max(detect 120 + restart 600, 900): the flagship plan's failures section
DOWN_FOR = 14 * 60 + 40  # the stop, before the events are sent


def stamp(t):
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def unix(rfc3339):
    """Prometheus's RFC 3339 time (nanoseconds, Z) as Unix seconds."""
    m = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?Z$", rfc3339)
    if not m:
        raise SystemExit(f"FAIL: unexpected time {rfc3339}")
    whole = calendar.timegm(time.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S"))
    return whole + (float(m.group(2)) if m.group(2) else 0.0)


def events(stop_at):
    """JSON Lines: a launch 6 h before the stop, a step every 10 minutes at the plan's rate
    (3.45 Mtokens/s) with a checkpoint 10 s after it, and the unplanned stop."""
    launch = stop_at - 6 * 3600
    out = [{"run": RUN, "time": stamp(launch), "job_started": {"attempt": 1, "restored_step": 0}}]
    for i in range(1, 36):  # to 5 h 50 m; the stop comes 10 minutes after the latest step
        t = launch + 600 * i
        out.append({"run": RUN, "time": stamp(t), "attempt": 1,
                    "steps": {"step": str(100 * i), "tokens": str(int(3.45e6 * 600 * i))}})
        out.append({"run": RUN, "time": stamp(t + 10), "attempt": 1,
                    "checkpoint_saved": {"step": str(100 * i), "blocking_seconds": 10}})
    out.append({"run": RUN, "time": stamp(stop_at), "attempt": 1,
                "interruption": {"cause": "node", "detail": "node lost (NCCL timeout on 8 ranks)"}})
    return [json.dumps(e) for e in out]


def rundown_rule(prom_port):
    """The flightplan group's last evaluation (Unix s, 0 before any) and FlightplanRunDown's rule."""
    body = get_json(f"http://127.0.0.1:{prom_port}/api/v1/rules?type=alert")
    for group in body["data"]["groups"]:
        for rule in group["rules"]:
            if rule["name"] == "FlightplanRunDown":
                last = group.get("lastEvaluation", "0001-01-01T00:00:00Z")
                return (0.0 if last.startswith("0001-") else unix(last)), rule
    raise SystemExit("FAIL: rules.yml has no FlightplanRunDown")


def main():
    daemon_bin, cli_bin, repo = sys.argv[1], sys.argv[2], os.path.abspath(sys.argv[3])
    work = tempfile.mkdtemp(prefix="flightplan-outage-")
    procs = []
    try:
        stop_at = int(time.time()) - DOWN_FOR
        plan_text = open(os.path.join(repo, "deploy/examples/dense-70b-10t.yaml")).read()
        plan_text = re.sub(r'^start_time: .*$', f'start_time: "{stamp(stop_at - 6 * 3600)}"', plan_text, flags=re.M)
        plan_text = re.sub(r'^deadline: .*$', '', plan_text, flags=re.M)
        plan = os.path.join(work, "plan.yaml")
        open(plan, "w").write(plan_text)

        daemon, grpc_port, metrics_port = start_daemon(daemon_bin, work)  # the wall clock
        procs.append(daemon)
        server = ["--server", f"127.0.0.1:{grpc_port}"]
        subprocess.run([cli_bin, *server, "create", plan, "--run", RUN], check=True, stdout=subprocess.DEVNULL)
        path = os.path.join(work, "events.jsonl")
        open(path, "w").write("\n".join(events(stop_at)) + "\n")
        subprocess.run([cli_bin, *server, "replay", path, "--no-progress"], check=True, stdout=subprocess.DEVNULL)
        print(f"sent 6 h of training and a stop {time.time() - stop_at:.0f} s ago at {time.monotonic() - START:.1f} s")

        prometheus, prom_port = start_prometheus(work, metrics_port, os.path.join(repo, "deploy/prometheus/rules.yml"))
        procs.append(prometheus)
        wait_for("Prometheus to serve", lambda: http_ok(f"http://127.0.0.1:{prom_port}/-/ready"))

        def first_evaluation():
            """The first evaluation of the alerts after the run's outage was scraped."""
            last, rule = rundown_rule(prom_port)
            if not last:
                return None
            seen = get_json(f"http://127.0.0.1:{prom_port}/api/v1/query?" + urllib.parse.urlencode(
                {"query": f'flightplan_outage_seconds{{run="{RUN}"}}', "time": f"{last:.3f}"}))
            result = seen["data"]["result"]
            return result and (last, rule, float(result[0]["value"][1]))

        last, rule, outage = wait_for("an evaluation of the alerts that sees the run's outage", first_evaluation,
                                      interval=0.1)
        print(f"first evaluation at stop + {last - stop_at:.1f} s: outage {outage:.0f} s, FlightplanRunDown {rule['state']}")
        failures = []
        if outage >= ALLOWANCE:
            raise SystemExit(f"FAIL: the setup took too long: the outage was {outage:.0f} s at the first evaluation")
        if outage < DOWN_FOR - 1:
            failures.append(f"the daemon's outage {outage:.0f} s at stop + {last - stop_at:.1f} s: not the time since the stop")
        if rule["state"] != "inactive":
            failures.append(f"FlightplanRunDown is {rule['state']} at an outage of {outage:.0f} s")

        allowance = query(prom_port, f'flightplan_outage_allowance_seconds{{run="{RUN}"}}')
        if not allowance or float(allowance[0]["value"][1]) != ALLOWANCE:
            failures.append(f"the allowance is {allowance}, not {ALLOWANCE} s")
        ceiling = query(prom_port, f'flightplan_failure_budget_burn_rate_ceiling{{run="{RUN}"}}')
        if not ceiling or not 9 < float(ceiling[0]["value"][1]) < 10:
            failures.append(f"the burn ceiling is {ceiling}, not 9.30")
        else:
            print(f"ok   burn ceiling {float(ceiling[0]['value'][1]):.2f}: the most an outage can burn (the fast page used to need 14.4)")

        def firing():
            alerts = get_json(f"http://127.0.0.1:{prom_port}/api/v1/alerts")["data"]["alerts"]
            return [a for a in alerts if a["labels"].get("alertname") == "FlightplanRunDown"
                    and a["labels"].get("run") == RUN and a["state"] == "firing"]

        page = wait_for("FlightplanRunDown to fire", firing, interval=0.2, timeout=60)[0]
        active = unix(page["activeAt"])
        print(f"ok   FlightplanRunDown firing at {time.monotonic() - START:.1f} s, active at stop + {active - stop_at:.1f} s: "
              f"{page['annotations']['description']}")
        if active < stop_at + ALLOWANCE:
            failures.append(f"FlightplanRunDown active at stop + {active - stop_at:.1f} s, before the allowance")
        if active > stop_at + ALLOWANCE + 30:
            failures.append(f"FlightplanRunDown active only at stop + {active - stop_at:.1f} s")
        if float(page["value"]) <= ALLOWANCE:
            failures.append(f"FlightplanRunDown's value {page['value']} is not past the allowance")
        if page["labels"].get("severity") != "page":
            failures.append(f"FlightplanRunDown's labels: {page['labels']}")
        link = page["annotations"].get("page")
        if link != f"http://127.0.0.1:{metrics_port}/runs/{RUN}":
            failures.append(f"the page's link is {link}")
        else:
            with urllib.request.urlopen(link, timeout=10) as r:
                if r.status != 200:
                    failures.append(f"{link} answers {r.status}")
        others = query(prom_port, f'ALERTS{{run="{RUN}",severity="page",alertname!="FlightplanRunDown"}}')
        if others:
            failures.append(f"other pages for the run: {[a['metric'] for a in others]}")

        for f in failures:
            print(f"FAIL {f}")
        if failures:
            return 1
        print(f"ok   paged at {active - stop_at:.1f} s of outage, not before {ALLOWANCE} s")
        return 0
    finally:
        stop(procs)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
