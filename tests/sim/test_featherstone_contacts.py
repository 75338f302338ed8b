"""SolverFeatherstone's fused body-static contacts (sim/featherstone_contacts.py) give the wrenches of the
two-launch contacts of sim/collide_bodies.py (tested against analytic contacts in tests/sim/test_contact*.py)
for every body shape kind against the ground, a tilted static plane, a static sphere, box and capsule,
including shapes that the bounding-radius cull skips and one within cohesion reach."""
import numpy as np

import kernelcore as kc
import sim
from sim.collide_bodies import body_static_pairs, eval_body_static_contacts
from sim.featherstone_contacts import eval_fs_static_contacts


def _scene():
    b = sim.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    b.set_ground_plane()
    b.set_material(0, ke=5e3, mu=0.5, restitution=0.3)
    b.add_shape_plane(pos=(10.0, 0.5, 0.0), rot=(0.0, 0.0, 0.2588, 0.9659))  # tilted 30 degrees
    b.add_shape_sphere(pos=(-5.0, 0.3, 0.0), radius=0.3)
    b.add_shape_box(pos=(5.0, 0.2, 0.0), half_extents=(0.4, 0.2, 0.4), rot=(0.0, 0.3827, 0.0, 0.9239))
    b.add_shape_capsule(pos=(0.0, 0.1, 5.0), radius=0.1, half_height=0.5, rot=(0.7071, 0.0, 0.0, 0.7071))
    rng = np.random.default_rng(0)
    # bodies near each collider (touching by a few mm) and one far above everything
    places = [(0.0, 0.09, 0.0), (10.0, 0.5, 0.0), (-5.0, 0.68, 0.0), (5.0, 0.47, 0.0), (0.0, 0.27, 5.0),
              (0.0, 3.0, 0.0), (2.0, 0.101, 0.0)]
    for i, place in enumerate(places):
        q = rng.normal(size=4)
        q /= np.linalg.norm(q)
        body = b.add_body(xform=tuple(place) + tuple(q), vel=tuple(rng.normal(size=3)),
                          ang_vel=tuple(rng.normal(size=3) * 2.0))
        b.add_shape_sphere(radius=0.1, body=body, density=500.0)
        b.add_shape_box(pos=(0.05, 0.0, 0.0), half_extents=(0.1, 0.05, 0.08), body=body, density=500.0)
        b.add_shape_capsule(pos=(0.0, -0.05, 0.0), radius=0.04, half_height=0.12, body=body, density=500.0)
    return b.finalize()


def test_fused_contacts_match_the_two_launch_contacts():
    model = _scene()
    state = model.state()
    pairs = body_static_pairs(model)
    ref = kc.zeros(model.body_count, dtype=kc.spatial_vector)
    eval_body_static_contacts(model, state, pairs, ref, 1e-3)
    fused = kc.zeros(model.body_count, dtype=kc.spatial_vector)
    eval_fs_static_contacts(model, state.body_q, state.body_qd, pairs, fused, 1e-3)
    ref, fused = ref.numpy(), fused.numpy()
    touching = np.abs(ref).max(axis=1) > 1e-3
    assert touching.sum() >= 5, ref  # the scene really has contacts on most bodies
    assert not touching[5]  # the body far above
    np.testing.assert_allclose(fused, ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max())
