"""Edge contacts between two bodies when one is a triangle mesh: what vertex contacts cannot see.

A box body lying across the ridge of a mesh body, or one mesh body lying across another
(a bar across a block: each of the bar's long bottom edges crosses two of the block's top
edges, and no vertex of either touches the other), touch only where edges cross faces or
edges.  Vertex and corner contacts (sim/collide_body_mesh.py) miss that; the bodies sink
into each other until some vertex meets a face.  Here each *sharp* edge of every mesh body
(sim/collide_mesh_edges.py ``sharp_edges``) is one thread that looks up the body shapes near
it in the hash grid of sim/collide_body_mesh.py and tests:

- a box body: the edge against the box's signed distance, up to two contacts where it
  crosses the box face it lies under (``segment_box_contacts`` of sim/collide_mesh_edges.py);
- a mesh body (the lower shape index does the pair): each sharp edge of the other mesh,
  edge against edge.  Of two edges ``a0 + s da`` and ``b0 + t db`` the contact is at the
  closest points of their lines, where both lie inside their segments, with the normal
  ``da x db`` turned to point out of mesh B and the signed gap ``(a0 - b0) . n`` (< 0:
  crossed).  It counts only where each edge is where the other one meets its mesh: the
  normal points out of both triangles at B's edge and into both at A's edge, within
  ``EDGE_SLACK`` (a bar tilted a little on a block keeps its contacts; a bar's top edge
  never pairs with a block's top edge).  Those tests are local: a crossed pair (gap < 0)
  also needs A's point inside mesh B or on its surface (a BVH query of B's mesh, with a
  tolerance: where the normal lies in one of B's faces A's point is on that face's plane),
  or the bar's top edge and the block's bottom edge, far apart through both solids, would
  count.

Contacts go into the body-body contact arrays (``state_out.body_pair_contacts``), after the
vertex pair contacts: ``shape_a`` is the mesh whose edge it is, the point lies on that
edge, the normal points from ``shape_b`` to ``shape_a`` (the force acts on ``shape_a``, the
reaction on ``shape_b``).  Each thread owns ``slots`` slots; more raise an error naming
``SolverSemiImplicit(mesh_contact_slots=)``.  The tests that choose a contact depend on the
pose only through comparisons; points, normals and depths are smooth functions of both
bodies' poses, whose gradients a Tape carries.
"""
from __future__ import annotations

import numpy as np

import kernelcore as kc
import geometry  # noqa: F401  (adds the hash_grid_* builtins)

from .collide_body_pairs import pair_relative_velocity
from .collide_hull_pairs import overlap_impact_gap
from .collide_mesh_edges import END_FRACTION, segment_box_contacts, segment_near_box, sharp_edges_with_normals
from .contacts import OVERFLOW_MESH_EDGE, write_contact_slot
from .shape_frames import shape_world_frame

BOX = kc.constant(1)
MESH = kc.constant(3)
#: how far [cos] an edge-edge normal may lie outside the triangles' normals at an edge (sin 20 degrees)
EDGE_SLACK = kc.constant(0.34)
#: edges closer to parallel than this [sin of the angle] make no edge-edge contact: the common normal of
#: two nearly parallel edges turns with the last bit of their angle (two hull cubes stacked a little
#: turned: a bottom edge and the lower cube's far top edge, 0.18 m apart sideways, counted as crossed
#: 0.18 m deep and threw the upper cube off); their ends' vertex contacts hold them instead
PARALLEL_SIN = kc.constant(0.05)


@kc.func
def edge_edge_contact(a0: kc.vec3, da: kc.vec3, fa1: kc.vec3, fa2: kc.vec3, b0: kc.vec3, db: kc.vec3, fb1: kc.vec3,
                      fb2: kc.vec3):
    """Contact of edge A (``a0 + s da``, triangle normals ``fa1``, ``fa2``) with edge B, world: (gap [m]
    (< 0: crossed), unit normal from B to A, point on A's edge, 1 when it counts, else 0)."""
    found = int(0)
    gap = float(1.0e30)
    n = kc.vec3(0.0, 1.0, 0.0)
    x = a0
    c = kc.cross(da, db)
    lc = kc.length(c)
    aa = kc.dot(da, da)
    ee = kc.dot(db, db)
    if lc * lc > PARALLEL_SIN * PARALLEL_SIN * aa * ee:  # not (nearly) parallel
        n = c / lc
        if kc.dot(n, fb1 + fb2) < 0.0:
            n = -n  # out of mesh B
        r = a0 - b0
        bd = kc.dot(da, db)
        cc = kc.dot(da, r)
        ff = kc.dot(db, r)
        den = aa * ee - bd * bd
        s = (bd * ff - cc * ee) / den
        t = (aa * ff - bd * cc) / den
        inside = s > END_FRACTION and s < 1.0 - END_FRACTION and t > END_FRACTION and t < 1.0 - END_FRACTION
        facing_b = kc.dot(n, fb1) > -EDGE_SLACK and kc.dot(n, fb2) > -EDGE_SLACK
        facing_a = kc.dot(n, fa1) < EDGE_SLACK and kc.dot(n, fa2) < EDGE_SLACK
        if inside and facing_b and facing_a:
            found = 1
            gap = kc.dot(r, n)
            x = a0 + da * s
    return gap, n, x, found


