#!/usr/bin/env bash
# The verdict's sweep (issue 22): the seed's model on a 2-GPU host (train-gpt-1.27b-mb4, 300 steps a point) across
# micro-batches 1, 2, 3, 4, 6, 8 and 16 per GPU, each with the stock baseline most readers run (ddp-amp-stock), the
# two bf16 tuned variants (ddp-tuned, fsdp2-compile) and float8 (fsdp2-float8), so that tokens per step is the x-axis
# and the seed's 14.1 and 21.7 steps/s can be placed on it. One slice per call, each within one 10-minute call:
#
#   runners/sweeps/verdict-sweep.sh SLICE [DATA_DIR] [LOG_DIR]
#
#   slice 1..6   micro-batch 1, 2, 3, 4, 6 or 8: all four variants (about 5-7 minutes)
#   slice 7      micro-batch 16: ddp-amp-stock and ddp-tuned
#   slice 8      micro-batch 16: fsdp2-compile and fsdp2-float8
#   slice 9..11  the loss-parity baseline, ddp-fp32-stock for 90 s, at micro-batches 1-3, 4 and 6, 8 and 16
#   slice 12     the full-length A/A at the matched shape (micro-batch 2, the nearest to the interpolated 2.23): one
#                2000-step run each of ddp-amp-stock and ddp-tuned (about 5 minutes); run it twice
#   slice 14     the same for fsdp2-compile and fsdp2-float8 (about 5 minutes); run it twice
#   slice 13     micro-batch 4, fsdp2-float8 only (the others have full-length runs on the workload's own board),
#                then the loss-parity baseline at micro-batch 8 (about 4 minutes)
#
# fsdp2-float8 needs torchao, which the image lacks: make the `host-torch` wheelhouse here
# (`nox -s wheelhouse -- host-torch --python 3.12 --platform manylinux_2_28_x86_64`, one 3.4 MB part under
# build/wheelhouse/) and carry it (`carry: ["build/wheelhouse"]`); each slice installs it offline into /root/tsite when
# torchao is missing. Name the commit sent in FAIRFIGHT_HARNESS_COMMIT. A call returns at most 8 files from $OUT:
# write DATA and LOG under a folder of the host and end the call with `tar cf $OUT/res.tar -C FOLDER .`.
set -u
# shellcheck source=runners/sweeps/host.sh
. "$(dirname "$0")/host.sh"
torch_slice "slice number (1-14)" "$@"
FULL="python3 -m runners bench --suite h100 --workload train-gpt-1.27b-mb4 --data-dir $DATA"
B="$FULL --steps 300"
ALL="--variant ddp-amp-stock --variant ddp-tuned --variant fsdp2-compile --variant fsdp2-float8"

point() { # MICRO_BATCH VARIANT-ARGS...: one bench session at that micro-batch, appending to LOG/mbN.log
  local mb=$1
  shift
  $B --micro-batch "$mb" "$@" >>"$LOG/mb$mb.log" 2>&1
}

case $SLICE in
1) point 1 $ALL ;;
2) point 2 $ALL ;;
3) point 3 $ALL ;;
4) point 4 $ALL ;;
5) point 6 $ALL ;;
6) point 8 $ALL ;;
7) point 16 --variant ddp-amp-stock --variant ddp-tuned ;;
8) point 16 --variant fsdp2-compile --variant fsdp2-float8 ;;
# the loss-parity baseline at each micro-batch (fp32 DDP, the workload's first variant), stopped by a 90 s budget:
# without it a sweep point has no parity and the verdict does not count it
9) for mb in 1 2 3; do point "$mb" --variant ddp-fp32-stock --time-budget 90; done ;;
10) for mb in 4 6; do point "$mb" --variant ddp-fp32-stock --time-budget 90; done ;;
11) for mb in 8 16; do point "$mb" --variant ddp-fp32-stock --time-budget 90; done ;;
12) $FULL --micro-batch 2 --variant ddp-amp-stock --variant ddp-tuned >>"$LOG/full-mb2.log" 2>&1 ;;
14) $FULL --micro-batch 2 --variant fsdp2-compile --variant fsdp2-float8 >>"$LOG/full-mb2.log" 2>&1 ;;
13)
  point 4 --variant fsdp2-float8
  point 8 --variant ddp-fp32-stock --time-budget 90
  ;;
*)
  echo "unknown slice $SLICE (1-14)" >&2
  exit 2
  ;;
esac
