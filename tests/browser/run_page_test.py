#!/usr/bin/python3
"""The run's page in a real browser: Debian's chromium, headless.

Starts flightpland (loopback, free ports, the event clock), backfills the flagship plan's
run with three quarters of a simulated run whose rack goes bad at 40% (`--scenario
bad-rack-40`) in one replay at full speed (the daemon rebuilds the history the run would
have had live), and a second run whose plan is named with a script tag. Then loads /runs/ and both /runs/NAME pages in chromium, keeps the DOM as the
browser built it and a screenshot of each (the artifacts, in ARTIFACTS), and checks:
  - every chart of the run page is drawn with data: a path through two points or more (or
    a filled area), date ticks on its time axis, its axis labels; the rack's lost tenth of
    throughput is a slow stretch marked on the throughput chart, its size (8-14%) and cost in
    its tooltip, and in the summary's slowdown row; the history behind the
    charts spans the run's life (the tokens line through a hundred points or more); the
    interruptions are marks on a timeline, a row per cause;
  - the screenshot shows the page: thousands of pixels in the palette's blue, many colours;
  - the browser reported no error in the page's console;
  - the script tag in the plan's name is text on the page, not a script: no script element,
    the title unchanged;
  - the list links both runs;
  - the node panel: a third run on 16 nodes whose node n07 fails it five times in eight days
    shows n07 as a suspect with its evidence and the Slurm option that drains it, in the
    panel and the summary; the flagship's run, whose events name no nodes, says what node
    attribution needs.
Bounded: gives up after 150 s. Usage: run_page_test.py FLIGHTPLAND FLIGHTPLAN REPO ARTIFACTS
"""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from e2e_support import deadline, set_deadline, start_daemon, stop, wait_for  # noqa: E402

set_deadline(220)


def png_pixels(path, max_rows):
    """(width, height, the first max_rows rows of (r, g, b) tuples) of an 8-bit RGB or RGBA PNG."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and color in (2, 6), f"PNG depth {depth} colour type {color}"
            bpp = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(min(height, max_rows)):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(width)])
        prev = line
    return width, height, rows


def run_browser(argv):
    """chromium in its own process group, all of it killed if it outlives the deadline."""
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = p.communicate(timeout=max(5, min(60, deadline() - time.monotonic())))
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, 9)
        p.communicate()
        raise SystemExit(f"FAIL: chromium timed out on {argv[-1]}")
    return subprocess.CompletedProcess(argv, p.returncode, out, err)


def browse(url, name, artifacts, height):
    """The DOM chromium built, and its console's complaints; a screenshot in artifacts."""
    flags = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             f"--window-size=1000,{height}", "--enable-logging=stderr", "--v=0"]
    dom = run_browser(flags + ["--dump-dom", url])
    shot = os.path.join(artifacts, f"{name}.png")
    if run_browser(flags + [f"--screenshot={shot}", url]).returncode != 0:
        raise SystemExit(f"FAIL: chromium could not take {name}.png")
    open(os.path.join(artifacts, f"{name}.html"), "w").write(dom.stdout)
    console = [l for l in dom.stderr.splitlines() if "CONSOLE" in l or "Uncaught" in l]
    return dom.stdout, console, shot


