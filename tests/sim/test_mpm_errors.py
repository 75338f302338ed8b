"""SolverMPM and the MPM builder calls reject bad input with one-line errors naming the argument and value."""
import numpy as np
import pytest

import sim


def model_2d(material="fixed_corotated", E=1.0e4, **kw):
    b = sim.ModelBuilder()
    mat = b.add_material(model=material, youngs_modulus=E, poisson_ratio=0.3)
    b.add_particle_grid((0.4, 0.4, 0.0), (0.0, 0.0, 0.0), 4, 4, 1, 0.01, density=1000.0, material=mat, **kw)
    return b.finalize()


@pytest.mark.parametrize("dx", [0.0, -0.1, float("nan"), float("inf"), "a"])
def test_non_positive_dx(dx):
    with pytest.raises(ValueError, match=r"SolverMPM: dx must be a finite number > 0, got"):
        sim.SolverMPM(model_2d(), dx=dx, bounds=((0, 0), (1, 1)), dim=2)


def test_bounds_must_contain_the_particles():
    with pytest.raises(ValueError, match=r"bounds=.*do not contain particle 0 at \[0\.4"):
        sim.SolverMPM(model_2d(), dx=0.05, bounds=((0.5, 0.0), (1.0, 1.0)), dim=2)
    with pytest.raises(ValueError, match=r"bounds must be \(lower, upper\) with 3 finite numbers"):
        sim.SolverMPM(model_2d(), dx=0.05, bounds=((0, 0), (1, 1)), dim=3)
    with pytest.raises(ValueError, match=r"must span at least 2 dx"):
        sim.SolverMPM(model_2d(), dx=0.05, bounds=((0.39, 0.39), (0.45, 1.0)), dim=2)


@pytest.mark.parametrize("nu", [0.5, 0.7, -1.0, float("nan")])
def test_poisson_ratio_out_of_range(nu):
    b = sim.ModelBuilder()
    with pytest.raises(ValueError, match=rf"add_material: poisson_ratio must lie in \(-1, 0.5\), got {nu}"):
        b.add_material(model="neo_hookean", poisson_ratio=nu)


def test_bad_material_keywords():
    b = sim.ModelBuilder()
    with pytest.raises(ValueError, match=r"add_material: model must be one of .* got 'rubber'"):
        b.add_material(model="rubber")
    with pytest.raises(ValueError, match=r"add_material: youngs_modulus must be finite and > 0, got -5"):
        b.add_material(model="snow", youngs_modulus=-5)
    with pytest.raises(ValueError, match=r"add_material: friction_angle must lie in \[0, 90\) degrees, got 95"):
        b.add_material(model="sand", friction_angle=95)


def test_time_step_beyond_the_cfl_limit():
    model = model_2d(E=1.0e5)
    solver = sim.SolverMPM(model, dx=0.02, bounds=((0, 0), (1, 1)), dim=2)
    c = np.sqrt((1.0e5 * 0.3 / (1.3 * 0.4) + 1.0e5 / 1.3) / 1000.0)   # P-wave speed sqrt((lambda + 2 mu) / rho)
    assert solver.max_dt == pytest.approx(0.5 * 0.02 / c, rel=1e-5)
    s0, s1 = model.state(), model.state()
    with pytest.raises(ValueError, match=r"SolverMPM.step: dt=0.01 must lie in \(0, 0.00\d+\] s: the CFL guard"):
        solver.step(model, s0, s1, None, 0.01)
    with pytest.raises(ValueError, match=r"dt must be finite and > 0 \[s\], got -0.001"):
        solver.step(model, s0, s1, None, -0.001)
    # a larger cfl= accepts it
    assert sim.SolverMPM(model, dx=0.02, bounds=((0, 0), (1, 1)), dim=2, cfl=20.0).max_dt > 0.01


