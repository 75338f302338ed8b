#!/usr/bin/env bash
# Installs everything the test suite needs on a fresh Debian/Ubuntu machine, then runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_system_deps.sh
python3 -m pip install -q -e ".[test]"
# PyTorch (CPU build) for the interop tests; they skip with a reason if it cannot be installed
python3 -c "import torch" 2>/dev/null || python3 -m pip install -q torch==2.13.0 || echo "torch unavailable: torch interop tests will skip"
export KERNELCORE_CACHE_DIR="${KERNELCORE_CACHE_DIR:-$PWD/.kernel_cache}"
export RENDER_REQUIRE_GL=1  # the viewer tests must run, not skip, on CI
if nvidia-smi -L >/dev/null 2>&1; then  # a GPU: CuPy too, and the GPU tests must run, not skip
    python3 -m pip install -q -e ".[test,cuda]"
    export KERNELCORE_REQUIRE_CUDA=1
fi
export KERNELCORE_REQUIRE_NVRTC=1  # NVRTC comes with the [test] extra: the CUDA compile checks must run, not skip
# two workers (CI has 2 cores): most tests wait on g++ building kernels, which is single-threaded;
# --dist loadfile keeps a file's tests (and its module fixtures, e.g. a Ray cluster) on one worker;
# each worker ends with the NVRTC check of all of its kernels (tests/conftest.py)
python3 -m pytest -q -p no:cacheprovider -n "${KERNELCORE_TEST_WORKERS:-2}" --dist loadfile --durations=25 "$@"
