"""Cloth self-contact: vertex-triangle and edge-edge repulsion with a thickness, and a
per-vertex step bound so that no vertex can pass through the cloth (kernels + launchers).

Candidates come from two ``geometry.Bvh`` trees, over the triangles and over the mesh
edges, refitted every step to the boxes of the current positions.

Forces (SolverSemiImplicit): a vertex closer than ``thickness`` to a triangle it does not
belong to, or two edges without a common vertex closer than ``thickness``, are pushed
apart along the line of their closest points by ``ke (thickness - d) - kd v_n`` (never
pulling), the reaction spread over the other element's vertices by the barycentric
weights of the closest point, so momentum is conserved.

No crossing (the continuous part): penalty forces alone let a fast vertex jump through a
triangle within one step, after which the unsigned distance pushes it further through.
So every step first measures, for each vertex, the distance ``d_i`` to the nearest
element it could collide with (non-incident triangles, and edges against edges; any
element beyond the search radius R counts as R away), and the integrator limits the
vertex's displacement in the step to ``0.4 d_i``.  Two elements then approach by at most
``0.8 d < d`` in a step: their distance never reaches zero, so nothing crosses, whatever
the speed or the step (a conservative time-of-impact bound, as in VBD-style cloth
solvers).  A clamped vertex loses the clamped part of its velocity (an inelastic touch).
The clamp is differentiable, the bound included (it is a distance between elements).
"""
from __future__ import annotations

import numpy as np

import kernelcore as kc
import geometry  # noqa: F401  (adds the bvh_* builtins)
from kernelcore.device import get_runtime

from .collide_body_pairs import segment_params

#: fraction of the distance to the nearest element a vertex may move in one step
STEP_FRACTION = 0.4


@kc.func
def triangle_closest_weights(p: kc.vec3, a: kc.vec3, b: kc.vec3, c: kc.vec3) -> kc.vec3:
    """Barycentric weights (of a, b, c) of the point of triangle abc closest to p (Voronoi regions)."""
    ab = b - a
    ac = c - a
    ap = p - a
    d1 = kc.dot(ab, ap)
    d2 = kc.dot(ac, ap)
    if d1 <= 0.0 and d2 <= 0.0:
        return kc.vec3(1.0, 0.0, 0.0)
    bp = p - b
    d3 = kc.dot(ab, bp)
    d4 = kc.dot(ac, bp)
    if d3 >= 0.0 and d4 <= d3:
        return kc.vec3(0.0, 1.0, 0.0)
    vc = d1 * d4 - d3 * d2
    if vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0:
        v = d1 / (d1 - d3)
        return kc.vec3(1.0 - v, v, 0.0)
    cp = p - c
    d5 = kc.dot(ab, cp)
    d6 = kc.dot(ac, cp)
    if d6 >= 0.0 and d5 <= d6:
        return kc.vec3(0.0, 0.0, 1.0)
    vb = d5 * d2 - d1 * d6
    if vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0:
        w = d2 / (d2 - d6)
        return kc.vec3(1.0 - w, 0.0, w)
    va = d3 * d6 - d5 * d4
    if va <= 0.0 and d4 - d3 >= 0.0 and d5 - d6 >= 0.0:
        w = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        return kc.vec3(0.0, 1.0 - w, w)
    denom = 1.0 / (va + vb + vc)
    v = vb * denom
    w = vc * denom
    return kc.vec3(1.0 - v - w, v, w)


@kc.func
def repulsion(n: kc.vec3, dist: float, v_rel: kc.vec3, thickness: float, ke: float, kd: float) -> kc.vec3:
    """Push [N] along n (from the other element towards this one): spring on the overlap plus approach damping."""
    fn = ke * (thickness - dist) - kd * kc.min(kc.dot(v_rel, n), 0.0)
    return n * kc.max(fn, 0.0)


@kc.kernel
def element_bounds_kernel(q: kc.array(dtype=kc.vec3), elements: kc.array(dtype=int, ndim=2), corners: int,
                          pad: float, lowers: kc.array(dtype=kc.vec3), uppers: kc.array(dtype=kc.vec3)):
    e = kc.tid()
    lo = q[elements[e, 0]]
    hi = lo
    for k in range(1, corners):
        p = q[elements[e, k]]
        lo = kc.min(lo, p)
        hi = kc.max(hi, p)
    pv = kc.vec3(pad, pad, pad)
    lowers[e] = lo - pv
    uppers[e] = hi + pv


