"""Cloth self-contact for SolverVBD: per-vertex contact lists and the contact term of the Newton step.

Once per step, at the start positions, the BVHs of :class:`sim.ClothSelfContact` give every
vertex-triangle pair (the vertex not a corner of the triangle) and every edge-edge pair (no
common vertex) closer than the search radius R.  Each pair is appended to the lists of the
(up to four) vertices it involves, and each list is sorted so that the sums of the Newton
step do not depend on the order the threads found them in.

Energy of a pair at distance d (thickness h, stiffness ke [N/m]):  ke / (3 h) (h - d)^3 for d < h,
a cubic so that its curvature, not only its force, fades to zero at d = h: the Newton step of a
vertex then changes continuously as a pair comes into contact, and so does the whole step (a
quadratic penalty's curvature jumps there, and with a finite number of sweeps so would the
result; gradients would not match finite differences).  The stiffness 2 ke (h - d) / h is ke
at half the thickness.  With p - p' = sum_k c_k x_k the vector between the pair's closest
points (vertex minus triangle point, or point on edge e minus point on edge o; the weights
c_k = 1, -w_a, ... held fixed over one Newton step), the term added to vertex k's block is

    f_k = ke (h - d)^2 / h c_k n,   H_k = 2 ke (h - d) / h c_k^2 n n^T
    (n = (p - p') / d; the negative curvature across n is dropped: H stays PSD).

No crossing: the penalty alone could let a vertex jump through a triangle within a large step,
so, as for SolverSemiImplicit, every vertex's displacement over the step is limited to
``STEP_FRACTION`` of its distance to the nearest element at the step's start (the bound of
:meth:`ClothSelfContact.step_bound`); two elements then close at most 0.8 of their gap.
"""
from __future__ import annotations

import numpy as np

import kernelcore as kc
import geometry  # noqa: F401  (adds the bvh_* builtins)

from .cloth_self_contact import (edge_aabb, edge_pair_candidate, ee_distance, triangle_closest_weights, vertex_aabb,
                                 vertex_triangle_candidate, vt_distance)
from .collide_body_pairs import segment_params

#: pair kinds in the contact lists
VERTEX_TRIANGLE = kc.constant(1)
EDGE_EDGE = kc.constant(2)


@kc.func
def append_pair(v: int, kind: int, a: int, b: int, slots: int, count: kc.array(dtype=int),
                pairs: kc.array(dtype=int, ndim=2)):
    """Append pair (kind, a, b) to vertex v's list (a full list only counts, so that the caller can grow it)."""
    k = kc.atomic_add(count, v, 1)
    if k < slots:
        row = v * slots + k
        pairs[row, 0] = kind
        pairs[row, 1] = a
        pairs[row, 2] = b


@kc.kernel
def vbd_find_vt_pairs_kernel(tri_bvh: kc.uint64, q: kc.array(dtype=kc.vec3), tris: kc.array(dtype=int, ndim=2),
                             radius: float, slots: int, count: kc.array(dtype=int),
                             pairs: kc.array(dtype=int, ndim=2)):
    i = kc.tid()
    lo, hi = vertex_aabb(i, q, radius)
    query = kc.bvh_query_aabb(tri_bvh, lo, hi)
    t = int(0)
    while kc.bvh_query_next(query, t):
        if vertex_triangle_candidate(i, t, tris) != 0:
            if vt_distance(i, t, q, tris) < radius:
                append_pair(i, VERTEX_TRIANGLE, i, t, slots, count, pairs)
                append_pair(tris[t, 0], VERTEX_TRIANGLE, i, t, slots, count, pairs)
                append_pair(tris[t, 1], VERTEX_TRIANGLE, i, t, slots, count, pairs)
                append_pair(tris[t, 2], VERTEX_TRIANGLE, i, t, slots, count, pairs)


@kc.kernel
def vbd_find_ee_pairs_kernel(edge_bvh: kc.uint64, q: kc.array(dtype=kc.vec3), edges: kc.array(dtype=int, ndim=2),
                             radius: float, slots: int, count: kc.array(dtype=int),
                             pairs: kc.array(dtype=int, ndim=2)):
    e = kc.tid()
    lo, hi = edge_aabb(e, q, edges, radius)
    query = kc.bvh_query_aabb(edge_bvh, lo, hi)
    o = int(0)
    while kc.bvh_query_next(query, o):
        if edge_pair_candidate(e, o, edges) != 0:
            if ee_distance(e, o, q, edges) < radius:
                append_pair(edges[e, 0], EDGE_EDGE, e, o, slots, count, pairs)
                append_pair(edges[e, 1], EDGE_EDGE, e, o, slots, count, pairs)
                append_pair(edges[o, 0], EDGE_EDGE, e, o, slots, count, pairs)
                append_pair(edges[o, 1], EDGE_EDGE, e, o, slots, count, pairs)


@kc.func
def pair_before(pairs: kc.array(dtype=int, ndim=2), r: int, s: int) -> int:
    """1 when row r sorts before row s (by kind, then first, then second index)."""
    for c in range(3):
        if pairs[r, c] < pairs[s, c]:
            return 1
        if pairs[r, c] > pairs[s, c]:
            return 0
    return 0


