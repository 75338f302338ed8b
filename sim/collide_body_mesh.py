"""Contacts that involve triangle meshes and rigid bodies: contact generation (kernels + launchers).

Mesh shapes on bodies keep their vertices in their own frame (``geometry.Mesh`` built once
at finalize); a point is brought into that frame to query the mesh's BVH, so nothing is
refit while the body moves.  Which side of a surface a point is on comes from the
angle-weighted pseudo-normal of its closest feature (``mesh_query_point_sign_normal``),
which is right for closed meshes and, near the surface, for open ones (terrain).

Contact points, one thread each:

- a mesh body against the ground, a static plane, box or capsule: each vertex against
  the collider's signed distance (sim/collide_bodies.py ``static_distance``);
- a mesh body against a static sphere or capsule: the sphere's centre (the capsule's two
  ends and its axis point nearest the mesh's origin) against the mesh, inflated by the
  radius; for a capsule its vertices too (a sphere's closest mesh point is its contact);
  against a static box also the box's corners against the mesh (a board on a small box);
- a sphere, capsule or box body against a static triangle mesh (terrain): its centre,
  segment ends or corners against the mesh, inflated by the radius; a mesh body: its
  vertices against the static mesh;
- body against body when one of them is a mesh (broad phase on a ``geometry.HashGrid`` of
  shape centres with the shapes' bounding radii, as in sim/collide_body_pairs.py): the
  mesh's vertices against the other shape (signed distance, or the other mesh), and a
  primitive's points (sphere centre, capsule ends, box corners) against the mesh;
- a static mesh's own vertices against box, capsule and mesh bodies (a spike under a
  face), found through a ``geometry.Bvh`` over the vertices and the body shape's bounds.

Particles against mesh shapes on bodies: :func:`eval_particle_body_mesh_contacts` (the
particle's centre against the mesh in its frame, the reaction on the body).

Sharp mesh edges across box faces and capsules (a box or capsule body on a static mesh's
ridge, a mesh body on a static box's edge): sim/collide_mesh_edges.py, generated here with
the static contacts.  Sharp edges of mesh bodies against box bodies and against other mesh
bodies' edges: sim/collide_mesh_edge_pairs.py, generated here with the pair contacts.

Contacts are generated, like the primitives' (sim/collide_bodies.py,
sim/collide_body_pairs.py), into the step's sim/contacts.py arrays, after the primitives'
slots: body-static ones into ``state_out.contacts`` (:meth:`BodyMeshContacts.generate_static`,
``shape_a`` the body shape, ``shape_b`` the static shape or -1 for the ground), body-body ones
into ``state_out.body_pair_contacts`` (:meth:`BodyMeshContacts.generate_pairs`, ``shape_a``
the shape the force acts on along ``normal``, the reaction going to ``shape_b``); the point
lies on ``shape_a``'s surface.  Threads that may find several contacts (a static mesh's
vertices under a body shape, the shapes at a mesh vertex) own ``slots`` slots each; more
raise an error naming ``SolverSemiImplicit(mesh_contact_slots=)``.  The solver's apply
kernels then add the contact law of sim/contact.py with the effective inverse mass of the
contact point along the normal, ``1/m + (r x n) . I_world^-1 (r x n)`` (summed over both
bodies for a pair).  Generation reads only ``state_in``; on a Tape the grid is rebuilt from
that state before the generation's adjoint runs, and the adjoint of the force sees exactly
the contacts its forward used.
"""
from __future__ import annotations

import math

import numpy as np

import kernelcore as kc
import geometry  # noqa: F401  (adds the mesh_* and hash_grid_* builtins)
from kernelcore.device import get_runtime

from .collide_bodies import shape_point, static_distance
from .collide_body_pairs import shape_bounding_radius
from .collide_hull_pairs import hull_has_vertex_near, hull_vertex_contact, overlap_impact_gap, shape_convex_flags
from .collide_mesh_edge_pairs import make_mesh_edge_pair_contacts
from .collide_mesh_edges import MeshEdgeContacts
from .collide_mesh import FAR, mesh_surface_distance
from .contact import material_inputs, mixed_contact_force
from .contacts import (OVERFLOW_MESH_EDGE, OVERFLOW_MESH_PAIR, OVERFLOW_MESH_STATIC, check_contact_overflow,
                       write_contact_slot)
from .model import SHAPE_BOX, SHAPE_CAPSULE, SHAPE_MESH, SHAPE_PLANE, SHAPE_SPHERE
from .shape_frames import body_com_world, shape_world_frame

SPHERE = kc.constant(0)
BOX = kc.constant(1)
MESH = kc.constant(3)
CAPSULE = kc.constant(4)
GROUND = kc.constant(-1)
#: two hulls' vertices closer than this fraction of the mesh's bounding radius are one contact point
COINCIDENT = kc.constant(0.01)
#: (fraction of the shape's bound) a hull's vertex this far outside another hull still takes the pair's axis:
#: on two hulls lined up (coplanar side faces) a corner lies on the other's side face, inside or outside
#: by rounding; its support then flickered on and off, corner by corner, and rocked the stack
HULL_SKIN = kc.constant(1.0e-4)

