"""SolverPBF(lanes=True): the multiplier and position-update pair loops vectorised across particles
(sim/pbf_lanes.py).

The lanes do the same operations in the same order as the scalar kernels (the padding slots add
exact zeros), so every step is bit-identical; GCC must really vectorise them (-fopt-info-vec),
which each of the module's three workarounds is needed for.
"""
import os
import re
import shutil
import subprocess
import warnings

import numpy as np
import pytest

import kernelcore as kc
import sim
from kernelcore import config, toolchain
from sim import pbf_lanes

G = 9.81


def spinning_block(n, s, lanes, **kw):
    b = sim.ModelBuilder(gravity=(0.0, -G, 0.0))
    b.add_particle_grid((s / 2,) * 3, (0.0, 0.0, 0.0), n, n, n, s, density=1000.0, radius=s / 2)
    kw.setdefault("xsph", 0.05)
    kw.setdefault("scorr_k", 0.01)
    kw.setdefault("cell_sort", False)   # bit-identity holds in the user's order (sorted: tests/sim/test_pbf_sort.py)
    if lanes:   # one lanes module for all of these tests and test_pbf.py's (each capacity builds its own)
        kw.setdefault("lane_capacity", 56)
    extra_shapes = kw.pop("shapes", None)
    edit_model = kw.pop("edit_model", None)
    if extra_shapes:
        extra_shapes(b)
    model = b.finalize()
    if edit_model:
        edit_model(model)
    L = n * s
    solver = sim.SolverPBF(model, smoothing_length=2 * s, bounds=((0.0, 0.0, 0.0), (2 * L, 2 * L, L)),
                           vorticity_confinement=0.3, lanes=lanes, **kw)
    states = [model.state(), model.state()]
    q = states[0].particle_q.numpy().copy()
    states[0].particle_qd.assign(kc.array(np.cross(q - q.mean(0), [0.0, 0.0, 4.0]).astype(np.float32), dtype=kc.vec3))
    return model, solver, states


def run(lanes, steps=15, n=6, s=0.02, **kw):
    model, solver, states = spinning_block(n, s, lanes, **kw)
    q0 = states[0].particle_q.numpy().copy()
    for _ in range(steps):
        solver.step(model, states[0], states[1], None, 2e-3)
        states.reverse()
    return solver, q0, states[0].particle_q.numpy().copy(), states[0].particle_qd.numpy().copy()


def test_lanes_steps_are_bit_identical_to_scalar_steps():
    solver, q0, q1, v1 = run(True)
    assert solver._lane_scratch is not None, "the lanes must have run"
    assert solver.uniform_volume, "one volume for all: the uniform-volume lane kernels"
    _, _, q_ref, v_ref = run(False)
    assert np.abs(q_ref - q0).max() > 0.01, "the block must move"
    np.testing.assert_array_equal(q1, q_ref)
    np.testing.assert_array_equal(v1, v_ref)


def _two_volumes(model):
    """Every other particle 1.5x heavier (at one rest density: 1.5x the volume)."""
    m = model.particle_mass.numpy().astype(np.float64)
    m[::2] *= 1.5
    model.particle_mass.assign(kc.array(m.astype(np.float32), dtype=float))
    model.particle_inv_mass.assign(kc.array((1.0 / m).astype(np.float32), dtype=float))


@pytest.mark.parametrize("box", [True, False], ids=["box_lanes", "general_lanes"])
def test_lanes_with_unequal_volumes_read_each_neighbours_volume(box):
    """Particles of two volumes: the lanes take the kernels that load each neighbour's volume
    (pair_kernels(uniform=False)) and stay bit-identical to the scalar kernels; the uniform-volume
    kernels (volume[0] for every slot) would not."""
    res = []
    for lanes in (True, False):
        model, solver, states = spinning_block(6, 0.02, lanes, rest_density=1000.0, edit_model=_two_volumes)
        solver.box_lanes = box
        assert not solver.uniform_volume
        with pytest.raises(ValueError, match=r"SolverPBF.uniform_volume = True: the particles' rest volumes differ"):
            solver.uniform_volume = True
        with pytest.raises(ValueError, match=r"SolverPBF.uniform_volume must be True or False, got 'yes'"):
            solver.uniform_volume = "yes"
        vol = solver.particle_rest_volume.numpy()
        assert vol[0] == pytest.approx(1.5 * vol[1])
        for _ in range(8):
            solver.step(model, states[0], states[1], None, 2e-3)
            states.reverse()
        res.append((states[0].particle_q.numpy().copy(), states[0].particle_qd.numpy().copy()))
    np.testing.assert_array_equal(res[0][0], res[1][0])
    np.testing.assert_array_equal(res[0][1], res[1][1])


