"""Contacts of body shapes with the ground and static shapes: penalty forces (kernel + launcher).

The candidate pairs (body shape, static collider) are listed once, when the solver is
made (:func:`body_static_pairs`), and each step launches one thread per pair and
contact point: a sphere tests its centre, a capsule its two segment ends, a box its
eight corners, each point inflated by the shape's radius (0 for box corners), against
the signed distance of the collider (ground, static plane, sphere, box or capsule).
Against a static sphere, a box or capsule body instead tests its single point closest
to the sphere's centre (a sphere resting on a box face touches no corner).  A box body
against a static box gets the pair's face manifold instead of its corners
(sim.collide_box_faces.box_on_static_box: the edge-edge contact when an edge axis
separates them most, else the incident face clipped to the reference face, up to 8
points), computed once by the pair's thread 0, which fills all of the pair's slots: the
corners of an equal box resting exactly on a static one lie on its face planes, at
distance 0, and let it sink and rock.  Not handled: a capsule's side against a static box
or capsule.

Two launches: contact generation writes each (pair, point) slot's contact point,
normal, depth and shape pair into a :class:`sim.contacts.Contacts` (the solver keeps one
per output state, ``state_out.contacts``, so nothing a Tape replays is overwritten), then
the force launch reads them.  The force at each point is the particles' contact law
(sim/contact.py) with the body's effective inverse mass along the normal,
``1/m + (r x n) . I_world^-1 (r x n)``, added to the body's wrench with ``atomic_add``.
Both read only ``state_in`` and the contact arrays, so a Tape replays them exactly.
"""
from __future__ import annotations

import numpy as np

import kernelcore as kc

from .collide_box_faces import box_on_static_box
from .collide_box_sat import box_edge_contact, box_extent, segment_params  # noqa: F401  (their old home)
from .collide_shapes import box_closest
from .contact import material_inputs, mixed_body_contact_force
from .model import SHAPE_BOX, SHAPE_CAPSULE, SHAPE_PLANE, SHAPE_SPHERE

SPHERE = kc.constant(0)
BOX = kc.constant(1)
PLANE = kc.constant(2)
CAPSULE = kc.constant(4)
GROUND = kc.constant(-1)

#: contact points per pair (the eight corners of a box)
MAX_POINTS = 8


@kc.func
def static_distance(x: kc.vec3, kind: int, pos: kc.vec3, rot: kc.mat33, scale: kc.vec3, ground_normal: kc.vec3,
                    ground_offset: float) -> kc.vec4:
    """Outward unit normal and signed distance [m] of point ``x`` from a static collider, (nx, ny, nz, d).

    ``kind``: GROUND (then ``ground_normal``/``ground_offset`` describe it), SPHERE, BOX,
    CAPSULE or PLANE (then ``pos``, ``rot``, ``scale`` do).
    """
    n = ground_normal
    d = kc.dot(ground_normal, x) - ground_offset
    if kind == SPHERE:
        rel = x - pos
        dist = kc.length(rel)
        n = kc.vec3(0.0, 1.0, 0.0)
        if dist > 0.0:
            n = rel / dist
        d = dist - scale[0]
    elif kind == BOX:
        nd = box_closest(kc.transpose(rot) * (x - pos), scale)
        n = rot * kc.vec3(nd[0], nd[1], nd[2])
        d = nd[3]
    elif kind == CAPSULE:
        axis = rot * kc.vec3(0.0, 1.0, 0.0)
        rel = x - pos
        along = kc.clamp(kc.dot(rel, axis), -scale[1], scale[1])
        off = rel - axis * along
        dist = kc.length(off)
        n = kc.vec3(0.0, 1.0, 0.0)
        if dist > 0.0:
            n = off / dist
        d = dist - scale[0]
    elif kind == PLANE:
        n = rot * kc.vec3(0.0, 1.0, 0.0)
        d = kc.dot(n, x - pos)
    return kc.vec4(n[0], n[1], n[2], d)


