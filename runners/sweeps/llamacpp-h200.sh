#!/usr/bin/env bash
# llama.cpp on an H200 bench host (issue 6), in back-to-back calls (the host keeps its files between calls only
# while it stays warm):
#
#   runners/sweeps/llamacpp-h200.sh build [LOG_DIR]                  llama.cpp + the F16 files, then a smoke test
#   runners/sweeps/llamacpp-h200.sh quantize [LOG_DIR]               Q8_0 and Q4_K_M from the F16 files
#   runners/sweeps/llamacpp-h200.sh run DATA_DIR LOG_DIR WHAT...     the models' tests (llama-8b, llama-14b)
#
# Each WHAT of `run` is one bench session: an [[inference]] entry (llama-8b) or its tests' workloads, comma-separated
# (llama-8b-pp512-d0,llama-8b-tg128-d0); VARIANTS="llamacpp-f16 ..." keeps those variants only (all three unless set).
#
# `build` compiles llama.cpp (libraries + llama-bench, CUDA sm_90; ~5 minutes on 16 cores) from the
# llama-cpp-python sdist carried in .llsrc/ while the F16 files are written, then runs a seconds-long bench of the
# tiny model to show the runner and llama-bench work with this build. `run` runs, per model, the runner and the
# llama-bench cross-check for each weight type (VARIANTS). With as many GPUs as models, each model gets its own GPU
# and they run at once (each record says so, --note); otherwise they run one after the other.
#
# `build` carries two ignored folders (list them in .git/info/exclude), made here beforehand:
#   .llsrc/  the llama-cpp-python 0.3.36 sdist as `python -m runners.engines.llamacpp.build` downloads and unpacks
#            it under ~/.cache/fairfight/llama.cpp/src/, less what the build never reads: docs/ and .git, and under
#            vendor/llama.cpp/, models/*.gguf, docs, benches, .github, .git, tools/ui and tools/server (~54 MiB),
#            plus the vendored commit the dropped .git knew, for the records: git -C ~/.cache/fairfight/llama.cpp/src/
#            llama_cpp_python-0.3.36/vendor/llama.cpp rev-parse HEAD > llama_cpp_python-0.3.36/LLAMA_CPP_COMMIT.
#            Beside the 29 MiB tree it no longer fits one transfer unpacked: carry it packed, ~10 MiB (`tar czf
#            .llsrc/llama_cpp_python-0.3.36.tar.gz -C DIR llama_cpp_python-0.3.36`), and this script unpacks it on the
#            host under /root/llsrc; an unpacked .llsrc/llama_cpp_python-0.3.36 is used as it is.
#   .whl/    the `host-llama` wheelhouse (gguf 0.19.0 and diskcache, which the image lacks; pyproject.toml):
#            nox -s wheelhouse -- host-llama --python 3.12 --platform manylinux_2_35_x86_64 --out .whl
set -u
# shellcheck source=runners/sweeps/host.sh
. "$(dirname "$0")/host.sh"
STEP=${1:?prepare or run}
export PYTHONUNBUFFERED=1 PIP_NO_INDEX=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export FAIRFIGHT_CACHE=${FAIRFIGHT_CACHE:-/root/ffc}
LLB=${LLB:-/root/llama.cpp}
# The carried folders are ignored here through .git/info/exclude, which does not travel with the tree:
# without this the records made here would say harness_dirty although the tree sent was clean.
[ -d .git/info ] && for d in .llsrc/ .whl/; do grep -qxF "$d" .git/info/exclude 2>/dev/null || echo "$d" >> .git/info/exclude; done
[ -d /root/site/gguf ] || python3 -m fairfight wheelhouse install .whl --target /root/site --skip-present >/dev/null
export PYTHONPATH=/root/site${PYTHONPATH:+:$PYTHONPATH}
eval "$(python3 -c 'from runners.engines.llamacpp import build as b; import sys
for k, v in b.env_for(__import__("pathlib").Path(sys.argv[1]), True).items(): print(f"export {k}={v}")' "$LLB")"
F="python3 -m runners.engines.llamacpp.runner files --suite h100"
SDIST=.llsrc/llama_cpp_python-0.3.36
if [ ! -d "$SDIST" ] && [ -f "$SDIST.tar.gz" ]; then
  [ -d /root/llsrc/llama_cpp_python-0.3.36 ] || { mkdir -p /root/llsrc && tar xzf "$SDIST.tar.gz" -C /root/llsrc; }
  SDIST=/root/llsrc/llama_cpp_python-0.3.36
fi

case $STEP in
build)
  LOG=${2:-.}
  $F --model llama-8b --weights f16 >"$LOG/files-8b.log" 2>&1 &
  $F --model llama-14b --weights f16 >"$LOG/files-14b.log" 2>&1 &
  python3 -m runners.engines.llamacpp.build --sdist "$SDIST" --cuda --out "$LLB" >"$LOG/build.log" 2>&1
  echo "build exit $?"
  tail -n 3 "$LOG/build.log"
  # the runner and llama-bench with this build, on the tiny model (its records are thrown away)
  python3 -X faulthandler -m runners bench --suite cpu-smoke --workload llama-tiny-tg16-d0 --variant llamacpp-f16 \
    --data-dir /tmp/smoke >"$LOG/smoke.log" 2>&1
  echo "smoke exit $?"
  tail -n 30 "$LOG/smoke.log"
  wait
  tail -n 2 "$LOG"/files-*.log
  ;;
quantize)
  LOG=${2:-.}
  $F --model llama-8b >>"$LOG/files-8b.log" 2>&1 &
  $F --model llama-14b >>"$LOG/files-14b.log" 2>&1 &
  wait
  grep -h "GiB" "$LOG"/files-*.log
  ;;
run)
  DATA=${2:?data dir}
  LOG=${3:?log dir}
  shift 3
  B=(python3 -m runners bench --suite h100 --data-dir "$DATA")
  for v in ${VARIANTS:-}; do B+=(--variant "$v"); done
  GPUS=$(nvidia-smi -L | wc -l)
  if [ "$#" -gt 1 ] && [ "$GPUS" -ge "$#" ]; then
    SIDE="ran while another model's bench session used another GPU of the host (runners/sweeps/llamacpp-h200.sh)"
    i=0
    for M in "$@"; do
      workloads "$M"
      CUDA_VISIBLE_DEVICES=$i "${B[@]}" "${WORKLOADS[@]}" --note "$SIDE" >"$LOG/bench-${NAMES[0]}.log" 2>&1 &
      i=$((i + 1))
    done
    wait
  else
    for M in "$@"; do
      workloads "$M"
      "${B[@]}" "${WORKLOADS[@]}" >"$LOG/bench-${NAMES[0]}.log" 2>&1
      echo "bench ${NAMES[0]} exit $?"
    done
  fi
  for M in "$@"; do tail -n 40 "$LOG/bench-${M%%,*}.log"; done
  ;;
*)
  echo "usage: $0 build|quantize|run ..." >&2
  exit 2
  ;;
esac