@kc.func
def vertex_aabb(i: int, q: kc.array(dtype=kc.vec3), pad: float):
    """Lower and upper corners [m] of the box of half size ``pad`` [m] around vertex i."""
    grow = kc.vec3(pad, pad, pad)
    return q[i] - grow, q[i] + grow


@kc.func
def vertex_triangle_candidate(i: int, t: int, tris: kc.array(dtype=int, ndim=2)) -> int:
    """1 when vertex i and triangle t (a BVH hit of i's box) form a pair to test: i is not one of t's
    corners (it would be at distance zero by construction)."""
    if tris[t, 0] != i and tris[t, 1] != i and tris[t, 2] != i:
        return 1
    return 0


@kc.func
def edge_aabb(e: int, q: kc.array(dtype=kc.vec3), edges: kc.array(dtype=int, ndim=2), pad: float):
    """Lower and upper corners [m] of mesh edge e's bounding box grown by ``pad`` [m] on every side."""
    grow = kc.vec3(pad, pad, pad)
    return kc.min(q[edges[e, 0]], q[edges[e, 1]]) - grow, kc.max(q[edges[e, 0]], q[edges[e, 1]]) + grow


@kc.func
def edge_pair_candidate(e: int, o: int, edges: kc.array(dtype=int, ndim=2)) -> int:
    """1 when edges e and o (a BVH hit of e's box) form a pair to test: each pair once, from its lower
    index, and never two edges with a common vertex (their distance is zero by construction)."""
    i0 = edges[e, 0]
    i1 = edges[e, 1]
    j0 = edges[o, 0]
    j1 = edges[o, 1]
    if o > e and j0 != i0 and j0 != i1 and j1 != i0 and j1 != i1:
        return 1
    return 0


@kc.kernel
def vertex_triangle_kernel(tri_bvh: kc.uint64, q: kc.array(dtype=kc.vec3), qd: kc.array(dtype=kc.vec3),
                           tris: kc.array(dtype=int, ndim=2), thickness: float, ke: float, kd: float,
                           f: kc.array(dtype=kc.vec3)):
    i = kc.tid()
    x = q[i]
    lo, hi = vertex_aabb(i, q, thickness)
    query = kc.bvh_query_aabb(tri_bvh, lo, hi)
    t = int(0)
    while kc.bvh_query_next(query, t):
        if vertex_triangle_candidate(i, t, tris) != 0:
            a = tris[t, 0]
            b = tris[t, 1]
            c = tris[t, 2]
            w = triangle_closest_weights(x, q[a], q[b], q[c])
            d = x - (q[a] * w[0] + q[b] * w[1] + q[c] * w[2])
            dist = kc.length(d)
            if dist < thickness and dist > 1.0e-9:
                v_rel = qd[i] - (qd[a] * w[0] + qd[b] * w[1] + qd[c] * w[2])
                fc = repulsion(d / dist, dist, v_rel, thickness, ke, kd)
                kc.atomic_add(f, i, fc)
                kc.atomic_add(f, a, -fc * w[0])
                kc.atomic_add(f, b, -fc * w[1])
                kc.atomic_add(f, c, -fc * w[2])


@kc.kernel
def edge_edge_kernel(edge_bvh: kc.uint64, q: kc.array(dtype=kc.vec3), qd: kc.array(dtype=kc.vec3),
                     edges: kc.array(dtype=int, ndim=2), thickness: float, ke: float, kd: float,
                     f: kc.array(dtype=kc.vec3)):
    e = kc.tid()
    i0 = edges[e, 0]
    i1 = edges[e, 1]
    p1 = q[i0]
    d1 = q[i1] - p1
    lo, hi = edge_aabb(e, q, edges, thickness)
    query = kc.bvh_query_aabb(edge_bvh, lo, hi)
    o = int(0)
    while kc.bvh_query_next(query, o):
        if edge_pair_candidate(e, o, edges) != 0:
            j0 = edges[o, 0]
            j1 = edges[o, 1]
            p2 = q[j0]
            d2 = q[j1] - p2
            st = segment_params(p1, d1, p2, d2)
            s = st[0]
            u = st[1]
            d = (p1 + d1 * s) - (p2 + d2 * u)
            dist = kc.length(d)
            if dist < thickness and dist > 1.0e-9:
                v_rel = (qd[i0] * (1.0 - s) + qd[i1] * s) - (qd[j0] * (1.0 - u) + qd[j1] * u)
                fc = repulsion(d / dist, dist, v_rel, thickness, ke, kd)
                kc.atomic_add(f, i0, fc * (1.0 - s))
                kc.atomic_add(f, i1, fc * s)
                kc.atomic_add(f, j0, -fc * (1.0 - u))
                kc.atomic_add(f, j1, -fc * u)


