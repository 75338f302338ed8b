"""numpy references for box-box contact manifolds (tests of sim/collide_box_faces.py and its callers).

Independent of the kernels: the face manifold is the vertex set of the intersection of two
quadrilaterals (corners inside the other one, edges crossing), not a Sutherland-Hodgman clip.
Lengths in m.
"""
import numpy as np


def brute_face_manifold(pos, rot, half):
    """numpy reference: the face axis of least overlap over the six face normals, and the polygon where
    the incident face overlaps the reference face, as the vertices of the intersection of the two
    quadrilaterals (corners inside the other one, edges crossing), by brute force."""
    d = pos[0] - pos[1]
    best = (-np.inf, 0, 0)
    for owner in (0, 1):
        for ax in range(3):
            u = rot[owner][:, ax]
            sep = abs(u @ d) - sum(np.abs(rot[b].T @ u) @ half[b] for b in (0, 1))
            if sep > best[0]:
                best = (sep, owner, ax)
    sep, r, ax = best
    i = 1 - r
    n = rot[r][:, ax] * np.sign(rot[r][:, ax] @ (pos[i] - pos[r]))
    c = pos[r] + n * half[r][ax]
    t = [rot[r][:, (ax + 1) % 3], rot[r][:, (ax + 2) % 3]]
    e = np.array([half[r][(ax + 1) % 3], half[r][(ax + 2) % 3]])
    j = int(np.argmax(np.abs(rot[i].T @ n)))
    fi = -rot[i][:, j] * np.sign(rot[i][:, j] @ n)
    ci = pos[i] + fi * half[i][j]
    a1, a2 = (rot[i][:, (j + m) % 3] * half[i][(j + m) % 3] for m in (1, 2))
    quad = np.array([ci + a1 * s1 + a2 * s2 for s1, s2 in ((1, 1), (-1, 1), (-1, -1), (1, -1))])
    uv = (quad - c) @ np.array(t).T
    height = (quad - c) @ n
    # the incident face's plane over the reference face: height = h0 + g . (u, v)
    g, *_ = np.linalg.lstsq(np.c_[np.ones(4), uv], height, rcond=None)
    rect = np.array([[e[0], e[1]], [-e[0], e[1]], [-e[0], -e[1]], [e[0], -e[1]]])

    def inside_quad(p):
        cross = [np.linalg.det(np.array([uv[(m + 1) % 4] - uv[m], p - uv[m]])) for m in range(4)]
        return all(cc >= -1e-9 for cc in cross) or all(cc <= 1e-9 for cc in cross)

    out = [p for p in uv if np.all(np.abs(p) <= e + 1e-9)] + [p for p in rect if inside_quad(p)]
    for m in range(4):
        p0, p1 = uv[m], uv[(m + 1) % 4]
        for q in range(4):
            q0, q1 = rect[q], rect[(q + 1) % 4]
            a = np.array([p1 - p0, q0 - q1]).T
            if abs(np.linalg.det(a)) > 1e-12:
                s_, t_ = np.linalg.solve(a, q0 - p0)
                if 0 < s_ < 1 and 0 < t_ < 1:
                    out.append(p0 + s_ * (p1 - p0))
    out = np.array(out).reshape(-1, 2)  # empty: the faces do not overlap
    heights = g[0] + out @ g[1:]
    world = c + out @ np.array(t) + heights[:, None] * n
    return sep, r, ax, n, world, heights


def brute_box_pair(pos, rot, half):
    """numpy reference of sim.collide_box_faces.box_pair_manifold for boxes 0 and 1 (world ``pos`` (2, 3),
    ``rot`` (2, 3, 3), ``half`` (2, 3)): None when an edge-edge axis (of the nine cross products) separates
    them more than every face axis by the kernel's margin (an edge contact), else (reference box r,
    normal n from r to the other box, incident-face points (k, 3), their gaps (k,))."""
    d = pos[0] - pos[1]
    face_best = max(abs(rot[o][:, a] @ d) - sum(np.abs(rot[b].T @ rot[o][:, a]) @ half[b] for b in (0, 1))
                    for o in (0, 1) for a in range(3))
    edge_best = -np.inf
    for i in range(3):
        for j in range(3):
            c = np.cross(rot[0][:, i], rot[1][:, j])
            if np.linalg.norm(c) > 1e-3:
                u = c / np.linalg.norm(c)
                edge_best = max(edge_best, abs(u @ d) - sum(np.abs(rot[b].T @ u) @ half[b] for b in (0, 1)))
    if edge_best > face_best + 1e-4 * (np.linalg.norm(half[0]) + np.linalg.norm(half[1])):
        return None
    sep, r, ax, n, world, heights = brute_face_manifold(pos, rot, half)
    return r, n, world, heights


