"""Particle environments (``Model.particle_world``): copies made by add_builder at the SAME
place must not see each other, nor each other's colliders, so each copy moves exactly as
the scene alone (the filter is what lets scenes/sweep.py pack variants into one model)."""
import numpy as np
import pytest

pytest.importorskip("geometry.hash_grid")

import sim  # noqa: E402

WEDGE = (np.array([(-1, 0, -1), (1, 0, -1), (1, 1, -1), (-1, 0, 1), (1, 0, 1), (1, 1, 1)], np.float64) * 0.1,
         np.array([0, 2, 1, 3, 4, 5, 0, 1, 4, 1, 4, 3, 1, 2, 5, 1, 5, 4, 0, 3, 5, 0, 5, 2], np.int32))


def _scene(mu=0.4):
    """Grains falling onto a sphere, a box and a mesh wedge over the ground (all static)."""
    b = sim.ModelBuilder()
    b.set_material(0, ke=2e3, restitution=0.3, mu=mu)
    b.add_particle_grid((-0.05, 0.12, -0.04), (0, 0, 0), 4, 3, 4, spacing=0.021, mass=0.01, radius=0.01,
                        jitter=0.002, seed=5)
    b.add_shape_sphere((0.0, 0.06, 0.0), radius=0.03)
    b.add_shape_box((0.06, 0.05, 0.0), half_extents=(0.02, 0.02, 0.05))
    b.add_shape_mesh(*WEDGE, pos=(-0.05, 0.0, 0.0))
    b.set_ground_plane()
    return b


def _run(model, steps=60, dt=5e-4, brute=False):
    solver = sim.SolverDEM(model, brute_force_contacts=brute)
    s0, s1 = model.state(), model.state()
    for _ in range(steps):
        solver.step(model, s0, s1, None, dt)
        s0, s1 = s1, s0
    return s0.particle_q.numpy()


def _packed(builders):
    b = sim.ModelBuilder()
    for other in builders:
        b.add_builder(other)  # identity transform: every copy at the same place
    return b.finalize()


def test_particle_world_is_recorded():
    one = _scene()
    m = _packed([one, one])
    n = one.particle_count
    np.testing.assert_array_equal(m.particle_world.numpy(), [0] * n + [1] * n)
    np.testing.assert_array_equal(one.finalize().particle_world.numpy(), [-1] * n)  # a plain builder: shared
    np.testing.assert_array_equal(m.shape_world.numpy(), [0, 0, 0, 1, 1, 1])


@pytest.mark.parametrize("brute", [False, True], ids=["hash_grid", "brute_force"])
def test_copies_at_the_same_place_move_as_the_scene_alone(brute):
    one = _scene()
    alone = _run(one.finalize(), brute=brute)
    assert np.ptp(alone[:, 1]) > 0.01  # the grains really moved and touched things
    m = _packed([one, one, one])
    packed = _run(m, brute=brute).reshape(3, one.particle_count, 3)
    for w in range(3):
        np.testing.assert_allclose(packed[w], alone, rtol=0, atol=1e-6)


def test_copies_with_different_materials_move_as_each_alone():
    a, b = _scene(mu=0.1), _scene(mu=0.9)
    ra, rb = _run(a.finalize()), _run(b.finalize())
    assert np.abs(ra - rb).max() > 1e-5  # the parameter matters
    packed = _run(_packed([a, b])).reshape(2, a.particle_count, 3)
    np.testing.assert_allclose(packed[0], ra, rtol=0, atol=1e-6)
    np.testing.assert_allclose(packed[1], rb, rtol=0, atol=1e-6)


def test_shared_particles_touch_every_world():
    """A particle of world -1 (added outside any environment) pushes the particles of each one."""
    b = sim.ModelBuilder(gravity=(0, 0, 0))
    for w in range(2):
        e = sim.ModelBuilder(gravity=(0, 0, 0))
        e.add_particle((0.0, 0.0, 0.0), mass=0.01, radius=0.01)
        b.add_builder(e, world=w)
    b.add_particle((0.015, 0.0, 0.0), mass=0.01, radius=0.01)  # overlaps both copies
    m = b.finalize()
    np.testing.assert_array_equal(m.particle_world.numpy(), [0, 1, -1])
    q = _run(m, steps=5, dt=1e-4)
    assert q[0, 0] < 0 and q[1, 0] < 0 and q[2, 0] > 0.015  # pushed apart
    np.testing.assert_allclose(q[0], q[1], atol=1e-7)  # the two copies do not push each other


def test_overlapping_worlds_get_separate_grid_offsets():
    """Packed copies at one place are spread over the hash table (else each query meets K times the
    neighbours); one world, or shared particles, keep the plain grid."""
    from sim.collide_particles import make_particle_grid, world_grid_shift

    one = _scene()
    m = _packed([one, one, one])
    grid = make_particle_grid(m)
    shift = world_grid_shift(m, grid, 0.05).numpy().reshape(3, one.particle_count, 3)
    assert np.all(shift[:, :1] == shift[:, :])  # one offset per world
    assert len({tuple(np.round(s[0], 6)) for s in shift}) == 3  # and a different one for each
    assert world_grid_shift(one.finalize(), make_particle_grid(one.finalize()), 0.05) is None
    b = sim.ModelBuilder()
    b.add_builder(one)
    b.add_builder(one)
    b.add_particle((0.0, 1.0, 0.0), radius=0.01)  # shared: every world's queries must meet it
    m2 = b.finalize()
    assert world_grid_shift(m2, make_particle_grid(m2), 0.05) is None