@pytest.mark.parametrize("cell_sort", [False, True])
def test_box_only_lanes_match_the_general_lanes_bit_for_bit(cell_sort, monkeypatch):
    """No shapes, no ground: the walls and the box projection run inside the vectorised pair kernels
    (sim/pbf_lanes_box.py), with the same operations as the general lanes' finish kernels."""
    from sim import pbf_lanes_box

    calls = []
    real = pbf_lanes_box.iterate
    monkeypatch.setattr(pbf_lanes_box, "iterate", lambda *a, **k: calls.append(1) or real(*a, **k))
    res = []
    for box in (True, False):
        model, solver, states = spinning_block(6, 0.02, True, cell_sort=cell_sort)
        solver.box_lanes = box
        for _ in range(8):
            solver.step(model, states[0], states[1], None, 2e-3)
            states.reverse()
        res.append((states[0].particle_q.numpy().copy(), states[0].particle_qd.numpy().copy()))
    assert len(calls) == 8, "the box-only kernels must run in the box_lanes steps only"
    np.testing.assert_array_equal(res[0][0], res[1][0])
    np.testing.assert_array_equal(res[0][1], res[1][1])


def test_box_only_lanes_do_not_run_with_a_ground_or_shapes(monkeypatch):
    from sim import pbf_lanes_box

    monkeypatch.setattr(pbf_lanes_box, "iterate", lambda *a, **k: pytest.fail("box-only lanes with a shape"))
    run(True, steps=2, shapes=lambda b: b.add_shape_sphere(pos=(0.16, 0.03, 0.06), radius=0.03))


def test_lanes_with_static_and_body_shapes_are_bit_identical():
    """Walls counted as fluid, a static sphere and a free box (the fluid's reaction on it): the
    per-particle parts after the pair sums (lambda_finish_kernel, delta_finish_kernel)."""
    def shapes(b):
        b.add_shape_sphere(pos=(0.16, 0.03, 0.06), radius=0.03)
        body = b.add_body(kc.transform(kc.vec3(0.06, 0.16, 0.06), kc.quat(0.0, 0.0, 0.0, 1.0)))
        b.add_shape_box(body=body, half_extents=(0.03, 0.02, 0.03), density=500.0)

    res = [run(lanes, steps=10, shapes=shapes) for lanes in (True, False)]
    assert res[0][0]._lane_scratch is not None
    assert np.abs(res[1][2] - res[1][1]).max() > 0.01
    np.testing.assert_array_equal(res[0][2], res[1][2])
    np.testing.assert_array_equal(res[0][3], res[1][3])
    np.testing.assert_array_equal(res[0][0].model.body_count, 1)


def test_capacity_choice_and_fallback(monkeypatch):
    assert pbf_lanes.capacity_for(30, 96) == 32
    assert pbf_lanes.capacity_for(33, 96) == 40
    assert pbf_lanes.capacity_for(49, 96) == 56
    assert pbf_lanes.capacity_for(50, 48) is None          # no capacity within the lists' rows
    assert pbf_lanes.capacity_for(97, 128) is None
    # lists longer than every capacity: the scalar kernels, the same steps as lanes=False
    monkeypatch.setattr(pbf_lanes, "CAPACITIES", ())
    with pytest.warns(UserWarning, match=r"lanes=True.*scalar pair kernels because a particle has \d+ neighbours"):
        solver, _, q1, v1 = run(True, steps=5, lane_capacity=None)
    assert solver._lane_scratch is None
    _, _, q_ref, v_ref = run(False, steps=5)
    np.testing.assert_array_equal(q1, q_ref)


