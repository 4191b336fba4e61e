#!/usr/bin/env bash
# MLX on an H200 bench host (issue 8), in back-to-back calls (the host keeps its files between calls only while it
# stays warm):
#
#   runners/sweeps/mlx-h200.sh receive PART              keep one wheelhouse part (carried as .mwh/PART)
#   runners/sweeps/mlx-h200.sh install                   join the parts, check and install the wheels offline
#   runners/sweeps/mlx-h200.sh train DATA LOG WORKLOAD VARIANT...   a training workload of the h100 suite:
#                                                        train-gpt-1.27b-1gpu-mb8 (PyTorch and MLX on one GPU), or
#                                                        train-gpt-1.27b-mb4 with mlx-bf16-compile (mx.distributed
#                                                        over NCCL, two GPUs)
#   runners/sweeps/mlx-h200.sh generate DATA LOG ENTRY [VARIANT...]   MLX's pp/tg tests of one [[inference]]
#                                                        entry (mlx-f16 unless named: mlx-q8, mlx-q4 at 32B/70B),
#                                                        and mlx_lm.benchmark beside them; ENTRY may name tests'
#                                                        workloads instead, comma-separated (llama-8b-pp512-d0,...)
#
# The wheelhouse is the `host-mlx` dependency group (pyproject.toml): mlx-cuda-13 0.32.4 (its CUDA 13 libraries come
# from the image's nvidia-* packages), mlx 0.32.4, mlx-lm 0.32.2 and sentencepiece (left to the image where it has
# one), pinned by pylock.hosts.toml. Made here beforehand, in parts of 28 MiB (a part and the tree must fit in 64 MiB,
# and the tree sent was 29 MiB on 2026-12-06: `git ls-files -z | xargs -0 du -cb | tail -1`):
#   nox -s wheelhouse -- host-mlx --python 3.12 --platform manylinux_2_35_x86_64 --part-size 28M
#   mkdir -p .mwh && cp build/wheelhouse/host-mlx-*.tar.part* .mwh/     (.mwh/ listed in .git/info/exclude)
# A call returns at most 8 files from $OUT (one variant's served points and their cross-checks are 6 or more):
# write DATA and LOG under a folder of the host and end the call with `tar cf $OUT/res.tar -C FOLDER .`.
set -u
# shellcheck source=runners/sweeps/host.sh
. "$(dirname "$0")/host.sh"
STEP=${1:?receive, install, train or generate}
export PYTHONUNBUFFERED=1 PIP_NO_INDEX=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export FAIRFIGHT_CACHE=${FAIRFIGHT_CACHE:-/root/ffc}
SITE=/root/msite
# The carried folder is ignored here through .git/info/exclude, which does not travel with the tree: without this
# the records made here would say harness_dirty although the tree sent was clean.
[ -d .git/info ] && { grep -qxF ".mwh/" .git/info/exclude 2>/dev/null || echo ".mwh/" >> .git/info/exclude; }
export PYTHONPATH=$SITE${PYTHONPATH:+:$PYTHONPATH}

case $STEP in
receive)
  mkdir -p /root/mparts && cp ".mwh/${2:?part name}" /root/mparts/ && ls -la /root/mparts
  ;;
install)
  python3 -m fairfight wheelhouse install /root/mparts --target $SITE --skip-present && rm -rf /root/mparts
  python3 -c "import mlx.core as mx, mlx_lm; print('mlx', mx.__version__, mx.default_device(), mx.device_info().get('device_name'))"
  ;;
train)
  step_args "training workload" "${@:2}"
  bench_logged "$LOG/train.log" 12 --suite h100 --data-dir "$DATA" --workload "$WHAT" "${VARIANTS[@]}"
  ;;
generate)
  [ $# -ne 4 ] || set -- "$@" mlx-f16  # no variant named: mlx-f16
  step_args "inference entry" "${@:2}"
  workloads "$WHAT"
  bench_logged "$LOG/generate-${NAMES[0]}.log" 16 --suite h100 --data-dir "$DATA" "${WORKLOADS[@]}" "${VARIANTS[@]}"
  ;;
*)
  echo "usage: $0 receive PART | install | train DATA LOG WORKLOAD VARIANT... | generate DATA LOG ENTRY [VARIANT...]" >&2
  exit 2
  ;;
esac