@kc.func
def claim_winner(target: int, kind: int, x: int, y: int, claim: kc.array(dtype=int),
                 winner: kc.array(dtype=int, ndim=2)):
    """Record pair (kind, x, y) as the one that set ``target``'s bound (the first of equal ones wins)."""
    if kc.atomic_cas(claim, target, 0, 1) == 0:
        winner[target, 0] = kind
        winner[target, 1] = x
        winner[target, 2] = y


@kc.func
def bound_pair_vertices(claim_pass: int, dist: float, kind: int, x: int, y: int, v0: int, v1: int, v2: int,
                        v3: int, bound: kc.array(dtype=float), claim: kc.array(dtype=int),
                        winner: kc.array(dtype=int, ndim=2)):
    """Pair (kind, x, y) at distance ``dist`` touches vertices v0..v3.  Pass 0: lower their
    bounds to ``dist``; pass 1: claim each vertex whose bound this pair set."""
    if claim_pass == 0:
        kc.atomic_min(bound, v0, dist)
        kc.atomic_min(bound, v1, dist)
        kc.atomic_min(bound, v2, dist)
        kc.atomic_min(bound, v3, dist)
    else:
        if dist == bound[v0]:
            claim_winner(v0, kind, x, y, claim, winner)
        if dist == bound[v1]:
            claim_winner(v1, kind, x, y, claim, winner)
        if dist == bound[v2]:
            claim_winner(v2, kind, x, y, claim, winner)
        if dist == bound[v3]:
            claim_winner(v3, kind, x, y, claim, winner)


@kc.func
def vt_distance(i: int, t: int, q: kc.array(dtype=kc.vec3), tris: kc.array(dtype=int, ndim=2)) -> float:
    """Distance [m] from vertex i to triangle t."""
    x = q[i]
    a = tris[t, 0]
    b = tris[t, 1]
    c = tris[t, 2]
    w = triangle_closest_weights(x, q[a], q[b], q[c])
    return kc.length(x - (q[a] * w[0] + q[b] * w[1] + q[c] * w[2]))


@kc.func
def ee_distance(e: int, o: int, q: kc.array(dtype=kc.vec3), edges: kc.array(dtype=int, ndim=2)) -> float:
    """Distance [m] between mesh edges e and o."""
    p1 = q[edges[e, 0]]
    d1 = q[edges[e, 1]] - p1
    p2 = q[edges[o, 0]]
    d2 = q[edges[o, 1]] - p2
    st = segment_params(p1, d1, p2, d2)
    return kc.length((p1 + d1 * st[0]) - (p2 + d2 * st[1]))


@kc.kernel
def step_bound_vt_kernel(tri_bvh: kc.uint64, q: kc.array(dtype=kc.vec3), tris: kc.array(dtype=int, ndim=2),
                         radius: float, claim_pass: int, bound: kc.array(dtype=float), claim: kc.array(dtype=int),
                         winner: kc.array(dtype=int, ndim=2)):
    """Pass 0: bound = min distance over vertex-triangle pairs; pass 1: note which pair it was."""
    i = kc.tid()
    lo, hi = vertex_aabb(i, q, radius)
    query = kc.bvh_query_aabb(tri_bvh, lo, hi)
    t = int(0)
    while kc.bvh_query_next(query, t):
        if vertex_triangle_candidate(i, t, tris) != 0:
            dist = vt_distance(i, t, q, tris)
            if dist < radius:
                bound_pair_vertices(claim_pass, dist, 1, i, t, i, tris[t, 0], tris[t, 1], tris[t, 2], bound, claim,
                                    winner)


@kc.kernel
def step_bound_ee_kernel(edge_bvh: kc.uint64, q: kc.array(dtype=kc.vec3), edges: kc.array(dtype=int, ndim=2),
                         radius: float, claim_pass: int, bound: kc.array(dtype=float), claim: kc.array(dtype=int),
                         winner: kc.array(dtype=int, ndim=2)):
    """As step_bound_vt_kernel for edge-edge pairs."""
    e = kc.tid()
    lo, hi = edge_aabb(e, q, edges, radius)
    query = kc.bvh_query_aabb(edge_bvh, lo, hi)
    o = int(0)
    while kc.bvh_query_next(query, o):
        if edge_pair_candidate(e, o, edges) != 0:
            dist = ee_distance(e, o, q, edges)
            if dist < radius:
                bound_pair_vertices(claim_pass, dist, 2, e, o, edges[e, 0], edges[e, 1], edges[o, 0], edges[o, 1],
                                    bound, claim, winner)


