"""SolverMPM with static SDF colliders (geometry.Volume, sim/mpm_volume_colliders.py): sand poured
on a volume box / sphere stays on top (sinks < 1 dx) and ends where the analytic-shape collider of
the same shape puts it; bad colliders are refused with a clear error."""
import numpy as np
import pytest

import geometry
import sim

DX = 1.0 / 16
VOXEL = 1.0 / 32
BOX_CENTRE = np.array([0.5, 0.25, 0.5])
BOX_HALF = np.array([0.2, 0.1, 0.2])
SPHERE_CENTRE = np.array([0.5, 0.2, 0.5])
SPHERE_RADIUS = 0.18


def box_sdf(q):
    d = np.abs(q - BOX_CENTRE) - BOX_HALF
    return np.where(np.all(d < 0, -1), d.max(-1), np.linalg.norm(np.maximum(d, 0), axis=-1))


def sphere_sdf(q):
    return np.linalg.norm(q - SPHERE_CENTRE, axis=-1) - SPHERE_RADIUS


def sdf_volume(sdf):
    """A geometry.Volume sampling ``sdf`` [m] on a 1/32 m lattice over [-0.25, 1.25]^3."""
    n = int(round(1.5 / VOXEL)) + 1
    axis = -0.25 + VOXEL * np.arange(n)
    pts = np.stack(np.meshgrid(axis, axis, axis, indexing="ij"), -1)
    return geometry.Volume.load_from_numpy(sdf(pts), min_world=(-0.25,) * 3, voxel_size=VOXEL, bg_value=1.0)


def pour_sand(shape, collider, steps=150, dim=3):
    """Sand dropped on a box or sphere given as an analytic shape ("shape") or an SDF volume ("volume").

    Returns (worst signed distance of any particle over the run [m], final positions (n, 3))."""
    b = sim.ModelBuilder(gravity=(0.0, -9.8, 0.0))
    mat = b.add_material(model="sand", youngs_modulus=2.0e4, poisson_ratio=0.3)
    sdf = box_sdf if shape == "box" else sphere_sdf
    volumes = None
    if collider == "shape" and shape == "box":
        b.add_shape_box(pos=tuple(BOX_CENTRE), half_extents=tuple(BOX_HALF))
    elif collider == "shape":
        b.add_shape_sphere(pos=tuple(SPHERE_CENTRE), radius=SPHERE_RADIUS)
    elif collider == "volume" and dim == 3:
        volumes = [sdf_volume(sdf)]
    elif collider == "volume":   # 2-D samples the volume at z = 0: give it the shape's mid-plane section there
        volumes = [sdf_volume(lambda p: sdf(p * [1.0, 1.0, 0.0] + [0.0, 0.0, BOX_CENTRE[2]]))]
    nz = 8 if dim == 3 else 1
    b.add_particle_grid((0.4, 0.45, 0.4 if dim == 3 else 0.0), (0.0, 0.0, 0.0), 8, 8, nz, DX / 2, density=1500.0,
                        material=mat)
    model = b.finalize()
    solver = sim.SolverMPM(model, dx=DX, bounds=((0.0,) * dim, (1.0,) * dim), dim=dim, friction=0.5,
                           sdf_colliders=volumes)
    s0, s1 = model.state(), model.state()
    worst = np.inf
    for _ in range(steps):
        solver.step(model, s0, s1, None, 2.0e-3)
        s0, s1 = s1, s0
        q = s0.particle_q.numpy().astype(np.float64)
        if dim == 2:   # the 2-D solver sees the shape's z = 0 cross-section
            q = q.copy()
            q[:, 2] = BOX_CENTRE[2]   # = SPHERE_CENTRE[2]
        worst = min(worst, sdf(q).min())
    return worst, q


@pytest.mark.parametrize("shape", ["box", "sphere"])
def test_sand_on_a_volume_sdf_stays_on_top_like_the_analytic_shape(shape):
    worst, q = pour_sand(shape, "volume")
    # grid colliders act on nodes: a particle may sink up to about one cell, never through
    assert worst > -DX, worst / DX
    worst_shape, q_shape = pour_sand(shape, "shape")
    # the same shape as an SDF volume and as an analytic collider: the heap ends in the same place
    assert np.linalg.norm(q.mean(0) - q_shape.mean(0)) < 0.25 * DX, (q.mean(0), q_shape.mean(0))
    assert abs(np.median(q[:, 1]) - np.median(q_shape[:, 1])) < 0.25 * DX


def test_without_the_volume_the_sand_falls_through():
    # the test above can fail: the same run with no collider ends inside the box
    worst, q = pour_sand("box", "none", steps=120)
    assert worst < -DX   # (the box is 0.1 m = 1.6 dx thick)


def test_volume_collider_in_2d():
    worst, q = pour_sand("box", "volume", dim=2)
    assert worst > -DX, worst / DX
    assert np.median(q[:, 1]) > BOX_CENTRE[1] + BOX_HALF[1] - 0.5 * DX


def test_bad_sdf_colliders_are_refused():
    b = sim.ModelBuilder()
    mat = b.add_material(model="sand", youngs_modulus=2.0e4, poisson_ratio=0.3)
    b.add_particle_grid((0.4, 0.45, 0.4), (0.0, 0.0, 0.0), 2, 2, 2, DX / 2, density=1500.0, material=mat)
    model = b.finalize()
    with pytest.raises(TypeError, match=r"sdf_colliders\[0\] must be a geometry.Volume"):
        sim.SolverMPM(model, dx=DX, bounds=((0.0,) * 3, (1.0,) * 3), sdf_colliders=["sphere"])
    inside_everywhere = geometry.Volume.load_from_numpy(np.full((8, 8, 8), -1.0), bg_value=-1.0)
    with pytest.raises(ValueError, match=r"sdf_colliders\[0\] has background value -1.0; it must be > 0"):
        sim.SolverMPM(model, dx=DX, bounds=((0.0,) * 3, (1.0,) * 3), sdf_colliders=inside_everywhere)
