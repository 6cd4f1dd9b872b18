#!/usr/bin/python3
"""The fleet page (GET /runs/) at 1,000 runs in a real browser: Debian's chromium, headless.

Starts flightpland (loopback, free ports, the event clock), creates RUNS runs of the flagship
plan and replays into each a different stretch of one of three simulated runs (as planned, a
crisis, a rack gone bad), so that the runs land in different classes. Then loads /runs/ in
chromium and checks: a row per run, each linking to its page; the rows in class order (act
now, look, on plan, finished) as the counts above the table say; the page's own counts equal
to the rows of each class; no console error. Prints how long chromium took to load and render
the page against a blank one (docs/scaling.md quotes it), and keeps the screenshot.
Bounded: gives up after 200 s. Usage: fleet_page_test.py FLIGHTPLAND FLIGHTPLAN REPO ARTIFACTS [RUNS]
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_support import set_deadline, start_daemon, stop, wait_for  # noqa: E402
from run_page_test import browse, run_browser  # noqa: E402

set_deadline(200)
CLASSES = ["act", "look", "ok", "done"]


def main():
    daemon_bin, cli_bin, repo, artifacts = sys.argv[1], sys.argv[2], os.path.abspath(sys.argv[3]), sys.argv[4]
    runs = int(sys.argv[5]) if len(sys.argv) > 5 else 1000
    os.makedirs(artifacts, exist_ok=True)
    work = tempfile.mkdtemp(prefix="flightplan-fleet-page-")
    daemon = None
    failures = []
    try:
        daemon, grpc_port, http_port = start_daemon(daemon_bin, work, ["--clock", "events", "--backfill-spacing", "0"])
        cli = [cli_bin, "--server", f"127.0.0.1:{grpc_port}"]
        plan = os.path.join(repo, "deploy/examples/dense-70b-10t.yaml")
        sims = []
        for scenario, seed in (("as-planned", 1), ("crisis-then-settle", 11), ("bad-rack-40", 5)):
            sims.append(subprocess.run([cli_bin, "simulate", plan, "--scenario", scenario, "--seed", str(seed)],
                                       check=True, capture_output=True, text=True).stdout.splitlines())
        lines = []
        for i in range(runs):
            name = f"run-{i:04d}"
            subprocess.run(cli + ["create", plan, "--run", name], check=True, stdout=subprocess.DEVNULL)
            sim = sims[i % 3]
            # Runs at different points of their lives: a few hundred to a few thousand events.
            cut = 200 + (i * 397) % 1500
            lines += [line.replace('"run":"dense-70b-10t"', f'"run":"{name}"') for line in sim[:cut]]
        log = os.path.join(work, "fleet.jsonl")
        with open(log, "w") as f:
            f.write("\n".join(lines) + "\n")
        subprocess.run(cli + ["replay", log, "--no-progress"], check=True, stdout=subprocess.DEVNULL)
        print(f"ok   {runs} runs created and replayed ({len(lines)} events)")
        base = f"http://127.0.0.1:{http_port}"

        def forecast_all():
            out = subprocess.run(cli + ["runs"], capture_output=True, text=True).stdout
            return out.count("\n") >= runs and out
        wait_for("every run listed", forecast_all, interval=1, timeout=120)

        def timed(url):
            start = time.monotonic()
            run_browser(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1400,900",
                         "--dump-dom", url])
            return time.monotonic() - start
        blank = min(timed("about:blank") for _ in range(2))
        page = min(timed(f"{base}/runs/") for _ in range(2))
        print(f"ok   chromium loaded and rendered /runs/ of {runs} runs in {page:.2f} s, a blank page in {blank:.2f} s "
              f"({page - blank:.2f} s for the page)")
        dom, console, shot = browse(f"{base}/runs/", "fleet-page", artifacts, 900)
        rows = re.findall(r'<tr class="(act|look|ok|done)"><td><a href="([^"]+)">([^<]+)</a>', dom)
        if len(rows) != runs:
            failures.append(f"{len(rows)} rows for {runs} runs")
        if sorted(name for _, _, name in rows) != [f"run-{i:04d}" for i in range(runs)]:
            failures.append("the rows are not each run once")
        if any(href != name for _, href, name in rows):
            failures.append("a row's link is not its run's name")
        order = [CLASSES.index(c) for c, _, _ in rows]
        if order != sorted(order):
            failures.append("the rows are not in class order (act now, look, on plan, finished)")
        counts = {c: sum(1 for r in rows if r[0] == c) for c in CLASSES}
        for css, label in (("act", "act now"), ("look", "look"), ("ok", "on plan"), ("done", "finished")):
            shown = re.search(rf'<span class="{css}">([\d,]+) {label}</span>', dom)
            if not shown or int(shown.group(1).replace(",", "")) != counts[css]:
                failures.append(f"the page's count of {label} is not its {counts[css]} rows")
        if len([c for c in counts.values() if c > 0]) < 2:
            failures.append(f"the runs should fall in more than one class: {counts}")
        if console:
            failures.append(f"console: {console[:3]}")
        print(f"ok   classes: {counts}; screenshot {shot}")
    finally:
        if daemon:
            stop([daemon])
        shutil.rmtree(work, ignore_errors=True)
    for f in failures:
        print(f"FAIL {f}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
