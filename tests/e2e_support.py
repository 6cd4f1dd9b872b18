"""Shared by the end-to-end scripts (tests/prometheus/*_test.py, tests/browser/*_test.py):
free loopback ports, bounded waits, flightpland started on free ports, Prometheus queries."""
import json
import re
import socket
import subprocess
import time
import urllib.parse
import urllib.request

START = time.monotonic()
_deadline = START + 120


def set_deadline(seconds):
    """Every wait gives up this long after the script started."""
    global _deadline
    _deadline = START + seconds


def deadline():
    return _deadline


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what, check, interval=0.2, timeout=30):
    """check()'s first true value, polled; SystemExit naming `what` past the timeout or deadline."""
    give_up = min(_deadline, time.monotonic() + timeout)
    while time.monotonic() < give_up:
        result = check()
        if result:
            return result
        time.sleep(interval)
    raise SystemExit(f"FAIL: timed out waiting for {what}")


def get_json(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.load(r)


def http_ok(url):
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


def query(port, expr):
    """An instant query against Prometheus on 127.0.0.1:port: the result list."""
    body = get_json(f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr}))
    if body.get("status") != "success":
        raise SystemExit(f"FAIL: {expr}: {body}")
    return body["data"]["result"]


def start_daemon(daemon_bin, work, extra=()):
    """flightpland on free loopback ports (its log in work/daemon.log): (process, grpc_port, http_port)."""
    log = open(f"{work}/daemon.log", "w+")
    proc = subprocess.Popen([daemon_bin, "--db", f"{work}/f.db", "--listen", "127.0.0.1:0", "--metrics",
                             "127.0.0.1:0", *extra], stdout=log, stderr=subprocess.STDOUT)

    def ports():
        log.seek(0)
        m = re.search(r"gRPC on 127\.0\.0\.1:(\d+), metrics on http://127\.0\.0\.1:(\d+)", log.read())
        return m and (int(m.group(1)), int(m.group(2)))

    grpc_port, http_port = wait_for("flightpland to listen", ports)
    return proc, grpc_port, http_port


def start_prometheus(work, metrics_port, rules, alertmanager_port=None):
    """Debian's Prometheus on a free port, scraping flightpland every second with `rules`
    (and sending alerts to Alertmanager on alertmanager_port): (process, port)."""
    port = free_port()
    alerting = "" if alertmanager_port is None else f"""alerting:
  alertmanagers:
    - static_configs:
        - targets: ["127.0.0.1:{alertmanager_port}"]
"""
    with open(f"{work}/prometheus.yml", "w") as f:
        f.write(f"""global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - {rules}
{alerting}scrape_configs:
  - job_name: flightpland
    static_configs:
      - targets: ["127.0.0.1:{metrics_port}"]
""")
    log = open(f"{work}/prometheus.log", "w")
    proc = subprocess.Popen(["prometheus", f"--config.file={work}/prometheus.yml", f"--storage.tsdb.path={work}/tsdb",
                             f"--web.listen-address=127.0.0.1:{port}"], stdout=log, stderr=subprocess.STDOUT)
    return proc, port


def stop(procs):
    """SIGTERM, then SIGKILL whatever has not exited after 10 s."""
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
