"""kc.config.verify_nan: forward and adjoint NaN/Inf trapped and named."""
import os
import subprocess
import sys

import numpy as np
import pytest

import kernelcore as kc
from kernelcore.verify_nan import NonFiniteError


@kc.kernel
def _scale(x: kc.array(dtype=float), y: kc.array(dtype=float)):
    i = kc.tid()
    y[i] = 2.0 * x[i]


@kc.kernel
def _log_it(x: kc.array(dtype=float), y: kc.array(dtype=kc.vec3)):
    i = kc.tid()
    y[i] = kc.vec3(x[i], kc.log(x[i]), 1.0)


@kc.kernel
def _root(x: kc.array(dtype=float), y: kc.array(dtype=float)):
    i = kc.tid()
    y[i] = kc.sqrt(x[i])


@kc.kernel
def _total(x: kc.array(dtype=float), loss: kc.array(dtype=float)):
    i = kc.tid()
    kc.atomic_add(loss, 0, x[i])


@pytest.fixture
def verify_nan(monkeypatch):
    monkeypatch.setattr(kc.config, "verify_nan", True)


def test_forward_nan_names_kernel_argument_index(verify_nan):
    x = kc.array(np.array([1.0, 2.0, 0.5, -1.0, 3.0], np.float32), dtype=float)
    y = kc.zeros(5, dtype=kc.vec3)
    with pytest.raises(NonFiniteError, match=r"kernel '.*_log_it.*' \(.*test_verify_nan.py:\d+\) wrote nan at index 3, "
                                             r"component 1 of argument 'y'"):
        kc.launch(_log_it, 5, inputs=[x], outputs=[y])


def test_forward_finite_passes_and_off_by_default(verify_nan, monkeypatch):
    x = kc.array(np.array([1.0, 2.0], np.float32), dtype=float)
    y = kc.zeros(2, dtype=kc.vec3)
    kc.launch(_log_it, 2, inputs=[x], outputs=[y])
    monkeypatch.setattr(kc.config, "verify_nan", False)
    bad = kc.array(np.array([-1.0], np.float32), dtype=float)
    kc.launch(_log_it, 1, inputs=[bad], outputs=[kc.zeros(1, dtype=kc.vec3)])  # no check when off


def test_adjoint_inf_names_the_forward_launch(verify_nan):
    x = kc.array(np.array([4.0, 1.0, 0.0, 9.0], np.float32), dtype=float, requires_grad=True)
    a = kc.zeros(4, dtype=float, requires_grad=True)
    b = kc.zeros(4, dtype=float, requires_grad=True)
    loss = kc.zeros(1, dtype=float, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(_scale, 4, inputs=[x], outputs=[a])     # launches[0]
        kc.launch(_root, 4, inputs=[a], outputs=[b])      # launches[1]: sqrt(0) -> infinite adjoint at index 2
        kc.launch(_total, 4, inputs=[b], outputs=[loss])  # launches[2]
    with pytest.raises(NonFiniteError, match=r"adjoint of kernel '.*_root.*' .*reversing tape.launches\[1\].* "
                                             r"wrote inf at index 2 into the gradient of argument 'x'"):
        tape.backward(loss)


def test_adjoint_inside_checkpointed_loop_names_steps(verify_nan):
    x = kc.array(np.array([1.0, 0.0], np.float32), dtype=float, requires_grad=True)
    loss = kc.zeros(1, dtype=float, requires_grad=True)
    tape = kc.Tape()
    with tape:
        out = kc.checkpointed(lambda i, s, t: kc.launch(_scale if i != 4 else _root, 2, inputs=[s], outputs=[t]), x, 6,
                              segment=4)
        kc.launch(_total, 2, inputs=[out], outputs=[loss])
    with pytest.raises(NonFiniteError, match=r"_root.*inside kc.checkpointed, recomputed step 4 of 6"):
        tape.backward(loss)


def test_environment_variable_turns_it_on():
    code = "import kernelcore as kc; print(kc.config.verify_nan)"
    env = dict(os.environ, KERNELCORE_VERIFY_NAN="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"


def test_forward_inside_checkpointed_loop_names_step(verify_nan):
    x = kc.array(np.array([1.0, 2.0], np.float32), dtype=float)
    y = kc.zeros(2, dtype=kc.vec3)

    def step(i, s, t):
        kc.launch(_scale, 2, inputs=[s], outputs=[t])
        if i == 3:
            kc.launch(_log_it, 2, inputs=[kc.array(np.array([1.0, -1.0], np.float32), dtype=float)], outputs=[y])

    with pytest.raises(NonFiniteError, match=r"_log_it.*index 1.*inside kc.checkpointed, step 3 of 5"):
        kc.checkpointed(step, x, 5)