def main():
    daemon_bin, cli_bin, repo, artifacts = sys.argv[1], sys.argv[2], os.path.abspath(sys.argv[3]), sys.argv[4]
    os.makedirs(artifacts, exist_ok=True)
    work = tempfile.mkdtemp(prefix="flightplan-browser-")
    failures = []
    daemon = None
    try:
        daemon, grpc_port, http_port = start_daemon(daemon_bin, work, ["--clock", "events"])
        cli = [cli_bin, "--server", f"127.0.0.1:{grpc_port}"]
        plan = os.path.join(repo, "deploy/examples/dense-70b-10t.yaml")
        subprocess.run(cli + ["create", plan], check=True, stdout=subprocess.DEVNULL)
        events = subprocess.run([cli_bin, "simulate", plan, "--scenario", "bad-rack-40", "--seed", "5"],
                                check=True, capture_output=True, text=True).stdout.splitlines()
        # Three quarters of the run, in one replay at full speed (a backfill).
        events = events[: len(events) * 3 // 4]
        log = os.path.join(work, "backfill.jsonl")
        open(log, "w").write("\n".join(events) + "\n")
        subprocess.run(cli + ["replay", log, "--no-progress"], check=True, stdout=subprocess.DEVNULL)

        # Settled: the same count for 3 s running (one backfilled point can take longer than
        # a poll under the sanitizers, on a loaded machine).
        def history_settled(seen=[]):
            out = subprocess.run(cli + ["history", "dense-70b-10t", "--json"], check=True,
                                 capture_output=True, text=True).stdout
            n = len(json.loads(out).get("points", []))
            seen.append(n)
            settled = n > 0 and len(seen) >= 7 and len(set(seen[-7:])) == 1
            return n if settled else None

        points = wait_for("the backfill's history to settle", history_settled, interval=0.5, timeout=180)
        print(f"ok   history after the backfill: {points} points")
        hostile = "<script>document.title='pwned'</script>"
        plan_text = re.sub(r"^name: .*$", f'name: "{hostile}"', open(plan).read(), flags=re.M)
        xss_plan = os.path.join(work, "xss.yaml")
        open(xss_plan, "w").write(plan_text)
        subprocess.run(cli + ["create", xss_plan, "--run", "xss"], check=True, stdout=subprocess.DEVNULL)
        time.sleep(1)  # the last forecasts reach the history

        # A run whose events name its nodes: 8 launches of a day on n01-n16, each but the last
        # ended by a failure naming one node, n07 five times.
        subprocess.run(cli + ["create", plan, "--run", "lemon-fleet"], check=True, stdout=subprocess.DEVNULL)
        pool = [f"n{i:02d}" for i in range(1, 17)]
        blamed = ["n07", "n03", "n07", "n07", "n11", "n07", "n07"]
        t0, lines, step, saved = 1799020800, [], 0, 0  # 2027-01-04T00:00:00Z
        stamp = lambda s: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(s))
        for a in range(8):
            start = t0 + a * 86400
            step = saved  # each launch resumes from the latest save
            lines.append({"run": "lemon-fleet", "time": stamp(start),
                          "job_started": {"attempt": a + 1, "restored_step": saved, "nodes": pool, "gpus": 128}})
            for k in range(140):  # a report every 10 minutes, a save every hour
                step += 100
                at = start + 600 + k * 600
                lines.append({"run": "lemon-fleet", "time": stamp(at), "steps": {"step": step, "tokens": step * 16777216}})
                if k % 6 == 5:
                    saved = step
                    lines.append({"run": "lemon-fleet", "time": stamp(at + 5),
                                  "checkpoint_saved": {"step": step, "blocking_seconds": 5}})
            if a < len(blamed):
                lines.append({"run": "lemon-fleet", "time": stamp(start + 86400 - 300),
                              "interruption": {"cause": "node", "nodes": [blamed[a]]}})
        lemon_log = os.path.join(work, "lemon.jsonl")
        open(lemon_log, "w").write("\n".join(json.dumps(l) for l in lines) + "\n")
        subprocess.run(cli + ["replay", lemon_log, "--no-progress"], check=True, stdout=subprocess.DEVNULL)

        base = f"http://127.0.0.1:{http_port}"
        dom, console, shot = browse(f"{base}/runs/dense-70b-10t", "run-page", artifacts, 3100)
        if console:
            failures.append(f"run page console: {console[:3]}")
        for chart in ("tokens", "finish", "budget", "time-history", "throughput"):
            m = re.search(rf'<figure id="{chart}">(.*?)</figure>', dom, re.S)
            if not m:
                failures.append(f"chart {chart}: missing")
                continue
            body = m.group(1)
            drawn = [d for d in re.findall(r'<path class="(?:series|area)" d="([^"]*)"', body) if d.count("L") >= 1]
            if not drawn:
                failures.append(f"chart {chart}: no path through two points")
            elif chart == "tokens" and max(d.count("L") for d in drawn) < 100:
                failures.append(f"chart tokens: the longest line has {max(d.count('L') for d in drawn) + 1} points")
            ticks = re.findall(r'<text class="tick x"[^>]*>([^<]*)</text>', body)
            if not ticks or not all(re.fullmatch(r"\d{4}-\d{2}-\d{2}|\d{2}-\d{2} \d{2}:\d{2}", t) for t in ticks):
                failures.append(f"chart {chart}: time ticks {ticks}")
            if "time (UTC)" not in body or 'class="label y"' not in body:
                failures.append(f"chart {chart}: axis labels")
            print(f"ok   chart {chart}: {len(drawn)} paths, ticks {ticks[0]} .. {ticks[-1]}" if drawn and ticks else
                  f"FAIL chart {chart}")
        # The rack that goes bad at 40% takes a tenth off the throughput for good: a slow stretch
        # marked on the throughput chart, with its size and cost in its tooltip, and its own
        # pace's line beside the plan's.
        m = re.search(r'<figure id="throughput">(.*?)</figure>', dom, re.S)
        bands = re.findall(r'<path class="area" d="[^"]*" fill="[^"]*" fill-opacity="0.30"><title>([^<]*)</title>',
                           m.group(1)) if m else []
        slower = [b for b in bands if re.match(r"\d+\.\d% slower, \d{4}-\d{2}-\d{2} .* cost \d", b)]
        pct = [float(b.split("%")[0]) for b in slower]
        if not slower or not any(8 <= p <= 14 for p in pct) or "own pace" not in m.group(1):
            failures.append(f"throughput chart: slow stretches {bands}")
        else:
            print(f"ok   throughput chart: {len(slower)} slow stretch(es) marked: {slower[-1]}")
        summary = re.search(r"<td>slowdown</td><td>(.*?)</td>", dom, re.S)
        if not summary or "slower" not in summary.group(1):
            failures.append(f"summary: slowdown row {summary.group(1) if summary else None}")
        m = re.search(r'<figure id="interruptions-timeline">(.*?)</figure>', dom, re.S)
        marks = len(re.findall(r'class="mark"', m.group(1))) if m else 0
        causes = re.findall(r'<text class="tick y"[^>]*>([^<]*)</text>', m.group(1)) if m else []
        if marks < 50 or not {"gpu", "nccl"} <= set(causes):
            failures.append(f"interruptions timeline: {marks} marks, causes {causes}")
        else:
            print(f"ok   interruptions timeline: {marks} marks on rows {causes}")
        width, height, rows = png_pixels(shot, 1300)  # the summary and the first two charts
        blue = sum(1 for row in rows for px in row if px == (0, 114, 178))
        colours = len({px for row in rows[::4] for px in row[::4]})
        print(f"ok   screenshot {width}x{height}: {blue} pixels of the palette's blue in its top {len(rows)} rows, "
              f"{colours} colours sampled")
        if blue < 500 or colours < 20:
            failures.append(f"screenshot: {blue} blue pixels, {colours} colours")

        m = re.search(r'<figure id="nodes">(.*?)</figure>', dom, re.S)
        if not m or "no node attribution" not in m.group(1):
            failures.append(f"flagship's node panel: {m.group(1) if m else None}")
        else:
            print("ok   node panel of a run without nodes: says what attribution needs")

        dom, console, _ = browse(f"{base}/runs/lemon-fleet", "run-page-nodes", artifacts, 3400)
        if console:
            failures.append(f"lemon page console: {console[:3]}")
        m = re.search(r'<figure id="nodes">(.*?)</figure>', dom, re.S)
        rows = re.findall(r'<tr class="suspect"><td>([^<]*)</td><td>([^<]*)</td><td>(\d+)</td>.*?<td>([^<]*)</td></tr>',
                          m.group(1), re.S) if m else []
        exclude = re.search(r'<code id="exclude">([^<]*)</code>', m.group(1)) if m else None
        if [r[:3] for r in rows] != [("n07", "failures", "5")] or "5 failures in" not in rows[0][3] or \
                not exclude or exclude.group(1) != "--exclude=n07" or "16 nodes held or named" not in m.group(1):
            failures.append(f"node panel: rows {rows}, exclude {exclude.group(1) if exclude else None}")
        else:
            print(f"ok   node panel: n07 a suspect ({rows[0][3][:60]}...), drain {exclude.group(1)}")
        summary = re.search(r"<td>nodes</td><td>(.*?)</td>", dom, re.S)
        if not summary or "SUSPECT n07" not in summary.group(1):
            failures.append(f"summary: nodes row {summary.group(1) if summary else None}")

        dom, console, _ = browse(f"{base}/runs/xss", "run-page-hostile-plan-name", artifacts, 1200)
        if re.search(r"<script", dom, re.I):
            failures.append("the plan's name became a script element")
        if "&lt;script&gt;document.title=" not in dom:
            failures.append("the plan's name is not shown as text")
        if re.search(r"<title>[^<]*pwned", dom):
            failures.append("the page's title was changed by the plan's name")
        if console:
            failures.append(f"hostile page console: {console[:3]}")

        dom, console, _ = browse(f"{base}/runs/", "runs-list", artifacts, 600)
        for run in ("dense-70b-10t", "xss"):
            if f'href="{run}"' not in dom:
                failures.append(f"the list does not link {run}")
        for f in failures:
            print(f"FAIL {f}")
        print(f"artifacts in {artifacts}")
        return 1 if failures else 0
    finally:
        if daemon:
            stop([daemon])
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
