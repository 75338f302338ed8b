"""kc.launch(..., adjoint=True, adj_inputs=...) with an adjoint array shorter than its array, or a
Tape over an array whose ``.grad`` was assigned with another shape, wrote past the adjoint's end:
the process died with a segfault.  It is now a ValueError naming the kernel, the argument and
both shapes.  The launch runs in a subprocess, so that a crash fails
this test rather than the pytest worker."""
import os
import subprocess
import sys

import numpy as np
import pytest

import kernelcore as kc

SCRIPT = '''
import numpy as np
import kernelcore as kc


@kc.kernel
def square(x: kc.array(dtype=float), y: kc.array(dtype=float)):
    i = kc.tid()
    y[i] = x[i] * x[i]


n = 1 << 20
x = kc.from_numpy(np.ones(n, np.float32))
y = kc.zeros(n, dtype=float)
try:
    kc.launch(square, dim=n, inputs=[x, y], adjoint=True,
              adj_inputs=[kc.zeros(1, dtype=float), kc.from_numpy(np.ones(n, np.float32))])
except ValueError as e:
    print("error:", e)

# a .grad of the wrong shape, assigned before recording (caught when the Tape records the launch)
x = kc.from_numpy(np.ones(n, np.float32), requires_grad=True)
y = kc.zeros(n, dtype=float, requires_grad=True)
x.grad = kc.zeros(1, dtype=float)
try:
    with kc.Tape() as tape:
        kc.launch(square, dim=n, inputs=[x, y])
except ValueError as e:
    print("record:", e)

# ... or after recording (caught when the Tape replays it)
x.grad = kc.zeros(n, dtype=float)
tape = kc.Tape()
with tape:
    kc.launch(square, dim=n, inputs=[x, y])
x.grad = kc.zeros(1, dtype=float)
try:
    tape.backward(grads={y: kc.from_numpy(np.ones(n, np.float32))})
except ValueError as e:
    print("backward:", e)
'''


def test_short_adjoint_array_is_an_error_not_a_crash(tmp_path):
    script = tmp_path / "short_adjoint.py"   # a file: kernels are read from their source
    script.write_text(SCRIPT)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    assert ("error: kernel 'square' argument 'adj_x': the adjoint has shape (1,) but the array has shape (1048576,)"
            in proc.stdout), proc.stdout
    assert "record: kernel 'square' argument 'x': its .grad has shape (1,) but the array has shape (1048576,)" in proc.stdout
    assert ("backward: kernel 'square' argument 'x': its .grad: the adjoint has shape (1,) but the array has shape "
            "(1048576,)") in proc.stdout


@kc.kernel
def cube(x: kc.array(dtype=float), y: kc.array(dtype=float)):
    i = kc.tid()
    y[i] = x[i] * x[i] * x[i]


def test_adjoints_of_the_right_shape_still_give_the_derivative():
    x0 = np.array([0.5, -1.0, 2.0], np.float32)
    x, y = kc.from_numpy(x0), kc.zeros(3, dtype=float)
    adj_x, adj_y = kc.zeros(3, dtype=float), kc.from_numpy(np.ones(3, np.float32))
    kc.launch(cube, dim=3, inputs=[x, y], adjoint=True, adj_inputs=[adj_x, adj_y])
    np.testing.assert_allclose(adj_x.numpy(), 3.0 * x0 ** 2, rtol=1e-6)   # d(x^3)/dx
    with pytest.raises(ValueError, match=r"argument 'adj_y': the adjoint has shape \(4,\) but the array has shape \(3,\)"):
        kc.launch(cube, dim=3, inputs=[x, y], adjoint=True, adj_inputs=[adj_x, kc.zeros(4, dtype=float)])
