"""The forward-only fast 3-D P2G (sim/mpm_fast_3d.py): the same results as mpm_transfer's P2G, taken
only by untaped steps without gradients; taped and differentiated steps keep the old kernels."""
import numpy as np
import pytest

import kernelcore as kc
import sim
from sim import mpm_fast_3d, mpm_transfer


def two_material_model(requires_grad=False, models=("neo_hookean",), perm=None):
    """Two touching blocks moving into each other, under gravity, walls close enough to be hit."""
    b = sim.ModelBuilder(gravity=(0.0, -9.8, 0.0))
    rng = np.random.default_rng(4)
    for n, (lo, vel) in enumerate((((0.30, 0.20, 0.30), (1.0, -0.5, 0.3)), ((0.47, 0.22, 0.32), (-1.0, 0.0, -0.2)))):
        mat = b.add_material(model=models[n % len(models)], youngs_modulus=3.0e3, poisson_ratio=0.3)
        b.add_particle_grid(lo, vel, 5, 6, 5, 1.0 / 32, density=1000.0, material=mat, jitter=0.3 / 32)
    model = b.finalize(requires_grad=requires_grad)
    v = model.particle_qd.numpy() + rng.normal(0.0, 0.3, (model.particle_count, 3)).astype(np.float32)
    model.particle_qd.assign(v)
    if perm is not None:   # the same particles in another order (every per-particle array permuted)
        for name in ("particle_q", "particle_qd", "particle_mass", "particle_volume", "particle_material"):
            a = getattr(model, name)
            a.assign(a.numpy()[perm])
    return model


def launched_kernels(fn):
    """Keys of the kernels launched while fn() runs."""
    keys = []
    real = kc.launch

    def spy(kernel, *a, **kw):
        keys.append(kernel.key)
        return real(kernel, *a, **kw)

    kc.launch = spy
    try:
        fn()
    finally:
        kc.launch = real
    return keys


def run(model, fast, steps=50, dt=1.0e-3):
    solver = sim.SolverMPM(model, dx=1.0 / 16, bounds=((0.0,) * 3, (1.0,) * 3), dim=3, boundary="separate")
    solver._fast_3d = fast
    s0, s1 = model.state(), model.state()
    for _ in range(steps):
        solver.step(model, s0, s1, None, dt)
        s0, s1 = s1, s0
    return s0


@pytest.mark.parametrize("models", [("neo_hookean",), ("neo_hookean", "snow")], ids=["one_model", "mixed"])
def test_fast_p2g_matches_old_kernels_over_50_steps(models):
    model = two_material_model(models=models)
    old = run(model, fast=False)
    new = run(model, fast=True)
    for name in ("particle_q", "particle_qd", "particle_F", "particle_C", "particle_Jp"):
        a, b = getattr(old, name).numpy().astype(np.float64), getattr(new, name).numpy().astype(np.float64)
        scale = max(np.abs(a).max(), 1e-6)
        # P2G: the same operations in the same order; G2P: the same sums regrouped (float32 rounding)
        err = np.abs(a - b).max()
        assert err <= 1e-5 * scale, (name, err, scale)
    moved = np.abs(new.particle_q.numpy() - model.particle_q.numpy()).max()
    assert moved > 1.0 / 32   # the blocks moved (and met): a comparison of something


def test_fast_step_keeps_the_users_particle_order():
    # a shuffled order: particle i is particle perm[i] of the ordered model, and its slab bucket
    # sort (an index array) must not reorder what the user sees
    perm = np.random.default_rng(7).permutation(300)
    ordered = run(two_material_model(), fast=True)
    shuffled_model = two_material_model(perm=perm)
    shuffled = run(shuffled_model, fast=True)
    old = run(shuffled_model, fast=False)
    for name in ("particle_q", "particle_qd", "particle_F"):
        a = getattr(ordered, name).numpy()[perm].astype(np.float64)
        b = getattr(shuffled, name).numpy().astype(np.float64)
        c = getattr(old, name).numpy().astype(np.float64)
        scale = max(np.abs(a).max(), 1e-6)
        # the same particles: equal up to the float32 rounding of other orders of the adds
        assert np.abs(a - b).max() <= 1e-5 * scale, name
        assert np.abs(c - b).max() <= 1e-5 * scale, name