#: points per pair beyond a mesh's vertices: a static sphere's centre (1), a capsule's (3), a box's corners
COLLIDER_POINTS = {SHAPE_SPHERE: 1, SHAPE_CAPSULE: 3, SHAPE_BOX: 8}
#: contact points of a primitive body shape (sphere centre, capsule ends, box corners)
PRIMITIVE_POINTS = {SHAPE_SPHERE: 1, SHAPE_CAPSULE: 2, SHAPE_BOX: 8}




@kc.func
def inverse_mass_along(n: kc.vec3, arm: kc.vec3, q: kc.transform, inv_mass: float, inv_inertia: kc.mat33) -> float:
    """Effective inverse mass [1/kg] of a body point ``arm`` [m] from the COM along unit ``n`` (world)."""
    rot = kc.quat_to_matrix(kc.transform_get_rotation(q))
    rn = kc.cross(arm, n)
    return inv_mass + kc.dot(rn, rot * inv_inertia * kc.transpose(rot) * rn)


@kc.kernel
def generate_body_mesh_static_contacts_kernel(
        item_shape: kc.array(dtype=int), item_static: kc.array(dtype=int), item_k: kc.array(dtype=int),
        body_q: kc.array(dtype=kc.transform), body_qd: kc.array(dtype=kc.spatial_vector),
        body_com: kc.array(dtype=kc.vec3),
        shape_type: kc.array(dtype=int), shape_body: kc.array(dtype=int), shape_pos: kc.array(dtype=kc.vec3),
        shape_rot: kc.array(dtype=kc.mat33), shape_scale: kc.array(dtype=kc.vec3),
        shape_material: kc.array(dtype=int), shape_mesh: kc.array(dtype=kc.uint64),
        shape_bound: kc.array(dtype=float), shape_vertex_count: kc.array(dtype=int),
        ground_normal: kc.vec3, ground_offset: float, cohesion_reach: float, dt: float, offset: int,
        active: kc.array(dtype=int), point: kc.array(dtype=kc.vec3), normal: kc.array(dtype=kc.vec3),
        depth: kc.array(dtype=float), shape_a: kc.array(dtype=int), shape_b: kc.array(dtype=int),
        count: kc.array(dtype=int), overflow: kc.array(dtype=int)):
    t = kc.tid()
    s = item_shape[t]
    c = item_static[t]
    k = item_k[t]
    b = shape_body[s]
    kind = shape_type[s]
    pos_s, rot_s = shape_world_frame(body_q, shape_body, shape_pos, shape_rot, s)
    qd = body_qd[b]
    com = body_com_world(body_q, body_com, b)
    # the static collider (the ground when c < 0)
    c_kind = GROUND
    c_pos = kc.vec3(0.0, 0.0, 0.0)
    c_rot = kc.identity(3, dtype=float)
    c_scale = kc.vec3(0.0, 0.0, 0.0)
    c_mesh = kc.uint64(0)
    if c >= 0:
        c_kind = shape_type[c]
        c_pos = shape_pos[c]
        c_rot = shape_rot[c]
        c_scale = shape_scale[c]
        c_mesh = shape_mesh[c]
    # how far a contact may be found: the smoothing window of sim/contact.py plus some overlap
    speed = kc.length(kc.spatial_top(qd)) + kc.length(kc.spatial_bottom(qd)) * shape_bound[s]
    margin = cohesion_reach + dt * speed + 0.5 * shape_bound[s]
    n = kc.vec3(0.0, 1.0, 0.0)
    gap = FAR
    contact = pos_s
    if kind == MESH:
        nv = shape_vertex_count[s]
        if k < nv:  # a vertex of the body's mesh against the collider
            x = pos_s + rot_s * kc.mesh_get_point(shape_mesh[s], k)
            nd = kc.vec4(0.0, 1.0, 0.0, FAR)
            if c_kind == MESH:
                nd = mesh_surface_distance(c_mesh, x, margin)
            elif c_kind != SPHERE:
                nd = static_distance(x, c_kind, c_pos, c_rot, c_scale, ground_normal, ground_offset)
            n = kc.vec3(nd[0], nd[1], nd[2])
            gap = nd[3]
            contact = x
        else:  # a point of the collider (sphere centre; capsule ends, axis point; box corner) against the mesh
            j = k - nv
            y = c_pos
            rc = c_scale[0]
            if c_kind == BOX:  # a small box under a large face: no vertex of the mesh touches it
                corner = shape_point(BOX, c_scale, j)
                y = c_pos + c_rot * kc.vec3(corner[0], corner[1], corner[2])
                rc = 0.0
            elif c_kind == CAPSULE:
                axis = c_rot * kc.vec3(0.0, 1.0, 0.0)
                along = kc.clamp(kc.dot(pos_s - c_pos, axis), -c_scale[1], c_scale[1])
                if j == 0:
                    along = -c_scale[1]
                elif j == 1:
                    along = c_scale[1]
                y = c_pos + axis * along
            nd = mesh_surface_distance(shape_mesh[s], kc.transpose(rot_s) * (y - pos_s), rc + margin)
            if nd[3] < FAR:
                n_out = rot_s * kc.vec3(nd[0], nd[1], nd[2])  # from the mesh towards the collider
                gap = nd[3] - rc
                contact = y - n_out * nd[3]                  # the mesh's closest point
                n = -n_out                                   # the body is pushed away from the collider
    else:  # a sphere, capsule or box body against a static mesh
        pt = shape_point(kind, shape_scale[s], k)
        if pt[3] >= 0.0:
            x = pos_s + rot_s * kc.vec3(pt[0], pt[1], pt[2])
            nd = mesh_surface_distance(c_mesh, x, pt[3] + margin)
            if nd[3] < FAR:
                n = kc.vec3(nd[0], nd[1], nd[2])
                gap = nd[3] - pt[3]
                contact = x - n * pt[3]
    on = int(0)
    if gap < FAR:
        arm = contact - com
        v = kc.spatial_top(qd) + kc.cross(kc.spatial_bottom(qd), arm)
        if gap < cohesion_reach + 0.5 * dt * kc.length(v):
            on = 1
            kc.atomic_add(count, 0, 1)
    slot = offset + t
    active[slot] = on
    point[slot] = contact
    normal[slot] = n
    depth[slot] = -gap
    shape_a[slot] = s
    shape_b[slot] = c


