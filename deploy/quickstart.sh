#!/usr/bin/env bash
# The quickstart: flightpland on its default database, the flagship plan's run fed a
# simulated run (twice the plan's failures) at accelerated speed, Prometheus with the
# project's rules and Alertmanager with the project's routing if they are installed (the
# example webhook receiver printing the notifications here), and the run's status as it
# goes. Ctrl-C stops everything it started.
#
# Knobs (environment): FLIGHTPLAN_QUICKSTART_SECONDS (feed time, default 90),
# FLIGHTPLAN_QUICKSTART_EXIT=1 (stop once fed instead of waiting for Ctrl-C),
# FLIGHTPLAN_DB (default: flightpland's own), FLIGHTPLAN_LISTEN (127.0.0.1:50051),
# FLIGHTPLAN_METRICS (127.0.0.1:9464), FLIGHTPLAN_PROMETHEUS (127.0.0.1:9090),
# FLIGHTPLAN_ALERTMANAGER (127.0.0.1:9093), FLIGHTPLAN_WEBHOOK (127.0.0.1:9099), BUILD (build).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
DAEMON=$BUILD/daemon/flightpland
CLI=$BUILD/cli/flightplan
PLAN=deploy/examples/dense-70b-10t.yaml
FEED_SECONDS=${FLIGHTPLAN_QUICKSTART_SECONDS:-90}
LISTEN=${FLIGHTPLAN_LISTEN:-127.0.0.1:50051}
METRICS=${FLIGHTPLAN_METRICS:-127.0.0.1:9464}
PROM=${FLIGHTPLAN_PROMETHEUS:-127.0.0.1:9090}
ALERTMANAGER=${FLIGHTPLAN_ALERTMANAGER-127.0.0.1:9093}  # empty: no Alertmanager
WEBHOOK=${FLIGHTPLAN_WEBHOOK:-127.0.0.1:9099}
for bin in "$DAEMON" "$CLI"; do
  [ -x "$bin" ] || { echo "quickstart: $bin is not built (cmake --build $BUILD)" >&2; exit 2; }
done

WORK=$(mktemp -d -t flightplan-quickstart-XXXXXX)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$WORK"
  echo "quickstart: stopped everything it started"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

db_args=()
[ -n "${FLIGHTPLAN_DB:-}" ] && db_args=(--db "$FLIGHTPLAN_DB")
# The event clock: the simulated run's time moves as fast as it is fed.
"$DAEMON" "${db_args[@]}" --listen "$LISTEN" --metrics "$METRICS" --clock events \
  > "$WORK/daemon.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do
  grep -q "serving gRPC" "$WORK/daemon.log" && break
  kill -0 "${pids[0]}" 2>/dev/null || { cat "$WORK/daemon.log" >&2; exit 1; }
  sleep 0.1
done
cat "$WORK/daemon.log"
SERVER=$(sed -n 's/.*serving gRPC on \([0-9.]*:[0-9]*\).*/\1/p' "$WORK/daemon.log")
METRICS_URL=$(sed -n 's/.*metrics on \(http[^ ,]*\).*/\1/p' "$WORK/daemon.log")
export FLIGHTPLAN_SERVER=$SERVER

RUN="dense-70b-10t-$(date +%Y%m%d-%H%M%S)"
"$CLI" create "$PLAN" --run "$RUN"
"$CLI" simulate "$PLAN" --run "$RUN" --seed "$RANDOM" --failure-rate-factor 2 > "$WORK/events.jsonl"

alerting=""
if [ -z "$ALERTMANAGER" ]; then
  :  # FLIGHTPLAN_ALERTMANAGER empty: none wanted
elif command -v prometheus > /dev/null && command -v prometheus-alertmanager > /dev/null; then
  # Alertmanager with the project's routing; its webhooks go to the example receiver, which
  # prints each notification here.
  sed "s|http://127.0.0.1:9099|http://$WEBHOOK|" deploy/alertmanager/alertmanager.yml > "$WORK/alertmanager.yml"
  /usr/bin/python3 deploy/alertmanager/webhook_receiver.py --host "${WEBHOOK%:*}" --port "${WEBHOOK##*:}" \
    --prefix "quickstart: alert: " 2> "$WORK/webhook.log" &
  pids+=($!)
  prometheus-alertmanager --config.file="$WORK/alertmanager.yml" --storage.path="$WORK/alertmanager" \
    --web.listen-address="$ALERTMANAGER" --cluster.listen-address= > "$WORK/alertmanager.log" 2>&1 &
  pids+=($!)
  alerting="alerting:
  alertmanagers:
    - static_configs:
        - targets: [\"$ALERTMANAGER\"]"
  am_up=""
  for _ in $(seq 50); do
    if curl -sf "http://$ALERTMANAGER/-/ready" > /dev/null 2>&1; then am_up=1; break; fi
    kill -0 "${pids[-1]}" 2>/dev/null || break
    sleep 0.1
  done
  if [ -n "$am_up" ]; then
    echo "quickstart: Alertmanager with the project's routing on http://$ALERTMANAGER; notifications print here"
  else
    echo "quickstart: Alertmanager did not start on $ALERTMANAGER (another one there? see $WORK/alertmanager.log)"
  fi
elif command -v prometheus > /dev/null; then
  echo "quickstart: prometheus-alertmanager is not installed (deploy/install-deps.sh installs it); alerts stay in Prometheus"
fi
if command -v prometheus > /dev/null; then
  cat > "$WORK/prometheus.yml" <<YAML
global:
  scrape_interval: 5s
  evaluation_interval: 5s
rule_files:
  - $PWD/deploy/prometheus/rules.yml
$alerting
scrape_configs:
  - job_name: flightpland
    static_configs:
      - targets: ["${METRICS_URL#http://}"]
YAML
  sed -i 's|/metrics"\]|"]|' "$WORK/prometheus.yml"
  prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/tsdb" \
    --web.listen-address="$PROM" > "$WORK/prometheus.log" 2>&1 &
  pids+=($!)
  echo "quickstart: Prometheus with the project's rules on http://$PROM (alerts: http://$PROM/alerts)"
else
  echo "quickstart: prometheus is not installed (deploy/install-deps.sh installs it); skipping it"
fi
echo "quickstart: metrics on $METRICS_URL; the run's page on ${METRICS_URL%/metrics}/runs/$RUN; Grafana: import deploy/grafana/flightplan-run.json"
echo "quickstart: feeding run $RUN over ${FEED_SECONDS} s; status every 10 s"

total=$(wc -l < "$WORK/events.jsonl")
chunks=$(( FEED_SECONDS * 2 ))
per=$(( (total + chunks - 1) / chunks ))
split -l "$per" -d -a 4 "$WORK/events.jsonl" "$WORK/chunk."
last_status=$(( SECONDS - 8 ))  # the first status after a couple of seconds
for chunk in "$WORK"/chunk.*; do
  "$CLI" replay "$chunk" --no-progress > /dev/null || true
  sleep 0.5
  if [ $(( SECONDS - last_status )) -ge 10 ]; then
    last_status=$SECONDS
    echo "---- $(date +%H:%M:%S) flightplan status $RUN"
    "$CLI" status "$RUN" | sed -n '1,2p;/interruptions/,$p'
  fi
done
echo "---- fed the whole run:"
"$CLI" status "$RUN"
if [ "${FLIGHTPLAN_QUICKSTART_EXIT:-0}" = 1 ]; then exit 0; fi
echo "quickstart: the daemon, Prometheus and Alertmanager keep running; Ctrl-C stops them"
wait