class _Lists:
    """Stand-in for a step's neighbour lists: only the counts matter to the capacity choice."""

    def __init__(self, longest):
        self.count = kc.array(np.array([3, longest, 1], dtype=np.int32), dtype=kc.int32)


def test_capacity_grows_but_never_shrinks_between_steps():
    """Each capacity is a module built on first use: a longest list going up and down between steps must
    not switch (and build) modules back and forth; padding slots give exact zeros, so any holding capacity
    gives the same step."""
    model, solver, states = spinning_block(2, 0.02, True, lane_capacity=None)
    s_in, s_out = states
    chosen = [solver._lane_capacity(s_in, s_out, _Lists(n)) for n in (30, 45, 33, 20, 49, 40)]
    assert chosen == [32, 48, 48, 48, 56, 56]
    with pytest.warns(UserWarning, match="a particle has 97 neighbours"):
        assert solver._lane_capacity(s_in, s_out, _Lists(97)) is None   # the scalar kernels ...
    assert solver._lane_capacity(s_in, s_out, _Lists(12)) == 56   # ... and the lanes' capacity is kept


def test_fixed_lane_capacity_and_its_fallback():
    model, solver, states = spinning_block(2, 0.02, True, lane_capacity=40)
    s_in, s_out = states
    assert [solver._lane_capacity(s_in, s_out, _Lists(n)) for n in (5, 40, 12)] == [40, 40, 40]
    with pytest.warns(UserWarning, match=r"because a particle has 41 neighbours, more than lane_capacity=40"):
        assert solver._lane_capacity(s_in, s_out, _Lists(41)) is None
    assert solver._lane_capacity(s_in, s_out, _Lists(7)) == 40


@pytest.mark.parametrize("bad", [33, 0, 128, True, 40.0, "48"])
def test_lane_capacity_must_be_a_capacity_within_max_neighbors(bad):
    with pytest.raises(ValueError, match=r"lane_capacity must be one of .* got " + re.escape(repr(bad))):
        spinning_block(2, 0.02, True, lane_capacity=bad)
    with pytest.raises(ValueError, match=r"lane_capacity .*max_neighbors=48, got 56"):
        spinning_block(2, 0.02, True, lane_capacity=56, max_neighbors=48)


def test_lane_capacity_without_lanes_is_warned_about():
    with pytest.warns(UserWarning, match=r"lane_capacity=48\) has no effect without lanes=True") as caught:
        spinning_block(2, 0.02, False, lane_capacity=48)
    assert caught[0].filename == __file__


def test_taped_steps_do_not_use_the_lanes():
    model, solver, states = spinning_block(4, 0.02, True)
    s_in = model.state(requires_grad=True)
    s_out = model.state(requires_grad=True)
    with pytest.warns(UserWarning, match="lanes=True.*scalar pair kernels because the step is differentiated"):
        assert solver._lane_capacity(s_in, s_out, solver.buffers_for(s_out).neighbors) is None
    with warnings.catch_warnings():   # once per solver and reason, not every step
        warnings.simplefilter("error")
        assert solver._lane_capacity(s_in, s_out, solver.buffers_for(s_out).neighbors) is None


def test_a_taped_lanes_step_warns_once_and_matches_the_scalar_step():
    """A differentiated step with lanes=True takes the scalar kernels (same result) and says so once."""
    out = []
    for lanes in (True, False):
        model, solver, _ = spinning_block(4, 0.02, lanes)
        states = [model.state(requires_grad=True) for _ in range(3)]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for k in range(2):
                solver.step(model, states[k], states[k + 1], None, 2e-3)
        said = [w for w in caught if "lanes=True" in str(w.message)]
        assert len(said) == (1 if lanes else 0), [str(w.message) for w in caught]
        if lanes:
            assert said[0].filename == __file__, "the warning points at the user's step call"
        out.append(states[-1].particle_q.numpy())
    np.testing.assert_array_equal(out[0], out[1])


