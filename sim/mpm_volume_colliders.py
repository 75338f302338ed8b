"""MPM grid-node collisions with static signed-distance volumes (``geometry.Volume``).

``SolverMPM(..., sdf_colliders=[volume, ...])``: each volume holds a signed distance [m]
(negative inside, e.g. ``geometry.Volume.from_mesh_sdf`` or ``load_from_numpy`` of an
analytic SDF), sampled trilinearly at a grid node's world position.  A node inside
(phi < 0) keeps only what the solver's boundary rule allows (sim/mpm_colliders.collide_node_velocity),
with the normalised world gradient of the SDF as the collider normal.

The world gradient is ``inv(A)^T grad_uvw`` for a volume whose index-to-world map is
``x = A uvw + t`` (``Volume.transform``); the matrices ``inv(A)^T`` are passed per volume
(:func:`volume_collider_arrays`).  The 2-D solver samples the volume in the plane z = 0 and
drops the normal's z component.  The volumes are static: they get no gradient (only the
material's velocity does, through the boundary rule).
"""
from __future__ import annotations

import numpy as np

import kernelcore as kc
import geometry  # noqa: F401  (adds the volume_* builtins)

from .mpm_colliders import collide_node_velocity


@kc.func
def collide_node_volumes(v: kc.vec3, xi: kc.vec3, boundary: int, friction: float, planar: int, volume_count: int,
                         volume_ids: kc.array(dtype=kc.uint64), volume_grad_xform: kc.array(dtype=kc.mat33)):
    """Velocity [m/s] of a grid node at ``xi`` [m] after every SDF volume (``planar``: 2-D, normal in x-y)."""
    out = v
    for s in range(volume_count):
        vid = volume_ids[s]
        uvw = kc.volume_world_to_index(vid, xi)
        g = kc.vec3(0.0, 0.0, 0.0)
        phi = kc.volume_sample_grad_f(vid, uvw, 1, g)
        if phi < 0.0:
            n = volume_grad_xform[s] * g
            if planar != 0:
                n = kc.vec3(n[0], n[1], 0.0)
            ln = kc.length(n)
            if ln > 0.0:   # a flat spot of the SDF (e.g. deep inside a clamped band) has no direction
                out = collide_node_velocity(out, n / ln, phi, boundary, friction)
            else:
                out = collide_node_velocity(out, n, phi, 0, friction)   # stop the node
    return out


def check_volumes(volumes, where="SolverMPM"):
    """The list of ``geometry.Volume`` colliders, checked (a clear error for anything else)."""
    if volumes is None:
        return []
    if isinstance(volumes, geometry.Volume):
        volumes = [volumes]
    out = list(volumes)
    for k, vol in enumerate(out):
        if not isinstance(vol, geometry.Volume):
            raise TypeError(f"{where}: sdf_colliders[{k}] must be a geometry.Volume holding a signed distance, "
                            f"got {type(vol).__name__}")
        if not vol.background > 0:
            raise ValueError(f"{where}: sdf_colliders[{k}] has background value {vol.background!r}; it must be > 0 "
                             "(outside), or every node outside the volume's bricks would count as inside")
    return out


def volume_collider_arrays(volumes, device):
    """(ids uint64 (V,), inv(A)^T mat33 (V,)) of the volumes, for collide_node_volumes."""
    ids = np.array([vol.id for vol in volumes], dtype=np.uint64)
    xf = np.array([np.linalg.inv(np.asarray(vol.transform, np.float64)).T for vol in volumes],
                  dtype=np.float32).reshape(-1, 3, 3)
    return kc.array(ids, dtype=kc.uint64, device=device), kc.array(xf, dtype=kc.mat33, device=device)