@kc.kernel
def vbd_sort_pairs_kernel(slots: int, count: kc.array(dtype=int), pairs: kc.array(dtype=int, ndim=2)):
    """Insertion sort of each vertex's list (a few entries): a fixed summation order."""
    v = kc.tid()
    base = v * slots
    k = kc.min(count[v], slots)
    for j in range(1, k):
        m = j
        while m > 0 and pair_before(pairs, base + m, base + m - 1) != 0:
            for c in range(3):
                tmp = pairs[base + m, c]
                pairs[base + m, c] = pairs[base + m - 1, c]
                pairs[base + m - 1, c] = tmp
            m = m - 1


@kc.func
def self_contact_block(i: int, q: kc.array(dtype=kc.vec3), tris: kc.array(dtype=int, ndim=2),
                       edges: kc.array(dtype=int, ndim=2), slots: int, count: kc.array(dtype=int),
                       pairs: kc.array(dtype=int, ndim=2), thickness: float, ke: float):
    """Force [N] on vertex i and its 3x3 block [N/m] from the self-contact pairs in its list."""
    f = kc.vec3(0.0, 0.0, 0.0)
    H = kc.diag(kc.vec3(0.0, 0.0, 0.0))
    base = i * slots
    for k in range(kc.min(count[i], slots)):
        row = base + k
        kind = pairs[row, 0]
        a = pairs[row, 1]
        b = pairs[row, 2]
        d = kc.vec3(0.0, 0.0, 0.0)
        coef = float(0.0)
        if kind == VERTEX_TRIANGLE:
            t0 = tris[b, 0]
            t1 = tris[b, 1]
            t2 = tris[b, 2]
            w = triangle_closest_weights(q[a], q[t0], q[t1], q[t2])
            d = q[a] - (q[t0] * w[0] + q[t1] * w[1] + q[t2] * w[2])
            if i == a:
                coef = 1.0
            elif i == t0:
                coef = -w[0]
            elif i == t1:
                coef = -w[1]
            else:
                coef = -w[2]
        else:
            e0 = edges[a, 0]
            e1 = edges[a, 1]
            o0 = edges[b, 0]
            o1 = edges[b, 1]
            p1 = q[e0]
            d1 = q[e1] - p1
            p2 = q[o0]
            d2 = q[o1] - p2
            st = segment_params(p1, d1, p2, d2)
            d = (p1 + d1 * st[0]) - (p2 + d2 * st[1])
            if i == e0:
                coef = 1.0 - st[0]
            elif i == e1:
                coef = st[0]
            elif i == o0:
                coef = -(1.0 - st[1])
            else:
                coef = -st[1]
        dist = kc.length(d)
        if dist < thickness and dist > 1.0e-9:
            n = d / dist
            overlap = thickness - dist
            f = f + n * (ke * overlap * overlap / thickness * coef)
            H = H + kc.outer(n, n) * (2.0 * ke * overlap / thickness * coef * coef)
    return f, H


@kc.kernel
def vbd_scatter_kernel(vertices: kc.array(dtype=int), src: kc.array(dtype=kc.vec3), dst: kc.array(dtype=kc.vec3)):
    """dst[v] = src[v] for the listed vertices (a colour's Jacobi-style update back into the iterate)."""
    v = vertices[kc.tid()]
    dst[v] = src[v]


class VBDSelfContactPairs:
    """The per-vertex pair lists of one step: ``count`` int (n,), ``pairs`` int (n * slots, 3) = (kind, a, b).

    Built by :func:`find_self_contact_pairs`; ``slots`` grows (and the search reruns) when a vertex
    has more pairs than fit, so that no pair is dropped.
    """

    def __init__(self, n: int, slots: int, device):
        self.slots = int(slots)
        self.count = kc.zeros(n, dtype=kc.int32, device=device)
        self.pairs = kc.zeros((n * self.slots, 3), dtype=kc.int32, device=device)


def find_self_contact_pairs(model, contact, q, lists=None, slots=16):
    """Pairs of ``contact`` (a :class:`sim.ClothSelfContact`, its trees refitted to ``q``) closer than
    its search radius, in per-vertex lists (``lists`` reused when given).  Not recorded on a Tape."""
    n = model.particle_count
    while True:
        if lists is None or lists.slots < slots:
            lists = VBDSelfContactPairs(n, slots, model.device)
        lists.count.zero_()
        args = [float(contact.search_radius), lists.slots]
        kc.launch(vbd_find_vt_pairs_kernel, dim=n, inputs=[contact.tri_bvh.id, q, model.tri_indices, *args],
                  outputs=[lists.count, lists.pairs], device=model.device, record_tape=False)
        kc.launch(vbd_find_ee_pairs_kernel, dim=contact.edges.shape[0],
                  inputs=[contact.edge_bvh.id, q, contact.edges, *args],
                  outputs=[lists.count, lists.pairs], device=model.device, record_tape=False)
        most = int(lists.count.numpy().max()) if n else 0
        if most <= lists.slots:
            break
        slots = int(2 ** np.ceil(np.log2(most)))
    kc.launch(vbd_sort_pairs_kernel, dim=n, inputs=[lists.slots], outputs=[lists.count, lists.pairs],
              device=model.device, record_tape=False)
    return lists
