#!/usr/bin/env bash
# The one-GPU training configurations again, on each new start of an H200 bench host (issue 61): repeats across host
# starts give the between-session spread (every record names its GPU by UUID, and carries the GPUs' energy).
#
#   runners/sweeps/one-gpu-repeats.sh SLICE [DATA_DIR] [LOG_DIR]
#
#   mb8   train-gpt-1.27b-1gpu-mb8 at its own micro-batch 8: ddp-amp-stock, ddp-tuned, fsdp2-compile, fsdp2-float8
#         (one full-length run each, about 5-6 minutes)
#   mb2   the same workload at micro-batch 2: ddp-amp-stock and ddp-tuned (about 3 minutes)
#   compile  fsdp2-compile alone at micro-batch 8 (about 1.5 minutes): with `mb2`, the configurations that two
#         starts left with two runs each get a third start in one call
#
# fsdp2-float8 needs torchao: carry the `host-torch` wheelhouse (build/wheelhouse/, see verdict-sweep.sh). Name the
# commit sent in FAIRFIGHT_HARNESS_COMMIT; end the call with `tar cf $OUT/res.tar -C FOLDER .`.
set -u
# shellcheck source=runners/sweeps/host.sh
. "$(dirname "$0")/host.sh"
torch_slice "slice (mb8, mb2 or compile)" "$@"
B="python3 -m runners bench --suite h100 --workload train-gpt-1.27b-1gpu-mb8 --data-dir $DATA"
NOTE="a repeat across starts of the bench host (runners/sweeps/one-gpu-repeats.sh $SLICE)"
case $SLICE in
mb8) $B --variant ddp-amp-stock --variant ddp-tuned --variant fsdp2-compile --variant fsdp2-float8 --note "$NOTE" \
  >>"$LOG/mb8.log" 2>&1 ;;
compile) $B --variant fsdp2-compile --note "$NOTE" >>"$LOG/compile.log" 2>&1 ;;
mb2) $B --micro-batch 2 --variant ddp-amp-stock --variant ddp-tuned --note "$NOTE" >>"$LOG/mb2.log" 2>&1 ;;
*)
  echo "unknown slice $SLICE (mb8, mb2 or compile)" >&2
  exit 2
  ;;
esac
