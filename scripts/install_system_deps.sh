#!/usr/bin/env bash
# System packages: a C++ compiler with OpenMP, and Mesa EGL/GL for the headless viewer tests.
set -euo pipefail
need=()
command -v g++ >/dev/null 2>&1 || need+=(g++)
for pkg in libegl1 libgl1 libegl-mesa0 libgl1-mesa-dri libgles2 libfontconfig1 libfreetype6 fonts-dejavu-core; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ "${#need[@]}" -gt 0 ]; then
  if [ "$(id -u)" = "0" ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  fi
fi
