import os
import sys

# Tests share one kernel cache inside the checkout unless the caller chose one.
os.environ.setdefault("KERNELCORE_CACHE_DIR", os.path.join(os.path.dirname(os.path.dirname(__file__)), ".kernel_cache"))
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)
