"""SolverPBF rejects bad input with one-line errors that name the argument."""
import numpy as np
import pytest

import kernelcore as kc
import sim


def block_model(vel=(0.0, 0.0, 0.0), s=0.05, n=4, **builder):
    b = sim.ModelBuilder()
    b.add_particle_grid((0.1, 0.1, 0.1), vel, n, n, n, s, density=1000.0, radius=0.5 * s)
    for name, args in builder.items():
        getattr(b, name)(**args)
    return b.finalize()


BOUNDS = ((0.0, 0.0, 0.0), (1.0, 1.0, 1.0))


@pytest.mark.parametrize("kw,match", [
    (dict(smoothing_length=0.0), "smoothing_length"),
    (dict(smoothing_length=-0.1), "smoothing_length"),
    (dict(smoothing_length=float("nan")), "smoothing_length"),
    (dict(iterations=0), "iterations"),
    (dict(iterations=2.5), "iterations"),
    (dict(max_neighbors=0), "max_neighbors"),
    (dict(relaxation=0.0), "relaxation"),
    (dict(scorr_k=-1.0), "scorr_k"),
    (dict(scorr_dq=1.5), "scorr_dq"),
    (dict(xsph=-0.1), "xsph"),
    (dict(vorticity_confinement=-1.0), "vorticity_confinement"),
    (dict(cfl=0.0), "cfl"),
    (dict(rest_density=0.0), "rest_density"),
    (dict(gravity=(0.0, 1.0)), "gravity"),
    (dict(bounds=((0.0, 0.0), (1.0, 1.0))), "bounds"),
    (dict(bounds=((0.0, 0.0, 0.0), (0.02, 1.0, 1.0))), "bounds"),
])
def test_bad_parameters(kw, match):
    args = dict(smoothing_length=0.1, bounds=BOUNDS)
    args.update(kw)
    with pytest.raises(ValueError, match=match):
        sim.SolverPBF(block_model(), **args)


def test_particles_outside_the_domain_name_bounds():
    with pytest.raises(ValueError, match=r"bounds=.*does not contain the model's particle 3 .*16 particles outside"):
        sim.SolverPBF(block_model(), smoothing_length=0.1, bounds=((0.0, 0.0, 0.0), (0.24, 1.0, 1.0)))
    model = block_model()
    solver = sim.SolverPBF(model, smoothing_length=0.1, bounds=BOUNDS)
    s0, s1 = model.state(), model.state()
    q = s0.particle_q.numpy()
    q[5] = (2.0, 0.5, 0.5)
    s0.particle_q.assign(kc.array(q, dtype=kc.vec3))
    with pytest.raises(ValueError, match="state_in's particle 5"):
        solver.step(model, s0, s1, None, 1e-3)


def test_cfl_over_the_limit_names_dt_and_the_particle():
    model = block_model(vel=(4.0, 0.0, 0.0))
    solver = sim.SolverPBF(model, smoothing_length=0.1, bounds=BOUNDS, cfl=0.5)
    s0, s1 = model.state(), model.state()
    with pytest.raises(ValueError, match=r"dt=0.02 gives a CFL number .* = 0.8\d* over the limit cfl=0.5"):
        solver.step(model, s0, s1, None, 0.02)
    dt = solver.max_dt(s0)
    assert dt == pytest.approx((-4.0 + np.sqrt(16.0 + 4 * 9.81 * 0.05)) / (2 * 9.81), rel=1e-5)   # (4 + g dt) dt = 0.05
    solver.step(model, s0, s1, None, dt * 0.999)
    with pytest.raises(ValueError, match="dt must be finite and > 0"):
        solver.step(model, s0, s1, None, 0.0)


def test_rest_density_needs_particle_volumes():
    b = sim.ModelBuilder()
    b.add_particle_grid((0.1, 0.1, 0.1), (0.0, 0.0, 0.0), 2, 2, 2, 0.05, mass=0.1, radius=0.02)
    model = b.finalize()
    with pytest.raises(ValueError, match="rest_density"):
        sim.SolverPBF(model, smoothing_length=0.1, bounds=BOUNDS)
    assert sim.SolverPBF(model, smoothing_length=0.1, bounds=BOUNDS, rest_density=800.0).rest_density == 800.0


def test_material_viscosity_is_reported_not_ignored():
    b = sim.ModelBuilder()
    mat = b.add_material(model="fluid", viscosity=0.5)
    b.add_particle_grid((0.1, 0.1, 0.1), (0.0, 0.0, 0.0), 2, 2, 2, 0.05, density=1000.0, radius=0.025, material=mat)
    with pytest.warns(UserWarning, match="xsph"):
        sim.SolverPBF(b.finalize(), smoothing_length=0.1, bounds=BOUNDS)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sim.SolverPBF(block_model(), smoothing_length=0.1, bounds=BOUNDS)  # viscosity 0: nothing to report


def test_neighbour_overflow_raises():
    model = block_model()
    solver = sim.SolverPBF(model, smoothing_length=0.1, bounds=BOUNDS, max_neighbors=4)
    with pytest.raises(ValueError, match=r"neighbours within 1.1 h, more than max_neighbors=4"):
        solver.step(model, model.state(), model.state(), None, 1e-3)


def test_articulations_are_named():
    b = sim.ModelBuilder()
    b.add_particle_grid((0.1, 0.1, 0.1), (0.0, 0.0, 0.0), 2, 2, 2, 0.05, density=1000.0, radius=0.02)
    body = b.add_body()
    b.add_shape_sphere((0.0, 0.0, 0.0), radius=0.1, body=body)
    b.add_joint_revolute(-1, body)
    with pytest.raises(ValueError, match="the model has 1 joints; SolverPBF moves free bodies only"):
        sim.SolverPBF(b.finalize(), smoothing_length=0.1, bounds=BOUNDS)


def test_state_of_another_model():
    model = block_model()
    other = block_model(n=3)
    solver = sim.SolverPBF(model, smoothing_length=0.1, bounds=BOUNDS)
    with pytest.raises(ValueError, match="state_in.particle_q has 27 entries"):
        solver.step(model, other.state(), model.state(), None, 1e-3)


def test_cfl_counts_a_fast_body():
    b = sim.ModelBuilder()
    b.add_particle_grid((0.1, 0.1, 0.1), (0.0, 0.0, 0.0), 2, 2, 2, 0.05, density=1000.0, radius=0.02)
    body = b.add_body(kc.transform(kc.vec3(0.6, 0.5, 0.5), kc.quat(0.0, 0.0, 0.0, 1.0)), vel=(0.0, 0.0, 6.0))
    b.add_shape_sphere(radius=0.05, body=body)
    model = b.finalize()
    solver = sim.SolverPBF(model, smoothing_length=0.1, bounds=BOUNDS)
    with pytest.raises(ValueError, match=r"over the limit cfl=0.5 \(body 0 moves at 6 m/s"):
        solver.step(model, model.state(), model.state(), None, 0.01)
    assert solver.max_dt(model.state()) < 0.05 / 6.0
