"""Time-of-impact contacts of particles against shapes on moving bodies (sim/toi.py): the particle
gets the impulse, the body the reaction."""
import numpy as np
import pytest

import kernelcore as kc
import sim
from rigid_scenes import impact_builder, run_steps
from sim.builder import quat_to_matrix

pytest.importorskip("geometry")


def _scene(kind, offset=0.0, body_vel=(0.0, 0.0, 0.0)):
    b = impact_builder()
    b.add_particle((0.0, offset, 0.0), (10.0, 0.0, 0.0), 0.1, 0.01)
    body = b.add_body(kc.transform(kc.vec3(0.5, 0.0, 0.0), kc.quat(0, 0, 0, 1)), vel=body_vel)
    if kind == "box":
        b.add_shape_box(half_extents=(0.05, 0.05, 0.05), body=body, density=1000.0)   # 1 kg
    else:
        b.add_shape_sphere(radius=0.05, body=body, density=1000.0)
    m = b.finalize()
    return m, sim.SolverSemiImplicit(m, toi=True)


@pytest.mark.parametrize("kind", ["box", "sphere"])
def test_fast_particle_bounces_off_a_free_body_elastically(kind):
    m, solver = _scene(kind)
    mp, mb = 0.1, float(m.body_mass.numpy()[0])
    s = run_steps(m, solver, 10, 0.01)   # 10 cm per step: penalty contacts would let it through
    vp = s.particle_qd.numpy()[0]
    vb = s.body_qd.numpy()[0]
    np.testing.assert_allclose(vp, ((mp - mb) / (mp + mb) * 10.0, 0, 0), atol=1e-4)
    np.testing.assert_allclose(vb[:3], (2 * mp / (mp + mb) * 10.0, 0, 0), atol=1e-4)
    np.testing.assert_allclose(vb[3:], 0.0, atol=1e-4)
    assert s.particle_q.numpy()[0, 0] < s.body_q.numpy()[0, 0] - 0.06   # it stayed outside


def test_off_centre_hit_conserves_momentum_and_angular_momentum():
    m, solver = _scene("box", offset=0.03, body_vel=(-1.0, 0.0, 0.0))
    mp, mb = 0.1, float(m.body_mass.numpy()[0])
    inertia = m.body_inertia.numpy()[0].astype(np.float64)

    def momenta(s):
        xp, vp = s.particle_q.numpy()[0].astype(np.float64), s.particle_qd.numpy()[0].astype(np.float64)
        q, qd = s.body_q.numpy()[0].astype(np.float64), s.body_qd.numpy()[0].astype(np.float64)
        r = quat_to_matrix(q[3:])
        lin = mp * vp + mb * qd[:3]
        ang = mp * np.cross(xp, vp) + mb * np.cross(q[:3], qd[:3]) + r @ inertia @ r.T @ qd[3:]
        return lin, ang

    l0, a0 = momenta(m.state())
    s = run_steps(m, solver, 8, 0.01)
    l1, a1 = momenta(s)
    assert abs(s.body_qd.numpy()[0, 5]) > 0.1       # the hit set the box spinning
    np.testing.assert_allclose(l1, l0, atol=1e-4)
    np.testing.assert_allclose(a1, a0, atol=2e-3)
