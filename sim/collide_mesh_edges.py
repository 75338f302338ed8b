"""Edge contacts between triangle meshes and boxes: what vertex contacts cannot see.

A box body lying across the ridge of a static mesh (a prism on its side, ridge up), or a
mesh body lying across the edge of a static box, touches along an edge that pierces a face
away from every vertex and corner; with vertex and corner contacts alone it sinks until
some vertex meets a face.  Here each *sharp* mesh edge (a boundary edge, or one whose two
triangles meet at more than ``SHARP_ANGLE`` and convexly; the diagonals of a flat face are
not sharp) is a segment tested against the box's signed distance.

Along a segment the box's signed distance is convex: a golden section search
(``SEARCH_STEPS`` steps) finds its minimum, bisection the stretch within ``FLAT_TOLERANCE``
of it (flat where an edge lies across a face), and the middle of that stretch names the
box face the edge is under.  The segment clipped to that face's extent gives two contact
points, each with its own depth below the face and the face's normal: a ridge under a box
bottom gives two contacts where it crosses the box's bottom edges, whose depths change
smoothly as the box tilts.  Outside the box (the onset window of sim/contact.py) the
closest point is the one contact.  Clip ends at a segment end point are left out (the
mesh vertex or box corner contact is there already).  The search and the face choice
depend on the pose only through comparisons; the clip points and depths are smooth
functions of the pose, and their gradients are what a Tape carries.

Contacts (written into sim/contacts.py arrays like the other mesh contacts):

- a box body against the sharp edges of static meshes (a ``geometry.Bvh`` over the edges'
  bounds, queried with the box's bounding cube): one thread per (box shape, static meshes),
  ``slots`` contact slots each (two per edge met);
- a capsule body against the sharp edges of static meshes (the same BVH): the closest points
  of the capsule's core segment and each edge, one contact per edge where both lie inside
  their segments (a capsule lying across a ridge; at the capsule's ends its end spheres'
  closest-point queries of sim/collide_body_mesh.py see the edge already);
- the sharp edges of a mesh body against static boxes: one thread per (mesh shape, static
  box, edge), two slots each.

The normal points from the static shape to the body (``shape_a`` is the body shape).
Spheres need no edge contacts: a sphere's centre queries the mesh's closest point, which is
on an edge where the edge is nearest.  Body-body edges (a mesh body's edges against box
bodies and against the edges of other mesh bodies): sim/collide_mesh_edge_pairs.py.
Not handled: static mesh edges against mesh bodies, mesh body edges against static capsules
(the capsule's axis point nearest the mesh stands in) and static meshes.
"""
from __future__ import annotations

import numpy as np

import kernelcore as kc
import geometry  # noqa: F401  (adds the bvh_* builtins)

from .collide_bodies import segment_params
from .collide_shapes import box_closest
from .contacts import OVERFLOW_MESH_EDGE, write_contact_slot
from .model import SHAPE_BOX, SHAPE_CAPSULE, SHAPE_MESH
from .shape_frames import body_com_world, shape_world_frame

#: two triangles meeting at more than this angle [rad] (convexly) make a sharp edge
SHARP_ANGLE = 0.17
SEARCH_STEPS = kc.constant(40)
BISECT_STEPS = kc.constant(30)
#: how far above the minimum [m] a point of the segment still counts as its deepest
FLAT_TOLERANCE = kc.constant(1.0e-6)
#: fraction of a segment near its end points where no edge contact is made (a vertex contact is there)
END_FRACTION = kc.constant(1.0e-3)


@kc.func
def box_distance_local(p: kc.vec3, half: kc.vec3) -> float:
    """Signed distance [m] of ``p`` from a box of half extents ``half`` (box frame); convex in p."""
    q = kc.abs(p) - half
    outside = kc.length(kc.max(q, kc.vec3(0.0, 0.0, 0.0)))
    return outside + kc.min(kc.max(q), 0.0)


@kc.func
def segment_near_box(a: kc.vec3, d: kc.vec3, half: kc.vec3, margin: float) -> int:
    """0 when the segment ``a + t d`` (t in [0, 1], box frame) is farther than ``margin`` [m] from a box of half
    extents ``half``, told by its bounding box in the box frame (a cheap cull before the search: a segment
    whose bounds miss the grown box along some axis is that far from every point of the box), else 1."""
    b = a + d
    near = int(1)
    for i in range(3):
        if kc.min(a[i], b[i]) > half[i] + margin or kc.max(a[i], b[i]) < -half[i] - margin:
            near = 0
    return near


