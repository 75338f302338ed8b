import os
import sys

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
