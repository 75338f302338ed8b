"""The vectorised advection kernels (sim/grid_fluid_advect.py) against the generic ones (grid_fluid_kernels)."""
import numpy as np
import pytest

import kernelcore as kc
from sim import grid_fluid_advect as A
from sim import grid_fluid_kernels as K

OFFSETS = [(0.0, 0.5, 0.5), (0.5, 0.0, 0.5), (0.5, 0.5, 0.0)]


def _fields(cells, seed, requires_grad=False):
    """Random face velocities of up to ~3 cells per step (so traces leave the grid and clamp) and two cell fields."""
    rng = np.random.default_rng(seed)
    nx, ny, nz = cells
    shapes = [(nx + 1, ny, nz), (nx, ny + 1, nz), (nx, ny, nz + 1 if nz > 1 else 2)]
    vel = [rng.uniform(-3.0, 3.0, s).astype(np.float32) for s in shapes]
    # nz = 1: a non-zero w too, which must not matter (every u, v and cell sample clamps z to the one layer)
    cell = [rng.standard_normal(cells).astype(np.float32) for _ in range(2)]
    return [kc.from_numpy(a, requires_grad=requires_grad) for a in vel + cell]


@pytest.mark.parametrize("cells", [(9, 7, 1), (6, 5, 4)])
def test_vectorised_advection_matches_generic_kernels_bitwise(cells):
    u, v, w, q1, q2 = _fields(cells, 0)
    h = 0.7
    for axis in range(3 if cells[2] > 1 else 2):
        q = (u, v, w)[axis]
        want = kc.zeros(q.shape, dtype=float)
        got = kc.zeros(q.shape, dtype=float)
        K.advect(q, u, v, w, OFFSETS[axis], h, want)
        A.advect_face(axis, u, v, w, h, got)
        assert np.array_equal(got.numpy(), want.numpy()), f"axis {axis}"
        assert np.abs(want.numpy() - q.numpy()).max() > 0.1   # the flow moved something
    want1, want2, got1, got2 = (kc.zeros(cells, dtype=float) for _ in range(4))
    K.advect_pair(q1, q2, u, v, w, (0.5, 0.5, 0.5), h, want1, want2)
    A.advect_cells(q1, q2, u, v, w, h, got1, got2)
    assert np.array_equal(got1.numpy(), want1.numpy())
    assert np.array_equal(got2.numpy(), want2.numpy())


@pytest.mark.parametrize("cells", [(5, 4, 1), (4, 3, 3)])
def test_vectorised_advection_gradients_match_generic_kernels(cells):
    h = 0.6
    grads = []
    for fast in (False, True):
        u, v, w, q1, q2 = _fields(cells, 1, requires_grad=True)
        outs = [kc.zeros(a.shape, dtype=float, requires_grad=True) for a in (u, v, w, q1, q2)]
        tape = kc.Tape()
        with tape:
            for axis in range(3):
                if fast:
                    A.advect_face(axis, u, v, w, h, outs[axis])
                else:
                    K.advect((u, v, w)[axis], u, v, w, OFFSETS[axis], h, outs[axis])
            if fast:
                A.advect_cells(q1, q2, u, v, w, h, outs[3], outs[4])
            else:
                K.advect_pair(q1, q2, u, v, w, (0.5, 0.5, 0.5), h, outs[3], outs[4])
        rng = np.random.default_rng(2)   # a random cotangent on every output (the fast kernels wrote flat views)
        tape.backward(grads={o.flatten() if fast else o: rng.standard_normal(o.size if fast else o.shape)
                             .astype(np.float32) for o in outs})
        grads.append([a.grad.numpy().copy() for a in (u, v, w, q1, q2)])
    for g_fast, g_ref in zip(grads[1], grads[0]):
        assert np.abs(g_ref).max() > 0
        np.testing.assert_allclose(g_fast, g_ref, rtol=1e-5, atol=1e-5)