@kc.func
def segment_box_span(a: kc.vec3, d: kc.vec3, half: kc.vec3) -> kc.vec4:
    """Deepest part of the segment ``a + t d`` (t in [0, 1], box frame) in a box of half extents ``half``:
    (t_lo, t_hi, t_mid, distance at t_mid [m]): [t_lo, t_hi] is where the distance is within
    FLAT_TOLERANCE of its minimum, t_mid its middle."""
    lo = float(0.0)
    hi = float(1.0)
    for it in range(SEARCH_STEPS):  # golden section on a convex function
        m1 = lo + (hi - lo) * 0.381966
        m2 = hi - (hi - lo) * 0.381966
        if box_distance_local(a + d * m1, half) < box_distance_local(a + d * m2, half):
            hi = m2
        else:
            lo = m1
    t_mid = 0.5 * (lo + hi)
    f_min = box_distance_local(a + d * t_mid, half)
    level = f_min + FLAT_TOLERANCE
    # the interval's ends: f is convex, so {f <= level} is an interval around t_mid
    t_lo = float(0.0)
    if box_distance_local(a, half) > level:
        out = float(0.0)
        inn = t_mid
        for it in range(BISECT_STEPS):
            mid = 0.5 * (out + inn)
            if box_distance_local(a + d * mid, half) > level:
                out = mid
            else:
                inn = mid
        t_lo = inn
    t_hi = float(1.0)
    if box_distance_local(a + d, half) > level:
        out = float(1.0)
        inn = t_mid
        for it in range(BISECT_STEPS):
            mid = 0.5 * (out + inn)
            if box_distance_local(a + d * mid, half) > level:
                out = mid
            else:
                inn = mid
        t_hi = inn
    # depth and normal are taken at the interval's middle: the search may stop anywhere on a flat stretch,
    # also at its end, where the box's nearest face changes (an edge across the bottom face would get the
    # normal of a side face there)
    t_mid = 0.5 * (t_lo + t_hi)
    return kc.vec4(t_lo, t_hi, t_mid, box_distance_local(a + d * t_mid, half))


@kc.func
def segment_box_contacts(a: kc.vec3, d: kc.vec3, half: kc.vec3):
    """Up to two contacts of the segment ``a + t d`` (t in [0, 1], box frame) with a box of half extents
    ``half``: (t0, t1, gap0, gap1, outward normal (box frame)); t < 0 where there is no contact.

    Inside the box the deepest stretch's nearest face gives the normal, and the segment clipped
    to that face's extent gives the two points, each with its own distance [m] below the face
    (< 0); outside, the closest point is the one contact.  Ends at the segment's end points are
    left out (a vertex or corner contact is there)."""
    span = segment_box_span(a, d, half)
    nd = box_closest(a + d * span[2], half)
    n = kc.vec3(nd[0], nd[1], nd[2])
    t0 = span[2]
    t1 = float(-1.0)
    gap0 = span[3]
    gap1 = span[3]
    if span[3] < 0.0:
        ax = int(0)
        if kc.abs(n[1]) > kc.abs(n[0]) and kc.abs(n[1]) >= kc.abs(n[2]):
            ax = 1
        elif kc.abs(n[2]) > kc.abs(n[0]) and kc.abs(n[2]) > kc.abs(n[1]):
            ax = 2
        side = n[ax]
        lo = float(0.0)
        hi = float(1.0)
        for i in range(3):  # clip to the face's extent: |a_i + t d_i| <= half_i on the other axes
            if i != ax:
                if kc.abs(d[i]) > 1.0e-12:
                    ta = (-half[i] - a[i]) / d[i]
                    tb = (half[i] - a[i]) / d[i]
                    lo = kc.max(lo, kc.min(ta, tb))
                    hi = kc.min(hi, kc.max(ta, tb))
        t0 = lo
        t1 = hi
        gap0 = side * (a[ax] + d[ax] * t0) - half[ax]
        gap1 = side * (a[ax] + d[ax] * t1) - half[ax]
    if t0 < END_FRACTION or t0 > 1.0 - END_FRACTION:
        t0 = -1.0
    if t1 < END_FRACTION or t1 > 1.0 - END_FRACTION:
        t1 = -1.0
    return t0, t1, gap0, gap1, n


