"""How OpenMP threads wait between and at the end of launches (CPU backend).

libgomp (GCC's OpenMP runtime, which every kernel library links) spins by default: a thread
that has finished its share of a launch, or waits for the next one, busy-polls for a while
before it sleeps. On a machine whose cores are all busy (a test suite, a parameter sweep,
Ray workers, a compiler) the spinning thread takes CPU time from the thread that still holds
work, and every launch ends only when the descheduled thread gets a time slice back: a taped
1000-step particle rollout (two launches per step, 8192 particles) took 6.9 s forward on two
threads against 0.22 s on one thread on this 2-core VM at load average 6, and 0.30 s with
passive waiting (benchmarks/bench_threads_under_load.py has the measurement).

So kernelcore asks libgomp for passive waiting (``OMP_WAIT_POLICY=PASSIVE``: sleep on a
futex) unless the user chose a policy (``OMP_WAIT_POLICY`` or ``GOMP_SPINCOUNT`` set).
libgomp reads its settings once, when it is loaded, so this happens before the first kernel
library is loaded, and has no effect when libgomp is already in the process (e.g. loaded by
another library first): then the user's or that library's setting stands.
"""
from __future__ import annotations

import os

_applied = False


def prefer_passive_waiting():
    """Set OMP_WAIT_POLICY=PASSIVE for libgomp unless the user set a policy; call before loading kernels."""
    global _applied
    if _applied:
        return
    _applied = True
    if "OMP_WAIT_POLICY" in os.environ or "GOMP_SPINCOUNT" in os.environ:
        return
    if libgomp_loaded():
        return  # too late: it read its settings when it was loaded
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"


def libgomp_loaded() -> bool:
    """Is GCC's OpenMP runtime already mapped into this process (Linux; False where unknown)?"""
    try:
        with open("/proc/self/maps") as f:
            return "libgomp" in f.read()
    except OSError:
        return False