@kc.kernel
def bound_from_winner_kernel(q: kc.array(dtype=kc.vec3), tris: kc.array(dtype=int, ndim=2),
                             edges: kc.array(dtype=int, ndim=2), winner: kc.array(dtype=int, ndim=2),
                             radius: float, bound: kc.array(dtype=float)):
    """The bound as a differentiable function of the positions: the distance of the pair that set it."""
    i = kc.tid()
    kind = winner[i, 0]
    d = radius
    if kind == 1:
        d = vt_distance(winner[i, 1], winner[i, 2], q, tris)
    elif kind == 2:
        d = ee_distance(winner[i, 1], winner[i, 2], q, edges)
    bound[i] = d


@kc.kernel
def integrate_bounded_kernel(q0: kc.array(dtype=kc.vec3), qd0: kc.array(dtype=kc.vec3), f: kc.array(dtype=kc.vec3),
                             inv_mass: kc.array(dtype=float), gravity: kc.vec3, damping: float, dt: float,
                             bound: kc.array(dtype=float), fraction: float,
                             q1: kc.array(dtype=kc.vec3), qd1: kc.array(dtype=kc.vec3)):
    i = kc.tid()
    w = inv_mass[i]
    v0 = qd0[i]
    v1 = v0
    if w > 0.0:
        v1 = v0 + (f[i] * w + gravity - v0 * damping) * dt
        step = v1 * dt
        length = kc.length(step)
        limit = fraction * bound[i]
        if length > limit:
            v1 = v1 * (limit / length)
    qd1[i] = v1
    q1[i] = q0[i] + v1 * dt