@kc.kernel
def generate_static_mesh_vertex_contacts_kernel(
        item_shape: kc.array(dtype=int), item_mesh: kc.array(dtype=int), vertex_bvh: kc.array(dtype=kc.uint64),
        body_q: kc.array(dtype=kc.transform), body_qd: kc.array(dtype=kc.spatial_vector),
        body_com: kc.array(dtype=kc.vec3),
        shape_type: kc.array(dtype=int), shape_body: kc.array(dtype=int), shape_pos: kc.array(dtype=kc.vec3),
        shape_rot: kc.array(dtype=kc.mat33), shape_scale: kc.array(dtype=kc.vec3),
        shape_material: kc.array(dtype=int), shape_mesh: kc.array(dtype=kc.uint64),
        shape_bound: kc.array(dtype=float),
        cohesion_reach: float, dt: float, offset: int, slots_per_thread: int,
        active: kc.array(dtype=int), point: kc.array(dtype=kc.vec3), normal: kc.array(dtype=kc.vec3),
        depth: kc.array(dtype=float), shape_a: kc.array(dtype=int), shape_b: kc.array(dtype=int),
        count: kc.array(dtype=int), overflow: kc.array(dtype=int)):
    t = kc.tid()
    s = item_shape[t]
    c = item_mesh[t]
    b = shape_body[s]
    kind = shape_type[s]
    pos_s, rot_s = shape_world_frame(body_q, shape_body, shape_pos, shape_rot, s)
    qd = body_qd[b]
    com = body_com_world(body_q, body_com, b)
    speed = kc.length(kc.spatial_top(qd)) + kc.length(kc.spatial_bottom(qd)) * shape_bound[s]
    margin = cohesion_reach + dt * speed
    ext = shape_bound[s] + margin
    reach = kc.vec3(ext, ext, ext)
    # this thread's slots: [base, base + slots_per_thread), filled in the query's order
    base = offset + t * slots_per_thread
    for u in range(slots_per_thread):
        active[base + u] = 0
    used = int(0)
    # the static mesh's vertices in the shape's bounding box, each once (a BVH over the vertices)
    query = kc.bvh_query_aabb(vertex_bvh[c], pos_s - reach, pos_s + reach)
    v = int(0)
    while kc.bvh_query_next(query, v):
        x = kc.mesh_get_point(shape_mesh[c], v)
        nd = kc.vec4(0.0, 1.0, 0.0, FAR)
        if kind == MESH:
            nl = mesh_surface_distance(shape_mesh[s], kc.transpose(rot_s) * (x - pos_s),
                                       margin + 0.5 * shape_bound[s])
            nw = rot_s * kc.vec3(nl[0], nl[1], nl[2])
            nd = kc.vec4(nw[0], nw[1], nw[2], nl[3])
        else:
            nd = static_distance(x, kind, pos_s, rot_s, shape_scale[s], kc.vec3(0.0, 1.0, 0.0), 0.0)
        if nd[3] < FAR:
            n = -kc.vec3(nd[0], nd[1], nd[2])  # the body is pushed away from the vertex
            gap = nd[3]
            arm = x - com
            vb = kc.spatial_top(qd) + kc.cross(kc.spatial_bottom(qd), arm)
            if gap < cohesion_reach + 0.5 * dt * kc.length(vb):
                # the point: the body's surface point nearest the vertex
                used = write_contact_slot(used, base, slots_per_thread, x + n * gap, n, gap, s, c, active, point,
                                          normal, depth, shape_a, shape_b, count, overflow,
                                          OVERFLOW_MESH_STATIC)


@kc.kernel
def mesh_pair_shape_centers_kernel(shape_ids: kc.array(dtype=int), shape_body: kc.array(dtype=int),
                                   shape_pos: kc.array(dtype=kc.vec3), body_q: kc.array(dtype=kc.transform),
                                   centers: kc.array(dtype=kc.vec3)):
    i = kc.tid()
    s = shape_ids[i]
    centers[i] = kc.transform_point(body_q[shape_body[s]], shape_pos[s])


