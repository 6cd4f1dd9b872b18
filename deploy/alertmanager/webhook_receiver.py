#!/usr/bin/python3
"""An example Alertmanager webhook receiver: prints each notification it gets, one line per
alert (receiver, status, severity, run, alert, summary), and answers 200.

    /usr/bin/python3 deploy/alertmanager/webhook_receiver.py [--port 9099] [--prefix TEXT]

Alertmanager posts its webhook payload (version 4): {"receiver", "status", "alerts": [{"status",
"labels", "annotations", "startsAt", ...}], "groupLabels", "commonLabels", ...}. Replace
this with a bridge to your pager or ticket system, or use Alertmanager's own integrations.
"""
import argparse
import http.server
import json
import sys


PREFIX = ""


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        try:
            note = json.loads(body)
        except ValueError:
            self.send_response(400)
            self.end_headers()
            return
        for alert in note.get("alerts", []):
            labels, annotations = alert.get("labels", {}), alert.get("annotations", {})
            print(f"{PREFIX}{self.path.strip('/') or note.get('receiver')}: {alert.get('status')} "
                  f"{labels.get('severity', '-')} run={labels.get('run', '-')} {labels.get('alertname')}: "
                  f"{annotations.get('summary', '')}", flush=True)
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=9099)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--prefix", default="", help="printed before each line")
    args = parser.parse_args()
    global PREFIX
    PREFIX = args.prefix
    server = http.server.ThreadingHTTPServer((args.host, args.port), Handler)
    print(f"webhook receiver on http://{args.host}:{args.port}/", file=sys.stderr, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