@kc.kernel
def generate_box_mesh_edge_contacts_kernel(
        item_shape: kc.array(dtype=int), edge_bvh: kc.uint64, edge_p0: kc.array(dtype=kc.vec3),
        edge_p1: kc.array(dtype=kc.vec3), edge_shape: kc.array(dtype=int),
        body_q: kc.array(dtype=kc.transform), body_qd: kc.array(dtype=kc.spatial_vector),
        body_com: kc.array(dtype=kc.vec3), shape_body: kc.array(dtype=int), shape_pos: kc.array(dtype=kc.vec3),
        shape_rot: kc.array(dtype=kc.mat33), shape_scale: kc.array(dtype=kc.vec3),
        cohesion_reach: float, dt: float, offset: int, slots_per_thread: int,
        active: kc.array(dtype=int), point: kc.array(dtype=kc.vec3), normal: kc.array(dtype=kc.vec3),
        depth: kc.array(dtype=float), shape_a: kc.array(dtype=int), shape_b: kc.array(dtype=int),
        count: kc.array(dtype=int), overflow: kc.array(dtype=int)):
    t = kc.tid()
    s = item_shape[t]
    b = shape_body[s]
    qd = body_qd[b]
    pos, rot = shape_world_frame(body_q, shape_body, shape_pos, shape_rot, s)
    com = body_com_world(body_q, body_com, b)
    half = shape_scale[s]
    bound = kc.length(half)
    margin = cohesion_reach + dt * (kc.length(kc.spatial_top(qd)) + kc.length(kc.spatial_bottom(qd)) * bound)
    ext = bound + margin
    reach = kc.vec3(ext, ext, ext)
    base = offset + t * slots_per_thread
    for u in range(slots_per_thread):
        active[base + u] = 0
    used = int(0)
    query = kc.bvh_query_aabb(edge_bvh, pos - reach, pos + reach)
    e = int(0)
    while kc.bvh_query_next(query, e):
        p0 = edge_p0[e]
        seg = edge_p1[e] - p0
        a_local = kc.transpose(rot) * (p0 - pos)
        d_local = kc.transpose(rot) * seg
        t0 = float(-1.0)
        t1 = float(-1.0)
        gap0 = float(1.0e30)
        gap1 = float(1.0e30)
        n_local = kc.vec3(0.0, 1.0, 0.0)
        if segment_near_box(a_local, d_local, half, margin) != 0:  # else no contact: skip the search
            t0, t1, gap0, gap1, n_local = segment_box_contacts(a_local, d_local, half)
        n_out = rot * n_local  # the box's outward normal
        for j in range(2):
            te = t0
            gap = gap0
            if j == 1:
                te = t1
                gap = gap1
            if te >= 0.0 and gap < margin:
                x = p0 + seg * te - n_out * gap  # on the box's surface
                arm = x - com
                v = kc.spatial_top(qd) + kc.cross(kc.spatial_bottom(qd), arm)
                if gap < cohesion_reach + 0.5 * dt * kc.length(v):
                    # the box is pushed off the edge
                    used = write_contact_slot(used, base, slots_per_thread, x, -n_out, gap, s, edge_shape[e], active,
                                              point, normal, depth, shape_a, shape_b, count, overflow,
                                              OVERFLOW_MESH_EDGE)


