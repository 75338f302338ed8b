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