@kc.kernel
def generate_mesh_body_pair_contacts_kernel(
        grid: kc.uint64, item_slot: kc.array(dtype=int), item_k: kc.array(dtype=int),
        shape_ids: kc.array(dtype=int), slot_bound: kc.array(dtype=float), max_bound: float,
        centers: kc.array(dtype=kc.vec3),
        body_q: kc.array(dtype=kc.transform), body_qd: kc.array(dtype=kc.spatial_vector),
        body_com: kc.array(dtype=kc.vec3),
        shape_type: kc.array(dtype=int), shape_body: kc.array(dtype=int), shape_pos: kc.array(dtype=kc.vec3),
        shape_rot: kc.array(dtype=kc.mat33), shape_scale: kc.array(dtype=kc.vec3),
        shape_material: kc.array(dtype=int), shape_mesh: kc.array(dtype=kc.uint64),
        shape_vertex_count: kc.array(dtype=int), shape_face_count: kc.array(dtype=int),
        shape_convex: kc.array(dtype=int),
        cohesion_reach: float, dt: float, offset: int, slots_per_thread: int,
        shape_impact: kc.array(dtype=int), impact_speed: float,
        active: kc.array(dtype=int), point: kc.array(dtype=kc.vec3), normal: kc.array(dtype=kc.vec3),
        depth: kc.array(dtype=float), shape_a: kc.array(dtype=int), shape_b: kc.array(dtype=int),
        count: kc.array(dtype=int), overflow: kc.array(dtype=int)):
    t = kc.tid()
    i = item_slot[t]
    k = item_k[t]
    sa = shape_ids[i]
    ba = shape_body[sa]
    qda = body_qd[ba]
    com_a = body_com_world(body_q, body_com, ba)
    pos_a, rot_a = shape_world_frame(body_q, shape_body, shape_pos, shape_rot, sa)
    mesh_a = shape_mesh[sa]
    bound_a = slot_bound[i]
    # this thread's slots: [base, base + slots_per_thread), filled in the grid query's order
    base = offset + t * slots_per_thread
    for u in range(slots_per_thread):
        active[base + u] = 0
    used = int(0)
    has_vertex = int(0)
    xa = pos_a
    if k < shape_vertex_count[sa]:
        has_vertex = 1
        xa = pos_a + rot_a * kc.mesh_get_point(mesh_a, k)
    query = kc.hash_grid_query(grid, pos_a, bound_a + max_bound * 1.1 + cohesion_reach)
    j = int(0)
    while kc.hash_grid_query_next(query, j):
        sb = shape_ids[j]
        bb = shape_body[sb]
        kb = shape_type[sb]
        bound_b = slot_bound[j]
        use = int(1)
        if bb == ba:
            use = 0
        if kc.length(centers[j] - pos_a) > (bound_a + bound_b) * 1.1 + cohesion_reach:
            use = 0
        if use != 0:
            qdb = body_qd[bb]
            com_b = body_com_world(body_q, body_com, bb)
            pos_b, rot_b = shape_world_frame(body_q, shape_body, shape_pos, shape_rot, sb)
            scale_b = shape_scale[sb]
            speed = (kc.length(kc.spatial_top(qda)) + kc.length(kc.spatial_bottom(qda)) * bound_a
                     + kc.length(kc.spatial_top(qdb)) + kc.length(kc.spatial_bottom(qdb)) * bound_b)
            margin = cohesion_reach + dt * speed
            # 1. this mesh's vertex k against shape b (not a sphere: its centre's query below covers it)
            n = kc.vec3(0.0, 1.0, 0.0)
            gap = FAR
            if has_vertex != 0:
                if kb != SPHERE:
                    if kc.length(xa - pos_b) < bound_b * 1.1 + margin:
                        nd = kc.vec4(0.0, 1.0, 0.0, FAR)
                        if kb == MESH:
                            local = kc.transpose(rot_b) * (xa - pos_b)
                            nd = mesh_surface_distance(shape_mesh[sb], local, margin + 0.5 * kc.min(bound_a, bound_b))
                            nb = rot_b * kc.vec3(nd[0], nd[1], nd[2])
                            nd = kc.vec4(nb[0], nb[1], nb[2], nd[3])
                            if shape_convex[sa] + shape_convex[sb] == 2 and nd[3] <= HULL_SKIN * bound_a:
                                # a vertex inside the other hull: the pair's axis of least overlap, not the
                                # closest feature's normal (coplanar faces; sim/collide_hull_pairs.py).  Outside,
                                # the face axis's gap is only a lower bound of the distance: not a contact.
                                nd = hull_vertex_contact(xa, mesh_a, shape_vertex_count[sa], shape_face_count[sa],
                                                         pos_a, rot_a, shape_mesh[sb], shape_vertex_count[sb],
                                                         shape_face_count[sb], pos_b, rot_b)
                                if sa > sb and hull_has_vertex_near(xa, shape_mesh[sb], shape_vertex_count[sb], pos_b,
                                                                    rot_b, COINCIDENT * bound_a) != 0:
                                    nd = kc.vec4(0.0, 1.0, 0.0, FAR)  # b's vertex here is the contact
                        else:
                            nd = static_distance(xa, kb, pos_b, rot_b, scale_b, kc.vec3(0.0, 1.0, 0.0), 0.0)
                        n = kc.vec3(nd[0], nd[1], nd[2])
                        gap = nd[3]
            if gap < FAR:  # the force on a at its vertex, the reaction on b
                arm_a = xa - com_a
                arm_b = xa - com_b
                v_rel = (kc.spatial_top(qda) + kc.cross(kc.spatial_bottom(qda), arm_a)
                         - kc.spatial_top(qdb) - kc.cross(kc.spatial_bottom(qdb), arm_b))
                gap = overlap_impact_gap(gap, n, v_rel, shape_impact[sa] + shape_impact[sb], impact_speed)
                if gap < cohesion_reach + 0.5 * dt * kc.length(v_rel):
                    used = write_contact_slot(used, base, slots_per_thread, xa, n, gap, sa, sb, active, point, normal,
                                              depth, shape_a, shape_b, count, overflow,
                                              OVERFLOW_MESH_PAIR)
            # 2. point k of primitive b (sphere centre, capsule end, box corner) against this mesh
            gap = FAR
            contact = pos_b
            if kb != MESH:
                pt = shape_point(kb, scale_b, k)
                if pt[3] >= 0.0:
                    y = pos_b + rot_b * kc.vec3(pt[0], pt[1], pt[2])
                    if kc.length(y - pos_a) < bound_a * 1.1 + pt[3] + margin:
                        nd = mesh_surface_distance(mesh_a, kc.transpose(rot_a) * (y - pos_a),
                                                   pt[3] + margin + 0.5 * kc.min(bound_a, bound_b))
                        if nd[3] < FAR:
                            n = rot_a * kc.vec3(nd[0], nd[1], nd[2])  # from this mesh towards b's point
                            gap = nd[3] - pt[3]
                            contact = y - n * pt[3]
            if gap < FAR:  # the force on b, the reaction on a
                arm_a = contact - com_a
                arm_b = contact - com_b
                v_rel = (kc.spatial_top(qdb) + kc.cross(kc.spatial_bottom(qdb), arm_b)
                         - kc.spatial_top(qda) - kc.cross(kc.spatial_bottom(qda), arm_a))
                gap = overlap_impact_gap(gap, n, v_rel, shape_impact[sa] + shape_impact[sb], impact_speed)
                if gap < cohesion_reach + 0.5 * dt * kc.length(v_rel):
                    used = write_contact_slot(used, base, slots_per_thread, contact, n, gap, sb, sa, active, point,
                                              normal, depth, shape_a, shape_b, count, overflow,
                                              OVERFLOW_MESH_PAIR)