@kc.kernel
def generate_mesh_body_box_edge_contacts_kernel(
        item_shape: kc.array(dtype=int), item_box: kc.array(dtype=int), item_edge: kc.array(dtype=int),
        edge_p0: kc.array(dtype=kc.vec3), edge_p1: kc.array(dtype=kc.vec3),
        body_q: kc.array(dtype=kc.transform), body_qd: kc.array(dtype=kc.spatial_vector),
        body_com: kc.array(dtype=kc.vec3), shape_body: kc.array(dtype=int), shape_pos: kc.array(dtype=kc.vec3),
        shape_rot: kc.array(dtype=kc.mat33), shape_scale: kc.array(dtype=kc.vec3),
        cohesion_reach: float, dt: float, offset: int,
        active: kc.array(dtype=int), point: kc.array(dtype=kc.vec3), normal: kc.array(dtype=kc.vec3),
        depth: kc.array(dtype=float), shape_a: kc.array(dtype=int), shape_b: kc.array(dtype=int),
        count: kc.array(dtype=int), overflow: kc.array(dtype=int)):
    t = kc.tid()
    s = item_shape[t]
    c = item_box[t]
    e = item_edge[t]
    b = shape_body[s]
    qd = body_qd[b]
    pos_s, rot_s = shape_world_frame(body_q, shape_body, shape_pos, shape_rot, s)
    com = body_com_world(body_q, body_com, b)
    p0 = pos_s + rot_s * edge_p0[e]  # the body mesh's edge in world
    seg = rot_s * (edge_p1[e] - edge_p0[e])
    rot_c = shape_rot[c]
    pos_c = shape_pos[c]
    half = shape_scale[c]
    speed = kc.length(kc.spatial_top(qd)) + kc.length(kc.spatial_bottom(qd)) * kc.length(seg)
    margin = cohesion_reach + dt * speed
    t0 = float(-1.0)
    t1 = float(-1.0)
    gap0 = float(1.0e30)
    gap1 = float(1.0e30)
    n_local = kc.vec3(0.0, 1.0, 0.0)
    # bounding balls of the edge and the box apart: nothing to do
    if kc.length(p0 + 0.5 * seg - pos_c) < 0.5 * kc.length(seg) + kc.length(half) + margin:
        a_local = kc.transpose(rot_c) * (p0 - pos_c)
        d_local = kc.transpose(rot_c) * seg
        if segment_near_box(a_local, d_local, half, margin) != 0:  # else no contact: skip the search
            t0, t1, gap0, gap1, n_local = segment_box_contacts(a_local, d_local, half)
    n_out = rot_c * n_local  # the static box's outward normal
    for j in range(2):
        slot = offset + 2 * t + j
        on = int(0)
        te = t0
        gap = gap0
        if j == 1:
            te = t1
            gap = gap1
        x = p0
        if te >= 0.0 and gap < margin:
            x = p0 + seg * te  # on the mesh body's surface
            arm = x - com
            v = kc.spatial_top(qd) + kc.cross(kc.spatial_bottom(qd), arm)
            if gap < cohesion_reach + 0.5 * dt * kc.length(v):
                on = 1
                kc.atomic_add(count, 0, 1)
        active[slot] = on
        point[slot] = x
        normal[slot] = n_out
        depth[slot] = -gap
        shape_a[slot] = s
        shape_b[slot] = c


@kc.kernel
def generate_capsule_mesh_edge_contacts_kernel(
        item_shape: kc.array(dtype=int), edge_bvh: kc.uint64, edge_p0: kc.array(dtype=kc.vec3),
        edge_p1: kc.array(dtype=kc.vec3), edge_shape: kc.array(dtype=int),
        body_q: kc.array(dtype=kc.transform), body_qd: kc.array(dtype=kc.spatial_vector),
        body_com: kc.array(dtype=kc.vec3), shape_body: kc.array(dtype=int), shape_pos: kc.array(dtype=kc.vec3),
        shape_rot: kc.array(dtype=kc.mat33), shape_scale: kc.array(dtype=kc.vec3),
        cohesion_reach: float, dt: float, offset: int, slots_per_thread: int,
        active: kc.array(dtype=int), point: kc.array(dtype=kc.vec3), normal: kc.array(dtype=kc.vec3),
        depth: kc.array(dtype=float), shape_a: kc.array(dtype=int), shape_b: kc.array(dtype=int),
        count: kc.array(dtype=int), overflow: kc.array(dtype=int)):
    t = kc.tid()
    s = item_shape[t]
    b = shape_body[s]
    qd = body_qd[b]
    pos, rot = shape_world_frame(body_q, shape_body, shape_pos, shape_rot, s)
    com = body_com_world(body_q, body_com, b)
    radius = shape_scale[s][0]
    half_axis = rot * kc.vec3(0.0, shape_scale[s][1], 0.0)
    bound = radius + shape_scale[s][1]
    margin = cohesion_reach + dt * (kc.length(kc.spatial_top(qd)) + kc.length(kc.spatial_bottom(qd)) * bound)
    ext = bound + margin
    reach = kc.vec3(ext, ext, ext)
    base = offset + t * slots_per_thread
    for u in range(slots_per_thread):
        active[base + u] = 0
    used = int(0)
    core0 = pos - half_axis
    query = kc.bvh_query_aabb(edge_bvh, pos - reach, pos + reach)
    e = int(0)
    while kc.bvh_query_next(query, e):
        p0 = edge_p0[e]
        seg = edge_p1[e] - p0
        st = segment_params(core0, half_axis * 2.0, p0, seg)
        # inside both segments only: at the edge's ends a vertex contact, at the capsule's ends its end sphere's
        # closest-point query (sim/collide_body_mesh.py) has the contact already
        inside = st[0] > END_FRACTION and st[0] < 1.0 - END_FRACTION
        if inside and st[1] > END_FRACTION and st[1] < 1.0 - END_FRACTION:
            core = core0 + half_axis * (2.0 * st[0])
            sep = core - (p0 + seg * st[1])
            dist = kc.length(sep)
            if dist > 1.0e-9 and dist - radius < margin:
                n = sep / dist  # from the edge towards the capsule's axis
                gap = dist - radius
                x = core - n * radius  # on the capsule's surface
                v = kc.spatial_top(qd) + kc.cross(kc.spatial_bottom(qd), x - com)
                if gap < cohesion_reach + 0.5 * dt * kc.length(v):
                    used = write_contact_slot(used, base, slots_per_thread, x, n, gap, s, edge_shape[e], active,
                                              point, normal, depth, shape_a, shape_b, count, overflow,
                                              OVERFLOW_MESH_EDGE)


