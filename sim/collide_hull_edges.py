"""Where the edges of one convex mesh cross into another (kernel functions).

Why: vertex contacts miss two hulls whose edge crosses a face with no vertex inside the other hull: a
tall block's vertical edge pushed into the side of a shorter cube has its end vertices above and
below the cube, and the cube's vertices lie outside the block until it is deep in.

Each edge of hull A (a triangle side, taken once: from the lower vertex index to the higher) is
clipped to hull B, the intersection of its faces' half-spaces (Cyrus-Beck): the ends of the part
inside B, where they are not A's own vertices, are contact points on B's surface.  The caller gives
them a normal and a gap (sim/featherstone_self_contacts.py: the pair's axis of least overlap).  The
faces that clip are chosen by comparisons; the points are smooth in both hulls' poses.  Cost: each
edge of A near B's bounding ball against every face of B.
"""
from __future__ import annotations

import kernelcore as kc
import geometry  # noqa: F401  (adds the mesh_* builtins)

#: clipped ends this close to an edge's end (fraction of its length) are the vertex: its own contact
END_TRIM = kc.constant(1.0e-3)


@kc.func
def hull_edge_crossings(mesh_a: kc.uint64, e: int, pos_a: kc.vec3, rot_a: kc.mat33, mesh_b: kc.uint64, nfb: int,
                        pos_b: kc.vec3, rot_b: kc.mat33, bound_b: float):
    """Half-edge ``e`` (triangle ``e // 3``, its side from corner ``e % 3``) of hull A (world ``pos_a`` [m],
    ``rot_a``) clipped to hull B (``nfb`` faces, bounding radius ``bound_b`` [m] about ``pos_b``): (1 if the
    edge enters B, the entry point [m] (world), 1 if it leaves B, the exit point [m])."""
    corner = e % 3
    e1 = e + 1
    if corner == 2:
        e1 = e - 2
    i0 = kc.mesh_get_index(mesh_a, e)
    i1 = kc.mesh_get_index(mesh_a, e1)
    x0 = pos_a + rot_a * kc.mesh_get_point(mesh_a, i0)
    x1 = pos_a + rot_a * kc.mesh_get_point(mesh_a, i1)
    enters = int(0)
    leaves = int(0)
    if i0 < i1:
        # in B's frame
        a = kc.transpose(rot_b) * (x0 - pos_b)
        d = kc.transpose(rot_b) * (x1 - x0)
        dd = kc.dot(d, d)
        tc = float(0.0)
        if dd > 0.0:
            tc = kc.clamp(-kc.dot(a, d) / dd, 0.0, 1.0)
        if kc.length(a + d * tc) <= bound_b:
            t_in = float(0.0)
            t_out = float(1.0)
            flat = 1.0e-6 * kc.sqrt(dd)
            for f in range(nfb):
                nf = kc.mesh_eval_face_normal(mesh_b, f)
                q = kc.mesh_get_point(mesh_b, kc.mesh_get_index(mesh_b, 3 * f))
                num = kc.dot(nf, q - a)  # inside this face's plane where t * den <= num
                den = kc.dot(nf, d)
                if den > flat:
                    t_out = kc.min(t_out, num / den)
                elif den < -flat:
                    t_in = kc.max(t_in, num / den)
                elif num < -1.0e-6 * bound_b:
                    t_in = 2.0  # parallel to the plane, outside it
            if t_in < t_out:
                if t_in > END_TRIM:
                    enters = 1
                if t_out < 1.0 - END_TRIM:
                    leaves = 1
            seg = x1 - x0
            x1 = x0 + seg * t_out
            x0 = x0 + seg * t_in
    return enters, x0, leaves, x1
