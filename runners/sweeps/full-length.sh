#!/usr/bin/env bash
# The seed's workload at full length (2000 steps) on H200 hosts, in slices that each fit one 10-minute call of the
# bench host (issue 5: 2 GPUs, A/A repeats, 1 GPU; issue 10: 4 GPUs). Slices 1-3 need a 4-GPU host, 4-7 a 2-GPU one.
#
#   runners/sweeps/full-length.sh SLICE [DATA_DIR] [LOG_DIR]
#
# Jobs pinned to disjoint GPUs (CUDA_VISIBLE_DEVICES) run at the same time to fit the lease; every such run says so
# in its record (--note, shown on its page) and its environment names its GPUs. A stock fp32 run gets a 90 s budget:
# it records the steps it completed (status timeout) and serves as the loss-parity baseline over those windows.
set -u
SLICE=${1:?slice number}
DATA=${2:-data}
LOG=${3:-.}
B="python3 -m runners bench --suite h100 --data-dir $DATA"
MB4="--workload train-gpt-1.27b-mb4"
MB16="--workload train-gpt-1.27b-mb16"
FP32="--variant ddp-fp32-stock --time-budget 90"
SIDE="ran while other bench jobs used the host's other GPUs (slice $SLICE of runners/sweeps/full-length.sh)"

on() { # GPUS LOGNAME ARGS...: one bench session pinned to GPUS, appending to LOG/LOGNAME.log
  local gpus=$1 name=$2
  shift 2
  CUDA_VISIBLE_DEVICES=$gpus $B "$@" >>"$LOG/$name.log" 2>&1
}

case $SLICE in
1) # micro-batch 4 on 2 GPUs: every variant but ddp-tuned, and the A/A repeats (stock fp32, stock bf16, best tuned)
  {
    on 0,1 pair01 $MB4 $FP32 --note "$SIDE"
    on 0,1 pair01 $MB4 --variant ddp-amp-stock --variant fsdp2-compile --note "$SIDE"
  } &
  {
    on 2,3 pair23 $MB4 --variant ddp-amp-stock --variant fsdp2-compile --note "$SIDE"
    on 2,3 pair23 $MB4 $FP32 --note "$SIDE"
  } &
  wait
  ;;
2) # micro-batch 4 on all 4 GPUs, alone on the host: stock fp32, stock bf16, best tuned
  on 0,1,2,3 quad $MB4 --world-size 4 $FP32
  on 0,1,2,3 quad $MB4 --world-size 4 --variant ddp-amp-stock --variant fsdp2-compile
  ;;
3) # micro-batch 16 best tuned on 2 GPUs; micro-batch 4 ddp-tuned on 2 GPUs, then every variant on 1 GPU each
  on 2,3 pair23 $MB16 --variant fsdp2-compile --note "$SIDE" &
  {
    on 0,1 pair01 $MB4 --variant ddp-tuned --note "$SIDE"
    {
      on 0 gpu0 $MB4 --world-size 1 $FP32 --note "$SIDE"
      on 0 gpu0 $MB4 --world-size 1 --variant fsdp2-compile --note "$SIDE"
    } &
    on 1 gpu1 $MB4 --world-size 1 --variant ddp-amp-stock --variant ddp-tuned --note "$SIDE" &
    wait
  } &
  wait
  ;;
4) # micro-batch 16 stock bf16 on a 2-GPU host, alone (2000 steps take ~480 s)
  on 0,1 pair01 $MB16 --variant ddp-amp-stock
  ;;
5) # micro-batch 16 ddp-tuned on a 2-GPU host, alone (~430 s of steps after ~70 s of compile and warm-up)
  on 0,1 pair01 $MB16 --variant ddp-tuned
  ;;
6) # micro-batch 16 stock fp32 (2.3 s a step: a 180 s budget buys ~3 loss windows for the parity baseline), then
  # micro-batch 4 best tuned alone on the host, to measure what sharing a host cost the slice 1 and 3 runs
  on 0,1 pair01 $MB16 --variant ddp-fp32-stock --time-budget 180
  on 0,1 pair01 $MB4 --variant fsdp2-compile
  ;;
7) # the A/A repeat of slice 6's solo best-tuned run (a repeat runs under the same host conditions)
  on 0,1 pair01 $MB4 --variant fsdp2-compile
  ;;
*)
  echo "unknown slice $SLICE (1-7)" >&2
  exit 2
  ;;
esac
