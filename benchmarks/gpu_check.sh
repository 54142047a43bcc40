#!/usr/bin/env bash
# Run every PyTorch paper's smoke preset on the GPU and print, per paper, ok/failed and
# the wall time. Fits one command of under 8 minutes on one GPU.
#
#   benchmarks/gpu_check.sh              # --set device=cuda
#   DEVICE=cpu benchmarks/gpu_check.sh   # the same run on CPU (a dry run of this script)
#
# Environment: DEVICE (default cuda), PER_PAPER_TIMEOUT seconds (default 60), PYTHON
# (default .venv/bin/python when it exists, else python3). Exit status: the number of
# papers that failed (0 when all ran).
set -uo pipefail
cd "$(dirname "$0")/.."
DEVICE=${DEVICE:-cuda}
PER_PAPER_TIMEOUT=${PER_PAPER_TIMEOUT:-60}
if [ -z "${PYTHON:-}" ]; then
    if [ -x .venv/bin/python ]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# the runnable papers with at least one experiment that runs PyTorch (a TorchConfig, which takes a device)
PAPERS=$("$PYTHON" - <<'PY'
from icml25.core.experiment import TorchConfig
from icml25.core.registry import load_reproduction, runnable_slugs
for slug in runnable_slugs():
    if any(issubclass(e.config, TorchConfig) for e in load_reproduction(slug).experiments):
        print(slug)
PY
) || { echo "cannot list the papers (is icml25 installed?)"; exit 99; }

"$PYTHON" -c "import torch, sys; ok = torch.cuda.is_available(); print('torch', torch.__version__, '| CUDA:', torch.cuda.get_device_name(0) if ok else 'none'); sys.exit(0 if ok or '$DEVICE' == 'cpu' else 1)" \
    || { echo "no CUDA device: run with DEVICE=cpu for a dry run"; exit 99; }

printf '%-24s %-7s %8s  %s\n' paper status wall_s detail
n_failed=0
ms() { echo $(( $(date +%s%N) / 1000000 )); }
total_start=$(ms)
for slug in $PAPERS; do
    start=$(ms)
    ICML25_HOME="$WORK/home-$slug" timeout "$PER_PAPER_TIMEOUT" "$PYTHON" -m icml25.cli reproduce "$slug" \
        --preset smoke --seeds 1 --jobs 2 --set "device=$DEVICE" --reports "$WORK/reports-$slug" \
        >"$WORK/$slug.log" 2>&1
    rc=$?
    wall_ms=$(( $(ms) - start ))
    if [ $rc -eq 0 ]; then
        status=ok; detail=""
    else
        status=failed; n_failed=$((n_failed + 1))
        if [ $rc -eq 124 ]; then detail="timed out after ${PER_PAPER_TIMEOUT}s"
        else detail="exit $rc: $(grep -E 'job failed|error' "$WORK/$slug.log" | head -1 | cut -c1-120)"; fi
    fi
    printf '%-24s %-7s %4d.%01d  %s\n' "$slug" "$status" $((wall_ms / 1000)) $((wall_ms % 1000 / 100)) "$detail"
done
printf 'total: %d papers, %d failed, %d s (device=%s)\n' "$(echo "$PAPERS" | wc -w)" "$n_failed" \
    $(( ($(ms) - total_start) / 1000 )) "$DEVICE"
exit "$n_failed"
