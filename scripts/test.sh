#!/usr/bin/env bash
# Installs everything the test suite needs on a fresh Debian/Ubuntu machine, then runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_system_deps.sh
python3 -m pip install -q -e ".[test]"
export KERNELCORE_CACHE_DIR="${KERNELCORE_CACHE_DIR:-$PWD/.kernel_cache}"
python3 -m pytest -q -p no:cacheprovider "$@"