def test_particles_without_continuum_material_or_volume():
    b = sim.ModelBuilder()
    b.add_particle_grid((0.4, 0.4, 0.0), (0.0, 0.0, 0.0), 2, 2, 1, 0.01, density=1000.0)   # material 0: contact only
    with pytest.raises(ValueError, match=r"particle 0 has material 0 without a continuum model"):
        sim.SolverMPM(b.finalize(), dx=0.05, bounds=((0, 0), (1, 1)), dim=2)
    b = sim.ModelBuilder()
    mat = b.add_material(model="neo_hookean")
    b.add_particle((0.5, 0.5, 0.0), material=mat)
    with pytest.raises(ValueError, match=r"particle 0 has no volume"):
        sim.SolverMPM(b.finalize(), dx=0.05, bounds=((0, 0), (1, 1)), dim=2)


def test_bad_solver_options():
    m = model_2d()
    with pytest.raises(ValueError, match=r"SolverMPM: dim must be 2 or 3, got 4"):
        sim.SolverMPM(m, dx=0.05, bounds=((0, 0), (1, 1)), dim=4)
    with pytest.raises(ValueError, match=r"SolverMPM: boundary must be one of .* got 'glue'"):
        sim.SolverMPM(m, dx=0.05, bounds=((0, 0), (1, 1)), dim=2, boundary="glue")
    with pytest.raises(ValueError, match=r"add_particle_grid: give mass or density"):
        sim.ModelBuilder().add_particle_grid((0, 0, 0), (0, 0, 0), 1, 1, 1, 0.1)
    with pytest.raises(ValueError, match=r"add_particles: volume must be finite and >= 0, got -1"):
        sim.ModelBuilder().add_particles(np.zeros((2, 3)), volume=-1.0)


TAPED_3D_STEP = """
import kernelcore as kc, sim
b = sim.ModelBuilder(gravity=(0, -9.81, 0))
mat = b.add_material(model="neo_hookean", youngs_modulus=1e4, poisson_ratio=0.3)
b.add_particle_grid((0.4, 0.4, 0.4), (0, 0, 0), 3, 3, 3, 0.05, density=1000.0, material=mat)
m = b.finalize()
s0, s1 = m.state(), m.state()
solver = sim.SolverMPM(m, dx=0.05, bounds=((0, 0, 0), (1, 1, 1)), dim=3)

@kc.kernel
def sum_x(q: kc.array(dtype=kc.vec3), loss: kc.array(dtype=float)):
    kc.atomic_add(loss, 0, q[kc.tid()][0])

loss = kc.zeros(1, dtype=float, requires_grad=True)
tape = kc.Tape()
with tape:
    solver.step(m, s0, s1, None, 1e-4)
    kc.launch(sum_x, dim=m.particle_count, inputs=[s1.particle_q], outputs=[loss])
tape.backward(loss)
print("backward done", float(loss.numpy()[0]))
"""


def test_taped_step_of_a_model_without_gradients_runs_backward(tmp_path):
    """A step taped with states that want no gradients: backward runs (it segfaulted, reading the P2G
    launch's empty stand-in grid gradients) and gives the forward's loss.  A subprocess, so that a
    crash fails this test rather than the worker."""
    import os
    import subprocess
    import sys

    script = tmp_path / "taped_3d_step.py"   # a file: kernels are read from their source
    script.write_text(TAPED_3D_STEP)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    assert "backward done" in proc.stdout


def test_taped_step_whose_input_wants_gradients_but_output_does_not():
    import kernelcore as kc

    b = sim.ModelBuilder()
    mat = b.add_material(model="neo_hookean", youngs_modulus=1e4, poisson_ratio=0.3)
    b.add_particle_grid((0.4, 0.4, 0.4), (0, 0, 0), 3, 3, 3, 0.05, density=1000.0, material=mat)
    m = b.finalize()
    s0, s1 = m.state(requires_grad=True), m.state(requires_grad=False)
    solver = sim.SolverMPM(m, dx=0.05, bounds=((0, 0, 0), (1, 1, 1)), dim=3)
    with kc.Tape():
        with pytest.raises(ValueError, match=r"state_in.particle_q requires gradients but state_out does not"):
            solver.step(m, s0, s1, None, 1e-4)
