import os
import sys
import time

import pytest

# Tests share one kernel cache inside the checkout unless the caller chose one.
os.environ.setdefault("KERNELCORE_CACHE_DIR", os.path.join(os.path.dirname(os.path.dirname(__file__)), ".kernel_cache"))
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


def pytest_collection_modifyitems(session, config, items):
    """Tests marked ``run_last`` run after all others (the CUDA sweep over every kernel the
    session defined, tests/kernelcore/test_cuda_ptx_all.py)."""
    last = [item for item in items if item.get_closest_marker("run_last")]
    if last:
        items[:] = [item for item in items if not item.get_closest_marker("run_last")] + last


# --- pytest-xdist (scripts/test.sh runs the suite on two workers) ------------------------------
# test_cuda_ptx_all sees the kernels of its own process only, and under xdist it may run while
# the other worker still defines kernels.  So every worker checks all of its kernels with NVRTC
# once it has run its last test, hands the failures to the controller (``workeroutput``), and
# the controller fails the run and names them.

def _nvrtc_required_or_available():
    if os.environ.get("KERNELCORE_REQUIRE_NVRTC") == "1":
        return True
    from kernelcore import nvrtc

    return nvrtc.is_available()


def pytest_sessionfinish(session, exitstatus):
    config = session.config
    if hasattr(config, "workerinput"):  # an xdist worker, after its last test
        if session.testscollected and _nvrtc_required_or_available():
            from kernelcore import cuda_check

            wall, cpu = time.time(), time.process_time()
            modules = cuda_check.session_modules()
            try:
                found = cuda_check.check_modules(modules)
            except Exception as e:  # noqa: BLE001 - NVRTC missing although required: a failure too
                found = [("NVRTC", [f"{type(e).__name__}: {e}"])]
            config.workeroutput["kernelcore_ptx_failures"] = found
            config.workeroutput["kernelcore_ptx_modules"] = len(modules)
            # what the check cost this worker (NVRTC runs in-process: its CPU time is ours)
            config.workeroutput["kernelcore_ptx_cost"] = (config.workerinput.get("workerid", "?"),
                                                          time.time() - wall, time.process_time() - cpu)
        return
    checked = getattr(config, "_kernelcore_ptx_modules", None)
    if checked is None:
        return
    found = getattr(config, "_kernelcore_ptx_failures", [])
    tr = config.pluginmanager.get_plugin("terminalreporter")
    if tr is not None:
        tr.write_sep("=", f"NVRTC check at the end of each xdist worker: {checked} kernel modules", red=bool(found))
        for wid, wall, cpu in sorted(getattr(config, "_kernelcore_ptx_cost", [])):
            tr.write_line(f"{wid}: check took {wall:.0f} s wall, {cpu:.0f} s CPU")
        if found:
            from kernelcore import cuda_check

            tr.write_line(cuda_check.format_failures(found))
        else:
            tr.write_line("every kernel the workers defined compiles to a CUBIN (sm_80)")
    if found:
        session.exitstatus = 1


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """xdist controller: collect each worker's NVRTC failures."""
    out = getattr(node, "workeroutput", {}) or {}
    if "kernelcore_ptx_modules" in out:
        node.config._kernelcore_ptx_modules = getattr(node.config, "_kernelcore_ptx_modules", 0) + \
            out["kernelcore_ptx_modules"]
    if "kernelcore_ptx_cost" in out:
        node.config._kernelcore_ptx_cost = getattr(node.config, "_kernelcore_ptx_cost", []) + [out["kernelcore_ptx_cost"]]
    found = out.get("kernelcore_ptx_failures") or []
    if found:
        acc = getattr(node.config, "_kernelcore_ptx_failures", [])
        node.config._kernelcore_ptx_failures = acc + [f for f in found if f not in acc]