@kc.kernel
def eval_particle_body_mesh_contacts_kernel(
        q: kc.array(dtype=kc.vec3), qd: kc.array(dtype=kc.vec3), radius: kc.array(dtype=float),
        inv_mass: kc.array(dtype=float), particle_material: kc.array(dtype=int),
        mesh_count: int, body_mesh_shapes: kc.array(dtype=int), shape_body: kc.array(dtype=int),
        shape_pos: kc.array(dtype=kc.vec3), shape_rot: kc.array(dtype=kc.mat33), shape_mesh: kc.array(dtype=kc.uint64),
        shape_material: kc.array(dtype=int),
        body_q: kc.array(dtype=kc.transform), body_qd: kc.array(dtype=kc.spatial_vector),
        body_com: kc.array(dtype=kc.vec3), body_inv_mass: kc.array(dtype=float),
        body_inv_inertia: kc.array(dtype=kc.mat33),
        material_ke: kc.array(dtype=float), material_damping_ratio: kc.array(dtype=float),
        material_mu: kc.array(dtype=float), material_cohesion: kc.array(dtype=float),
        material_cohesion_distance: kc.array(dtype=float), cohesion_reach: float, dt: float,
        f: kc.array(dtype=kc.vec3), body_f: kc.array(dtype=kc.spatial_vector)):
    t = kc.tid()
    i = t // mesh_count
    s = body_mesh_shapes[t - i * mesh_count]
    w = inv_mass[i]
    if w > 0.0:
        x = q[i]
        r = radius[i]
        b = shape_body[s]
        tf = body_q[b]
        pos_s, rot_s = shape_world_frame(body_q, shape_body, shape_pos, shape_rot, s)
        qd_b = body_qd[b]
        com = body_com_world(body_q, body_com, b)
        v_surface = kc.spatial_top(qd_b) + kc.cross(kc.spatial_bottom(qd_b), x - com)
        v_rel = qd[i] - v_surface
        # the particle in the mesh's frame; reach: the smoothing window of sim/contact.py and some overlap
        nd = mesh_surface_distance(shape_mesh[s], kc.transpose(rot_s) * (x - pos_s),
                                   2.0 * r + cohesion_reach + kc.length(v_rel) * dt)
        if nd[3] < FAR:
            n = rot_s * kc.vec3(nd[0], nd[1], nd[2])
            gap = nd[3] - r
            arm = x - n * r - com
            v_rel = qd[i] - kc.spatial_top(qd_b) - kc.cross(kc.spatial_bottom(qd_b), arm)
            if gap < cohesion_reach + 0.5 * dt * kc.length(v_rel):
                w_sum = w + inverse_mass_along(n, arm, tf, body_inv_mass[b], body_inv_inertia[b])
                fs = mixed_contact_force(n, gap, v_rel, w_sum, particle_material[i], shape_material[s], material_ke,
                                         material_damping_ratio, material_mu, material_cohesion,
                                         material_cohesion_distance, dt)
                f[i] += fs
                # the reaction along the line through the particle's centre (a particle cannot spin: this way
                # the pair conserves angular momentum, as in sim/collide_shapes.py)
                kc.atomic_add(body_f, b, kc.spatial_vector(-fs, kc.cross(x - com, -fs)))


