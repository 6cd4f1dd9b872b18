#!/usr/bin/python3
"""Writes bloom-176b.events.jsonl: BLOOM-176B's pre-training (BigScience tr11-176B-ml,
11 March - 5 July 2022) as flightplan events (docs/contract.md section 4), from the team's own
records. FACTS.md beside this file quotes every fact with its file and commit and lists
every inference; each constant below says which it is.

    /usr/bin/python3 tests/timelines/bloom-176b/make_timeline.py          # writes the log
    /usr/bin/python3 tests/timelines/bloom-176b/make_timeline.py --check  # also prints anchors
    /usr/bin/python3 tests/timelines/bloom-176b/make_timeline.py --out F  # writes F instead

Standard library only, no randomness: the same file every time.

Sources (git mirror of github.com/bigscience-workshop/bigscience at commit
9e64edec2ad1fb9263bf39ba616a84ff64b4d947, files under train/tr11-176B-ml/):
  [CHR]  chronicles.md            [RDM]  README.md
  [SLM]  tr11-176B-ml.slurm       [BKP]  backup-schedule.md
  [PRQ]  chronicles-prequel.md
and git commit times of those files (git log), cited by short hash.

How the log is built. A small simulator replays Megatron-DeepSpeed's loop as the slurm
script configures it: one iteration at a time at the documented seconds per iteration, the
batch ramp-up exactly as Megatron's RampupBatchsizeNumMicroBatches computes it, an eval
every 1,000 iterations, a blocking save every SAVE_INTERVAL iterations, and a SLURM job that
saves and exits after --exit-duration-in-mins. The documented incidents are played at their
documented steps and times; where the records give only a day, or nothing, the value used
is an inference, named INFERENCE below and listed in FACTS.md. Where dated records
bracket a stretch of the run, the stretch is fitted between them (calibrate(), each fit
named): in the first ten days by scaling the ramp-up's seconds per iteration and fitting
the full-batch seconds per iteration up to the 21 March crash; after that by lengthening
the downtime of inferred (undocumented) GPU crashes, which the chronicles say happened
"every week or so". --check prints the fitted values and how the result lands against
every dated record.
"""

import datetime
import json
import os
import sys

UTC = datetime.timezone.utc


def at(iso):
    """Seconds since the epoch of an ISO 8601 time with its offset."""
    return datetime.datetime.fromisoformat(iso).astimezone(UTC).timestamp()


