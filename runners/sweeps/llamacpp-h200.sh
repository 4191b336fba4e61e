#!/usr/bin/env bash
# llama.cpp on a 2×H200 bench host (issue 6), in two back-to-back calls (the host keeps its files between calls
# only while it stays warm):
#
#   runners/sweeps/llamacpp-h200.sh prepare [LOG_DIR]          build + every model file (~8 minutes)
#   runners/sweeps/llamacpp-h200.sh run DATA_DIR [LOG_DIR]     the 8B and 14B tests, one model per GPU at once
#
# `prepare` builds llama.cpp (libraries + llama-bench, CUDA sm_90) from the llama-cpp-python sdist carried in
# .llsrc/ while the F16 files are written, then quantizes them. `run` starts one bench session per model, each
# pinned to its own GPU and saying so in its records (--note); each runs the runner and the llama-bench
# cross-check for the three weight types.
#
# Both calls carry two ignored folders (list them in .git/info/exclude), made here beforehand:
#   .llsrc/  the llama-cpp-python 0.3.36 sdist unpacked (`python -m runners.llamacpp_build` downloads it to
#            build/llama.cpp/), less what the build never reads, to fit the 64 MiB transfer: docs/ and, under
#            vendor/llama.cpp/, models/*.gguf, docs, benches, .github, .git, tools/ui and tools/server (~49 MiB)
#   .whl/    the gguf 0.19.0 and diskcache wheels, which the image lacks:
#            pip download --no-deps --only-binary=:all: --python-version 3.12 -d .whl gguf==0.19.0 diskcache
set -u
STEP=${1:?prepare or run}
export PYTHONUNBUFFERED=1 PIP_NO_INDEX=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export FAIRFIGHT_CACHE=${FAIRFIGHT_CACHE:-/root/ffc}
LLB=${LLB:-/root/llama.cpp}
python3 -m pip install -q --no-index --no-deps --no-compile --target /root/site .whl/*.whl >/dev/null 2>&1 || true
export PYTHONPATH=/root/site${PYTHONPATH:+:$PYTHONPATH}
eval "$(python3 -c 'from runners import llamacpp_build as b; import sys
for k, v in b.env_for(__import__("pathlib").Path(sys.argv[1]), True).items(): print(f"export {k}={v}")' "$LLB")"
F="python3 -m runners.llamacpp files --suite h100"

case $STEP in
prepare)
  LOG=${2:-.}
  $F --model llama-8b --weights f16 >"$LOG/files-8b.log" 2>&1 &
  $F --model llama-14b --weights f16 >"$LOG/files-14b.log" 2>&1 &
  python3 -m runners.llamacpp_build --sdist .llsrc/llama_cpp_python-0.3.36 --cuda --out "$LLB" >"$LOG/build.log" 2>&1
  echo "build exit $?"
  wait
  tail -n 3 "$LOG/build.log"
  $F --model llama-8b >>"$LOG/files-8b.log" 2>&1 &
  $F --model llama-14b >>"$LOG/files-14b.log" 2>&1 &
  wait
  grep -h "GiB" "$LOG"/files-*.log
  # a seconds-long check that the runner and llama-bench work with this build (its records are thrown away)
  python3 -m runners bench --suite cpu-smoke --workload llama-tiny-tg16-d0 --variant llamacpp-f16 \
    --data-dir /tmp/smoke 2>&1 | tail -n 4
  ;;
run)
  DATA=${2:?data dir}
  LOG=${3:-.}
  B="python3 -m runners bench --suite h100 --data-dir $DATA"
  SIDE="ran while the other model's bench session used the host's other GPU (runners/sweeps/llamacpp-h200.sh)"
  CUDA_VISIBLE_DEVICES=0 $B --workload llama-8b --note "$SIDE" >"$LOG/bench-8b.log" 2>&1 &
  CUDA_VISIBLE_DEVICES=1 $B --workload llama-14b --note "$SIDE" >"$LOG/bench-14b.log" 2>&1 &
  wait
  tail -n 40 "$LOG/bench-8b.log" "$LOG/bench-14b.log"
  ;;
esac
