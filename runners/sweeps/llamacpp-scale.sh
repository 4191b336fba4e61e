#!/usr/bin/env bash
# llama.cpp at scale on one H200 (issue 40): the 32B and 70B models of the h100 suite, quantized files written
# directly (runners/llama_quant.py), KV-cache depths to 32768 in F16 and Q8_0. In back-to-back calls: the host keeps
# its files between calls only while it stays warm, and its disk (64 GiB) holds one large model at a time.
#
#   runners/sweeps/llamacpp-scale.sh build LOG_DIR MODEL:WEIGHTS...     llama.cpp (CUDA) while the files are written
#   runners/sweeps/llamacpp-scale.sh files LOG_DIR MODEL:WEIGHTS...     more files (after `drop`)
#   runners/sweeps/llamacpp-scale.sh run DATA_DIR LOG_DIR MODEL VARIANT...   the runner and llama-bench, per variant
#   runners/sweeps/llamacpp-scale.sh drop MODEL                          delete a model's files
#
# e.g. `build $OUT llama-70b:q4_k_m`, then `run $OUT/data $OUT llama-70b llamacpp-q4_k_m`. `build` first compiles
# ggml's base library alone for the CPU (seconds; its quantizer writes the files), then writes the files in the
# background while the full CUDA build (~5 minutes on 16 cores) runs, then a seconds-long smoke test of the tiny model.
# It carries .llsrc/ and .whl/, made here beforehand as runners/sweeps/llamacpp-h200.sh describes.
set -u
STEP=${1:?build, files, run or drop}
export PYTHONUNBUFFERED=1 PIP_NO_INDEX=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export FAIRFIGHT_CACHE=${FAIRFIGHT_CACHE:-/root/ffc}
LLB=${LLB:-/root/llama.cpp}
SDIST=.llsrc/llama_cpp_python-0.3.36
MODELS=$FAIRFIGHT_CACHE/models  # where the runners look for model files (runners/spec.py inference_cli)
# The carried folders are ignored here through .git/info/exclude, which does not travel with the tree: without this
# the records made here would say harness_dirty although the tree sent was clean.
[ -d .git/info ] && for d in .llsrc/ .whl/; do grep -qxF "$d" .git/info/exclude 2>/dev/null || echo "$d" >> .git/info/exclude; done
[ -d /root/site/gguf ] || python3 -m fairfight wheelhouse install .whl --target /root/site --skip-present >/dev/null
export PYTHONPATH=/root/site${PYTHONPATH:+:$PYTHONPATH}
stamp() { date -u +%H:%M:%S; }

write_files() {  # LOG MODEL:WEIGHTS... with LLAMA_CPP_LIB_PATH naming a ggml library
  local log=$1; shift
  for item in "$@"; do
    python3 -m runners.engines.llamacpp.runner files --suite h100 \
      --model "${item%%:*}" --weights "${item#*:}" >>"$log/files-${item%%:*}.log" 2>&1 || echo "files $item failed"
  done
  df -h "$MODELS" | tail -n 1
}

case $STEP in
build)
  LOG=${2:?log dir}; shift 2
  echo "$(stamp) quantizer"
  eval "$(python3 -m runners.engines.llamacpp.build --sdist $SDIST --out "$LLB" --quantizer-only 2>"$LOG/quantizer.log")"
  echo "$(stamp) quantizer at $LLAMA_CPP_LIB_PATH; writing $* while llama.cpp builds"
  write_files "$LOG" "$@" &
  WRITER=$!
  python3 -m runners.engines.llamacpp.build --sdist $SDIST --cuda --out "$LLB" >"$LOG/build.log" 2>&1
  rc=$?; echo "$(stamp) build exit $rc"
  tail -n 3 "$LOG/build.log"
  eval "$(python3 -c 'from runners.engines.llamacpp import build as b; import sys, pathlib
for k, v in b.env_for(pathlib.Path(sys.argv[1]), True).items(): print(f"export {k}={v}")' "$LLB")"
  python3 -X faulthandler -m runners bench --suite cpu-smoke --workload llama-tiny --variant llamacpp-q4_k_m \
    --data-dir /tmp/smoke >"$LOG/smoke.log" 2>&1
  rc=$?; echo "$(stamp) smoke exit $rc"
  tail -n 12 "$LOG/smoke.log"
  wait $WRITER
  echo "$(stamp) files written"
  tail -n 2 "$LOG"/files-*.log
  ;;
files)
  LOG=${2:?log dir}; shift 2
  export LLAMA_CPP_LIB_PATH=$LLB/quantizer/build/bin
  write_files "$LOG" "$@"
  tail -n 2 "$LOG"/files-*.log
  ;;
run)
  DATA=${2:?data dir}; LOG=${3:?log dir}; M=${4:?model}; shift 4
  eval "$(python3 -c 'from runners.engines.llamacpp import build as b; import sys, pathlib
for k, v in b.env_for(pathlib.Path(sys.argv[1]), True).items(): print(f"export {k}={v}")' "$LLB")"
  for V in "$@"; do
    echo "$(stamp) $M $V"
    python3 -m runners bench --suite h100 --workload "$M" --variant "$V" --data-dir "$DATA" \
      >"$LOG/bench-$M-$V.log" 2>&1
    rc=$?; echo "$(stamp) exit $rc"
    tail -n 24 "$LOG/bench-$M-$V.log"
  done
  ;;
drop)
  M=${2:?model}
  KEY=$(python3 -c 'import sys; from runners import llama_files, spec
print(llama_files.key(spec.load_suite("h100").models[sys.argv[1]], 0))' "$M") && [ -n "$KEY" ] || {
    echo "drop: no model $M in the h100 suite" >&2; exit 2; }
  rm -rf "${MODELS:?}/$KEY"
  df -h "$MODELS" | tail -n 1
  ;;
*)
  echo "usage: $0 build|files|run|drop ..." >&2
  exit 2
  ;;
esac