def sharp_edges(points, indices, angle: float = SHARP_ANGLE):
    """(p0, p1) float32 arrays (E, 3) of a triangle mesh's sharp edges: boundary edges and edges
    whose two triangles meet convexly at more than ``angle`` [rad]."""
    p0, p1, _, _ = sharp_edges_with_normals(points, indices, angle)
    return p0, p1


def sharp_edges_with_normals(points, indices, angle: float = SHARP_ANGLE):
    """(p0, p1, f1, f2) float32 arrays (E, 3): a triangle mesh's sharp edges (see :func:`sharp_edges`) and
    the unit normals of their two triangles (f2 = f1 on a boundary edge); the triangles are taken to
    wind counter-clockwise seen from outside."""
    pts = np.asarray(points, np.float64)
    tris = np.asarray(indices, np.int64).reshape(-1, 3)
    normals = np.cross(pts[tris[:, 1]] - pts[tris[:, 0]], pts[tris[:, 2]] - pts[tris[:, 0]])
    normals /= np.maximum(np.linalg.norm(normals, axis=1, keepdims=True), 1e-30)
    faces = {}
    for f, tri in enumerate(tris):
        for k in range(3):
            i, j = int(tri[k]), int(tri[(k + 1) % 3])
            faces.setdefault((min(i, j), max(i, j)), []).append((f, int(tri[(k + 2) % 3])))
    keep, face_pairs = [], []
    for (i, j), fs in faces.items():
        if len(fs) != 2:
            keep.append((i, j))
            face_pairs.append((fs[0][0], fs[0][0]))
            continue
        (f1, _), (f2, opposite2) = fs
        cos = float(normals[f1] @ normals[f2])
        convex = float((pts[opposite2] - pts[i]) @ normals[f1]) < 0.0
        if convex and cos < np.cos(angle):
            keep.append((i, j))
            face_pairs.append((f1, f2))
    keep = np.asarray(keep, np.int64).reshape(-1, 2)
    face_pairs = np.asarray(face_pairs, np.int64).reshape(-1, 2)
    return (pts[keep[:, 0]].astype(np.float32), pts[keep[:, 1]].astype(np.float32),
            normals[face_pairs[:, 0]].astype(np.float32), normals[face_pairs[:, 1]].astype(np.float32))


