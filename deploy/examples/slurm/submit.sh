#!/bin/bash
# Submits pretrain.sbatch and follows it with `flightplan slurm` on this (login) node, where
# it outlives each run of the job: each real start and end with Slurm's cause, the queue
# waits as down time. It exits once the job has ended; restarted, it resumes without
# duplicates and backfills from the completion log (JobCompType=jobcomp/filetxt).
#
#   FLIGHTPLAN_SERVER=flightplan.internal:50051 ./submit.sh [pretrain_gpt.py arguments]
set -euo pipefail
cd "$(dirname "$0")"
RUN=${FLIGHTPLAN_RUN:-dense-70b-10t}
mkdir -p logs
job=$(sbatch --parsable pretrain.sbatch "$@")
echo "submitted job $job; following it for run $RUN (logs/slurm-$job.log)"
nohup flightplan slurm --job "$job" --run "$RUN" > "logs/slurm-$job.log" 2>&1 &
