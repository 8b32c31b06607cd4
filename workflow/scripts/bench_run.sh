#!/usr/bin/env bash
# One point of a bench sweep (rule bench_run, rules/bench.smk):
#   bench_run.sh NPROC CPUS_PER_TASK RUN_DIR LOG [trainscale bench options ...]
# Inside a SLURM job: `srun torchrun` on every node of the job, rendezvous at the first node
# (port 29500 + job id mod 1000, so jobs sharing a node do not collide). The SLURM executor already
# runs this inside a one-task, one-node job step, so the nested srun needs --overlap, and the node
# count comes from the job's node list: in that step $SLURM_NNODES is the step's (1) and
# $SLURM_JOB_NUM_NODES is not set. Outside SLURM (local executor): torchrun --standalone.
set -euo pipefail
nproc=$1 cpus_per_task=$2 run_dir=$3 log=$4
shift 4
exec >"$log" 2>&1
if printenv SLURM_JOB_ID >/dev/null; then
    nodes=$(scontrol show hostnames "$SLURM_JOB_NODELIST")
    count=$(echo "$nodes" | wc -l)
    endpoint="$(echo "$nodes" | head -n1):$((29500 + SLURM_JOB_ID % 1000))"
    exec srun --overlap --nodes="$count" --ntasks-per-node=1 \
        --cpus-per-task="$cpus_per_task" \
        torchrun --nnodes "$count" --nproc-per-node "$nproc" \
        --rdzv-id "$SLURM_JOB_ID" --rdzv-backend c10d --rdzv-endpoint "$endpoint" \
        -m trainscale.cli bench "$@" --out "$run_dir"
else
    exec torchrun --standalone --nproc-per-node "$nproc" \
        -m trainscale.cli bench "$@" --out "$run_dir"
fi
