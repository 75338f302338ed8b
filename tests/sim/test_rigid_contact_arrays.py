"""Per-step contact arrays (sim/contacts.py): what the generation launch writes equals a numpy
narrow phase, and it lives in the output state."""
import numpy as np
import pytest

import kernelcore as kc
import sim
from sim.builder import quat_to_matrix

pytest.importorskip("geometry")

SPHERE, BOX, CAPSULE = 0, 1, 4


def _pile(seed=7, n=15):
    rng = np.random.default_rng(seed)
    b = sim.ModelBuilder(gravity=(0, -9.81, 0))
    b.set_ground_plane(offset=0.02)
    b.add_shape_sphere((0.3, 0.0, 0.3), 0.2)
    b.add_shape_capsule((-0.3, 0.05, -0.2), rot=(0.0, 0.0, np.sin(0.6), np.cos(0.6)), radius=0.1, half_height=0.3)
    for i in range(n):
        q = rng.normal(size=4)
        body = b.add_body(kc.transform(kc.vec3(*rng.uniform((-0.5, 0.0, -0.5), (0.5, 0.25, 0.5))),
                                       kc.quat(*(q / np.linalg.norm(q)))))
        kind = i % 3
        if kind == 0:
            b.add_shape_sphere(radius=rng.uniform(0.04, 0.1), body=body)
        elif kind == 1:
            b.add_shape_box(half_extents=rng.uniform(0.03, 0.1, 3), body=body)
        else:
            b.add_shape_capsule(radius=rng.uniform(0.03, 0.07), half_height=rng.uniform(0.03, 0.1), body=body)
    return b.finalize()


def _numpy_contacts(m, state):
    """Brute-force narrow phase of body shapes against the ground and the static shapes (float64)."""
    st = m.shape_type.numpy()
    sb = m.shape_body.numpy()
    spos = m.shape_pos.numpy().astype(np.float64)
    srot = m.shape_rot.numpy().astype(np.float64)
    sscale = m.shape_scale.numpy().astype(np.float64)
    bq = state.body_q.numpy().astype(np.float64)
    gn = np.asarray(m.ground_normal, np.float64)
    statics = [-1] + [c for c in range(m.shape_count) if sb[c] < 0]
    out = []

    def sdf(x, c):
        if c < 0:
            return gn, gn @ x - m.ground_offset
        if st[c] == SPHERE:
            rel = x - spos[c]
            return rel / np.linalg.norm(rel), np.linalg.norm(rel) - sscale[c][0]
        axis = srot[c] @ np.array([0.0, 1.0, 0.0])
        rel = x - spos[c]
        off = rel - axis * np.clip(rel @ axis, -sscale[c][1], sscale[c][1])
        return off / np.linalg.norm(off), np.linalg.norm(off) - sscale[c][0]

    for s in range(m.shape_count):
        if sb[s] < 0:
            continue
        rb = quat_to_matrix(bq[sb[s], 3:])
        pos = bq[sb[s], :3] + rb @ spos[s]
        rot = rb @ srot[s]
        h = sscale[s]
        if st[s] == SPHERE:
            points = [(np.zeros(3), h[0])]
        elif st[s] == CAPSULE:
            points = [(np.array([0.0, -h[1], 0.0]), h[0]), (np.array([0.0, h[1], 0.0]), h[0])]
        else:
            points = [(np.array([2 * (k % 2) - 1, 2 * ((k // 2) % 2) - 1, 2 * (k // 4) - 1.0]) * h, 0.0)
                      for k in range(8)]
        for c in statics:
            pts = points
            if c >= 0 and st[c] == SPHERE and st[s] != SPHERE:  # the point closest to the sphere's centre
                local = rot.T @ (spos[c] - pos)
                if st[s] == BOX:
                    pts = [(np.clip(local, -h, h), 0.0)]
                else:
                    pts = [(np.array([0.0, np.clip(local[1], -h[1], h[1]), 0.0]), h[0])]
            for p, r in pts:
                x = pos + rot @ p
                n, d = sdf(x, c)
                if d - r < 0.0:
                    out.append((s, c, x - n * r, n, r - d))
    return out


def test_contact_arrays_match_a_numpy_narrow_phase_on_a_random_pile():
    m = _pile()
    solver = sim.SolverSemiImplicit(m)
    s0, s1 = m.state(), m.state()
    solver.step(m, s0, s1, None, 1e-3)
    assert solver.contacts is s1.contacts          # kept with the output state
    got = s1.contacts.numpy()
    want = _numpy_contacts(m, s0)
    assert len(want) >= 10 and got["count"] == len(want) == len(got["depth"])
    key = lambda s, c, p: (int(s), int(c), *np.round(p, 4))  # noqa: E731
    order_got = sorted(range(len(want)), key=lambda i: key(got["shape_a"][i], got["shape_b"][i], got["point"][i]))
    order_want = sorted(range(len(want)), key=lambda i: key(*want[i][:3]))
    for i, j in zip(order_got, order_want):
        s, c, p, n, depth = want[j]
        assert (got["shape_a"][i], got["shape_b"][i]) == (s, c)
        np.testing.assert_allclose(got["point"][i], p, atol=2e-5)
        np.testing.assert_allclose(got["normal"][i], n, atol=2e-5)
        np.testing.assert_allclose(got["depth"][i], depth, atol=2e-5)


def test_each_step_keeps_its_own_contacts():
    m = _pile(n=6)
    solver = sim.SolverSemiImplicit(m)
    states = [m.state() for _ in range(3)]
    solver.step(m, states[0], states[1], None, 1e-3)
    first = states[1].contacts.numpy()
    solver.step(m, states[1], states[2], None, 1e-3)
    assert states[2].contacts is not states[1].contacts
    again = states[1].contacts.numpy()
    np.testing.assert_array_equal(first["depth"], again["depth"])