@kc.kernel
def generate_mesh_edge_pair_contacts_kernel(
        grid: kc.uint64, item_slot: kc.array(dtype=int), item_edge: kc.array(dtype=int),
        shape_ids: kc.array(dtype=int), slot_bound: kc.array(dtype=float), max_bound: float,
        centers: kc.array(dtype=kc.vec3),
        edge_p0: kc.array(dtype=kc.vec3), edge_p1: kc.array(dtype=kc.vec3), edge_f1: kc.array(dtype=kc.vec3),
        edge_f2: kc.array(dtype=kc.vec3), shape_edge_first: kc.array(dtype=int), shape_edge_count: kc.array(dtype=int),
        body_q: kc.array(dtype=kc.transform), body_qd: kc.array(dtype=kc.spatial_vector),
        body_com: kc.array(dtype=kc.vec3),
        shape_type: kc.array(dtype=int), shape_body: kc.array(dtype=int), shape_pos: kc.array(dtype=kc.vec3),
        shape_rot: kc.array(dtype=kc.mat33), shape_scale: kc.array(dtype=kc.vec3), shape_mesh: kc.array(dtype=kc.uint64),
        cohesion_reach: float, dt: float, offset: int, slots_per_thread: int,
        shape_impact: kc.array(dtype=int), impact_speed: float,
        active: kc.array(dtype=int), point: kc.array(dtype=kc.vec3), normal: kc.array(dtype=kc.vec3),
        depth: kc.array(dtype=float), shape_a: kc.array(dtype=int), shape_b: kc.array(dtype=int),
        count: kc.array(dtype=int), overflow: kc.array(dtype=int)):
    t = kc.tid()
    i = item_slot[t]
    e = item_edge[t]
    sa = shape_ids[i]
    ba = shape_body[sa]
    tfa = body_q[ba]
    qda = body_qd[ba]
    pos_a, rot_a = shape_world_frame(body_q, shape_body, shape_pos, shape_rot, sa)
    bound_a = slot_bound[i]
    # the edge in world
    a0 = pos_a + rot_a * edge_p0[e]
    da = rot_a * (edge_p1[e] - edge_p0[e])
    fa1 = rot_a * edge_f1[e]
    fa2 = rot_a * edge_f2[e]
    mid = a0 + da * 0.5
    half_len = 0.5 * kc.length(da)
    base = offset + t * slots_per_thread
    for u in range(slots_per_thread):
        active[base + u] = 0
    used = int(0)
    query = kc.hash_grid_query(grid, mid, half_len + max_bound * 1.1 + cohesion_reach)
    j = int(0)
    while kc.hash_grid_query_next(query, j):
        sb = shape_ids[j]
        bb = shape_body[sb]
        kb = shape_type[sb]
        bound_b = slot_bound[j]
        use = int(0)
        if bb != ba:
            if kb == BOX or (kb == MESH and sa < sb):
                use = 1
        if use != 0:
            tfb = body_q[bb]
            qdb = body_qd[bb]
            speed = (kc.length(kc.spatial_top(qda)) + kc.length(kc.spatial_bottom(qda)) * bound_a
                     + kc.length(kc.spatial_top(qdb)) + kc.length(kc.spatial_bottom(qdb)) * bound_b)
            margin = cohesion_reach + dt * speed
            # the edge's bounding ball and the shape's apart: nothing to do
            if kc.length(centers[j] - mid) < half_len + bound_b * 1.1 + margin:
                pos_b, rot_b = shape_world_frame(body_q, shape_body, shape_pos, shape_rot, sb)
                a_local = kc.transpose(rot_b) * (a0 - pos_b)
                d_local = kc.transpose(rot_b) * da
                if kb == BOX and segment_near_box(a_local, d_local, shape_scale[sb], margin) != 0:
                    t0, t1, gap0, gap1, n_local = segment_box_contacts(a_local, d_local, shape_scale[sb])
                    n_out = rot_b * n_local  # the box's outward normal: pushes the mesh off it
                    for k in range(2):
                        te = t0
                        gap = gap0
                        if k == 1:
                            te = t1
                            gap = gap1
                        if te >= 0.0 and gap < margin:
                            x = a0 + da * te  # on the mesh's edge
                            v_rel = pair_relative_velocity(x, tfa, qda, body_com[ba], tfb, qdb, body_com[bb])
                            gap = overlap_impact_gap(gap, n_out, v_rel, shape_impact[sa] + shape_impact[sb], impact_speed)
                            if gap < cohesion_reach + 0.5 * dt * kc.length(v_rel):
                                used = write_contact_slot(used, base, slots_per_thread, x, n_out, gap, sa, sb, active,
                                                          point, normal, depth, shape_a, shape_b, count, overflow,
                                                          OVERFLOW_MESH_EDGE)
                elif kb == MESH:  # edge against each sharp edge of mesh b
                    first = shape_edge_first[sb]
                    for eb in range(first, first + shape_edge_count[sb]):
                        b0 = pos_b + rot_b * edge_p0[eb]
                        db = rot_b * (edge_p1[eb] - edge_p0[eb])
                        # the two edges' bounding balls apart: nothing to do
                        if kc.length(b0 + db * 0.5 - mid) < half_len + 0.5 * kc.length(db) + margin:
                            gap, n, x, found = edge_edge_contact(a0, da, fa1, fa2, b0, db, rot_b * edge_f1[eb],
                                                                 rot_b * edge_f2[eb])
                            if found != 0 and gap < 0.0:  # crossed: A's point must be in mesh B or on it
                                local = kc.transpose(rot_b) * (x - pos_b)
                                tol = 1.0e-3 * (half_len + 0.5 * kc.length(db))
                                inner = kc.mesh_query_point_sign_normal(shape_mesh[sb], local, tol - gap)
                                if not inner.result:
                                    found = 0
                                elif inner.sign >= 0.0:
                                    cp = kc.mesh_eval_position(shape_mesh[sb], inner.face, inner.u, inner.v)
                                    if kc.length(local - cp) > tol - 0.25 * gap:
                                        found = 0
                            if found != 0 and gap < margin:
                                v_rel = pair_relative_velocity(x, tfa, qda, body_com[ba], tfb, qdb, body_com[bb])
                                gap = overlap_impact_gap(gap, n, v_rel, shape_impact[sa] + shape_impact[sb], impact_speed)
                                if gap < cohesion_reach + 0.5 * dt * kc.length(v_rel):
                                    used = write_contact_slot(used, base, slots_per_thread, x, n, gap, sa, sb,
                                                              active, point, normal, depth, shape_a, shape_b, count,
                                                              overflow, OVERFLOW_MESH_EDGE)