def test_lanes_on_a_cuda_model_warn_at_construction(monkeypatch):
    from sim.solvers import pbf

    monkeypatch.setattr(pbf, "_runs_on_cpu", lambda device: False)   # no GPU needed to see the fallback
    b = sim.ModelBuilder()
    b.add_particle_grid((0.01,) * 3, (0.0, 0.0, 0.0), 2, 2, 2, 0.02, density=1000.0, radius=0.01)
    model = b.finalize()
    with pytest.warns(UserWarning, match="lanes=True.*because the model is on a CUDA device") as caught:
        solver = sim.SolverPBF(model, smoothing_length=0.04, bounds=((0, 0, 0), (1, 1, 1)), lanes=True)
    assert not solver.lanes
    assert caught[0].filename == __file__


def _vectorised_loops(kernel, tmp_path, capacity=56):
    """How many loops GCC vectorised in ``kernel``'s module; the slot loop (a runtime loop in the
    kernel, for short CUDA code) must first be unrolled completely, or GCC vectorises it alone
    (in-order reductions over one particle's slots) instead of across particles."""
    cxx = config.cxx
    if shutil.which(cxx) is None or "clang" in os.path.basename(cxx):
        pytest.skip("needs g++ (GCC's -fopt-info)")
    src = tmp_path / "m.cpp"
    src.write_text(kernel.module.generate([kernel], "cpu"))
    flags = [f for f in toolchain.cpu_flags(cxx) + toolchain.SIMD_FLAGS if f != "-shared"]
    flags += toolchain.MODULE_FLAGS.get(kernel.module.name, [])
    proc = subprocess.run([cxx, *flags, f"-I{toolchain.NATIVE_DIR}", "-c", str(src), "-o", str(tmp_path / "m.o"),
                           "-fopt-info-vec-optimized", "-fopt-info-loop-optimized"], capture_output=True, text=True,
                          check=True)
    assert f"loop with {capacity} iterations completely unrolled" in proc.stderr, "the slot loop was not unrolled"
    return proc.stderr.count("loop vectorized")


@pytest.mark.parametrize("which", [0, 1, 2, 3], ids=["lambda_pairs", "delta_pairs", "vorticity_pairs", "finish_pairs"])
def test_lane_kernels_are_vectorised(which, tmp_path):
    kernel = pbf_lanes.pair_kernels(56)[which]   # the tests' one lanes module (spinning_block), also for the NVRTC gate
    assert toolchain.MODULE_FLAGS[kernel.module.name] == pbf_lanes.LANE_FLAGS
    assert _vectorised_loops(kernel, tmp_path) >= 1


def test_lane_kernels_are_short_loops_on_cuda():
    """The slot loop stays a loop in the generated CUDA (unrolled, NVRTC took ~15 minutes per
    capacity module in the suite's check): the source must not grow with the capacity."""
    from sim import pbf_lanes_box

    for kernels in (pbf_lanes.pair_kernels, pbf_lanes_box.box_kernels):
        sizes = [len(k.module.generate([k], "cuda")) for k in (kernels(56)[0], kernels(32)[0])]
        assert abs(sizes[1] - sizes[0]) < 100, sizes   # the same code but the loop bound


@pytest.mark.parametrize("bad", [0, 12, -8, 56.0])
def test_lane_capacity_of_the_kernels_is_checked(bad):
    from sim import pbf_lanes_box

    for kernels, name in ((pbf_lanes.pair_kernels, "sim.pbf_lanes"), (pbf_lanes_box.box_kernels, "sim.pbf_lanes_box")):
        with pytest.raises(ValueError, match=re.escape(f"{name}: capacity must be a positive multiple of 8, got {bad!r}")):
            kernels(bad)


@pytest.mark.parametrize("which, uniform", [(0, False), (1, False), (0, True)],
                         ids=["lambda_box", "delta_box", "lambda_box_uniform"])
def test_box_only_lane_kernels_are_vectorised(which, uniform, tmp_path):
    """sim/pbf_lanes_box.py: the walls and the box clamp inside the loop must not stop GCC (selects on
    vec3 values and vec3 min / max did); also the uniform-volume variant (volume[0] in the loop)."""
    from sim import pbf_lanes_box

    kernel = pbf_lanes_box.box_kernels(56, uniform)[which]
    assert toolchain.MODULE_FLAGS[kernel.module.name] == pbf_lanes.LANE_FLAGS
    assert _vectorised_loops(kernel, tmp_path) >= 1
