#!/usr/bin/env bash
# Installs kernelcore and runs the main job.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_system_deps.sh
python3 -m pip install -q -e .
python3 examples/integrate_particles.py "$@"
