"""Particle contacts with the ground plane and static analytic shapes (kernel + launcher).

Each particle tests the ground and every static sphere, box, capsule and plane shape;
mesh shapes are handled in sim/collide_mesh.py.  Shapes carried by rigid bodies are not
seen by particles (yet).  Per particle: a gather (no atomics between threads).
"""
from __future__ import annotations

import kernelcore as kc

from .contact import material_inputs, mixed_contact_force

SPHERE = kc.constant(0)
BOX = kc.constant(1)
PLANE = kc.constant(2)
MESH = kc.constant(3)
CAPSULE = kc.constant(4)


@kc.func
def sign_nonzero(x: float) -> float:
    if x < 0.0:
        return -1.0
    return 1.0


@kc.func
def box_closest(p: kc.vec3, h: kc.vec3) -> kc.vec4:
    """Signed distance from a point ``p`` to a box with half extents ``h`` (local frame), and the
    outward normal of the closest feature, packed as (nx, ny, nz, distance)."""
    d = kc.abs(p) - h
    dmax = kc.max(d)
    if dmax > 0.0:
        c = kc.min(kc.max(p, -h), h)
        diff = p - c
        dist = kc.length(diff)
        n = diff / dist
        return kc.vec4(n[0], n[1], n[2], dist)
    # inside: leave through the nearest face
    n = kc.vec3(0.0, 0.0, 0.0)
    if d[0] >= d[1] and d[0] >= d[2]:
        n = kc.vec3(sign_nonzero(p[0]), 0.0, 0.0)
    elif d[1] >= d[2]:
        n = kc.vec3(0.0, sign_nonzero(p[1]), 0.0)
    else:
        n = kc.vec3(0.0, 0.0, sign_nonzero(p[2]))
    return kc.vec4(n[0], n[1], n[2], dmax)


@kc.kernel
def eval_particle_shape_contacts_kernel(
        q: kc.array(dtype=kc.vec3), qd: kc.array(dtype=kc.vec3), radius: kc.array(dtype=float),
        inv_mass: kc.array(dtype=float), particle_material: kc.array(dtype=int),
        ground: int, ground_normal: kc.vec3, ground_offset: float, ground_material: int,
        shape_count: int, shape_type: kc.array(dtype=int), shape_body: kc.array(dtype=int),
        shape_pos: kc.array(dtype=kc.vec3),
        shape_rot: kc.array(dtype=kc.mat33), shape_scale: kc.array(dtype=kc.vec3),
        shape_material: kc.array(dtype=int),
        material_ke: kc.array(dtype=float), material_damping_ratio: kc.array(dtype=float),
        material_mu: kc.array(dtype=float), material_cohesion: kc.array(dtype=float),
        material_cohesion_distance: kc.array(dtype=float), cohesion_reach: float, dt: float, toi: int,
        f: kc.array(dtype=kc.vec3)):
    i = kc.tid()
    w = inv_mass[i]
    if w > 0.0:
        x = q[i]
        v = qd[i]
        r = radius[i]
        mi = particle_material[i]
        # no force beyond the cohesion range plus half the smoothing window (sim/contact.py)
        reach = cohesion_reach + 0.5 * dt * kc.length(v)
        fi = kc.vec3(0.0, 0.0, 0.0)
        if ground != 0 and toi == 0:
            gap = kc.dot(ground_normal, x) - ground_offset - r
            if gap < reach:
                fi = fi + mixed_contact_force(ground_normal, gap, v, w, mi, ground_material, material_ke,
                                              material_damping_ratio, material_mu, material_cohesion,
                                              material_cohesion_distance, dt)
        for s in range(shape_count):
            t = shape_type[s]
            if shape_body[s] >= 0:
                t = MESH  # carried by a body: skipped here (like meshes, handled elsewhere)
            if toi != 0 and t != CAPSULE:
                t = MESH  # swept in the integrator (sim/toi.py)
            n = kc.vec3(0.0, 1.0, 0.0)
            gap = float(1.0e30)
            if t == SPHERE:
                d = x - shape_pos[s]
                dist = kc.length(d)
                if dist > 0.0:
                    n = d / dist
                gap = dist - shape_scale[s][0] - r
            elif t == BOX:
                rot = shape_rot[s]
                local = kc.transpose(rot) * (x - shape_pos[s])
                nd = box_closest(local, shape_scale[s])
                n = rot * kc.vec3(nd[0], nd[1], nd[2])
                gap = nd[3] - r
            elif t == CAPSULE:
                rot = shape_rot[s]
                axis = rot * kc.vec3(0.0, 1.0, 0.0)
                h = shape_scale[s][1]
                rel = x - shape_pos[s]
                along = kc.clamp(kc.dot(rel, axis), -h, h)
                d = rel - axis * along
                dist = kc.length(d)
                if dist > 0.0:
                    n = d / dist
                gap = dist - shape_scale[s][0] - r
            elif t == PLANE:
                rot = shape_rot[s]
                n = rot * kc.vec3(0.0, 1.0, 0.0)
                gap = kc.dot(n, x - shape_pos[s]) - r
            if gap < reach:
                fi = fi + mixed_contact_force(n, gap, v, w, mi, shape_material[s], material_ke,
                                              material_damping_ratio, material_mu, material_cohesion,
                                              material_cohesion_distance, dt)
        f[i] += fi


def eval_particle_shape_contacts(model, state, forces, dt, toi: bool = False):
    """Add ground and static sphere/box/capsule/plane contact forces [N] of ``state`` to ``forces`` (vec3, (n,)).

    ``dt`` [s] is the step the forces will act over (it bounds static friction, see sim/contact.py).
    ``toi``: only capsules (the others are swept by sim/toi.py).
    """
    if model.particle_count == 0 or (not model.ground and model.shape_count == len(model.mesh_shape_indices)):
        return
    kc.launch(eval_particle_shape_contacts_kernel, dim=model.particle_count,
              inputs=[state.particle_q, state.particle_qd, model.particle_radius, model.particle_inv_mass,
                      model.particle_material, int(model.ground), model.ground_normal, model.ground_offset,
                      model.ground_material, model.shape_count, model.shape_type, model.shape_body,
                      model.shape_pos, model.shape_rot,
                      model.shape_scale, model.shape_material, *material_inputs(model),
                      model.material_max_cohesion_distance, float(dt), int(bool(toi))],
              outputs=[forces], device=model.device)
