"""A small benchmark harness: warm-up, interleaved repeats, medians, JSON output.

Cases that are compared are measured in the same process and interleaved
(a, b, a, b, ...) so that slow drifts of the machine (frequency scaling, other
load) affect all of them alike; figures are reported as medians and as ratios
against a baseline measured in the same run, never as absolute targets.
"""
from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import time


def measure(fn, sync=None):
    """Seconds taken by one call of ``fn`` (``sync`` is called before the clock stops)."""
    t0 = time.perf_counter()
    fn()
    if sync is not None:
        sync()
    return time.perf_counter() - t0


def interleaved(cases, repeats=5, warmup=1, sync=None, calls=1):
    """Time each callable of ``cases`` (name -> fn) ``repeats`` times, interleaved.

    With ``calls`` > 1 each sample is the mean of that many back-to-back calls (steady
    state: on a VM whose idle cores are lent to other guests, a single call after another
    library ran finds its caches cold). Sub-timings are then those of the last call.

    Each case first runs ``warmup`` times (compilation, caches). A callable may return
    a dict of named sub-timings (seconds) instead of None; those are collected too.
    Returns {name: {"samples": [s, ...], "median": s, "min": s, "cpu_median": s, <sub>: {"samples", "median"}}};
    ``cpu_median`` is process CPU time (all threads), a steadier figure than wall time for
    single-threaded runs on a machine shared with other work.
    """
    for _ in range(warmup):
        for fn in cases.values():
            fn()
    samples = {name: [] for name in cases}
    cpu = {name: [] for name in cases}
    subs = {name: {} for name in cases}
    for _ in range(repeats):
        for name, fn in cases.items():
            c0 = time.process_time()
            t0 = time.perf_counter()
            for _ in range(calls):
                parts = fn()
            if sync is not None:
                sync()
            samples[name].append((time.perf_counter() - t0) / calls)
            cpu[name].append((time.process_time() - c0) / calls)
            for k, v in (parts or {}).items():
                subs[name].setdefault(k, []).append(v)
    out = {}
    for name, s in samples.items():
        out[name] = {"samples": s, "median": statistics.median(s), "min": min(s),
                     "cpu_median": statistics.median(cpu[name])}
        for k, v in subs[name].items():
            out[name][k] = {"samples": v, "median": statistics.median(v)}
    return out


def load_average():
    """1-minute load average (None where unavailable): a busy machine makes wall times noisy."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def environment():
    """Machine and library versions, stored with every result."""
    env = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "kernelcore_num_threads": os.environ.get("KERNELCORE_NUM_THREADS"),
    }
    try:
        with open("/proc/cpuinfo") as f:
            env["cpu"] = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), None)
    except OSError:
        pass
    try:
        import numpy

        env["numpy"] = numpy.__version__
    except ImportError:
        pass
    return env


def write_json(result, path=None):
    """Print ``result`` as JSON to stdout and, when ``path`` is given, write it there too."""
    text = json.dumps(result, indent=2, sort_keys=False)
    print(text)
    if path:
        d = os.path.dirname(os.path.abspath(path))
        os.makedirs(d, exist_ok=True)
        with open(path, "w") as f:
            f.write(text + "\n")
    return text


def ratio(a, b):
    """a / b rounded for reports to 4 significant digits (a small ratio stays > 0); None when
    either is missing."""
    if a is None or b is None or b == 0:
        return None
    return float(f"{a / b:.4g}")
