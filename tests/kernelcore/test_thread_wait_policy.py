"""OpenMP threads wait passively unless the user chose a policy (kernelcore/threads.py, issue #23 item 9).

Timings under load are in benchmarks/bench_threads_under_load.py (no wall-clock asserts here).
"""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SCRIPT = """
import os, numpy as np, kernelcore as kc
from kernelcore.threads import libgomp_loaded
@kc.kernel
def twice(x: kc.array(dtype=float)):
    i = kc.tid()
    x[i] = 2.0 * x[i]
before = libgomp_loaded()
kc.launch(twice, 8, inputs=[kc.array(np.ones(8, np.float32))])
print(before, libgomp_loaded(), os.environ.get("OMP_WAIT_POLICY"))
"""


def _run(tmp_path, extra_env):
    script = tmp_path / "wait_policy_probe.py"   # kernels need a source file
    script.write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    env.update(extra_env)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.split()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps")
def test_passive_waiting_is_the_default(tmp_path):
    before, after, policy = _run(tmp_path, {})
    assert (before, after, policy) == ("False", "True", "PASSIVE")


def test_the_users_policy_stands(tmp_path):
    assert _run(tmp_path, {"OMP_WAIT_POLICY": "active"})[2] == "active"
    assert _run(tmp_path, {"GOMP_SPINCOUNT": "1000"})[2] == "None"