def rotation(axis, angle):
    """Rotation matrix (3, 3) of ``angle`` [rad] about ``axis`` (Rodrigues)."""
    axis = np.asarray(axis, np.float64) / np.linalg.norm(axis)
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k


def quat_xyzw(rot):
    """(x, y, z, w) of a rotation matrix (angle < pi)."""
    w = 0.5 * np.sqrt(1.0 + np.trace(rot))
    return tuple(np.array([rot[2, 1] - rot[1, 2], rot[0, 2] - rot[2, 0], rot[1, 0] - rot[0, 1]]) / (4 * w)) + (w,)


def pressed_box_poses():
    """Six (half, pos, rot of box A; half, pos, rot of box B) [m] of box A pressed 1 cm into box B's top
    face: a small A tilted on a big B (B's face is the reference), a big A on a small B (A's face is the
    reference), A turned about B's face normal; then the same on a turned B."""
    rng = np.random.default_rng(7)
    cases = []
    for case in range(6):
        half_s = np.array([0.2, 0.1, 0.15])
        half_b = np.array([0.06, 0.05, 0.08])
        rot_s = np.eye(3) if case < 3 else rotation((0.2, 1.0, -0.1), 0.7)
        rot_b = rotation(rng.normal(size=3), rng.uniform(0.05, 0.3))
        if case % 3 == 1:  # a big body (its face the reference), tilted a little, on a small static box
            half_b, half_s = half_s * 1.5, half_b
            rot_b = rotation(rng.normal(size=3), 0.05)
        if case % 3 == 2:  # turned about the static face's normal (and tilted a little)
            rot_b = rotation(rot_s[:, 1] + 0.02 * rng.normal(size=3), 0.6)
            half_b = np.array([0.1, 0.05, 0.08])
        up = rot_s[:, 1]
        lift = half_s[1] + np.abs(rot_b.T @ up) @ half_b - 0.01  # the body's lowest corner 1 cm into the top face
        if case % 3 != 0:  # its bottom face's centre 1 cm into the top face
            j = np.argmax(np.abs(rot_b.T @ up))
            lift = half_s[1] + half_b[j] / abs(rot_b[:, j] @ up) - 0.01
        pos_b = rot_s @ np.array([*rng.normal(scale=0.01, size=1), 0.0, rng.normal(scale=0.01)]) + up * lift
        cases.append((half_b, pos_b, rot_b, half_s, np.zeros(3), rot_s))
    return cases


def check_resting_contacts(got, n, world, heights):
    """Assert that the contacts ``got`` (sim.contacts.Contacts.numpy() of bodies at rest, no cohesion) are
    the reference manifold's penetrating points: ``world`` (k, 3) [m] with ``heights`` (k,) < 0 [m], as
    points, depths (-height) and the unit normal ``n`` (3,), in any order."""
    assert np.abs(heights).min() > 1e-4  # no point at the edge of the contact law's reach
    inside = heights < 0.0
    assert got["count"] == inside.sum() >= 1
    dist = np.linalg.norm(got["point"][:, None] - world[inside][None], axis=2)
    assert dist.min(axis=1).max() < 1e-5 and dist.min(axis=0).max() < 1e-5
    np.testing.assert_allclose(got["depth"], -heights[inside][dist.argmin(axis=1)], atol=1e-5)
    np.testing.assert_allclose(got["normal"], np.tile(n, (len(got["depth"]), 1)), atol=1e-5)
