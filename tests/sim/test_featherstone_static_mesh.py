"""SolverFeatherstone(toi=True) link spheres against static triangle meshes (issue 16).

sim/toi.py's sphere sweep does not see static meshes, so when a model has one the link spheres are
swept on the solid path (sim/featherstone_toi_shapes.py, whose closest_feature meets meshes).  The
references are the same scenes with a static box in place of the mesh (met at the mesh's skin).
"""
import numpy as np
import pytest

import sim

pytest.importorskip("geometry")

from sim.toi_mesh import MESH_SKIN  # noqa: E402

from featherstone_scenes import (PENDULUM_RATE, PENDULUM_WALL, ROD, impact_angle, pendulum_model, run,  # noqa: E402
                                 run_pendulum)


def _sphere_bob(radius):
    def add(b, body):
        b.add_shape_sphere(pos=(0.0, -ROD, 0.0), radius=radius, body=body, density=1.0)
    return add


def test_sphere_pendulum_bob_rebounds_from_a_mesh_wall_as_from_a_box_wall():
    # 200 rad/s (0.1 m per step at the bob): the sphere meets the mesh wall where it meets the same box
    e, radius = 0.5, 0.05
    touch = np.arcsin((PENDULUM_WALL - radius) / ROD)  # the bob's surface reaches the wall's face
    angles = {}
    for wall in ("box", "mesh"):
        model = pendulum_model(_sphere_bob(radius), e, wall=wall)
        a, r = run_pendulum(model, True)
        assert a.max() < touch + 0.01, wall  # never through the wall
        assert r[-1] == pytest.approx(-e * PENDULUM_RATE, rel=1e-3), wall
        angles[wall] = impact_angle(a, r, e)
    # the box wall's sphere sweep (sim/toi.py) runs along the step's chord, the mesh wall's solid sweep along
    # the link's rotation: both within 5 mrad (2.5 mm at the bob) of the touch, and of each other
    assert angles["box"] == pytest.approx(touch, abs=5e-3)
    assert angles["mesh"] == pytest.approx(touch, abs=5e-3)
    assert angles["mesh"] == pytest.approx(angles["box"], abs=1e-3)  # 0.5 mm at the bob (the mesh skin)


def test_fast_sphere_link_rebounds_from_a_mesh_floor():
    # a free sphere link at 50 m/s onto an open two-triangle floor at y = 0.5 (no gravity): rebound at e v
    e, dt, steps, v, y0, radius = 0.5, 1e-3, 30, 50.0, 1.5, 0.1
    b = sim.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    b.set_material(0, ke=1e4, mu=0.5, restitution=e)
    floor = np.array([(-1.0, 0.5, -1.0), (2.0, 0.5, -1.0), (2.0, 0.5, 1.5), (-1.0, 0.5, 1.5)])
    b.add_shape_mesh(floor, np.array([0, 2, 1, 0, 3, 2]))
    body = b.add_body(xform=(0.0, y0, 0.0, 0, 0, 0, 1), vel=(0.0, -v, 0.0))
    b.add_shape_sphere(radius=radius, body=body, density=1000.0)
    b.add_joint_free(body)
    model = b.finalize()
    heights, qds, _ = run(model, sim.SolverFeatherstone(model, toi=True), steps, dt)
    top = 0.5 + radius + MESH_SKIN
    t_hit = (y0 - top) / v
    assert heights.min() > top - 1e-3
    assert qds[-1][1] == pytest.approx(e * v, rel=1e-3)
    assert heights[-1] == pytest.approx(top + e * v * (steps * dt - t_hit), abs=2e-3)


def test_sphere_link_resting_on_a_mesh_floor_holds():
    # under gravity a sphere resting on a mesh floor at y = 0 stays there (0.2 s)
    radius = 0.1
    b = sim.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    b.set_material(0, ke=1e4, mu=0.5, restitution=0.0)
    floor = np.array([(-1.0, 0.0, -1.0), (1.0, 0.0, -1.0), (1.0, 0.0, 1.0), (-1.0, 0.0, 1.0)])
    b.add_shape_mesh(floor, np.array([0, 2, 1, 0, 3, 2]))
    body = b.add_body(xform=(0.0, radius + 1e-3, 0.0, 0, 0, 0, 1))
    b.add_shape_sphere(radius=radius, body=body, density=1000.0)
    b.add_joint_free(body)
    model = b.finalize()
    heights, qds, _ = run(model, sim.SolverFeatherstone(model, toi=True), 200, 1e-3)
    assert heights.min() > radius - 2e-3
    assert abs(qds[-1][1]) < 1e-2
