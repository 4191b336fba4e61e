#!/usr/bin/env bash
# vLLM on an H200 bench host (issue 7), in back-to-back calls (the host keeps its files between calls only while it
# stays warm):
#
#   runners/sweeps/vllm-h200.sh receive PART                  keep one wheelhouse part (carried as .vwh/PART)
#   runners/sweeps/vllm-h200.sh install                       join the parts, check and install the wheels offline
#   runners/sweeps/vllm-h200.sh run DATA_DIR LOG_DIR ENTRY [VARIANT...]   the serving tests of one [[serving]] entry
#                                                       of the h100 suite (SUITE=h100-x8 for the 70B on 4/8 GPUs);
#                                                       ENTRY may be test workloads instead, comma-separated
#
# The wheelhouse is the `host-vllm` dependency group (pyproject.toml): vLLM 0.25.0, the release built for the image's
# torch 2.11 + CUDA 13, and the small wheels the image lacks, at the versions pylock.hosts.toml pins. Made here
# beforehand, in parts of 28 MiB (a call carries the working tree too, 25 MiB on 2026-12-05 and 29 MiB on 2026-12-06,
# when parts of 36 MiB no longer fitted: 64 MiB in all; `git ls-files -z | xargs -0 du -cb | tail -1` says what the
# tree is now):
#   nox -s wheelhouse -- host-vllm --python 3.12 --platform manylinux_2_35_x86_64 --part-size 28M
#   mkdir -p .vwh && cp build/wheelhouse/host-vllm-*.tar.part* .vwh/     (.vwh/ listed in .git/info/exclude)
# then one `receive host-vllm-py3.12-manylinux_2_35_x86_64.tar.partNNN-of-MMM` call per part, and `install`.
# A variant's records are written when its runner exits, so a call cut short by its limit keeps none of them: at 70B one
# variant's offline test and served points take ~10 min (a server start is ~100 s, torch.compile ~90 s the first time),
# so run ENTRY's tests in two calls, `llama-70b-throughput-i512-o128` then
# `llama-70b-serve-c1-i512-o128,llama-70b-serve-c8-i512-o128` (3.5 and 5.3 min for vllm-tp1-fp8 on 2026-12-01).
# A call returns at most 8 files from $OUT (one variant's served points and their cross-checks are 6 or more):
# write DATA and LOG under a folder of the host and end the call with `tar cf $OUT/res.tar -C FOLDER .`.
# Name the commit sent, written out here: FAIRFIGHT_HARNESS_COMMIT=<sha of HEAD here>. The host's copy of .git can be
# older than the tree sent: `git rev-parse HEAD` there names an older commit, and the records read dirty.
set -u
# shellcheck source=runners/sweeps/host.sh
. "$(dirname "$0")/host.sh"
STEP=${1:?receive, install or run}
export PYTHONUNBUFFERED=1 PIP_NO_INDEX=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 VLLM_USE_FLASHINFER_SAMPLER=0
export FAIRFIGHT_CACHE=${FAIRFIGHT_CACHE:-/root/ffc}
SITE=/root/vsite
# The carried folders are ignored here through .git/info/exclude, which does not travel with the tree:
# without this the records made here would say harness_dirty although the tree sent was clean.
[ -d .git/info ] && for d in .vwh/; do grep -qxF "$d" .git/info/exclude 2>/dev/null || echo "$d" >> .git/info/exclude; done
export PYTHONPATH=$SITE${PYTHONPATH:+:$PYTHONPATH}

case $STEP in
receive)
  mkdir -p /root/vparts && cp ".vwh/${2:?part name}" /root/vparts/ && ls -la /root/vparts
  ;;
install)
  python3 -m fairfight wheelhouse install /root/vparts --target $SITE && rm -rf /root/vparts
  python3 -c "import vllm, aiohttp, pyarrow, compressed_tensors; print('vllm', vllm.__version__, 'aiohttp', aiohttp.__version__)"
  nvidia-smi -L
  df -h /root | tail -1
  ;;
run)
  step_args "serving entry" "${@:2}"
  workloads "$WHAT"
  bench_logged "$LOG/bench-${NAMES[0]}.log" 30 --suite "${SUITE:-h100}" --data-dir "$DATA" "${WORKLOADS[@]}" "${VARIANTS[@]}"
  ;;
*)
  echo "usage: $0 receive PART | install | run DATA LOG ENTRY [VARIANT...]" >&2
  exit 2
  ;;
esac