def fmt(t):
    return datetime.datetime.fromtimestamp(round(t), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


RUN = "bloom-176b"

# ---------------------------------------------------------------------------------------
# Facts: the job as the slurm script and the README configure it.
# ---------------------------------------------------------------------------------------
# [RDM] "The training started on March 11, 2022 11:42am PST" (PST = UTC-8 on 11 March;
# US daylight time began 13 March 2022).
LAUNCH = at("2022-03-11T11:42:00-08:00")  # = 19:42:00 UTC
SEQ_LEN = 2048                            # [SLM] SEQ_LEN=2048
GLOBAL_BATCH = 2048                       # [SLM] GLOBAL_BATCH_SIZE=2048
RAMP_START, RAMP_INCREMENT, RAMP_SAMPLES = 192, 16, 9_765_625  # [SLM] --rampup-batch-size 192 16 9_765_625
EVAL_INTERVAL = 1000                      # [SLM] --eval-interval 1000
# [CHR 2022-03-18] "A single eval iteration is about 12 min (1 iteration eval on each of 29
# datasets) - we perform it once every 1k iteration"
EVAL_SECONDS = 12 * 60
# [CHR 2022-03-18] "A checkpoint is saved in 40 secs, which is about 1/2 iteration duration."
SAVE_SECONDS = 40.0
# [SLM] --exit-duration-in-mins 5990 ("for 100h 5990"), #SBATCH --time 100:00:00; [RDM]
# "Dealing with 100h SLURM limit ... save a checkpoint just before SLURM kills the job".
# Megatron checks the time after every iteration and saves before it exits.
EXIT_SECONDS = 5990 * 60
# [SLM history] SAVE_INTERVAL=250 at launch (commit fee4dd3), 200 from commit a967332
# (2022-03-21 10:05 PDT, "more frequent checkpoints"), 100 from commit 1a829a2
# (2022-03-22 11:17 PDT, "save checkpoints more often"). Each change takes effect at the
# next launch (INFERENCE: SLURM reads the script when a job is submitted).
SAVE_INTERVAL_AT_LAUNCH = 250

# ---------------------------------------------------------------------------------------
# Seconds per iteration.
# ---------------------------------------------------------------------------------------
# Full batch, 48 nodes: [CHR 2022-03-18] "A single train iteration is about 105 secs" with
# the log line "iteration 12695/ 115311 | ... elapsed time per iteration (s): 105.22".
FULL_BATCH_SECONDS = 105.22
# [RDM "Important checkpoints", commit 00327f8] iteration 85376 "elapsed time per iteration
# (s): 104.70": used from step 85,376 on (INFERENCE: the late-run figure holds to the end).
LATE_STEP, LATE_SECONDS = 85376, 104.70
# The slow GPU: [CHR 2022-04-28] "the throughput dropped by 5% ... from 149 to 140 TFLOPs";
# its log shows iteration 42782 at 106.25 s, then 42783 at 110.17 s and 42784 at 111.14 s;
# [CHR 2022-04-30] shows iteration 45000 at 111.00 s. Mean of the three slow lines:
SLOW_FROM_STEP = 42783
SLOW_SECONDS = (110.17 + 111.14 + 111.00) / 3
# During the ramp-up. [PRQ "Batchsize Warmup", 2022-02-26, a 182B variant on the same
# 48-node layout, MBS=2]: GBS 512 35.77 s, 1024 59.65 s, 1536 83.11 s, 2048 107.12 s. Scaled
# to this model by 105.22/107.12 (INFERENCE: the same shape of curve). GBS 192: [RDM] "starts
# with GBS=192/MBS=1 @ 73 TFLOPs" against 149.02 TFLOPs at 105.22 s for GBS 2048 ([CHR]),
# so 105.22 x (192/2048) x (149.02/73). Linear between the points (INFERENCE).
_SCALE = FULL_BATCH_SECONDS / 107.12
RAMP_POINTS = [
    (192, FULL_BATCH_SECONDS * (192 / 2048) * (149.02 / 73)),
    (512, 35.77 * _SCALE),
    (1024, 59.65 * _SCALE),
    (1536, 83.11 * _SCALE),
    (2048, FULL_BATCH_SECONDS),
]
# 24 nodes from 5 July ([CHR 2022-07-04] "switched the training to 24 nodes"): DP 8 -> 4 at
# the same TP=4, PP=12, MBS=2, so each replica runs 256 micro-batches instead of 128 and a
# step takes (256 + 11) / (128 + 11) as long (INFERENCE: 1F1B pipeline with PP-1 = 11 bubble
# slots; no iteration time on 24 nodes is recorded). The eval takes twice as long too.
NODES24_SECONDS = LATE_SECONDS * (256 + 11) / (128 + 11)

# ---------------------------------------------------------------------------------------
# Inferred job mechanics (no record gives them).
# ---------------------------------------------------------------------------------------
QUEUE_SECONDS = 5 * 60     # INFERENCE: the next job of the array (sbatch --array=1-3%1,
                           # [RDM]) starts 5 min after the previous one ends
STARTUP_SECONDS = 10 * 60  # INFERENCE: launch to the first iteration (loading a 2.3 TB
                           # checkpoint, [RDM] "each checkpoint ... is 2.3TB")
PLANNED_GAP = 15 * 60      # INFERENCE: kill switch save and exit to the relaunch with the
                           # changed code ([RDM] "Kill Switch ... saves the checkpoint")
REPORT_EVERY = 10          # the fixture reports every 10th iteration (the job logged every
                           # iteration, [SLM] --log-interval 1), and every stop and save

# ---------------------------------------------------------------------------------------
# The batch ramp-up, as Megatron-DeepSpeed's RampupBatchsizeNumMicroBatches.update():
# batch = start + int(consumed / (samples / increments)) x increment until consumed >
# samples. Checked against the logs: it gives 9,841,584 consumed samples at iteration
# 12695, as [CHR 2022-03-18] prints, and the same tokens as every quoted log line.
# ---------------------------------------------------------------------------------------
_PER_INCREMENT = RAMP_SAMPLES / ((GLOBAL_BATCH - RAMP_START) // RAMP_INCREMENT)
_CONSUMED = [0]
while True:
    c = _CONSUMED[-1]
    b = GLOBAL_BATCH if c > RAMP_SAMPLES else RAMP_START + int(c / _PER_INCREMENT) * RAMP_INCREMENT
    _CONSUMED.append(c + b)
    if b == GLOBAL_BATCH:
        break
RAMP_END_STEP = len(_CONSUMED) - 2  # from this step on, iterations run at the full batch


def consumed_samples(step):
    if step < len(_CONSUMED):
        return _CONSUMED[step]
    return _CONSUMED[-1] + (step - (len(_CONSUMED) - 1)) * GLOBAL_BATCH


def tokens(step):
    return consumed_samples(step) * SEQ_LEN


def batch_of_iteration(step):
    """Global batch of the iteration that goes from `step` to `step + 1`."""
    return consumed_samples(step + 1) - consumed_samples(step)


def ramp_seconds(batch):
    for (b0, s0), (b1, s1) in zip(RAMP_POINTS, RAMP_POINTS[1:]):
        if b0 <= batch <= b1:
            return s0 + (s1 - s0) * (batch - b0) / (b1 - b0)
    raise ValueError(batch)


# The logs quoted in the records, checked here: (iteration, consumed tokens).
LOGGED_TOKENS = [
    (12695, 20155564032),   # [CHR 2022-03-18]
    (31214, 97829879808),   # [CHR 2022-04-12]
    (42780, 146341199872),  # [CHR 2022-04-28]
    (45000, 155652554752),  # [CHR 2022-04-30]
    (85376, 325001773056),  # [RDM "Important checkpoints"]
]
for _s, _t in LOGGED_TOKENS:
    assert tokens(_s) == _t, (_s, tokens(_s), _t)
assert consumed_samples(12695) == 9841584


# ---------------------------------------------------------------------------------------
# The simulator.
# ---------------------------------------------------------------------------------------
class Sim:
    def __init__(self, params):
        self.p = params
        self.events = []
        self.t = LAUNCH
        self.step = 0
        self.attempt = 0
        self.job_start = None
        self.running = False
        self.last_saved = 0          # latest durable checkpoint of the lineage
        self.last_reported = None
        self.save_interval = SAVE_INTERVAL_AT_LAUNCH
        self.pending_save_interval = None
        self.nodes = 48
        self.slow = False
        self.first_reach = {}        # step -> first time it was reached (diagnostics)
        self.time_limit_count = 0
        self.stops = []              # (time, cause, planned, iterations lost)
        self.violations = []         # time anchors the simulated run was already past

    def not_before(self, t, what):
        """A time-anchored action: `t`, unless the simulated run is already past it (then
        a violation, which the final build must not have)."""
        if t < self.t:
            self.violations.append("%s at %s but the run is at %s" % (what, fmt(t), fmt(self.t)))
            return self.t
        return t

    # -- events -------------------------------------------------------------------------
    def emit(self, kind, body, ident, t=None):
        e = {"run": RUN, "time": fmt(self.t if t is None else t), "id": ident}
        if kind != "job_started" and kind != "run_finished":
            e["attempt"] = self.attempt
        e[kind] = body
        self.events.append(e)

    def report(self):
        if self.last_reported == (self.attempt, self.step):
            return
        self.emit("steps", {"step": self.step, "tokens": tokens(self.step)},
                  "s%d-%d" % (self.attempt, self.step))
        self.last_reported = (self.attempt, self.step)

    def save(self, seconds=SAVE_SECONDS):
        if self.last_saved == self.step and self.events[-1].get("checkpoint_saved", {}).get("step") == self.step:
            return  # this very step was just saved (by the save interval)
        self.report()
        self.t += seconds
        self.emit("checkpoint_saved", {"step": self.step, "blocking_seconds": seconds},
                  "c%d-%d" % (self.attempt, self.step))
        self.last_saved = self.step

    def start(self, t, restored=None):
        """A launch at time t from the latest checkpoint (or `restored`)."""
        assert not self.running
        t = self.not_before(t, "launch %d" % (self.attempt + 1))
        self.attempt += 1
        self.t = t
        self.step = self.last_saved if restored is None else restored
        assert self.step <= self.last_saved
        if self.pending_save_interval:
            self.save_interval, self.pending_save_interval = self.pending_save_interval, None
        self.emit("job_started", {"attempt": self.attempt, "restored_step": self.step},
                  "j%d" % self.attempt)
        self.job_start = t
        self.running = True
        self.t += STARTUP_SECONDS

    def stop(self, cause, planned, detail, t=None):
        """The job stops at t (default: now). Nothing after the latest save survives."""
        assert self.running
        if t is not None:
            self.t = self.not_before(t, "stop (%s)" % cause)
        self.emit("interruption", {"cause": cause, "planned": planned, "detail": detail},
                  "i%d" % self.attempt)
        self.running = False
        self.stops.append((self.t, cause, planned, self.step - self.last_saved))

    # -- iterations ---------------------------------------------------------------------
    def seconds_per_iteration(self):
        if self.nodes == 24:
            return NODES24_SECONDS
        if self.step <= RAMP_END_STEP:
            return ramp_seconds(batch_of_iteration(self.step)) * self.p.get("ramp_scale", 1.0)
        if self.step < self.p.get("early_until", 0):
            return self.p["early_seconds"]
        if self.slow:
            return SLOW_SECONDS
        if self.step >= LATE_STEP:
            return LATE_SECONDS
        return FULL_BATCH_SECONDS

    def iterate(self, hang_at_eval=False, skip_eval=False):
        """One iteration, then Megatron's eval, save and exit checks, in its order."""
        self.t += self.seconds_per_iteration()
        self.step += 1
        self.first_reach.setdefault(self.step, self.t)
        if self.step % REPORT_EVERY == 0:
            self.report()
        if self.step % EVAL_INTERVAL == 0:
            if hang_at_eval:
                self.report()
                return "hung"
            if not skip_eval:
                self.t += EVAL_SECONDS * (2 if self.nodes == 24 else 1)
        if self.step % self.save_interval == 0:
            self.save()
        if self.t - self.job_start >= EXIT_SECONDS:
            # --exit-duration-in-mins: save (unless just saved) and exit; the array's next
            # job starts after the queue wait.
            if self.last_saved != self.step:
                self.save()
            self.report()
            self.time_limit_count += 1
            self.stop("time_limit", True,
                      "SLURM job reached --exit-duration-in-mins 5990 of its 100 h limit and "
                      "saved before exiting (tr11-176B-ml.slurm); the job array's next job "
                      "resumes")
            self.start(self.t + QUEUE_SECONDS)
        return "ok"

    def run_to(self, step, hang_at_eval=False):
        while self.step < step:
            r = self.iterate(hang_at_eval=hang_at_eval and self.step + 1 == step)
            if r == "hung":
                return

    def run_until(self, t):
        """Iterations that finish by time t."""
        while self.t + self.seconds_per_iteration() <= t:
            self.iterate()

    # -- composite incidents ------------------------------------------------------------
    def planned_restart(self, cause, detail, gap=PLANNED_GAP):
        """Kill switch: save at the current step, exit, relaunch after `gap`."""
        self.save()
        self.stop(cause, True, detail)
        self.start(self.t + gap)

    def inferred_gpu_crash(self, step, extra_down):
        """An undocumented GPU failure (INFERENCE, see GPU_CRASH_DATES): the process dies
        mid-way through the iteration after `step`; SLURM's job array relaunches from the
        latest checkpoint after the queue wait plus `extra_down` (the job did not quit and
        waited for someone to notice, [CHR 2022-04-XX])."""
        self.run_to(step)
        self.report()
        crash = self.t + self.seconds_per_iteration() / 2
        hours = (step - self.last_saved) * FULL_BATCH_SECONDS / 3600
        self.stop("gpu", False,
                  "INFERRED, no dated record: chronicles 2022-04-XX 'Every week or so we have "
                  "hardware issues where one of the gpus dies. Most of the time the SLURM job "
                  "auto-restarts and we lose at most 3 hours of training'; placed %d "
                  "iterations after a checkpoint (~%.1f h of work lost); relaunched %.1f h later "
                  "(fitted between dated records: 'Sometimes the training gets stuck despite a "
                  "crashing process and it won't quit')"
                  % (step - self.last_saved, hours, (QUEUE_SECONDS + extra_down) / 3600),
                  t=crash)
        self.start(self.t + QUEUE_SECONDS + extra_down)


# ---------------------------------------------------------------------------------------
# Incidents. Documented ones carry their source; the rest are marked INFERENCE.
# ---------------------------------------------------------------------------------------
# [CHR 2022-03-14] "Switched from MBS=1 to MBS=2 at GBS=784": a kill-switch restart while
# the batch was 784. INFERENCE: 50 iterations into GBS=784, relaunched PLANNED_GAP later
# (the script's change was committed at 2022-03-14 09:04 PDT, badbb5b).
MBS_SWITCH_AFTER = 50
# [CHR 2022-03-21] "One of the GPUs crashed at 2022-03-21_13:34:34 JZ time" (Jean Zay is in
# Paris: CET, UTC+1, until 27 March 2022) "... we lost 7.3h of work, it failed 2 iterations
# before checkpoint saving time" (SAVE_INTERVAL was 250). INFERENCE: the job array relaunched
# it after QUEUE_SECONDS ([CHR 2022-04-XX] "Most of the time the SLURM job auto-restarts").
CRASH_0321 = at("2022-03-21T13:34:34+01:00")
# [CHR 2022-03-21] "Will switch to more frequent checkpoint saving of 200 iterations";
# [SLM] SAVE_INTERVAL=200 committed 2022-03-21 10:05 PDT (a967332). INFERENCE: applied by a
# kill-switch restart at that commit's time.
RESTART_0321 = at("2022-03-21T10:05:09-07:00")
# [CHR 2022-03-22] "Switched to SAVE_INTERVAL=100 as JeanZay had some emergency maintenance
# downtime and we lost some hours again"; SAVE_INTERVAL=100 committed 2022-03-22 11:17 PDT
# (1a829a2). The outage has no hour: INFERENCE, from 14:00 UTC to that commit (4.3 h).
MAINT_0322 = at("2022-03-22T14:00:00+00:00")
RESTART_0322 = at("2022-03-22T11:17:12-07:00")
# [CHR 2022-04-29/30] "tr11-176B-ml is running for 1-07:27:33 since 2022-04-29T20:28:38"
# (SLURM prints Jean Zay local time, CEST = UTC+2: INFERENCE); it is the job that hung at
# eval 45000. [CHR 2022-04-28] "I stopped the training and did a quick network benchmark
# test": INFERENCE, that stop is the one before this job, 1 h before it.
JOB_0429 = at("2022-04-29T20:28:38+02:00")
BENCHMARK_STOP = JOB_0429 - 3600
# [CHR 2022-04-30] the eval at the end of iteration 45000 hung; the PULSE lines show it
# still "running" at 2022-05-01 05:56:18 CEST and "stuck for at least 3 hours".
# INFERENCE: the hang began at 00:00 UTC on 1 May (3.9 h before 03:56 UTC).
HANG_45000 = at("2022-05-01T00:00:00+00:00")
# "I went to sleep ... in the morning found it stuck again - and I had to carefully wait
# another 3h to save the checkpoint just before eval at 45000 ... by the time I found the
# cause and rolled back we lost about 18h of training". INFERENCE: first manual relaunch
# after the last PULSE line quoted (04:00 UTC), second in the (Pacific) morning (14:30
# UTC), the last one such that training passes 45000 18 h after the first hang began.
RELAUNCH_45000_1 = at("2022-05-01T04:00:00+00:00")
RELAUNCH_45000_2 = at("2022-05-01T14:30:00+00:00")
LOSS_45000 = 18 * 3600
# [CHR 2022-05-09] "Same as deadlock at 45k we got the same repeat at 51k ... Lost 6h of
# work until this got resolves." The entry was committed 2022-05-09 09:07 PDT (8167b85);
# INFERENCE: the hang began at 08:00 UTC on 9 May, and the 6 h run from it to training
# passing 51000 again.
HANG_51000 = at("2022-05-09T08:00:00+00:00")
LOSS_51000 = 6 * 3600
# [CHR 2022-05-18] "The deadlock race condition at multiple eval stages is still there ...
# We lost ~11h on this event." INFERENCE: the relaunch with the workaround 15 min after the
# commit of the changed script (3e8e058, 2022-05-18 20:14 CEST), the hang at the eval of
# iteration 58000 (an eval step the run reaches in the night before), and the 11 h run
# from the hang to training passing 58000 again.
RELAUNCH_0518 = at("2022-05-18T20:14:30+02:00") + 15 * 60
HANG_0518_STEP = 58000
LOSS_0518 = 11 * 3600
# [CHR 2022-07-04] "Our allocation of 52 nodes has expired and so we switched the training
# to 24 nodes ... converted the checkpoint global_step94767 (last on 48 nodes) ... Took 47
# minutes" (47:55.47); [RDM] "The training switched from 48 to 24 nodes on July 4, 2022 9pm
# PST"; the 07-04 entry, describing it done, was committed 2022-07-04 21:40 PDT (b43180a).
# INFERENCE: "9pm PST" is 9pm Pacific daylight time (04:00 UTC, 5 July); the 48-node job
# stopped at 03:05 UTC with step 94767 saved; the conversion started 2 min later; a 24-node
# job loaded it and saved global_step94768 by the kill switch; training resumed at the
# commit of the 24-node script (95f8a8b, 2022-07-05 06:17 CEST).
END_48_NODES = at("2022-07-05T03:05:00+00:00")
LAST_48_STEP = 94767
CONVERSION_SECONDS = 47 * 60 + 55.47
RESUME_24_NODES = at("2022-07-05T06:17:51+02:00")
# INFERENCE: the run ended at step 95000: [BKP] lists global_step95000 as the last full
# checkpoint backed up (added 2022-07-21, fec4478), its weights-only list (every 3,000)
# never marks 96000 done, and [RDM]'s conversion example became global_step95000.
FINAL_STEP = 95000

# INFERENCE: undocumented GPU failures, one a week ([CHR 2022-04-XX] "Every week or so we
# have hardware issues where one of the gpus dies"), at noon UTC of these days (weeks with
# no documented unplanned stop), each 50 iterations after a checkpoint (half the
# 100-iteration interval: ~1.5 h of work lost). Grouped by the stretch they are fitted in.
GPU_CRASH_DATES = {
    "apr_a": ["2022-04-05"],
    "apr_b": ["2022-04-14", "2022-04-21"],
    "may_a": ["2022-05-05"],
    "may_b": ["2022-05-13"],
    "jun_a": ["2022-05-25", "2022-06-01", "2022-06-08"],
    "jun_b": ["2022-06-15", "2022-06-22"],
    "jul": ["2022-07-02"],
}
CRASH_OFFSET_AFTER_SAVE = 50
# The dated points the stretches are fitted to (each an INFERENCE within its record's
# bound): iteration 12695 at 23:30 UTC on 18 March (the 03-18 entry quoting it was
# committed at 23:53 UTC); step 26343 at 15:00 UTC (08:00 PDT) on 6 April ([CHR 2022-04-06], entry
# committed 18:57 UTC; 25956 was saved on 4 April, so the 387 iterations between took over
# a day); step 78000 at 00:00 UTC on 13 June and 90000 at 00:00 UTC on 29 June, 5 h before
# the commits that mark their backups done (7293971, 893e075; copying to GCS takes hours).
FIT_12695 = at("2022-03-18T23:30:00+00:00")
FIT_26343 = at("2022-04-06T15:00:00+00:00")
FIT_78000 = at("2022-06-13T00:00:00+00:00")
FIT_90000 = at("2022-06-29T00:00:00+00:00")


def build(p):
    """The whole run; `p` holds the calibrated values (see calibrate())."""
    s = Sim(p)
    s.start(LAUNCH, restored=0)
    pending = []  # the inferred crashes not yet played, in step order

    def advance(target, group=None):
        """Runs to `target`, playing the group's inferred crashes on the way."""
        if group is not None:
            pending.extend(p["crash_steps"][group])
        while pending and pending[0] < target:
            g_step = pending.pop(0)
            s.inferred_gpu_crash(g_step, p["crash_extra"][p["crash_group"][g_step]])
        s.run_to(target)

    # 14 March: MBS 1 -> 2 at GBS=784.
    first_784 = next(i for i in range(len(_CONSUMED)) if batch_of_iteration(i) == 784)
    advance(first_784 + MBS_SWITCH_AFTER)
    s.planned_restart("reconfigure", "chronicles 2022-03-14: 'Switched from MBS=1 to MBS=2 at "
                      "GBS=784, as now there is enough microbatches in each of the 8 replicas "
                      "to fill each pipeline 4 times' (kill switch save, relaunch with the "
                      "edited script)")

    # 21 March: the GPU crash, 2 iterations before a save at SAVE_INTERVAL=250
    # (calibration 1).
    if p.get("probe_0321"):
        s.run_until(CRASH_0321)
        return s
    advance(p["crash_0321_step"])
    s.report()
    s.stop("gpu", False, "chronicles 2022-03-21: 'One of the GPUs crashed at "
           "2022-03-21_13:34:34 JZ time: ... c10::CUDAError ... CUDA error: unknown error ... "
           "we lost 7.3h of work, it failed 2 iterations before checkpoint saving time'",
           t=CRASH_0321)
    s.start(CRASH_0321 + QUEUE_SECONDS)
    s.run_until(RESTART_0321 - SAVE_SECONDS - PLANNED_GAP)
    s.pending_save_interval = 200
    s.planned_restart("reconfigure", "chronicles 2022-03-21: 'Will switch to more frequent "
                      "checkpoint saving of 200 iterations'; SAVE_INTERVAL=200 (slurm commit "
                      "a967332); the restart itself is inferred")

    # 22 March: Jean Zay emergency maintenance.
    s.run_until(MAINT_0322)
    s.report()
    s.stop("maintenance", False, "chronicles 2022-03-22: 'JeanZay had some emergency "
           "maintenance downtime and we lost some hours again' (its hours are inferred)",
           t=MAINT_0322)
    s.pending_save_interval = 100
    s.start(RESTART_0322)

    # 24 March - 6 April: restarts to apply fixes, each from a checkpoint saved on purpose.
    advance(17235, "apr_a")
    s.planned_restart("software", "chronicles 2022-03-24: 'last checkpoint before restart that "
                      "applied this workaround: global_step17235' (layer-norm weights out of "
                      "sync across TP ranks; Megatron-DeepSpeed PR 272)")
    advance(20448)
    s.planned_restart("software", "chronicles 2022-03-28: 'last good checkpoint before restart "
                      "with the sync: global_step20448' (Megatron-DeepSpeed PR 274)")
    advance(20452)
    s.planned_restart("software", "chronicles 2022-03-28: 'Restarted from it, run for 4 "
                      "iterations, saved the checkpoint. First checkpoint saved after restart: "
                      "global_step20452 ... restarted again from the branch with per iteration "
                      "bf16 layer norm weight syncing' (INFERENCE: 1 h to inspect the weights)",
                      gap=3600)
    advance(21680)
    s.planned_restart("software", "chronicles 2022-03-30: 'At iteration 21680 switched from "
                      "PR 272 to a different version of the layer-norm auto-sync band-aid'")
    advance(25956)
    s.planned_restart("software", "chronicles 2022-04-04: 'Switched to deepspeed@olruwase/"
                      "bf16-updates 5ea1c60f8 ... Saved checkpoint iteration before the "
                      "switch: 25956'")
    advance(26343)  # calibration 2 fits this stretch
    s.planned_restart("software", "chronicles 2022-04-06: 'First restarted with PR 274 to sync "
                      "layer norm weights and RNG states. Saved checkpoint iteration before "
                      "the switch: 26343'")
    advance(26345)
    s.planned_restart("software", "chronicles 2022-04-06: 'Then restarted after adding the RNG "
                      "sync code: PR 276 ... Saved checkpoint iteration before the switch: "
                      "26345'")

    # April: inferred crashes (calibration 3 fits the stretch to the stop before job
    # 1528763); the slow GPU from iteration 42783.
    advance(SLOW_FROM_STEP, "apr_b")
    s.slow = True
    advance(p["benchmark_stop_step"])
    s.save()
    s.stop("diagnostics", True, "chronicles 2022-04-28: 'the throughput dropped by 5% ... I "
           "stopped the training and did a quick network benchmark test, but all nodes "
           "responded with the exact same network throughput'; relaunched as job 1528763 at "
           "2022-04-29T20:28:38 (CEST)")
    s.start(JOB_0429)

    # 30 April - 1 May: the eval at 45000 hangs, twice; then a save just before the eval,
    # DeepSpeed rolled back, and the slow node found and excluded.
    s.run_to(45000, hang_at_eval=True)
    s.stop("hang", False, "chronicles 2022-04-30: 'the eval stage started at the end of "
           "iteration 45000 and got stuck after the first eval dataset ... stuck for at least "
           "3 hours. No timeouts from NCCL or distributed, just gpus spinning at 100%'",
           t=RELAUNCH_45000_1 - QUEUE_SECONDS)
    s.start(RELAUNCH_45000_1)
    s.run_to(45000, hang_at_eval=True)
    s.stop("hang", False, "chronicles 2022-04-30: 'in the morning found it stuck again' "
           "(the same eval deadlock at 45000)", t=RELAUNCH_45000_2 - QUEUE_SECONDS)
    s.start(RELAUNCH_45000_2)
    s.run_to(44999)
    s.iterate(skip_eval=True)  # the kill switch: saves after iteration 45000, before the eval
    s.save()
    s.stop("software", True, "chronicles 2022-04-30: 'I had to carefully wait another 3h to save "
           "the checkpoint just before eval at 45000' (kill switch); then 'rolling back to "
           "the last commit by Tunji ... and it all went back to working normally'")
    s.slow = False  # INFERENCE: the culprit node was excluded by this relaunch ([CHR 04-28])
    s.start(HANG_45000 + LOSS_45000 - STARTUP_SECONDS - FULL_BATCH_SECONDS)

    # May: an inferred crash (calibration 4), the eval hang at 51000.
    advance(50999, "may_a")
    s.run_to(51000, hang_at_eval=True)
    relaunch = HANG_51000 + LOSS_51000 - STARTUP_SECONDS - 100 * FULL_BATCH_SECONDS - EVAL_SECONDS
    s.stop("hang", False, "chronicles 2022-05-09: 'Same as deadlock at 45k we got the same "
           "repeat at 51k. Solved by adding a dist.barrier before eval computation started "
           "(DeepSpeed PR 1944). Lost 6h of work until this got resolves.'",
           t=relaunch - QUEUE_SECONDS)
    s.start(relaunch)

    # May: an inferred crash (calibration 5), the eval hang of 18 May.
    advance(HANG_0518_STEP - 1, "may_b")
    s.run_to(HANG_0518_STEP, hang_at_eval=True)
    s.stop("hang", False, "chronicles 2022-05-18: 'The deadlock race condition at multiple "
           "eval stages is still there ... the deadlock happens in DataLoader ... we set the "
           "valid_dataloaders to use num_workers=0 ... We lost ~11h on this event.' (the eval "
           "step is inferred)", t=RELAUNCH_0518 - QUEUE_SECONDS)
    s.start(RELAUNCH_0518)

    # Late May - July: weekly inferred crashes (calibrations 6-8), to the end of the 48-node
    # allocation with step 94767.
    advance(78000, "jun_a")
    advance(90000, "jun_b")
    advance(LAST_48_STEP, "jul")
    assert not pending
    s.save()
    s.stop("allocation", True, "chronicles 2022-07-04: 'Our allocation of 52 nodes has expired "
           "and so we switched the training to 24 nodes, after going through a conversion to "
           "the universal checkpoint' (global_step94767, the last on 48 nodes)",
           t=END_48_NODES)

    # 5 July: 24 nodes.
    s.nodes = 24
    s.start(END_48_NODES + 120 + CONVERSION_SECONDS)
    s.run_to(LAST_48_STEP + 1)
    s.save()
    s.stop("reconfigure", True, "chronicles 2022-07-04: 'using a kill-switch saved a new "
           "checkpoint global_step94768 which will be a normal Megatron-Deepspeed checkpoint "
           "... removed --universal-checkpoint from the slurm script ... resumed training "
           "normally'")
    s.start(RESUME_24_NODES)
    s.run_to(FINAL_STEP)
    s.report()
    s.save()
    s.emit("run_finished", {}, "finished")
    return s


def calibrate():
    """Each calibration builds the run, reads when a step is reached, and adds the missing
    time as downtime at the named place; later ones see the earlier ones applied. The
    inferred crashes are placed by step (so the work each loses is fixed), at the step the
    run reaches at noon UTC of their day in the pass before."""
    p = {"crash_0321_step": None, "crash_steps": {}, "crash_extra": {},
         "crash_group": {}, "benchmark_stop_step": None}
    for g in GPU_CRASH_DATES:
        p["crash_steps"][g] = []
        p["crash_extra"][g] = 0.0

    # Calibration 0: the ramp-up's seconds per iteration are scaled so that iteration 12695,
    # "the recent log" of the chronicles' 18 March entry (committed 23:53 UTC, b77d1ae), is
    # reached at FIT_12695. Calibration 1: the 21 March crash came 2 iterations before a
    # save at SAVE_INTERVAL 250, at 12:34:34 UTC: the step is the last 250k - 2 the run
    # reaches by then, and the seconds per full-batch iteration from the end of the ramp to
    # the crash are fitted so that it reaches that step half an iteration before the crash
    # (the fit gives 106.2 s: within the 105.2-107.5 s of the iteration lines quoted in
    # [CHR] for 18 March and 12 April).
    probe = build(dict(p, probe_0321=True))
    assert probe.time_limit_count == 1  # the 18 March end of the 100 h job came before
    target = (probe.step + 2) // 250 * 250 - 2
    if target > probe.step:
        target -= 250
    p["crash_0321_step"] = target
    p["benchmark_stop_step"] = SLOW_FROM_STEP + 1
    p["early_until"] = target
    p["early_seconds"] = FULL_BATCH_SECONDS
    for _ in range(4):
        for _ in range(3):
            probe = build(dict(p, probe_0321=True))
            ramp_time = probe.first_reach[RAMP_END_STEP + 1] - LAUNCH
            k = p.get("ramp_scale", 1.0)
            p["ramp_scale"] = k * (1 - (probe.first_reach[12695] - FIT_12695) / ramp_time)
        s = build(p)
        n = target - 12695
        other = s.first_reach[target] - s.first_reach[12695] - n * p["early_seconds"]
        need = CRASH_0321 - FULL_BATCH_SECONDS / 2 - s.first_reach[12695]
        p["early_seconds"] = (need - other) / n

    # Calibration 2: step 26343 at FIT_26343.
    fit_crashes(p, "apr_a", 26343, FIT_26343)
    # Calibration 3: the stop for the network benchmark is at BENCHMARK_STOP; its step is
    # the one from which job 1528763 (launched JOB_0429) reaches 45000 at HANG_45000.
    avail = HANG_45000 - (JOB_0429 + STARTUP_SECONDS)
    step = 45000
    while True:
        cost = SLOW_SECONDS + (SAVE_SECONDS if step % 100 == 0 else 0) + \
            (EVAL_SECONDS if step % 1000 == 0 and step != 45000 else 0)
        if avail < cost:
            break
        avail -= cost
        step -= 1
    p["benchmark_stop_step"] = step
    fit_crashes(p, "apr_b", step, BENCHMARK_STOP - SAVE_SECONDS)
    # Calibration 4: the eval hang at 51000 begins at HANG_51000.
    fit_crashes(p, "may_a", 51000, HANG_51000)
    # Calibration 5: the eval hang at HANG_0518_STEP begins LOSS_0518 before the run passes
    # that step again after RELAUNCH_0518 (the redone 100 iterations and the eval included).
    redo = STARTUP_SECONDS + 100 * FULL_BATCH_SECONDS + EVAL_SECONDS
    fit_crashes(p, "may_b", HANG_0518_STEP, RELAUNCH_0518 + redo - LOSS_0518)
    # Calibrations 6-8: steps 78000, 90000 and 94767 at FIT_78000, FIT_90000, END_48_NODES.
    fit_crashes(p, "jun_a", 78000, FIT_78000)
    fit_crashes(p, "jun_b", 90000, FIT_90000)
    fit_crashes(p, "jul", LAST_48_STEP, END_48_NODES - SAVE_SECONDS)
    return p


def fit_crashes(p, group, step, when):
    """Places the group's crashes (at noon UTC of their days, as steps) and shares the
    missing time among them as extra downtime so that `step` is first reached at `when`."""
    s = build(p)
    steps = []
    for d in GPU_CRASH_DATES[group]:
        noon = at(d + "T12:00:00+00:00")
        reached = max(k for k, v in s.first_reach.items() if v <= noon)
        steps.append(reached // 100 * 100 + CRASH_OFFSET_AFTER_SAVE)
    p["crash_steps"][group] = steps
    for k in steps:
        p["crash_group"][k] = group
    s = build(p)
    missing = when - s.first_reach[step]
    if missing < 0:
        raise SystemExit("calibration %s: step %d is reached %.1f h after %s without any extra "
                         "downtime" % (group, step, -missing / 3600, fmt(when)))
    p["crash_extra"][group] = missing / len(steps)


# ---------------------------------------------------------------------------------------
# Dated records to check the result against (printed by --check): (what, step, earliest,
# latest) in UTC; None = unbounded.
# ---------------------------------------------------------------------------------------
def day(d, tz="+00:00"):
    return at(d + "T00:00:00" + tz), at(d + "T23:59:59" + tz)


CHECKS = [
    ("ramp-up done '7 days after the launch' [CHR 03-18]", RAMP_END_STEP + 1,
     LAUNCH + 6.5 * 86400, LAUNCH + 7.5 * 86400),
    ("iteration 12695 logged in the 03-18 entry (committed b77d1ae 16:53 PDT)", 12695,
     None, at("2022-03-18T16:53:09-07:00")),
    ("global_step17235 in the 03-24 entry, written in 5a7af64 (04-01 17:40 PDT)", 17235,
     at("2022-03-24T00:00:00-07:00"), at("2022-04-01T17:40:54-07:00")),
    ("global_step20448 on 03-28 [CHR]", 20448) + day("2022-03-28", "-07:00"),
    ("iteration 21680 on 03-30 [CHR]", 21680) + day("2022-03-30", "-07:00"),
    ("weights 21000 backed up by 5a7af64 (04-01 17:40 PDT)", 21000, None,
     at("2022-04-01T17:40:54-07:00")),
    ("step 25956 on 04-04 [CHR]", 25956) + day("2022-04-04", "-07:00"),
    ("step 26345 on 04-06 [CHR], entry d57b76b 11:57 PDT", 26345,
     at("2022-04-06T00:00:00-07:00"), at("2022-04-06T11:57:06-07:00")),
    ("lm loss spike at 31216 on 04-12 [CHR]", 31216) + day("2022-04-12", "-07:00"),
    ("full 30000 backed up by 3f0f8a9 (04-13 16:42 PDT)", 30000, None,
     at("2022-04-13T16:42:32-07:00")),
    ("weights 42000 backed up by 7a22c25 (04-27 08:07 PDT)", 42000, None,
     at("2022-04-27T08:07:32-07:00")),
    ("throughput drop at 42783 on 04-28 [CHR] (Paris or Pacific date)", 42783,
     at("2022-04-28T00:00:00+02:00"), at("2022-04-28T23:59:59-07:00")),
    ("eval hang at 45000 >= 3 h before the 05:56 CEST PULSE line [CHR]", 45000, None,
     at("2022-05-01T02:56:18+02:00")),
    ("weights 45000, 48000, full 50000, weights 51000 backed up by 1f14c05 (05-10)", 51000,
     None, at("2022-05-10T18:46:11-07:00")),
    ("hang at 51000 on 05-09 [CHR], entry 8167b85 09:07 PDT", 51000,
     at("2022-05-09T00:00:00-07:00") - 86400, at("2022-05-09T09:07:36-07:00")),
    ("tokens 192755367936 (step 53846) 'current' in README 889c7ed (05-16 07:43 PDT)", 53846,
     None, at("2022-05-16T07:43:30-07:00")),
    ("full 60000 backed up by b26de99 (05-23 08:03 PDT)", 60000, None,
     at("2022-05-23T08:03:31-07:00")),
    ("full 70000 backed up by 6632f23 (06-05 21:29 PDT)", 70000, None,
     at("2022-06-05T21:29:40-07:00")),
    ("weights 78000 backed up by 7293971 (06-12 21:59 PDT)", 78000, None,
     at("2022-06-12T21:59:12-07:00")),
    ("full 80000 + weights 81000 backed up by be760fe (06-18 01:12 CEST)", 81000, None,
     at("2022-06-18T01:12:31+02:00")),
    ("weights 84000 backed up by bcb1768 (06-22 14:17 CEST)", 84000, None,
     at("2022-06-22T14:17:37+02:00")),
    ("epoch 1 ends at 85376 'on June 28' [RDM] (not reachable: see FACTS.md)", 85376,
     None, None),
    ("weights 87000 backed up by 7f9bf77 (06-26 19:52 CEST)", 87000, None,
     at("2022-06-26T19:52:43+02:00")),
    ("full 90000 backed up by 893e075 (06-28 22:05 PDT)", 90000, None,
     at("2022-06-28T22:05:36-07:00")),
    ("weights 93000 backed up by 1f94fc4 (07-05 20:51 PDT)", 93000, None,
     at("2022-07-05T20:51:37-07:00")),
    ("step 94767, the last on 48 nodes, before the 24-node switch (07-04 9pm Pacific)",
     LAST_48_STEP, None, at("2022-07-04T21:00:00-07:00")),
]


def main():
    args = sys.argv[1:]
    check = "--check" in args
    out_path = args[args.index("--out") + 1] if "--out" in args and args.index("--out") + 1 < len(args) else None
    p = calibrate()
    s = build(p)
    if s.violations:
        raise SystemExit("the calibrated run is past a time anchor:\n  " + "\n  ".join(s.violations))
    here = os.path.dirname(os.path.abspath(__file__))
    out = out_path or os.path.join(here, "bloom-176b.events.jsonl")
    ids = set()
    last = None
    with open(out, "w") as f:
        for e in s.events:
            assert e["id"] not in ids, e
            ids.add(e["id"])
            assert last is None or e["time"] >= last, e
            last = e["time"]
            f.write(json.dumps(e, separators=(",", ":")) + "\n")
    kinds = {}
    for e in s.events:
        k = next(k for k in ("job_started", "steps", "checkpoint_saved", "interruption",
                             "run_finished") if k in e)
        kinds[k] = kinds.get(k, 0) + 1
    print("wrote %s: %d events %s" % (out, len(s.events), kinds))
    if check:
        print("calibrated: ramp-up seconds x %.4f; %.2f s per iteration from the ramp's end "
              "to the 21 March crash at step %d; benchmark stop at step %d" %
              (p["ramp_scale"], p["early_seconds"], p["crash_0321_step"],
               p["benchmark_stop_step"]))
        for g in GPU_CRASH_DATES:
            print("  inferred GPU crashes %-4s at steps %s, each +%.2f h down" %
                  (g, p["crash_steps"][g], p["crash_extra"][g] / 3600))
        print("time-limit ends: %d" % s.time_limit_count)
        for what, step, lo, hi in CHECKS:
            t = s.first_reach.get(step)
            ok = t is not None and (lo is None or t >= lo) and (hi is None or t <= hi)
            print("%-4s step %6d first reached %s  %s" % ("ok" if ok else "MISS", step,
                                                          fmt(t) if t else "-", what))
        causes = {}
        for e in s.events:
            if "interruption" in e:
                i = e["interruption"]
                causes[(i["cause"], i["planned"])] = causes.get((i["cause"], i["planned"]), 0) + 1
        print("interruptions:", causes)
        starts = [at(e["time"].replace("Z", "+00:00")) for e in s.events if "job_started" in e]
        for (t, cause, planned, lost), nxt in zip(s.stops, starts[1:]):
            if cause != "time_limit":
                print("  %s %-11s %-5s lost %4d iterations, down %5.1f h" %
                      (fmt(t), cause, planned, lost, (nxt - t) / 3600))
        print("finish:", s.events[-1]["time"], "tokens", tokens(FINAL_STEP))


if __name__ == "__main__":
    main()