class MeshEdgeContacts:
    """Edge contacts of one model between meshes and boxes (see the module docstring).

    Args:
        model: the sim.Model.
        slots: contact slots of one box body's query of static mesh edges (two per edge met).
        exclude_shapes: body shapes left out (the time-of-impact sweep meets the static shapes instead).
    """

    def __init__(self, model, slots: int = 16, exclude_shapes=()):
        self.slots = int(slots)
        k = model.shape_count
        shape_body = model.shape_body.numpy() if k else np.zeros(0, np.int32)
        shape_type = model.shape_type.numpy() if k else np.zeros(0, np.int32)
        dev = model.device
        excluded = set(int(s) for s in exclude_shapes)  # body shapes the time-of-impact sweep stops instead

        def body_shapes(kind):
            return [s for s in range(k) if shape_body[s] >= 0 and shape_type[s] == kind and s not in excluded]

        body_boxes = body_shapes(SHAPE_BOX)
        body_capsules = body_shapes(SHAPE_CAPSULE)
        body_meshes = body_shapes(SHAPE_MESH)
        static_meshes = [s for s in range(k) if shape_body[s] < 0 and shape_type[s] == SHAPE_MESH]
        static_boxes = [s for s in range(k) if shape_body[s] < 0 and shape_type[s] == SHAPE_BOX]
        # box bodies against the sharp edges of every static mesh (static mesh points are in world)
        p0, p1, owner = [], [], []
        for c in static_meshes:
            a, b = sharp_edges(*model.shape_mesh_points[c])
            p0.append(a)
            p1.append(b)
            owner += [c] * len(a)
        self.box_count = 0
        self.capsule_count = 0  # capsule bodies against the same static mesh edges
        if (body_boxes or body_capsules) and owner:
            p0, p1 = np.concatenate(p0), np.concatenate(p1)
            self.edge_p0 = kc.array(p0, dtype=kc.vec3, device=dev)
            self.edge_p1 = kc.array(p1, dtype=kc.vec3, device=dev)
            self.edge_shape = kc.array(np.asarray(owner, np.int32), dtype=kc.int32, device=dev)
            self._bvh = geometry.Bvh(np.minimum(p0, p1), np.maximum(p0, p1), device=dev)
            self.box_items = kc.array(np.asarray(body_boxes, np.int32), dtype=kc.int32, device=dev)
            self.box_count = len(body_boxes)
            self.capsule_items = kc.array(np.asarray(body_capsules, np.int32), dtype=kc.int32, device=dev)
            self.capsule_count = len(body_capsules)
        # the sharp edges of mesh bodies (shape frame) against every static box
        items, q0, q1 = [], [], []
        first = 0
        for s in body_meshes:
            a, b = sharp_edges(*model.shape_mesh_points[s])
            items += [(s, c, first + e) for c in static_boxes for e in range(len(a))]
            first += len(a)
            q0.append(a)
            q1.append(b)
        self.mesh_count = len(items)
        if items:
            items = np.asarray(items, np.int32)
            self.mesh_items = [kc.array(np.ascontiguousarray(items[:, j]), dtype=kc.int32, device=dev)
                               for j in range(3)]
            self.body_edge_p0 = kc.array(np.concatenate(q0), dtype=kc.vec3, device=dev)
            self.body_edge_p1 = kc.array(np.concatenate(q1), dtype=kc.vec3, device=dev)

    def capacity(self) -> int:
        """Contact slots a step needs."""
        return (self.box_count + self.capsule_count) * self.slots + 2 * self.mesh_count

    def generate(self, model, state, contacts, offset: int, dt: float):
        """Write ``state``'s edge contacts into ``contacts`` from slot ``offset`` on (:meth:`capacity`
        slots); ``count`` and ``overflow`` are added to, not reset."""
        outputs = [contacts.active, contacts.point, contacts.normal, contacts.depth, contacts.shape_a,
                   contacts.shape_b, contacts.count, contacts.overflow]
        if self.box_count:
            kc.launch(generate_box_mesh_edge_contacts_kernel, dim=self.box_count,
                      inputs=[self.box_items, self._bvh.id, self.edge_p0, self.edge_p1, self.edge_shape,
                              state.body_q, state.body_qd, model.body_com, model.shape_body, model.shape_pos,
                              model.shape_rot, model.shape_scale, model.material_max_cohesion_distance, float(dt),
                              int(offset), self.slots],
                      outputs=outputs, device=model.device)
        if self.mesh_count:
            kc.launch(generate_mesh_body_box_edge_contacts_kernel, dim=self.mesh_count,
                      inputs=[*self.mesh_items, self.body_edge_p0, self.body_edge_p1, state.body_q, state.body_qd,
                              model.body_com, model.shape_body, model.shape_pos, model.shape_rot, model.shape_scale,
                              model.material_max_cohesion_distance, float(dt),
                              int(offset + self.box_count * self.slots)],
                      outputs=outputs, device=model.device)
        if self.capsule_count:
            kc.launch(generate_capsule_mesh_edge_contacts_kernel, dim=self.capsule_count,
                      inputs=[self.capsule_items, self._bvh.id, self.edge_p0, self.edge_p1, self.edge_shape,
                              state.body_q, state.body_qd, model.body_com, model.shape_body, model.shape_pos,
                              model.shape_rot, model.shape_scale, model.material_max_cohesion_distance, float(dt),
                              int(offset + self.box_count * self.slots + 2 * self.mesh_count), self.slots],
                      outputs=outputs, device=model.device)
