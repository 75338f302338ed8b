"""Cloth air forces with a wind (builder.set_air_velocity): only the velocity relative to the air counts."""
import numpy as np
import pytest

import kernelcore as kc
import sim
from sim.cloth_forces import eval_triangles


def air_forces(wind, particle_vel):
    b = sim.ModelBuilder()
    b.set_air_velocity(wind)
    # one triangle, tilted so that both drag and lift act; membrane at rest (no elastic force)
    b.add_particles(np.array([[0, 0, 0], [0.3, 0, 0.1], [0, 0.2, 0.15]], float), vel=(0, 0, 0), mass=0.01)
    b.add_triangle(0, 1, 2, tri_ke=10.0, tri_ka=10.0, tri_kd=0.0, tri_drag=0.7, tri_lift=0.4)
    m = b.finalize()
    s = m.state()
    s.particle_qd.assign(kc.array(np.tile(np.asarray(particle_vel, np.float32), (3, 1)), dtype=kc.vec3))
    f = kc.zeros(3, dtype=kc.vec3)
    eval_triangles(m, s, f)
    return f.numpy().astype(np.float64), m


def test_wind_is_the_air_moving_past_still_cloth():
    wind = np.array([2.0, -0.5, 1.5])
    f_wind, m = air_forces(wind, (0, 0, 0))
    f_moving, _ = air_forces((0, 0, 0), -wind)        # the cloth moving through still air
    assert np.abs(f_wind).max() > 1e-2
    np.testing.assert_allclose(f_wind, f_moving, rtol=1e-5, atol=1e-7)
    # drag along the wind, of magnitude drag A |v|^2 |cos| (lift is normal to the wind)
    q = m.particle_q.numpy().astype(np.float64)
    n = np.cross(q[1] - q[0], q[2] - q[0])
    area = 0.5 * np.linalg.norm(n)
    w = np.linalg.norm(wind)
    c = abs(n @ wind) / (np.linalg.norm(n) * w)
    assert f_wind.sum(0) @ (wind / w) == pytest.approx(0.7 * area * w ** 2 * c, rel=1e-4)
    assert air_forces(wind, wind)[0] == pytest.approx(np.zeros((3, 3)), abs=1e-5)   # moving with the air: none (float32 membrane rounding only)


def test_bad_air_velocity_is_named():
    with pytest.raises(ValueError, match="set_air_velocity: velocity must be 3 finite numbers"):
        sim.ModelBuilder().set_air_velocity((1.0, np.nan, 0.0))