def eval_particle_body_mesh_contacts(model, state, forces, wrenches, dt: float):
    """Add contact forces [N] between particles and mesh shapes on bodies to ``forces`` (vec3, (n,)) and
    their reactions to ``wrenches`` (spatial_vector, (B,))."""
    k = len(model.body_mesh_shape_indices)
    if model.particle_count == 0 or k == 0:
        return
    kc.launch(eval_particle_body_mesh_contacts_kernel, dim=model.particle_count * k,
              inputs=[state.particle_q, state.particle_qd, model.particle_radius, model.particle_inv_mass,
                      model.particle_material, k, model.body_mesh_shapes, model.shape_body, model.shape_pos,
                      model.shape_rot, model.shape_mesh, model.shape_material, state.body_q, state.body_qd,
                      model.body_com, model.body_inv_mass, model.body_inv_inertia, *material_inputs(model),
                      model.material_max_cohesion_distance, float(dt)],
              outputs=[forces, wrenches], device=model.device)


def _vertex_counts(model):
    counts = np.zeros(model.shape_count, np.int32)
    for s, (pts, _) in model.shape_mesh_points.items():
        counts[s] = len(pts)
    return counts


class BodyMeshContacts:
    """Everything mesh-related that bodies touch, for one model (made once by the solver).

    Static work items (one thread per contact point): mesh bodies against the ground and
    every static shape; sphere, box and capsule bodies against static meshes.  Pair work
    items: every vertex of every mesh body (and up to 8 points of the primitives near it)
    against the body shapes the hash grid finds.

    Args:
        model: the sim.Model.
        grid_dim: hash grid cells per axis (None: from the shape count).
        exclude_shapes: body shapes that get no contacts with static shapes and meshes here (the
            time-of-impact sweep stops them: a penalty contact's onset window, sim/contact.py, would
            push a fast body that starts a step within half a step's closing distance); their
            body-body contacts stay.
        impact_shapes: body shapes whose impacts with each other sim/toi_body_pairs.py sweeps: a pair
            of two of them has a penalty contact only below the resting speed (sim/toi.py).
    """

    def __init__(self, model, grid_dim: int | None = None, slots: int = 16, exclude_shapes=(), impact_shapes=()):
        if int(slots) < 1:
            raise ValueError(f"BodyMeshContacts(slots={slots}): must be at least 1")
        #: contact slots of one (body shape, static mesh) vertex query and of one mesh vertex's pair query
        self.vertex_slots = self.pair_slots = int(slots)
        k = model.shape_count
        shape_body = model.shape_body.numpy() if k else np.zeros(0, np.int32)
        shape_type = model.shape_type.numpy() if k else np.zeros(0, np.int32)
        scale = model.shape_scale.numpy() if k else np.zeros((0, 3), np.float32)
        counts = _vertex_counts(model)
        bound = np.zeros(k, np.float32)
        for s in range(k):
            if shape_type[s] == SHAPE_MESH and shape_body[s] >= 0:
                bound[s] = float(np.linalg.norm(np.asarray(model.shape_mesh_points[s][0], np.float64), axis=1).max())
            elif shape_type[s] in (SHAPE_SPHERE, SHAPE_BOX, SHAPE_CAPSULE):
                bound[s] = shape_bounding_radius(shape_type[s], scale[s])
        dev = model.device
        self.shape_vertex_count = kc.array(counts, dtype=kc.int32, device=dev)
        # triangles of each mesh shape, and 1 for convex ones (two hulls touch along their pair's axis)
        faces = np.zeros(max(k, 1), np.int32)
        for s, (_, tris) in model.shape_mesh_points.items():
            faces[s] = len(np.asarray(tris).reshape(-1, 3))
        self.shape_face_count = kc.array(faces, dtype=kc.int32, device=dev)
        self.shape_convex = kc.array(shape_convex_flags(model), dtype=kc.int32, device=dev)
        self.shape_bound = kc.array(bound, dtype=float, device=dev)
        impact = np.zeros(max(k, 1), np.int32)
        impact[[int(s) for s in impact_shapes]] = 1
        #: int (S,): 1 for the shapes of bodies swept against each other (``impact_shapes``)
        self.shape_impact = kc.array(impact, dtype=kc.int32, device=dev)
        self.has_impact_shapes = bool(len(impact_shapes))
        body_meshes = [s for s in range(k) if shape_body[s] >= 0 and shape_type[s] == SHAPE_MESH]
        body_prims = [s for s in range(k) if shape_body[s] >= 0 and shape_type[s] in PRIMITIVE_POINTS]
        static_meshes = [s for s in range(k) if shape_body[s] < 0 and shape_type[s] == SHAPE_MESH]
        excluded = set(int(s) for s in exclude_shapes)
        # body shapes that meet static shapes here (the excluded ones do in the sweep)
        static_meshes_of = [s for s in body_meshes if s not in excluded]
        static_prims_of = [s for s in body_prims if s not in excluded]
        statics = ([-1] if model.ground else []) + [
            s for s in range(k)
            if shape_body[s] < 0 and shape_type[s] in (SHAPE_SPHERE, SHAPE_BOX, SHAPE_CAPSULE, SHAPE_PLANE)]
        items = []
        for s in static_meshes_of:
            for c in statics + static_meshes:
                extra = COLLIDER_POINTS.get(int(shape_type[c]), 0) if c >= 0 else 0
                items += [(s, c, p) for p in range(int(counts[s]) + extra)]
        for s in static_prims_of:
            for c in static_meshes:
                items += [(s, c, p) for p in range(PRIMITIVE_POINTS[int(shape_type[s])])]
        items = np.asarray(items, np.int32).reshape(-1, 3)
        # a static mesh's own vertices against box, capsule and mesh bodies (a spike under a face); for a
        # sphere its centre's closest mesh point above is the contact already
        self._vertex_bvhs = []
        vertex_bvh = np.zeros(k, np.uint64)
        for c in static_meshes:
            pts = np.asarray(model.shape_mesh_points[c][0], np.float32)
            bvh = geometry.Bvh(pts, pts, device=dev)
            self._vertex_bvhs.append(bvh)
            vertex_bvh[c] = np.uint64(bvh.id)
        self.vertex_bvh = kc.array(vertex_bvh, dtype=kc.uint64, device=dev)
        vertex_items = np.asarray([(s, c) for s in static_meshes_of + static_prims_of if shape_type[s] != SHAPE_SPHERE
                                   for c in static_meshes], np.int32).reshape(-1, 2)
        self.vertex_count = len(vertex_items)
        self.vertex_items = [kc.array(np.ascontiguousarray(vertex_items[:, j]), dtype=kc.int32, device=dev)
                             for j in range(2)]
        self.static_items = [kc.array(np.ascontiguousarray(items[:, j]), dtype=kc.int32, device=dev)
                             for j in range(3)]
        self.static_count = len(items)
        # sharp mesh edges across box faces (a box on a ridge, a mesh body on a box's edge)
        self.edges = MeshEdgeContacts(model, slots, exclude_shapes=excluded)
        if not self.edges.capacity():
            self.edges = None
        # body pairs with a mesh on at least one side
        ids = body_meshes + body_prims
        self.pair_count = 0
        self.grid = None
        self.edge_pairs = None  # sharp edges of mesh bodies against other bodies (sim/collide_mesh_edge_pairs.py)
        if body_meshes and len(set(int(shape_body[s]) for s in ids)) > 1:
            slot_items = [(i, p) for i, s in enumerate(body_meshes) for p in range(max(int(counts[s]), 8))]
            slot_items = np.asarray(slot_items, np.int32).reshape(-1, 2)
            self.pair_count = len(slot_items)
            self.pair_items = [kc.array(np.ascontiguousarray(slot_items[:, j]), dtype=kc.int32, device=dev)
                               for j in range(2)]
            self.shape_ids = kc.array(np.asarray(ids, np.int32), dtype=kc.int32, device=dev)
            slot_bound = bound[ids].astype(np.float32)
            self.slot_bound = kc.array(slot_bound, dtype=float, device=dev)
            self.max_bound = float(slot_bound.max())
            self.centers = kc.zeros(len(ids), dtype=kc.vec3, device=dev)
            if grid_dim is None:
                grid_dim = int(min(128, max(8, 2 ** math.ceil(math.log2(max(1.0, 1.5 * len(ids) ** (1 / 3)))))))
            self.grid = geometry.HashGrid(grid_dim, grid_dim, grid_dim, device=dev)
            self.grid.reserve(len(ids))
            self.edge_pairs = make_mesh_edge_pair_contacts(model, body_meshes, slots)

    @property
    def active(self) -> bool:
        return self.static_count > 0 or self.pair_count > 0 or self.vertex_count > 0 or self.edges is not None

    def static_capacity(self) -> int:
        """Contact slots of the body-static mesh contacts: one per static work item, then
        ``vertex_slots`` per (body shape, static mesh) vertex work item."""
        return (self.static_count + self.vertex_count * self.vertex_slots
                + (self.edges.capacity() if self.edges is not None else 0))

    def pair_capacity(self) -> int:
        """Contact slots of the body-body mesh contacts: ``pair_slots`` per (mesh vertex) work item, then
        the edge pairs' (sim/collide_mesh_edge_pairs.py)."""
        return self.pair_count * self.pair_slots + (self.edge_pairs.capacity() if self.edge_pairs is not None else 0)

    def generate_static(self, model, state, contacts, offset: int, dt: float):
        """Write ``state``'s mesh contacts between bodies and static shapes (the ground too) into
        ``contacts`` (sim.contacts.Contacts) from slot ``offset`` on (:meth:`static_capacity` slots);
        ``count`` and ``overflow`` are added to, not reset."""
        if self.static_count:
            kc.launch(generate_body_mesh_static_contacts_kernel, dim=self.static_count,
                      inputs=[*self.static_items, state.body_q, state.body_qd, model.body_com, model.shape_type,
                              model.shape_body, model.shape_pos, model.shape_rot, model.shape_scale,
                              model.shape_material, model.shape_mesh, self.shape_bound, self.shape_vertex_count,
                              model.ground_normal, model.ground_offset, model.material_max_cohesion_distance,
                              float(dt), int(offset)],
                      outputs=_contact_outputs(contacts), device=model.device)
        if self.vertex_count:
            kc.launch(generate_static_mesh_vertex_contacts_kernel, dim=self.vertex_count,
                      inputs=[*self.vertex_items, self.vertex_bvh, state.body_q, state.body_qd, model.body_com,
                              model.shape_type, model.shape_body, model.shape_pos, model.shape_rot,
                              model.shape_scale, model.shape_material, model.shape_mesh, self.shape_bound,
                              model.material_max_cohesion_distance, float(dt), int(offset + self.static_count),
                              self.vertex_slots],
                      outputs=_contact_outputs(contacts), device=model.device)
        if self.edges is not None:  # edges across faces (sim/collide_mesh_edges.py)
            self.edges.generate(model, state, contacts,
                                offset + self.static_count + self.vertex_count * self.vertex_slots, dt)

    def generate_pairs(self, model, state, contacts, offset: int, dt: float):
        """Write ``state``'s body-body contacts with a mesh into ``contacts`` from slot ``offset`` on
        (:meth:`pair_capacity` slots); ``count`` and ``overflow`` are added to, not reset."""
        if not self.pair_count:
            return
        self._rebuild(model, state.body_q)
        kc.launch(generate_mesh_body_pair_contacts_kernel, dim=self.pair_count,
                  inputs=[self.grid.id, *self.pair_items, self.shape_ids, self.slot_bound, self.max_bound,
                          self.centers, state.body_q, state.body_qd, model.body_com, model.shape_type,
                          model.shape_body, model.shape_pos, model.shape_rot, model.shape_scale,
                          model.shape_material, model.shape_mesh, self.shape_vertex_count, self.shape_face_count,
                          self.shape_convex, model.material_max_cohesion_distance, float(dt), int(offset),
                          self.pair_slots,
                          self.shape_impact, self.impact_speed(model, dt)],
                  outputs=_contact_outputs(contacts), device=model.device)
        if self.edge_pairs is not None:  # before the rebuild below: its adjoint needs the same grid
            self.edge_pairs.generate(model, state, contacts, offset + self.pair_count * self.pair_slots, dt, self)
        tapes = get_runtime().tape_stack
        if tapes:  # the adjoint must see the pairs its forward saw: rebuild from the same body_q first
            body_q = state.body_q
            tapes[-1].record_func(lambda: self._rebuild(model, body_q), [])

    def impact_speed(self, model, dt: float) -> float:
        """Normal speed [m/s] from which a pair of two ``impact_shapes`` has no penalty contact."""
        if not self.has_impact_shapes:
            return 1.0e30
        from .toi import resting_speed

        return resting_speed(model, dt)

    def check_overflow(self, contacts):
        """Raise when a mesh contact thread found more contacts than its slots (``contacts.overflow``)."""
        check_contact_overflow(contacts.overflow, None, self)

    def overflow_message(self, family: int, dropped: int) -> str:
        """The error for ``dropped`` contacts of ``family`` (sim/contacts.py) that found no slot."""
        where = {int(OVERFLOW_MESH_STATIC): f"vertex_slots={self.vertex_slots} static mesh vertices under one "
                                            f"body shape",
                 int(OVERFLOW_MESH_PAIR): f"pair_slots={self.pair_slots} shapes at one mesh vertex",
                 int(OVERFLOW_MESH_EDGE): f"slots={self.vertex_slots} mesh edge contacts of one body shape or "
                                          f"edge"}[int(family)]
        kind = "mesh edge contacts" if family == int(OVERFLOW_MESH_EDGE) else "mesh contacts"
        return (f"{kind}: {dropped} contacts did not fit in their slots ({where}); pass a larger "
                f"mesh_contact_slots to SolverSemiImplicit")

    def eval(self, model, state, wrenches, dt: float):
        """Add the wrenches [N, N m] of every mesh contact of ``state``'s bodies to ``wrenches`` (B,),
        through temporary contact arrays (the solver generates into the state's arrays instead)."""
        from .collide_bodies import apply_body_static_contacts
        from .collide_body_pairs import apply_body_pair_contacts
        from .contacts import Contacts

        for capacity, generate, apply in ((self.static_capacity(), self.generate_static, apply_body_static_contacts),
                                          (self.pair_capacity(), self.generate_pairs, apply_body_pair_contacts)):
            if capacity:
                contacts = Contacts(capacity, model.device, model.requires_grad)
                generate(model, state, contacts, 0, dt)
                self.check_overflow(contacts)
                apply(model, state, contacts, wrenches, dt)

    def _rebuild(self, model, body_q):
        kc.launch(mesh_pair_shape_centers_kernel, dim=self.centers.shape[0],
                  inputs=[self.shape_ids, model.shape_body, model.shape_pos, body_q], outputs=[self.centers],
                  device=model.device, record_tape=False)
        self.grid.build(self.centers, 2.1 * self.max_bound + model.material_max_cohesion_distance)


def _contact_outputs(contacts):
    return [contacts.active, contacts.point, contacts.normal, contacts.depth, contacts.shape_a, contacts.shape_b,
            contacts.count, contacts.overflow]


def make_body_mesh_contacts(model, slots: int = 16, exclude_shapes=(), impact_shapes=()):
    """A :class:`BodyMeshContacts` when the model has bodies and meshes that can touch, else None;
    ``exclude_shapes``: body shapes left out of the contacts with static shapes, ``impact_shapes``:
    those whose fast body-body contacts the sweep takes (see the class)."""
    if not model.body_count or not (model.body_mesh_shape_indices or model.mesh_shape_indices):
        return None
    contacts = BodyMeshContacts(model, slots=slots, exclude_shapes=exclude_shapes, impact_shapes=impact_shapes)
    return contacts if contacts.active else None
