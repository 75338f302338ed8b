"""Boundary geometry of the position-based fluid: signed distances of shapes and the wall volume.

Shared by sim/pbf_kernels.py (static shapes, the ground, the domain box) and
sim/pbf_bodies.py (shapes on bodies), so that neither imports the other's kernels.
"""
from __future__ import annotations

import kernelcore as kc
import geometry  # noqa: F401  (adds the mesh_* builtins)

from .collide_mesh import mesh_surface_distance
from .collide_shapes import box_closest

SPHERE = kc.constant(0)
BOX = kc.constant(1)
PLANE = kc.constant(2)
MESH = kc.constant(3)
CAPSULE = kc.constant(4)


@kc.func
def shape_distance(x: kc.vec3, t: int, pos: kc.vec3, rot: kc.mat33, scale: kc.vec3, mesh: kc.uint64,
                   reach: float) -> kc.vec4:
    """Signed distance [m] of ``x`` from a static sphere / box / capsule / plane / mesh and the
    outward normal there, packed (nx, ny, nz, distance).  A mesh is searched within ``reach``
    (its side from the angle-weighted pseudo-normal, so open meshes work); beyond that, and
    for other types, the shape is far away (1e30)."""
    n = kc.vec3(0.0, 1.0, 0.0)
    sd = float(1.0e30)
    if t == SPHERE:
        d = x - pos
        dist = kc.length(d)
        if dist > 0.0:
            n = d / dist
        sd = dist - scale[0]
    elif t == BOX:
        nd = box_closest(kc.transpose(rot) * (x - pos), scale)
        n = rot * kc.vec3(nd[0], nd[1], nd[2])
        sd = nd[3]
    elif t == CAPSULE:
        axis = rot * kc.vec3(0.0, 1.0, 0.0)
        h = scale[1]
        rel = x - pos
        d = rel - axis * kc.clamp(kc.dot(rel, axis), -h, h)
        dist = kc.length(d)
        if dist > 0.0:
            n = d / dist
        sd = dist - scale[0]
    elif t == PLANE:
        n = rot * kc.vec3(0.0, 1.0, 0.0)
        sd = kc.dot(n, x - pos)
    elif t == MESH:
        nd = mesh_surface_distance(mesh, x, reach)  # (0, 1, 0, FAR = 1e30) beyond reach, as above
        n = kc.vec3(nd[0], nd[1], nd[2])
        sd = nd[3]
    return kc.vec4(n[0], n[1], n[2], sd)


@kc.func
def wall_volume(sd: float, h: float) -> kc.vec2:
    """Volume fraction phi of a kernel ball (radius h) at distance ``sd`` [m] from a flat wall that
    lies beyond the wall, and d phi / d sd [1/m], packed (phi, dphi).

    phi = sum_j V_j W over a continuum of rest-density fluid filling the half-space
    behind the wall: (315 / 256) int_u^1 (1 - t^2)^4 dt with u = sd / h (1/2 at the
    wall, 0 from h on).  Adding it to the density sum treats walls as fluid at rest, so
    particles next to a wall are not squeezed together to make up for missing neighbours.
    """
    out = kc.vec2(0.0, 0.0)
    if sd < h:
        u = kc.max(sd / h, 0.0)
        u2 = u * u
        # antiderivative of (1 - t^2)^4: t - 4 t^3 / 3 + 6 t^5 / 5 - 4 t^7 / 7 + t^9 / 9
        f = u * (1.0 + u2 * (-4.0 / 3.0 + u2 * (6.0 / 5.0 + u2 * (-4.0 / 7.0 + u2 / 9.0))))
        a = 1.0 - u2
        a2 = a * a
        dphi = float(0.0)
        if sd > 0.0:
            dphi = -(315.0 / 256.0) * a2 * a2 / h
        out = kc.vec2((315.0 / 256.0) * (128.0 / 315.0 - f), dphi)
    return out