def slab_keys_numpy(q, grid):
    """The slab of each particle's stencil base in float64 (sim/mpm_fast_3d.SLAB layers of nodes)."""
    g = (q[:, 0].astype(np.float64) - grid.lower[0]) / grid.dx
    bx = np.clip(np.trunc(g - 0.5).astype(np.int64), 0, grid.shape[0] - 3)
    return bx // mpm_fast_3d.SLAB, g


@pytest.mark.parametrize("chunked", [False, True], ids=["one_chunk", "32_chunks"])
def test_slab_bucket_sort_against_numpy(monkeypatch, chunked):
    # chunked: the parallel counting sort (SORT_CHUNKS chunks of ~9 particles, forced here for 300
    # particles, on two threads): each chunk places its particles from all the chunks' counts
    if chunked:
        monkeypatch.setattr(mpm_fast_3d, "PARALLEL_PARTICLES", 0)
        monkeypatch.setenv("KERNELCORE_NUM_THREADS", "2")
    model = two_material_model(perm=np.random.default_rng(1).permutation(300))
    solver = sim.SolverMPM(model, dx=1.0 / 16, bounds=((0.0,) * 3, (1.0,) * 3), dim=3)
    s0 = model.state()
    q = s0.particle_q.numpy().copy()
    q[:7, 0] = [-3.0, -0.3, 0.0, 0.999, 1.0, 1.4, 5.0]    # escaped particles: clamped to the first/last slab
    s0.particle_q.assign(q)
    grid = solver.grid_for(s0)
    flat = mpm_fast_3d.flat_grid(grid)
    flat.bucket(s0.particle_q, grid)
    key = flat.key.numpy()
    expect, g = slab_keys_numpy(q, grid)
    exact = np.abs(g - 0.5 - np.round(g - 0.5)) > 1e-4        # off the float32 rounding of a node boundary
    assert exact.sum() > 250 and np.array_equal(key[exact], expect[exact])
    assert np.abs(key - expect).max() <= 1
    assert key.min() == 0 and key.max() == flat.slabs - 1
    # a stable counting sort: numpy's stable argsort of the keys, slab starts from the key counts
    assert np.array_equal(flat.order.numpy(), np.argsort(key, kind="stable"))
    start = np.concatenate([[0], np.cumsum(np.bincount(key, minlength=flat.slabs))])
    assert np.array_equal(flat.start.numpy(), start)


def test_parallel_slab_scatter_does_not_depend_on_the_thread_count(monkeypatch):
    # the two-colour slab launches (forced here for 300 particles): each slab is one thread's, in the
    # particles' order, so the same adds in the same order on any number of threads (6 slabs of a
    # colour on 2 cores here); and equal to the old kernels to float32 rounding
    monkeypatch.setattr(mpm_fast_3d, "PARALLEL_PARTICLES", 0)
    model = two_material_model(perm=np.random.default_rng(2).permutation(300))
    monkeypatch.setenv("KERNELCORE_NUM_THREADS", "1")
    one = run(model, fast=True, steps=20)
    monkeypatch.setenv("KERNELCORE_NUM_THREADS", "2")
    keys = launched_kernels(lambda: run(model, fast=True, steps=1))
    assert keys.count("p2g_scatter_3d_slab_kernel") == 2, keys    # the two colours
    two = run(model, fast=True, steps=20)
    old = run(model, fast=False, steps=20)
    for name in ("particle_q", "particle_qd", "particle_C", "particle_F"):
        a, b, c = (getattr(s, name).numpy() for s in (one, two, old))
        assert np.array_equal(a, b), name
        assert np.abs(a - c).max() <= 1e-5 * max(np.abs(c).max(), 1e-6), name


