"""The Tracker: enqueue events in microseconds, deliver them in the background."""

import collections
import contextlib
import json
import logging
import os
import re
import signal
import sys
import threading
import time
import uuid

import grpc
from google.protobuf import json_format, timestamp_pb2

from flightplan.v1 import event_pb2, tracker_pb2, tracker_pb2_grpc
from flightplan_client.hostlist import slurm_nodes

log = logging.getLogger("flightplan_client")

# Codes worth retrying: the daemon is away, busy, or asked for the batch again in order.
_RETRY = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED,
          grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.ABORTED}
# A batch over the daemon's --max-batch-events: INVALID_ARGUMENT with the limit in this
# trailing metadata (the message says it too, for people: it is not parsed).
_BATCH_LIMIT = "flightplan-max-batch-events"


def _batch_limit(err):
    """The daemon's batch limit from an oversized batch's refusal, or 0."""
    for key, value in err.trailing_metadata() or ():
        if key == _BATCH_LIMIT:
            try:
                return int(value)
            except ValueError:
                return 0
    return 0


class Tracker:
    """Reports one run's events to flightpland without ever slowing or breaking training.

    Thread-safe: any thread may call the event methods. Only rank 0 reports (from the RANK
    environment variable) unless all_ranks=True.
    """

    def __init__(self, run, server=None, spool_dir=None, attempt=None, batch_size=500,
                 flush_seconds=1.0, max_queue=100_000, spool_max_bytes=64 << 20,
                 call_timeout_seconds=5.0, all_ranks=False, token=None, tls_ca=None,
                 check_run=False):
        """`check_run=True` asks the daemon for the run before anything is sent and raises
        UnknownRunError (naming the runs it has, the nearest first) when it has no such run:
        a typo'd name fails at the start of the job, not hours later in a rejected file. A
        daemon that cannot be reached is not checked (the events spool as usual)."""
        self.run = run
        self.server = server or os.environ.get("FLIGHTPLAN_SERVER", "127.0.0.1:50051")
        token = token or os.environ.get("FLIGHTPLAN_TOKEN")
        self._metadata = (("authorization", f"Bearer {token}"),) if token else ()
        tls_ca = tls_ca or os.environ.get("FLIGHTPLAN_TLS_CA")
        self._tls_roots = open(tls_ca, "rb").read() if tls_ca else None
        self.enabled = all_ranks or os.environ.get("RANK", "0") == "0"
        self.attempt = attempt or 0
        self._session = uuid.uuid4().hex[:12]
        self._seq = 0
        self._queue = collections.deque()
        self._max_queue = max_queue
        self._batch_size = batch_size
        self._flush_seconds = flush_seconds
        self._timeout = call_timeout_seconds
        self._spool_path = os.path.join(spool_dir, f"{run}.jsonl") if spool_dir else None
        self._spool_max_bytes = spool_max_bytes
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._idle = threading.Event()
        self._idle.set()
        self.sent = 0
        self.dropped = 0
        # What the daemon flagged in delivered events (tokens that do not grow, a rate no
        # fleet reaches), each naming the step; logged as warnings as they come.
        self.flags = []
        # Events the daemon refused for good: kept in <spool_dir>/<run>.rejected.jsonl (with
        # the reason) to fix and `flightplan replay`, never silently lost.
        self.rejected = 0
        self._rejected_path = os.path.join(spool_dir, f"{run}.rejected.jsonl") if spool_dir else None
        self._last_launch = 0  # the newest attempt number this client resolved
        self._channel = None
        self._stub = None
        self._thread = None
        if self.enabled and check_run:
            self._check_run()
        if self.enabled:
            if self._spool_path:
                os.makedirs(spool_dir, exist_ok=True)
            self._thread = threading.Thread(target=self._loop, name="flightplan-client", daemon=True)
            self._thread.start()

    # ---- events: each returns in microseconds ------------------------------------------
    def job_started(self, attempt=None, restored_step=0, launch=None, nodes=None, gpus=None):
        """A launch. Without `attempt`, the daemon's run says: the attempt it already has for
        this launch (`flightplan slurm` reported it first), else one past its latest attempt
        (asked in the background, before the launch is sent), so a job that does not know
        how many came before it continues the run; the events after it carry no attempt
        and the daemon places them by time.

        `launch` names the launch as the scheduler does; inside a Slurm job it defaults to
        "slurm:SLURM_JOB_ID.SLURM_RESTART_COUNT", as `flightplan slurm` names it, so that the
        two reports of this launch are one attempt (docs/contract.md §4).

        `nodes`: the launch's hosts in rank order (rank r on nodes[r // GPUs per node]), so a
        failure or a slow rank can be blamed on its machine. Inside a Slurm job they default
        to SLURM_JOB_NODELIST expanded; elsewhere pass `flightplan_client.torch_nodes()`
        (a collective: call it on every rank). `gpus`: the GPUs this launch trains on, when
        not the plan's fleet."""
        self.attempt = attempt or 0
        body = {"attempt": attempt or 0, "restored_step": restored_step}
        launch = launch if launch is not None else slurm_launch()
        if launch:
            body["launch"] = launch
        nodes = list(nodes) if nodes is not None else slurm_nodes()
        if nodes:
            body["nodes"] = [str(n) for n in nodes]
        if gpus is not None:
            if int(gpus) < 1:
                raise ValueError(f"gpus {gpus}: a launch trains on 1 GPU or more (None: the plan's fleet)")
            body["gpus"] = int(gpus)
        self._enqueue("job_started", body)

    def step(self, step, tokens, rank_spread=None, slowest_rank=None):
        """Training reached `step` with `tokens` in all. `rank_spread`, when the loop measures
        it: the slowest rank's compute time over the fastest's, minus 1, since the last report
        (0.05: one rank 5% slower), a straggler's signature; `slowest_rank`, that rank's global
        rank, which the daemon places on the launch's nodes (a slow stretch then names its
        node)."""
        if slowest_rank is not None and int(slowest_rank) < 0:
            raise ValueError(f"slowest_rank {slowest_rank}: a global rank is 0 or more")
        self._last_step = max(getattr(self, "_last_step", -1), int(step))
        body = {"step": int(step), "tokens": int(tokens)}
        if rank_spread:
            body["rank_spread"] = float(rank_spread)
        if slowest_rank is not None:
            body["slowest_rank"] = int(slowest_rank)
        self._enqueue("steps", body, key=f"s{int(step)}")

    def checkpoint_saved(self, step, blocking_seconds=0.0, tokens=None):
        """A save of `step`. A loop that reports every N steps and saves in between (at an
        exit) gives the step's `tokens`: the step is reported first. Without them the daemon
        infers them from the tokens per step, and says so."""
        if tokens is not None and int(step) > getattr(self, "_last_step", -1):
            self.step(step, tokens)
        self._enqueue("checkpoint_saved", {"step": int(step), "blocking_seconds": float(blocking_seconds)},
                      key=f"c{int(step)}")

    def interruption(self, cause, planned=False, detail="", nodes=None):
        """The job stopped: `cause` a word of the vocabulary (docs/contract.md §4), `nodes`
        the hosts the cause names when the training knows them (an Xid's host)."""
        body = {"cause": cause, "planned": bool(planned), "detail": str(detail)[:4096]}
        if nodes:
            body["nodes"] = [str(n) for n in nodes]
        self._enqueue("interruption", body)

    def run_finished(self):
        self._enqueue("run_finished", {})

    def span_started(self, kind, expected_seconds=None):
        """Deliberate work that is not training began (an evaluation, a data-corruption
        check, a profile): its time is `custom`, not productive, and not charged to the
        failure budget. Silence within `expected_seconds` (default: the daemon's 1,800 s) is
        not a stall; past it, it is. Prefer `with tracker.span(...)`."""
        _check_span_kind(kind)
        body = {"kind": kind}
        if expected_seconds is not None:
            if not expected_seconds >= 0:
                raise ValueError(f"expected_seconds {expected_seconds}: seconds, 0 or more")
            body["expected_seconds"] = float(expected_seconds)
        self._enqueue("span_started", body)

    def span_ended(self, kind):
        _check_span_kind(kind)
        self._enqueue("span_ended", {"kind": kind})

    @contextlib.contextmanager
    def span(self, kind, expected_seconds=None):
        """`with tracker.span("eval", expected_seconds=600): evaluate()`: the block's time is
        custom time of that kind. An exception in the block still ends the span."""
        self.span_started(kind, expected_seconds)
        try:
            yield self
        finally:
            self.span_ended(kind)

    def flush(self, timeout=10.0):
        """Waits (up to timeout) until everything queued was delivered or spooled."""
        if not self.enabled:
            return True
        self._idle.clear()
        self._wake.set()
        return self._idle.wait(timeout)

    def close(self, timeout=10.0):
        """Delivers what it can within timeout, spools the rest, and stops the thread."""
        if not self.enabled or self._thread is None:
            return
        self.flush(timeout)
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout)
        with self._lock:
            left = list(self._queue)
            self._queue.clear()
        if left:
            self._spool(left)
        if self._channel is not None:
            self._channel.close()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None and exc_type not in (KeyboardInterrupt, SystemExit):
            self.interruption("software", planned=False, detail=f"{exc_type.__name__}: {exc}")
        self.close()
        return False

    # ---- optional hooks ----------------------------------------------------------------
    def install_hooks(self, exceptions=True, sigterm=True):
        """Reports an uncaught exception as an unplanned `software` interruption and SIGTERM
        (the scheduler's preemption) as a planned one; previous handlers still run."""
        if not self.enabled:
            return
        if exceptions:
            previous = sys.excepthook

            def hook(exc_type, exc, tb):
                try:
                    self.interruption("software", detail=f"{exc_type.__name__}: {exc}")
                    self.close(timeout=5)
                finally:
                    previous(exc_type, exc, tb)

            sys.excepthook = hook
        if sigterm and threading.current_thread() is threading.main_thread():
            previous_handler = signal.getsignal(signal.SIGTERM)

            def on_term(signum, frame):
                self.interruption("preemption", planned=True, detail="SIGTERM")
                self.close(timeout=5)
                if callable(previous_handler):
                    previous_handler(signum, frame)
                else:
                    signal.signal(signal.SIGTERM, signal.SIG_DFL)
                    os.kill(os.getpid(), signal.SIGTERM)

            signal.signal(signal.SIGTERM, on_term)

    # ---- internals ----------------------------------------------------------------------
    def _check_run(self):
        stub = self._connect()
        try:
            stub.GetRun(tracker_pb2.GetRunRequest(run=self.run), timeout=self._timeout, metadata=self._metadata)
            return
        except grpc.RpcError as err:
            if err.code() != grpc.StatusCode.NOT_FOUND:
                log.warning("flightplan_client: cannot check run %r (%s: %s); events spool until the daemon answers",
                            self.run, err.code().name, err.details())
                return
        try:
            runs = [r.run for r in stub.ListRuns(tracker_pb2.ListRunsRequest(), timeout=self._timeout,
                                                 metadata=self._metadata).runs]
        except grpc.RpcError:
            runs = []
        raise UnknownRunError(self.run, self.server, runs)

    def _enqueue(self, kind, body, key=None):
        if not self.enabled:
            return
        try:
            now = time.time_ns()
            with self._lock:
                self._seq += 1
                event = {
                    "run": self.run,
                    "time": _rfc3339(now),
                    # Stable across retries and spooling: a resend is recognised as a duplicate.
                    "id": f"{self._session}-{self._seq}",
                    kind: body,
                }
                if kind != "job_started" and self.attempt:
                    event["attempt"] = self.attempt
                if len(self._queue) >= self._max_queue:
                    self._thin(self._queue)
                self._queue.append(event)
                full = len(self._queue) >= self._batch_size
            if full:
                self._wake.set()
        except Exception:  # never into the training loop
            log.exception("flightplan_client: could not enqueue an event")

    @staticmethod
    def _thin(events):
        """Drops every other step event, oldest first; never interruptions or checkpoints."""
        steps = [i for i, e in enumerate(events) if "steps" in e]
        for i in reversed(steps[: len(steps) // 2 : 2] or steps[:1]):
            del events[i]

    def _loop(self):
        backoff = 0.1
        while True:
            self._wake.wait(self._flush_seconds)
            self._wake.clear()
            try:
                delivered = self._deliver()
                backoff = 0.1
            except _Unreachable:
                delivered = False
                with self._lock:
                    pending = list(self._queue)
                    self._queue.clear()
                if pending:
                    self._spool(pending)
                time.sleep(min(backoff, self._flush_seconds))
                backoff = min(backoff * 2, 5.0)
            except Exception:
                log.exception("flightplan_client: delivery failed")
                delivered = False
            with self._lock:
                empty = not self._queue
            if empty and (delivered or not self._spool_pending()):
                self._idle.set()
            elif empty and self._stop.is_set():
                self._idle.set()
            if self._stop.is_set() and empty:
                return

    def _connect(self):
        if self._stub is None:
            # Reconnect quickly once the daemon is back (gRPC's default backoff reaches 2 min).
            options = [
                ("grpc.initial_reconnect_backoff_ms", 200),
                ("grpc.min_reconnect_backoff_ms", 200),
                ("grpc.max_reconnect_backoff_ms", 2000),
            ]
            if self._tls_roots:
                credentials = grpc.ssl_channel_credentials(root_certificates=self._tls_roots)
                self._channel = grpc.secure_channel(self.server, credentials, options=options)
            else:
                self._channel = grpc.insecure_channel(self.server, options=options)
            self._stub = tracker_pb2_grpc.TrackerStub(self._channel)
        return self._stub

    def _number_launches(self, stub, events):
        """Gives each launch sent without an attempt its number from the daemon's run: the
        attempt launched at that very instant (this launch, sent before), else one past the
        run's latest. The number is written into the event, so a resend is the same event."""
        for e in events:
            started = e.get("job_started")
            if started is None or started.get("attempt"):
                continue
            try:
                info = stub.GetRun(tracker_pb2.GetRunRequest(run=self.run), timeout=self._timeout,
                                   metadata=self._metadata)
            except grpc.RpcError as err:
                if err.code() in _RETRY:
                    raise _Unreachable(err.details()) from None
                raise _Refused(err.code().name, err.details()) from None  # no such run: the batch is refused
            number = max(info.attempt, self._last_launch) + 1
            at = timestamp_pb2.Timestamp()
            at.FromJsonString(e["time"])
            for a in info.attempts:
                if (a.started.seconds, a.started.nanos) == (at.seconds, at.nanos):
                    number = a.attempt
            for a in info.attempts:  # the scheduler's report of this launch came first
                if started.get("launch") and a.launch == started["launch"]:
                    number = a.attempt
            started["attempt"] = number
            self._last_launch = max(self._last_launch, number)
            if not self.attempt:
                self.attempt = number

    def _send(self, events):
        """Sends one batch; returns True, or raises _Unreachable. A batch over the daemon's
        limit is split to it; events refused for good are kept in the rejected file."""
        stub = self._connect()
        try:
            self._number_launches(stub, events)
        except _Refused as refused:
            # Every event of the batch is kept, with the reason (an unknown run, usually).
            for e in events:
                self._reject(e, refused.code, refused.reason)
            return True
        if len(events) > self._batch_size:
            for i in range(0, len(events), self._batch_size):
                self._send(events[i:i + self._batch_size])
            return True
        batch = tracker_pb2.EventBatch()
        for e in events:
            json_format.ParseDict(e, batch.events.add())
        try:
            ack = stub.ReportBatch(batch, timeout=self._timeout, metadata=self._metadata)
            self.sent += len(events)
            for flag in ack.flags:  # accepted, but a person should look (named in the status too)
                self.flags.append(flag)
                log.warning("flightplan_client: the daemon flags %s", flag)
            return True
        except grpc.RpcError as err:
            if err.code() in _RETRY:
                raise _Unreachable(err.details()) from None
            limit = _batch_limit(err)
            if err.code() == grpc.StatusCode.INVALID_ARGUMENT and 0 < limit < len(events):
                self._batch_size = limit
                return self._send(events)
            if len(events) == 1:
                self._reject(events[0], err.code().name, err.details())
                return True
            for e in events:  # tell the bad event from the good ones
                self._send([e])
            return True

    def _reject(self, event, code, reason):
        self.rejected += 1
        log.warning("flightplan_client: event refused (%s): %s", code, reason)
        if not self._rejected_path:
            self.dropped += 1
            return
        try:
            with open(self._rejected_path, "a") as f:
                f.write(json.dumps({"event": event, "code": code, "reason": reason},
                                   separators=(",", ":")) + "\n")
        except OSError:
            self.dropped += 1
            log.exception("flightplan_client: cannot keep the refused event in %s", self._rejected_path)

    def _deliver(self):
        # The spool first: it holds older events.
        if self._spool_pending():
            self._replay_spool()
        while True:
            with self._lock:
                batch = [self._queue.popleft() for _ in range(min(self._batch_size, len(self._queue)))]
            if not batch:
                return True
            try:
                self._send(batch)
            except _Unreachable:
                with self._lock:
                    self._queue.extendleft(reversed(batch))
                raise
            except Exception as exc:  # a bug of ours or a reply we cannot read: keep the events
                log.exception("flightplan_client: delivery failed; %d events kept as refused", len(batch))
                for e in batch:
                    self._reject(e, "CLIENT_ERROR", f"{type(exc).__name__}: {exc}")

    def _spool_pending(self):
        return bool(self._spool_path) and os.path.exists(self._spool_path) and os.path.getsize(self._spool_path) > 0

    def _spool(self, events):
        if not self._spool_path:
            self.dropped += len(events)
            log.warning("flightplan_client: daemon unreachable and no spool_dir: %d events dropped", len(events))
            return
        try:
            with open(self._spool_path, "a") as f:
                for e in events:
                    f.write(json.dumps(e, separators=(",", ":")) + "\n")
            if os.path.getsize(self._spool_path) > self._spool_max_bytes:
                with open(self._spool_path) as f:
                    kept = [json.loads(line) for line in f if line.strip()]
                while kept and len(json.dumps(kept)) > self._spool_max_bytes * 0.8 and any("steps" in e for e in kept):
                    before = len(kept)
                    self._thin(kept)
                    self.dropped += before - len(kept)
                with open(self._spool_path + ".tmp", "w") as f:
                    for e in kept:
                        f.write(json.dumps(e, separators=(",", ":")) + "\n")
                os.replace(self._spool_path + ".tmp", self._spool_path)
        except OSError:
            log.exception("flightplan_client: cannot spool to %s", self._spool_path)

    def _replay_spool(self):
        with open(self._spool_path) as f:
            events = [json.loads(line) for line in f if line.strip()]
        for i in range(0, len(events), self._batch_size):
            try:
                self._send(events[i:i + self._batch_size])
            except _Unreachable:
                # Keep what was not sent, in order.
                with open(self._spool_path + ".tmp", "w") as f:
                    for e in events[i:]:
                        f.write(json.dumps(e, separators=(",", ":")) + "\n")
                os.replace(self._spool_path + ".tmp", self._spool_path)
                raise
        os.remove(self._spool_path)


_SPAN_KIND = re.compile(r"[a-z0-9_-]{1,32}")


def _check_span_kind(kind):
    if not isinstance(kind, str) or not _SPAN_KIND.fullmatch(kind):
        raise ValueError(f"span kind {kind!r}: 1 to 32 of a-z, 0-9, '_' and '-' (eval, sdc_check, profiling)")


class _Unreachable(Exception):
    pass


class _Refused(Exception):
    """A batch refused for good before it was sent (its launch could not be numbered)."""

    def __init__(self, code, reason):
        super().__init__(reason)
        self.code, self.reason = code, reason


class UnknownRunError(LookupError):
    """The daemon has no run of that name (Tracker(check_run=True))."""

    def __init__(self, run, server, runs):
        self.run, self.server, self.runs = run, server, list(runs)
        near = sorted(self.runs, key=lambda r: (r.lower() != run.lower(), _distance(r.lower(), run.lower())))
        known = ", ".join(repr(r) for r in near[:5]) if near else "none"
        super().__init__(f"flightpland at {server} has no run {run!r} (runs: {known}); "
                         f"create it first (flightplan create PLAN.yaml --run {run}) or fix the name")


def _distance(a, b):
    """Levenshtein distance, for the nearest run names."""
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, cb in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (ca != cb))
    return row[-1]


def slurm_launch(environ=None):
    """The launch's name inside a Slurm job, as `flightplan slurm` names it
    ("slurm:JOB.RESTARTS", from SLURM_JOB_ID and SLURM_RESTART_COUNT, which Slurm sets only
    once the job has been restarted); None outside one."""
    environ = os.environ if environ is None else environ
    job = environ.get("SLURM_JOB_ID")
    if not job:
        return None
    return f"slurm:{job}.{int(environ.get('SLURM_RESTART_COUNT') or 0)}"


def _rfc3339(ns):
    seconds, frac = divmod(ns, 1_000_000_000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{frac:09d}Z"
