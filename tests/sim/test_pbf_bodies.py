"""SolverPBF with rigid bodies: shapes on bodies are boundaries of the fluid and get its reaction.

Archimedes: a box lighter than water floats with the draft mass / (rho A); momentum: a ball
thrown into a fluid block without gravity hands over momentum, fluid plus ball keep the total.
"""
import numpy as np
import pytest

import kernelcore as kc
import sim

G = 9.81


def test_box_floats_at_the_archimedes_draft():
    """A box of half the water's density, its rotation held by a huge inertia (heave only), in a
    thin tank (the box spans it in z): it settles with its bottom d = 0.5 * height below the
    fluid's free surface beside it (within 10 % of d)."""
    s = 0.02
    nx, ny, nz, bw, bh = 32, 14, 4, 8, 4           # tank and box half extents in spacings
    b = sim.ModelBuilder(gravity=(0.0, -G, 0.0))
    b.add_particle_grid((s / 2,) * 3, (0.0, 0.0, 0.0), nx, ny, nz, s, density=1000.0, radius=s / 2)
    L, Z, H0 = nx * s, nz * s, ny * s
    rho_box = 500.0
    mass = rho_box * (2 * bw * s) * (2 * bh * s) * Z
    body = b.add_body(kc.transform(kc.vec3(L / 2, H0 + bh * s, Z / 2), kc.quat(0.0, 0.0, 0.0, 1.0)), mass=mass,
                      inertia=np.eye(3) * 1e3)
    b.add_shape_box(body=body, half_extents=(bw * s, bh * s, Z / 2), density=rho_box)
    model = b.finalize()
    solver = sim.SolverPBF(model, smoothing_length=2 * s, bounds=((0.0, 0.0, 0.0), (L, 3 * H0, Z)), xsph=0.1)
    states = [model.state(), model.state()]
    bottoms = []
    steps, dt = 400, 1.0 / 200
    for _ in range(steps):
        solver.step(model, states[0], states[1], None, dt)
        states.reverse()
        bottoms.append(states[0].body_q.numpy()[0][1] - bh * s)
    q = states[0].particle_q.numpy()
    assert np.all(np.isfinite(q)) and len(q) == nx * ny * nz
    beside = np.abs(q[:, 0] - L / 2) > (bw + 3) * s      # columns clear of the box
    column = np.floor(q[beside, 0] / s).astype(int)
    surface = np.mean([q[beside][column == c, 1].max() for c in np.unique(column)]) + s / 2
    draft = surface - np.mean(bottoms[-steps // 4:])     # the last second, a few heave periods
    expected = rho_box / 1000.0 * 2 * bh * s
    assert draft == pytest.approx(expected, rel=0.1)
    assert np.std(bottoms[-steps // 4:]) < 0.05 * expected          # settled


def test_ball_into_fluid_conserves_momentum_without_gravity():
    s = 0.02
    b = sim.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    n = 8
    b.add_particle_grid((0.5, 0.5, 0.5), (0.0, 0.0, 0.0), n, n, n, s, density=1000.0, radius=s / 2)
    centre = 0.5 + (n - 1) * s / 2
    radius = 2.5 * s
    v0 = np.array([1.0, 0.2, 0.0])
    body = b.add_body(kc.transform(kc.vec3(0.5 - radius - 1.5 * s, centre, centre), kc.quat(0.0, 0.0, 0.0, 1.0)),
                      vel=tuple(v0))
    b.add_shape_sphere(body=body, radius=radius, density=2000.0)
    model = b.finalize()
    solver = sim.SolverPBF(model, smoothing_length=2 * s, bounds=((0.0, 0.0, 0.0), (2.0, 2.0, 2.0)), xsph=0.05)
    m = model.particle_mass.numpy().astype(np.float64)
    M = float(model.body_mass.numpy()[0])
    states = [model.state(), model.state()]
    for _ in range(40):
        solver.step(model, states[0], states[1], None, 2.5e-3)
        states.reverse()
    v_fluid = (m[:, None] * states[0].particle_qd.numpy()).sum(0)
    v_body = M * states[0].body_qd.numpy()[0][:3]
    assert np.linalg.norm(M * v0 - v_body) > 0.1 * np.linalg.norm(M * v0)       # the ball did push the fluid
    np.testing.assert_allclose(v_fluid + v_body, M * v0, atol=2e-3 * np.linalg.norm(M * v0))


@kc.kernel
def body_x(body_q: kc.array(dtype=kc.transform), loss: kc.array(dtype=float)):
    loss[0] = kc.transform_get_translation(body_q[0])[0]


def test_gradient_through_the_coupling_matches_finite_differences():
    """d(final x of a ball thrown into fluid) / d(its initial velocity): the fluid's reaction is in the
    chain (without it dx/dvx would be the number of steps times dt exactly)."""
    s, steps, dt = 0.05, 12, 4.0e-3
    b = sim.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    b.add_particle_grid((0.1 + 0.5 * s, 0.5 * s, 0.5 * s), (0.0, 0.0, 0.0), 3, 3, 3, s, density=1000.0,
                        radius=0.5 * s, jitter=0.004, seed=1)
    body = b.add_body(kc.transform(kc.vec3(0.1 - 0.06 - 0.3 * s, 1.5 * s, 1.5 * s), kc.quat(0.0, 0.0, 0.0, 1.0)))
    b.add_shape_sphere(body=body, radius=0.06, density=500.0)
    model = b.finalize(requires_grad=True)
    solver = sim.SolverPBF(model, smoothing_length=2 * s, bounds=((0.0, 0.0, 0.0), (0.6, 0.5, 0.15)))

    def run(v0, tape=None):
        states = [model.state() for _ in range(steps + 1)]
        states[0].body_qd.assign(kc.array(np.array([[*v0, 0.0, 0.0, 0.0]], np.float32), dtype=kc.spatial_vector))
        loss = kc.zeros(1, dtype=float, requires_grad=True)
        with _maybe(tape):
            for k in range(steps):
                solver.step(model, states[k], states[k + 1], None, dt)
            kc.launch(body_x, dim=1, inputs=[states[-1].body_q], outputs=[loss])
        return loss, states

    v0 = np.array([2.0, 0.3, 0.0])
    tape = kc.Tape()
    loss, states = run(v0, tape)
    tape.backward(loss=loss)
    grad = states[0].body_qd.grad.numpy().astype(np.float64)[0][:3]
    free = steps * dt
    assert grad[0] < 0.95 * free, "the fluid must slow the ball (reaction in the gradient)"
    eps = 5.0e-4    # small: the loss has kinks where a particle starts touching the ball (2e-3 straddles one)
    for axis in range(3):
        e = np.zeros(3)
        e[axis] = eps
        fd = (float(run(v0 + e)[0].numpy()[0]) - float(run(v0 - e)[0].numpy()[0])) / (2 * eps)
        assert grad[axis] == pytest.approx(fd, rel=0.05, abs=2e-3 * free)


class _maybe:
    """``with _maybe(tape)``: record on the tape when there is one."""

    def __init__(self, tape):
        self.tape = tape

    def __enter__(self):
        return self.tape.__enter__() if self.tape is not None else None

    def __exit__(self, *a):
        return self.tape.__exit__(*a) if self.tape is not None else False


def cube_mesh(half):
    """Closed cube (8 vertices, 12 triangles wound counter-clockwise seen from outside)."""
    p = np.array([[x, y, z] for z in (-1, 1) for y in (-1, 1) for x in (-1, 1)], np.float64) * half
    quads = [(0, 2, 3, 1), (4, 5, 7, 6), (0, 1, 5, 4), (2, 6, 7, 3), (0, 4, 6, 2), (1, 3, 7, 5)]
    tris = []
    for a, b, c, d in quads:
        tris += [(a, b, c), (a, c, d)]
    return p, np.array(tris)


def test_cube_mesh_on_a_body_acts_like_a_box():
    """A tilted cube thrown into fluid: as a triangle mesh on the body (queried in its own frame) it
    moves the fluid and is moved by it like the analytic box of the same size."""
    def run(kind):
        s, half = 0.02, 0.05
        b = sim.ModelBuilder(gravity=(0.0, 0.0, 0.0))
        b.add_particle_grid((0.5, 0.5, 0.5), (0.0, 0.0, 0.0), 6, 6, 6, s, density=1000.0, radius=s / 2)
        rot = (0.0, 0.0, float(np.sin(0.2)), float(np.cos(0.2)))     # 0.4 rad about z
        centre = 0.5 + 2.5 * s
        body = b.add_body(kc.transform(kc.vec3(0.5 - half * 1.3 - s, centre, centre), kc.quat(*rot)),
                          vel=(1.0, 0.0, 0.0))
        if kind == "box":
            b.add_shape_box(body=body, half_extents=(half, half, half), density=800.0)
        else:
            pts, tris = cube_mesh(half)
            b.add_shape_mesh(pts, tris, body=body, density=800.0)
        model = b.finalize()
        solver = sim.SolverPBF(model, smoothing_length=2 * s, bounds=((0.0, 0.0, 0.0), (2.0, 2.0, 2.0)))
        states = [model.state(), model.state()]
        for _ in range(30):
            solver.step(model, states[0], states[1], None, 2.5e-3)
            states.reverse()
        return states[0].particle_q.numpy(), states[0].body_qd.numpy()[0]

    q_box, v_box = run("box")
    q_mesh, v_mesh = run("mesh")
    assert v_box[0] < 0.95, "the fluid must slow the cube"
    assert np.abs(v_box[3:]).max() > 0.05, "the tilted cube must be turned by the fluid"
    np.testing.assert_allclose(v_mesh, v_box, atol=0.02)
    np.testing.assert_allclose(q_mesh, q_box, atol=2e-3)