def test_untaped_3d_step_takes_the_fast_kernels():
    model = two_material_model()
    solver = sim.SolverMPM(model, dx=1.0 / 16, bounds=((0.0,) * 3, (1.0,) * 3), dim=3)
    s0, s1 = model.state(), model.state()
    keys = launched_kernels(lambda: solver.step(model, s0, s1, None, 2.0e-4))
    assert any(k.startswith("p2g_scatter_3d_slab_kernel") for k in keys), keys
    assert any(k.startswith("slab_fill_kernel") for k in keys), keys
    assert any(k.startswith("p2g_stress_3d_lanes_kernel") for k in keys), keys
    assert any(k.startswith("g2p_3d_rows_kernel") for k in keys), keys
    assert not any(k.startswith("p2g_3d_kernel") or k.startswith("g2p_3d_kernel") for k in keys), keys


def test_taped_steps_keep_the_differentiable_kernels():
    # a differentiated model on a Tape, and a model without gradients stepped under a Tape
    for requires_grad in (False, True):   # (the differentiated one last: its tape is used below)
        model = two_material_model(requires_grad=requires_grad)
        solver = sim.SolverMPM(model, dx=1.0 / 16, bounds=((0.0,) * 3, (1.0,) * 3), dim=3)
        s0, s1 = model.state(), model.state()
        tape = kc.Tape()

        def step():
            with tape:
                solver.step(model, s0, s1, None, 2.0e-4)

        keys = launched_kernels(step)
        assert not any("flat" in k or "lanes" in k or "axis" in k for k in keys), keys
        assert any(k.startswith("p2g") for k in keys), keys
    # the taped, differentiated step still has a gradient (the old kernels' adjoints)
    loss = kc.zeros(1, dtype=float, requires_grad=True)

    @kc.kernel
    def sum_x(q: kc.array(dtype=kc.vec3), out: kc.array(dtype=float)):
        kc.atomic_add(out, 0, q[kc.tid()][0])

    with tape:
        kc.launch(sum_x, dim=model.particle_count, inputs=[s1.particle_q, loss])
    tape.backward(loss)
    g = s0.particle_qd.grad.numpy()
    assert np.all(np.isfinite(g)) and np.abs(g[:, 0]).max() > 0


def test_fast_step_equals_old_step_on_two_threads(monkeypatch):
    monkeypatch.setenv("KERNELCORE_NUM_THREADS", "2")
    model = two_material_model()
    old = run(model, fast=False, steps=5)
    new = run(model, fast=True, steps=5)
    a, b = old.particle_q.numpy(), new.particle_q.numpy()
    assert np.abs(a - b).max() <= 1e-6


def test_flat_view_aliases_the_grid_and_rejects_strided_arrays():
    a = kc.zeros((2, 3, 4), dtype=kc.vec3)
    flat = mpm_fast_3d.flat_view(a)
    assert flat.shape == (72,)
    flat.numpy()[3 * 5 + 1] = 2.0
    assert a.numpy()[0, 1, 1, 1] == 2.0
    with pytest.raises(ValueError, match="contiguous"):
        mpm_fast_3d.flat_view(_strided())


def _strided():
    """A float array viewing every second element of another (not contiguous)."""
    base = kc.zeros(8, dtype=float)
    view = kc.array.__new__(kc.array, shape=1)
    view.device, view.dtype = base.device, base.dtype
    view._set_buffer(base.numpy()[::2], 1)
    return view


def test_stencil_base_nonneg_equals_the_clamp():
    @kc.kernel
    def bases(x: kc.array(dtype=float), n: int, a: kc.array(dtype=int), b: kc.array(dtype=int)):
        t = kc.tid()
        a[t] = mpm_transfer.stencil_base(x[t], n)
        b[t] = mpm_fast_3d.stencil_base_nonneg(x[t], n)

    x = np.array([-5.0, -0.2, 0.0, 0.49, 0.5, 1.7, 9.4, 9.6, 12.0, 1e6], np.float32)
    xa = kc.array(x, dtype=float)
    a, b = kc.zeros(len(x), dtype=int), kc.zeros(len(x), dtype=int)
    kc.launch(bases, dim=len(x), inputs=[xa, 12, a, b])
    assert np.array_equal(a.numpy(), b.numpy())