class MeshEdgePairContacts:
    """Sharp edges of mesh bodies against box bodies and other mesh bodies' edges (module docstring).

    Args:
        model: the sim.Model.
        body_meshes: the mesh shapes on bodies, in the order of the hash grid's first entries.
        slots: contact slots of one edge's thread.
    """

    def __init__(self, model, body_meshes, slots: int = 16):
        self.slots = int(slots)
        dev = model.device
        p0, p1, f1, f2, items = [], [], [], [], []
        first = np.zeros(max(model.shape_count, 1), np.int32)
        count = np.zeros(max(model.shape_count, 1), np.int32)
        for i, s in enumerate(body_meshes):
            a, b, n1, n2 = sharp_edges_with_normals(*model.shape_mesh_points[s])
            first[s] = sum(len(x) for x in p0)
            count[s] = len(a)
            items += [(i, int(first[s]) + e) for e in range(len(a))]
            p0.append(a)
            p1.append(b)
            f1.append(n1)
            f2.append(n2)
        self.count = len(items)
        if not self.count:
            return
        items = np.asarray(items, np.int32)
        self.items = [kc.array(np.ascontiguousarray(items[:, j]), dtype=kc.int32, device=dev) for j in range(2)]
        self.edge_arrays = [kc.array(np.concatenate(x), dtype=kc.vec3, device=dev) for x in (p0, p1, f1, f2)]
        self.shape_edge_first = kc.array(first, dtype=kc.int32, device=dev)
        self.shape_edge_count = kc.array(count, dtype=kc.int32, device=dev)

    def capacity(self) -> int:
        """Contact slots a step needs: ``slots`` per sharp edge of every mesh body."""
        return self.count * self.slots

    def generate(self, model, state, contacts, offset: int, dt: float, meshes):
        """Write ``state``'s edge contacts into ``contacts`` from slot ``offset`` on (:meth:`capacity` slots),
        through the hash grid of ``meshes`` (sim.collide_body_mesh.BodyMeshContacts, already built from
        ``state.body_q``); ``count`` and ``overflow`` are added to, not reset."""
        if not self.count:
            return
        kc.launch(generate_mesh_edge_pair_contacts_kernel, dim=self.count,
                  inputs=[meshes.grid.id, *self.items, meshes.shape_ids, meshes.slot_bound, meshes.max_bound,
                          meshes.centers, *self.edge_arrays, self.shape_edge_first, self.shape_edge_count,
                          state.body_q, state.body_qd, model.body_com, model.shape_type, model.shape_body,
                          model.shape_pos, model.shape_rot, model.shape_scale, model.shape_mesh,
                          model.material_max_cohesion_distance, float(dt), int(offset), self.slots,
                          meshes.shape_impact, meshes.impact_speed(model, dt)],
                  outputs=[contacts.active, contacts.point, contacts.normal, contacts.depth, contacts.shape_a,
                           contacts.shape_b, contacts.count, contacts.overflow], device=model.device)


def make_mesh_edge_pair_contacts(model, body_meshes, slots: int = 16):
    """A :class:`MeshEdgePairContacts` when some mesh body has sharp edges, else None."""
    if not body_meshes:
        return None
    edges = MeshEdgePairContacts(model, body_meshes, slots)
    return edges if edges.count else None
