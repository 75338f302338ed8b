"""Particle contacts with the ground plane and static analytic shapes (kernel + launcher).

Each particle tests the ground and every sphere, box, capsule and plane shape; mesh
shapes are handled in sim/collide_mesh.py.  Per particle: a gather of its own force; a
shape carried by a rigid body moves with it, and the reaction goes to that body's
wrench (``atomic_add``).
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


@kc.func
def shape_point_gap(t: int, pos: kc.vec3, rot: kc.mat33, scale: kc.vec3, x: kc.vec3, r: float,
                    default_normal: kc.vec3) -> kc.vec4:
    """Outward normal and gap [m] of a sphere of radius ``r`` at ``x`` against an analytic shape
    of type ``t`` (SPHERE, BOX, CAPSULE or PLANE) at world pose (``pos``, ``rot``) with its
    ``scale``, packed as (nx, ny, nz, gap); a negative gap is penetration.  Other types (MESH,
    handled elsewhere) give a gap of 1e30.  ``default_normal`` is kept where the normal is
    undefined (a point at a sphere's centre or on a capsule's axis)."""
    n = default_normal
    gap = float(1.0e30)
    if t == SPHERE:
        d = x - pos
        dist = kc.length(d)
        if dist > 0.0:
            n = d / dist
        gap = dist - scale[0] - r
    elif t == BOX:
        nd = box_closest(kc.transpose(rot) * (x - pos), scale)
        n = rot * kc.vec3(nd[0], nd[1], nd[2])
        gap = nd[3] - r
    elif t == CAPSULE:
        axis = rot * kc.vec3(0.0, 1.0, 0.0)
        h = scale[1]
        rel = x - pos
        d = rel - axis * kc.clamp(kc.dot(rel, axis), -h, h)
        dist = kc.length(d)
        if dist > 0.0:
            n = d / dist
        gap = dist - scale[0] - r
    elif t == PLANE:
        n = rot * kc.vec3(0.0, 1.0, 0.0)
        gap = kc.dot(n, x - pos) - r
    return kc.vec4(n[0], n[1], n[2], gap)


@kc.kernel
def eval_particle_shape_contacts_kernel(
        q: kc.array(dtype=kc.vec3), qd: kc.array(dtype=kc.vec3), radius: kc.array(dtype=float),
        inv_mass: kc.array(dtype=float), particle_material: kc.array(dtype=int), particle_world: kc.array(dtype=int),
        ground: int, ground_normal: kc.vec3, ground_offset: float, ground_material: int,
        shape_count: int, shape_type: kc.array(dtype=int), shape_body: kc.array(dtype=int),
        shape_pos: kc.array(dtype=kc.vec3),
        shape_rot: kc.array(dtype=kc.mat33), shape_scale: kc.array(dtype=kc.vec3),
        shape_material: kc.array(dtype=int), shape_world: kc.array(dtype=int),
        body_q: kc.array(dtype=kc.transform), body_qd: kc.array(dtype=kc.spatial_vector),
        body_com: kc.array(dtype=kc.vec3), body_inv_mass: kc.array(dtype=float),
        body_inv_inertia: kc.array(dtype=kc.mat33),
        material_ke: kc.array(dtype=float), material_damping_ratio: kc.array(dtype=float),
        material_mu: kc.array(dtype=float), material_cohesion: kc.array(dtype=float),
        material_cohesion_distance: kc.array(dtype=float), cohesion_reach: float, dt: float, toi: int,
        f: kc.array(dtype=kc.vec3), body_f: kc.array(dtype=kc.spatial_vector)):
    i = kc.tid()
    w = inv_mass[i]
    if w > 0.0:
        x = q[i]
        v = qd[i]
        r = radius[i]
        mi = particle_material[i]
        wi = particle_world[i]
        fi = kc.vec3(0.0, 0.0, 0.0)
        if ground != 0 and toi == 0:
            # no force beyond the cohesion range plus half the smoothing window (sim/contact.py)
            gap = kc.dot(ground_normal, x) - ground_offset - r
            if gap < cohesion_reach + 0.5 * dt * kc.length(v):
                fi = fi + mixed_contact_force(ground_normal, gap, v, w, mi, ground_material, material_ke,
                                              material_damping_ratio, material_mu, material_cohesion,
                                              material_cohesion_distance, dt)
        for s in range(shape_count):
            ws = shape_world[s]
            # a shape of another environment is not there for this particle (-1: shared by all)
            if wi < 0 or ws < 0 or ws == wi:
                t = shape_type[s]
                b = shape_body[s]
                if toi != 0 and ((b < 0 and t != CAPSULE) or t == SPHERE or t == BOX):
                    t = MESH  # swept in the integrator (sim/toi.py)
                pos = shape_pos[s]
                rot = shape_rot[s]
                if b >= 0:  # carried by a body: its pose in world now
                    tf = body_q[b]
                    rot = kc.quat_to_matrix(kc.transform_get_rotation(tf)) * rot
                    pos = kc.transform_point(tf, pos)
                ng = shape_point_gap(t, pos, rot, shape_scale[s], x, r, kc.vec3(0.0, 1.0, 0.0))
                n = kc.vec3(ng[0], ng[1], ng[2])
                gap = ng[3]
                # the surface's velocity and effective inverse mass (a static shape: 0 and 0)
                v_rel = v
                w_sum = w
                arm = kc.vec3(0.0, 0.0, 0.0)
                if b >= 0:
                    arm = x - n * r - kc.transform_point(body_q[b], body_com[b])
                    v_rel = v - kc.spatial_top(body_qd[b]) - kc.cross(kc.spatial_bottom(body_qd[b]), arm)
                    rb = kc.quat_to_matrix(kc.transform_get_rotation(body_q[b]))
                    rn = kc.cross(arm, n)
                    w_sum = w + body_inv_mass[b] + kc.dot(rn, rb * body_inv_inertia[b] * kc.transpose(rb) * rn)
                if gap < cohesion_reach + 0.5 * dt * kc.length(v_rel):
                    fs = mixed_contact_force(n, gap, v_rel, w_sum, mi, shape_material[s], material_ke,
                                             material_damping_ratio, material_mu, material_cohesion,
                                             material_cohesion_distance, dt)
                    fi = fi + fs
                    if b >= 0:
                        # the reaction on the body, along the same line as the force on the particle (through
                        # its centre): a particle cannot spin, so friction at the surface would create angular
                        # momentum; this way the pair conserves it
                        kc.atomic_add(body_f, b, kc.spatial_vector(-fs, kc.cross(arm + n * r, -fs)))
        f[i] += fi


def eval_particle_shape_contacts(model, state, forces, dt, toi: bool = False, wrenches=None):
    """Add ground and sphere/box/capsule/plane contact forces [N] of ``state`` to ``forces`` (vec3, (n,)).

    ``dt`` [s] is the step the forces will act over (it bounds static friction, see sim/contact.py).
    ``toi``: static shapes other than capsules, and spheres and boxes on bodies, are swept by
    sim/toi.py instead.  Shapes on
    bodies push with their body's motion and effective mass; the reaction wrenches go to
    ``wrenches`` (spatial_vector, (B,); required when the model has body shapes).
    """
    if model.particle_count == 0 or (not model.ground and model.shape_count == len(model.mesh_shape_indices)):
        return
    if wrenches is None:
        if model.body_count:
            raise ValueError("eval_particle_shape_contacts: the model has bodies; pass wrenches= (B,) for the reactions")
        wrenches = kc.zeros(0, dtype=kc.spatial_vector, device=model.device)
    kc.launch(eval_particle_shape_contacts_kernel, dim=model.particle_count,
              inputs=[state.particle_q, state.particle_qd, model.particle_radius, model.particle_inv_mass,
                      model.particle_material, model.particle_world, int(model.ground), model.ground_normal,
                      model.ground_offset, model.ground_material, model.shape_count, model.shape_type, model.shape_body,
                      model.shape_pos, model.shape_rot,
                      model.shape_scale, model.shape_material, model.shape_world, state.body_q, state.body_qd,
                      model.body_com,
                      model.body_inv_mass, model.body_inv_inertia, *material_inputs(model),
                      model.material_max_cohesion_distance, float(dt), int(bool(toi))],
              outputs=[forces, wrenches], device=model.device)
