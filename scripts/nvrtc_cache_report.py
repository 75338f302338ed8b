"""What the NVRTC check of a test run cost, per kernel module, read back from its kernel cache.

usage: python scripts/nvrtc_cache_report.py [CACHE_DIR] [--top N]
(CACHE_DIR defaults to $KERNELCORE_CACHE_DIR, else ./.kernel_cache, where scripts/test.sh
puts it.)

On a miss the check writes a unit's CUDA source (``cuda_<key>.cpp``) just before NVRTC
compiles it, and the CUBIN (``cuda_<key>.cubin``) when NVRTC returns, so the difference of
their modification times is that compile's wall time in seconds. A module listed with
several variants was compiled more than once: the xdist workers defined different kernel
sets for it (e.g. specialisations made on demand), so their translation units differ; a
later variant holds only the kernels no earlier unit passed (kernelcore/cuda_check.py marks).
"""
from __future__ import annotations

import argparse
import collections
import glob
import os
import re
import sys

_HEADER = re.compile(r"module '([^']+)' \(cuda\)")


def nvrtc_costs(cache_dir: str) -> dict:
    """{module name: [(seconds, source bytes), ...]}, one entry per compiled CUDA unit."""
    if not os.path.isdir(cache_dir):
        raise FileNotFoundError(f"nvrtc_cache_report: cache_dir={cache_dir!r} is not a directory")
    out = collections.defaultdict(list)
    for src in glob.glob(os.path.join(cache_dir, "cuda_*.cpp")):
        cubin = src[:-len(".cpp")] + ".cubin"
        if not os.path.exists(cubin):
            continue  # failed, or a PTX entry
        with open(src) as f:
            m = _HEADER.search(f.readline())
        name = m.group(1) if m else "?"
        out[name].append((max(0.0, os.path.getmtime(cubin) - os.path.getmtime(src)), os.path.getsize(src)))
    return dict(out)


def report(costs: dict, top: int = 30) -> str:
    rows = sorted(costs.items(), key=lambda kv: -sum(s for s, _ in kv[1]))
    total = sum(s for v in costs.values() for s, _ in v)
    again = sum(s for v in costs.values() if len(v) > 1 for s, _ in sorted(v)[:-1])
    lines = [f"NVRTC: {sum(len(v) for v in costs.values())} units of {len(costs)} modules, {total:.0f} s; "
             f"{again:.0f} s on modules compiled again in another variant"]
    for name, v in rows[:top]:
        mark = f"  <- {len(v)} variants" if len(v) > 1 else ""
        lines.append(f"{sum(s for s, _ in v):8.1f} s  {sum(b for _, b in v) / 1e3:8.0f} kB  {name}{mark}")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cache_dir", nargs="?", default=os.environ.get("KERNELCORE_CACHE_DIR") or ".kernel_cache")
    ap.add_argument("--top", type=int, default=30)
    a = ap.parse_args(argv)
    if a.top < 1:
        ap.error(f"--top must be at least 1, got {a.top}")
    print(report(nvrtc_costs(a.cache_dir), a.top))


if __name__ == "__main__":
    sys.exit(main())
