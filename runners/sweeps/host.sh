# What the sweep scripts that run on a bench host share: sourced (`. "$(dirname "$0")/host.sh"`), never run.
# shellcheck shell=bash disable=SC2034  # the variables set here are the calling script's

# A torch sweep's call, `SCRIPT SLICE [DATA_DIR] [LOG_DIR]`: sets SLICE, DATA (`data` unless given) and LOG (this
# folder unless given), turns NVLink multicast off, and installs torchao (fsdp2-float8 needs it) where it is missing,
# offline from the carried `host-torch` wheelhouse (build/wheelhouse/, see verdict-sweep.sh) into /root/tsite.
torch_slice() { # USAGE SLICE [DATA_DIR] [LOG_DIR]
  SLICE=${2:?$1}
  DATA=${3:-data}
  LOG=${4:-.}
  export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
  export PYTHONPATH=/root/tsite${PYTHONPATH:+:$PYTHONPATH}
  python3 -c "import torchao" 2>/dev/null || python3 -m fairfight wheelhouse install build/wheelhouse --target /root/tsite
}

# A step's words after its name, `DATA LOG WHAT [VARIANT...]`: sets DATA, LOG, WHAT (what the step runs: a workload,
# or an entry's name) and VARIANTS, the bench's `--variant` argument for each VARIANT.
step_args() { # WHAT-USAGE DATA LOG WHAT [VARIANT...]
  DATA=${2:?data dir}
  LOG=${3:?log dir}
  WHAT=${4:?$1}
  shift 4
  VARIANTS=()
  local v
  for v in "$@"; do VARIANTS+=(--variant "$v"); done
}

# A step's WHAT as the bench's arguments: one entry's name, or test workloads comma-separated (llama-8b-pp512-d0,
# llama-8b-tg128-d0); sets NAMES (its names) and WORKLOADS (a `--workload` argument for each).
workloads() { # WHAT
  IFS=, read -ra NAMES <<<"$1"
  WORKLOADS=()
  local w
  for w in "${NAMES[@]}"; do WORKLOADS+=(--workload "$w"); done
}

# One bench session, its output in LOGFILE; then how it ended and the log's last LINES lines.
bench_logged() { # LOGFILE LINES BENCH-ARGUMENTS...
  local file=$1 lines=$2
  shift 2
  python3 -m runners bench "$@" >"$file" 2>&1
  echo "bench exit $?"
  tail -n "$lines" "$file"
}