@kc.func
def shape_point(kind: int, scale: kc.vec3, k: int) -> kc.vec4:
    """Contact point ``k`` of a body shape in the shape frame and its radius, (x, y, z, radius);
    radius < 0 when the shape has fewer points."""
    p = kc.vec4(0.0, 0.0, 0.0, -1.0)
    if kind == SPHERE:
        if k == 0:
            p = kc.vec4(0.0, 0.0, 0.0, scale[0])
    elif kind == CAPSULE:
        if k < 2:
            p = kc.vec4(0.0, scale[1] * (2.0 * float(k) - 1.0), 0.0, scale[0])
    elif kind == BOX:
        sx = 2.0 * float(k % 2) - 1.0
        sy = 2.0 * float((k // 2) % 2) - 1.0
        sz = 2.0 * float(k // 4) - 1.0
        p = kc.vec4(sx * scale[0], sy * scale[1], sz * scale[2], 0.0)
    return p


@kc.func
def closest_point_to(kind: int, scale: kc.vec3, c: kc.vec3) -> kc.vec4:
    """The point of a box or capsule (shape frame) closest to ``c`` (shape frame) and its radius."""
    p = kc.vec4(0.0, 0.0, 0.0, -1.0)
    if kind == BOX:
        q = kc.min(kc.max(c, -scale), scale)
        p = kc.vec4(q[0], q[1], q[2], 0.0)
    elif kind == CAPSULE:
        p = kc.vec4(0.0, kc.clamp(c[1], -scale[1], scale[1]), 0.0, scale[0])
    return p


@kc.func
def spatial_wrench(force: kc.vec3, arm: kc.vec3) -> kc.spatial_vector:
    """Wrench (force, torque about the centre of mass) of ``force`` [N] applied at ``arm`` [m] from it."""
    return kc.spatial_vector(force, kc.cross(arm, force))


#: contact slots per (body shape, static collider) pair: 8 box corners, or a box pair's face manifold
SLOTS = MAX_POINTS


@kc.func
def static_contact_slot(k: int, kind: int, scale: kc.vec3, shape_pos_world: kc.vec3, shape_rot_world: kc.mat33,
                        c_kind: int, c_pos: kc.vec3, c_rot: kc.mat33, c_scale: kc.vec3, ground_normal: kc.vec3,
                        ground_offset: float):
    """Contact point ``k`` (< SLOTS) of a body shape (``kind``, ``scale``, world frame) against a static
    collider (``c_kind`` GROUND: the ground): (found (0/1), unit normal from the collider, gap [m]
    (negative: penetration), contact point on the body's surface) -- the points of the module
    docstring, shared by this module and SolverFeatherstone's fused contacts.  A box against a
    static box finds nothing here: its contacts are the pair's face manifold
    (sim.collide_box_faces.box_on_static_box), computed once per pair by the callers."""
    found = int(0)
    n = kc.vec3(0.0, 1.0, 0.0)
    gap = float(1.0e30)
    contact = shape_pos_world
    pt = shape_point(kind, scale, k)
    if c_kind == SPHERE:
        if kind != SPHERE:  # the body's point closest to the sphere's centre, once
            pt = kc.vec4(0.0, 0.0, 0.0, -1.0)
            if k == 0:
                pt = closest_point_to(kind, scale, kc.transpose(shape_rot_world) * (c_pos - shape_pos_world))
    elif c_kind == BOX and kind == BOX:
        pt = kc.vec4(0.0, 0.0, 0.0, -1.0)
    if pt[3] >= 0.0:
        x = shape_pos_world + shape_rot_world * kc.vec3(pt[0], pt[1], pt[2])
        nd = static_distance(x, c_kind, c_pos, c_rot, c_scale, ground_normal, ground_offset)
        n = kc.vec3(nd[0], nd[1], nd[2])
        gap = nd[3] - pt[3]
        contact = x - n * pt[3]  # on the body's surface
        found = 1
    return found, n, gap, contact


@kc.func
def body_contact_wrench(n: kc.vec3, gap: float, arm: kc.vec3, v: kc.vec3, inv_mass: float,
                        inv_inertia_world: kc.mat33, material: int, c_material: int,
                        material_ke: kc.array(dtype=float), material_damping_ratio: kc.array(dtype=float),
                        material_mu: kc.array(dtype=float), material_cohesion: kc.array(dtype=float),
                        material_cohesion_distance: kc.array(dtype=float), dt: float) -> kc.spatial_vector:
    """Wrench (force [N], torque about the centre of mass [N m]) of the contact law (sim/contact.py) at a
    body's contact point (``arm`` [m] from its centre of mass, velocity ``v`` [m/s], ``gap`` [m] along
    the normal ``n``), with the body's effective inverse mass along the normal
    ``1/m + (r x n) . I_world^-1 (r x n)`` (``inv_inertia_world`` [1/(kg m^2)])."""
    rn = kc.cross(arm, n)
    w = inv_mass + kc.dot(rn, inv_inertia_world * rn)
    f = mixed_body_contact_force(n, gap, v, w, material, c_material, material_ke, material_damping_ratio, material_mu,
                            material_cohesion, material_cohesion_distance, dt)
    return spatial_wrench(f, arm)


@kc.func
def write_static_slot(slot: int, found: int, n: kc.vec3, gap: float, contact: kc.vec3, com: kc.vec3,
                      qd: kc.spatial_vector, s: int, c: int, cohesion_reach: float, dt: float,
                      active: kc.array(dtype=int), point: kc.array(dtype=kc.vec3), normal: kc.array(dtype=kc.vec3),
                      depth: kc.array(dtype=float), shape_a: kc.array(dtype=int), shape_b: kc.array(dtype=int),
                      count: kc.array(dtype=int)):
    """Write body-static contact ``slot``: shape ``s`` against collider ``c``, the ``contact`` point [m] on the
    body (centre of mass ``com`` [m], velocity ``qd``), unit ``n`` from the collider, ``gap`` [m]; active
    when ``found`` and within reach of the contact law (cohesion, onset smoothing of sim/contact.py)."""
    on = int(0)
    if found != 0:
        arm = contact - com
        v = kc.spatial_top(qd) + kc.cross(kc.spatial_bottom(qd), arm)
        if gap < cohesion_reach + 0.5 * dt * kc.length(v):
            on = 1
            kc.atomic_add(count, 0, 1)
    active[slot] = on
    point[slot] = contact
    normal[slot] = n
    depth[slot] = -gap
    shape_a[slot] = s
    shape_b[slot] = c


@kc.kernel
def generate_body_static_contacts_kernel(
        pair_shape: kc.array(dtype=int), pair_static: kc.array(dtype=int),
        body_q: kc.array(dtype=kc.transform), body_qd: kc.array(dtype=kc.spatial_vector),
        body_com: kc.array(dtype=kc.vec3),
        shape_type: kc.array(dtype=int), shape_body: kc.array(dtype=int), shape_pos: kc.array(dtype=kc.vec3),
        shape_rot: kc.array(dtype=kc.mat33), shape_scale: kc.array(dtype=kc.vec3),
        ground_normal: kc.vec3, ground_offset: float, cohesion_reach: float, dt: float,
        active: kc.array(dtype=int), point: kc.array(dtype=kc.vec3), normal: kc.array(dtype=kc.vec3),
        depth: kc.array(dtype=float), shape_a: kc.array(dtype=int), shape_b: kc.array(dtype=int),
        count: kc.array(dtype=int)):
    p, k = kc.tid()
    s = pair_shape[p]
    c = pair_static[p]
    b = shape_body[s]
    kind = shape_type[s]
    tf = body_q[b]
    # the static collider (the ground when c < 0)
    c_kind = GROUND
    c_pos = kc.vec3(0.0, 0.0, 0.0)
    c_rot = kc.identity(3, dtype=float)
    c_scale = kc.vec3(0.0, 0.0, 0.0)
    if c >= 0:
        c_kind = shape_type[c]
        c_pos = shape_pos[c]
        c_rot = shape_rot[c]
        c_scale = shape_scale[c]
    shape_rot_world = kc.quat_to_matrix(kc.transform_get_rotation(tf)) * shape_rot[s]
    shape_pos_world = kc.transform_point(tf, shape_pos[s])
    com = kc.transform_point(tf, body_com[b])
    qd = body_qd[b]
    if kind == BOX and c_kind == BOX:
        # the pair's face manifold (or edge contact), once: thread 0 fills all of the pair's slots
        if k == 0:
            n_points, x, y, z, gaps, n_box = box_on_static_box(shape_pos_world, shape_rot_world, shape_scale[s],
                                                               c_pos, c_rot, c_scale)
            slots = int(SLOTS)  # runtime bound: not unrolled (NVRTC code size)
            for m in range(slots):
                found_m = int(0)
                if m < n_points:
                    found_m = 1
                write_static_slot(p * SLOTS + m, found_m, n_box, gaps[m], kc.vec3(x[m], y[m], z[m]), com,
                                  qd, s, c, cohesion_reach, dt, active, point, normal, depth, shape_a, shape_b,
                                  count)
    else:
        found, n, gap, contact = static_contact_slot(k, kind, shape_scale[s], shape_pos_world, shape_rot_world,
                                                     c_kind, c_pos, c_rot, c_scale, ground_normal, ground_offset)
        write_static_slot(p * SLOTS + k, found, n, gap, contact, com, qd, s, c, cohesion_reach, dt, active, point,
                          normal, depth, shape_a, shape_b, count)


@kc.kernel
def apply_body_static_contacts_kernel(
        active: kc.array(dtype=int), point: kc.array(dtype=kc.vec3), normal: kc.array(dtype=kc.vec3),
        depth: kc.array(dtype=float), shape_a: kc.array(dtype=int), shape_b: kc.array(dtype=int),
        body_q: kc.array(dtype=kc.transform), body_qd: kc.array(dtype=kc.spatial_vector),
        body_com: kc.array(dtype=kc.vec3), body_inv_mass: kc.array(dtype=float),
        body_inv_inertia: kc.array(dtype=kc.mat33), shape_body: kc.array(dtype=int),
        shape_material: kc.array(dtype=int), ground_material: int,
        material_ke: kc.array(dtype=float), material_damping_ratio: kc.array(dtype=float),
        material_mu: kc.array(dtype=float), material_cohesion: kc.array(dtype=float),
        material_cohesion_distance: kc.array(dtype=float), dt: float,
        body_f: kc.array(dtype=kc.spatial_vector)):
    slot = kc.tid()
    if active[slot] != 0:
        s = shape_a[slot]
        c = shape_b[slot]
        b = shape_body[s]
        c_material = ground_material
        if c >= 0:
            c_material = shape_material[c]
        tf = body_q[b]
        qd = body_qd[b]
        n = normal[slot]
        arm = point[slot] - kc.transform_point(tf, body_com[b])
        v = kc.spatial_top(qd) + kc.cross(kc.spatial_bottom(qd), arm)
        rot = kc.quat_to_matrix(kc.transform_get_rotation(tf))
        wrench = body_contact_wrench(n, -depth[slot], arm, v, body_inv_mass[b],
                                     rot * body_inv_inertia[b] * kc.transpose(rot), shape_material[s], c_material,
                                     material_ke, material_damping_ratio, material_mu, material_cohesion,
                                     material_cohesion_distance, dt)
        kc.atomic_add(body_f, b, wrench)


def body_static_pairs(model, swept_shapes=(), swept_kinds=(), device=None, swept_shapes_all=()):
    """(pair_shape, pair_static) kc int arrays: every body shape with the ground (-1) and each static
    sphere, box, capsule and plane shape (meshes are not collided with bodies).

    Pairs of a shape in ``swept_shapes`` with the ground or a static shape whose type is in
    ``swept_kinds`` are left out: time-of-impact contacts handle them (sim/toi.py); so are
    all pairs of a shape in ``swept_shapes_all`` (box and capsule bodies, sim/toi_shapes.py).
    """
    shape_body = model.shape_body.numpy() if model.shape_count else np.zeros(0, np.int32)
    shape_type = model.shape_type.numpy() if model.shape_count else np.zeros(0, np.int32)
    body_shapes = [s for s in range(model.shape_count)
                   if shape_body[s] >= 0 and shape_type[s] in (SHAPE_SPHERE, SHAPE_BOX, SHAPE_CAPSULE)]
    statics = ([-1] if model.ground else []) + [
        s for s in range(model.shape_count)
        if shape_body[s] < 0 and shape_type[s] in (SHAPE_SPHERE, SHAPE_BOX, SHAPE_CAPSULE, SHAPE_PLANE)]
    swept = set(int(s) for s in swept_shapes)
    world = model.shape_world.numpy() if model.shape_count else np.zeros(0, np.int32)
    swept_all = set(int(s) for s in swept_shapes_all)

    def penalty(s, c):
        if c >= 0 and world[s] >= 0 and world[c] >= 0 and world[s] != world[c]:
            return False  # shapes of different environments do not touch
        return s not in swept_all and (s not in swept or not (c < 0 or shape_type[c] in swept_kinds))

    pairs = np.array([(s, c) for s in body_shapes for c in statics if penalty(s, c)], np.int32).reshape(-1, 2)
    dev = device or model.device
    return (kc.array(np.ascontiguousarray(pairs[:, 0]), dtype=kc.int32, device=dev),
            kc.array(np.ascontiguousarray(pairs[:, 1]), dtype=kc.int32, device=dev))


def body_static_contact_capacity(pairs) -> int:
    """Contact slots the pairs of :func:`body_static_pairs` need."""
    return int(pairs[0].shape[0]) * SLOTS


def generate_body_static_contacts(model, state, pairs, contacts, dt: float):
    """Contact generation: fill ``contacts`` (sim.contacts.Contacts, capacity from
    :func:`body_static_contact_capacity`) with ``state``'s body-static contacts."""
    pair_shape, pair_static = pairs
    contacts.count.zero_()
    if pair_shape.shape[0] == 0:
        return
    kc.launch(generate_body_static_contacts_kernel, dim=(pair_shape.shape[0], SLOTS),
              inputs=[pair_shape, pair_static, state.body_q, state.body_qd, model.body_com, model.shape_type,
                      model.shape_body, model.shape_pos, model.shape_rot, model.shape_scale, model.ground_normal,
                      model.ground_offset, model.material_max_cohesion_distance, float(dt)],
              outputs=[contacts.active, contacts.point, contacts.normal, contacts.depth, contacts.shape_a,
                       contacts.shape_b, contacts.count], device=model.device)


def apply_body_static_contacts(model, state, contacts, wrenches, dt: float):
    """Add the penalty wrenches [N, N m] of ``contacts`` (found in ``state``) to ``wrenches`` (B,)."""
    if contacts.capacity == 0:
        return
    kc.launch(apply_body_static_contacts_kernel, dim=contacts.capacity,
              inputs=[contacts.active, contacts.point, contacts.normal, contacts.depth, contacts.shape_a,
                      contacts.shape_b, state.body_q, state.body_qd, model.body_com, model.body_inv_mass,
                      model.body_inv_inertia, model.shape_body, model.shape_material, model.ground_material,
                      *material_inputs(model), float(dt)],
              outputs=[wrenches], device=model.device)


def eval_body_static_contacts(model, state, pairs, wrenches, dt: float, contacts=None, meshes=None,
                              check_overflow: bool = True):
    """Add the penalty contact wrenches [N, N m] of ``state``'s body shapes against the ground and static
    shapes to ``wrenches`` (spatial_vector, (B,)); ``pairs`` from :func:`body_static_pairs`.

    ``contacts``: the sim.contacts.Contacts to generate the contacts into (the solver passes
    ``state_out.contacts``); None: a temporary one.  ``meshes``: a
    sim.collide_body_mesh.BodyMeshContacts whose body-static mesh contacts go into the same
    arrays, in the slots after the primitives' (``contacts`` then needs room for both).
    ``check_overflow``: zero ``contacts.overflow`` first and raise (one read-back) when the mesh
    contacts did not fit their slots; False: the caller does both (the solver, once per step)."""
    from .contacts import Contacts

    primitive = body_static_contact_capacity(pairs)
    capacity = primitive + (meshes.static_capacity() if meshes is not None else 0)
    if capacity == 0:
        return
    if contacts is None:
        contacts = Contacts(capacity, model.device, model.requires_grad)
    generate_body_static_contacts(model, state, pairs, contacts, dt)
    if meshes is not None and meshes.static_capacity():
        if check_overflow:
            contacts.overflow.zero_()
        meshes.generate_static(model, state, contacts, primitive, dt)
        if check_overflow and (meshes.vertex_count or meshes.edges is not None):
            meshes.check_overflow(contacts)
    apply_body_static_contacts(model, state, contacts, wrenches, dt)
