#!/usr/bin/env bash
# Installs kernelcore and runs the main job: the default scene, written to out/default.usd.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_system_deps.sh
python3 -m pip install -q -e .
mkdir -p out
python3 -m scenes.cli run --out out/default.usd "$@"
echo "Output: $PWD/out/default.usd (time-sampled USD: open it with usdview or any USD-capable DCC tool)"