class ClothSelfContact:
    """Self-contact of a model's cloth for SolverSemiImplicit (``SolverSemiImplicit(model, self_contact=...)``).

    Args:
        model: the model (its triangles and their edges collide with each other).
        thickness: distance [m] below which elements repel (the cloth's collision thickness).
        ke: repulsion stiffness [N/m]; kd: damping of the approach speed [N s/m].
        search_radius: distance [m] beyond which elements are not looked at for the step
            bound (default ``thickness`` plus half the longest rest edge); a vertex never moves
            more than ``0.4 * search_radius`` in a step, so make it larger for fast cloth.
    """

    def __init__(self, model, thickness: float = 0.005, ke: float = 1.0e3, kd: float = 1.0,
                 search_radius: float | None = None):
        for name, v in (("thickness", thickness), ("ke", ke), ("kd", kd)):
            if not (np.isfinite(v) and v >= 0) or (name == "thickness" and v == 0):
                raise ValueError(f"ClothSelfContact: {name} must be finite and {'> 0' if name == 'thickness' else '>= 0'}, "
                                 f"got {v!r}")
        if model.tri_count == 0:
            raise ValueError("ClothSelfContact: the model has no triangles (add cloth with add_cloth_grid/add_cloth_mesh)")
        from .solvers.xpbd import mesh_edges

        self.thickness, self.ke, self.kd = float(thickness), float(ke), float(kd)
        dev = model.device
        tris = model.tri_indices.numpy()
        edges = mesh_edges(tris)
        q = model.particle_q.numpy()
        longest = float(np.linalg.norm(q[edges[:, 0]] - q[edges[:, 1]], axis=1).max())
        self.search_radius = float(search_radius) if search_radius is not None else self.thickness + 0.5 * longest
        if not self.search_radius >= self.thickness:
            raise ValueError(f"ClothSelfContact: search_radius must be >= thickness, got {search_radius!r}")
        self.edges = kc.array(edges.astype(np.int32), dtype=kc.int32, device=dev)
        self.tri_lowers = kc.zeros(model.tri_count, dtype=kc.vec3, device=dev)
        self.tri_uppers = kc.zeros(model.tri_count, dtype=kc.vec3, device=dev)
        self.edge_lowers = kc.zeros(len(edges), dtype=kc.vec3, device=dev)
        self.edge_uppers = kc.zeros(len(edges), dtype=kc.vec3, device=dev)
        self._min_distance = kc.zeros(model.particle_count, dtype=float, device=dev)
        self._claim = kc.zeros(model.particle_count, dtype=kc.int32, device=dev)
        self._fill_bounds(model, model.particle_q)
        self.tri_bvh = geometry.Bvh(self.tri_lowers, self.tri_uppers, device=dev)
        self.edge_bvh = geometry.Bvh(self.edge_lowers, self.edge_uppers, device=dev)

    def _fill_bounds(self, model, q):
        pad = 0.0   # tight element boxes: every query box carries its own search distance
        kc.launch(element_bounds_kernel, dim=model.tri_count, inputs=[q, model.tri_indices, 3, pad],
                  outputs=[self.tri_lowers, self.tri_uppers], device=model.device, record_tape=False)
        kc.launch(element_bounds_kernel, dim=self.edges.shape[0], inputs=[q, self.edges, 2, pad],
                  outputs=[self.edge_lowers, self.edge_uppers], device=model.device, record_tape=False)

    def refit(self, model, state):
        """Refit both trees to the element boxes of ``state.particle_q`` (not recorded on a Tape)."""
        self._fill_bounds(model, state.particle_q)
        self.tri_bvh.refit()
        self.edge_bvh.refit()

    def step_bound(self, model, state_in, state_out):
        """Each vertex's distance [m] to the nearest element it may hit, measured at ``state_in``.

        The nearest pair is found off the Tape (atomic minimum, then a pass that notes which
        pair gave it); a recorded launch then evaluates that pair's distance, so the bound
        is differentiable in the positions and a Tape keeps one per step: both live in
        ``state_out`` (``cloth_step_bound`` float (n,), ``cloth_step_winner`` int (n, 3)),
        allocated on the first step that writes that state.
        """
        n = model.particle_count
        bound = getattr(state_out, "cloth_step_bound", None)
        if bound is None:
            bound = kc.zeros(n, dtype=float, device=model.device, requires_grad=state_out.particle_q.requires_grad)
            state_out.cloth_step_bound = bound
            state_out.cloth_step_winner = kc.zeros((n, 3), dtype=kc.int32, device=model.device)
        winner = state_out.cloth_step_winner
        q = state_in.particle_q
        self._min_distance.fill_(self.search_radius)
        self._claim.zero_()
        winner.zero_()
        # without a Tape nobody asks for the bound's gradient: the minimum itself will do
        taping = bool(get_runtime().tape_stack)
        for claim_pass in ((0, 1) if taping else (0,)):
            args = [self.search_radius, claim_pass]
            outs = [self._min_distance, self._claim, winner]
            kc.launch(step_bound_vt_kernel, dim=n, inputs=[self.tri_bvh.id, q, model.tri_indices, *args],
                      outputs=outs, device=model.device, record_tape=False)
            kc.launch(step_bound_ee_kernel, dim=self.edges.shape[0], inputs=[self.edge_bvh.id, q, self.edges, *args],
                      outputs=outs, device=model.device, record_tape=False)
        if not taping:
            kc.copy(bound, self._min_distance)
            return bound
        kc.launch(bound_from_winner_kernel, dim=n,
                  inputs=[q, model.tri_indices, self.edges, winner, self.search_radius], outputs=[bound],
                  device=model.device)
        return bound

    def eval(self, model, state, forces):
        """Add self-contact forces [N] of ``state`` to ``forces``; call after :meth:`refit` on the same state."""
        inputs = [state.particle_q, state.particle_qd]
        kc.launch(vertex_triangle_kernel, dim=model.particle_count,
                  inputs=[self.tri_bvh.id, *inputs, model.tri_indices, self.thickness, self.ke, self.kd],
                  outputs=[forces], device=model.device)
        kc.launch(edge_edge_kernel, dim=self.edges.shape[0],
                  inputs=[self.edge_bvh.id, *inputs, self.edges, self.thickness, self.ke, self.kd],
                  outputs=[forces], device=model.device)

    def integrate(self, model, state_in, forces, state_out, dt):
        """Semi-implicit Euler with each vertex's displacement limited to 0.4 of its step bound."""
        bound = self.step_bound(model, state_in, state_out)
        kc.launch(integrate_bounded_kernel, dim=model.particle_count,
                  inputs=[state_in.particle_q, state_in.particle_qd, forces, model.particle_inv_mass, model.gravity,
                          model.particle_damping, float(dt), bound, STEP_FRACTION],
                  outputs=[state_out.particle_q, state_out.particle_qd], device=model.device)
        tapes = get_runtime().tape_stack
        if tapes:
            # runs before this step's adjoints in the reverse pass: the trees and bounds they read
            tapes[-1].record_func(lambda: self.refit(model, state_in), [])
