#!/usr/bin/env bash
# The tuning sweep behind the `ddp-tuned` and `fsdp2-compile` settings, on a 2-GPU host (issue 3).
# Each line is one short run (120 steps) of one change over the variant as written in variants.toml;
# every run lands in data/ with the change in its variant name, e.g. ddp-tuned[bucket_cap_mb=25].
set -u
DATA=${1:-data}
B="python3 -m runners bench --suite h100 --workload train-gpt-1.27b-mb4 --steps 120 --data-dir $DATA"
$B --variant ddp-tuned
$B --variant ddp-tuned --set bucket_cap_mb=25
$B --variant ddp-tuned --set bucket_cap_mb=400
$B --variant ddp-tuned --set comm_hook=bf16_compress
$B --variant ddp-tuned --env NCCL_MIN_NCHANNELS=32
$B --variant fsdp2-compile --set reshard_after_forward=false
$B --variant fsdp2-compile --set reshard_after_forward=false --set reduce_dtype=bf16
