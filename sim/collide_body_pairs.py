"""Contacts between shapes on different bodies: broad phase on a geometry.HashGrid, penalty forces.

Broad phase: the centres of all body shapes (sphere, box, capsule) are written to a
buffer and sorted into a ``geometry.HashGrid`` every step; each shape queries the
shapes within its bounding radius plus the largest bounding radius, so N bodies cost
O(N) rather than O(N^2).

Narrow phase, one thread per round shape's contact point k (a sphere's centre, a capsule's
two ends) and one per box (its thread k = 0 does all of the box's pairs):

- two round shapes (sphere, capsule): the closest points of their core segments (a
  sphere is a segment of length 0), once per pair (the lower index does it, k = 0);
- a round shape against a box: the sphere's centre or the capsule's two ends against
  the box's signed distance (the round shape's thread);
- a box against a capsule: its eight corners against the capsule's signed distance;
- two boxes: ``sim.collide_box_faces.box_pair_manifold``, once per pair (the lower index;
  run by each of 8 threads before, it was most of a box pile's contact time): the
  edge-edge contact when an edge axis of the separating-axis test separates them most,
  else the incident box's face clipped to the reference box's face (up to 8 points on the
  incident box, the normal from the reference box to it).  Corners would miss equal
  boxes: stacked exactly or side by side, each corner lies on the other box's face plane,
  at distance 0, and a box sinks into the other.

Two launches, as for body-static contacts (sim/collide_bodies.py): contact generation
writes each contact found into a :class:`sim.contacts.Contacts` (the solver keeps one per
output state, ``state_out.body_pair_contacts``); point k of shape i (a round shape's
point, a box's corner k or point k of a box pair's manifold) owns the ``slots_per_thread``
slots from ``(i * MAX_POINTS + k) * slots_per_thread``, filled in the grid query's order
(``shape_a`` is the shape of that point, or for a box pair the incident box; the normal
points from ``shape_b`` to ``shape_a``, the point lies on ``shape_a``'s surface, or
between the edges of an edge-edge contact).  The force launch then applies the contact
law of sim/contact.py on the relative velocity of the two surface points, with the sum of
both bodies' effective inverse masses along the normal; the force goes to body a and its
reaction to body b (``atomic_add``).  Both read
only ``state_in`` and the contact arrays; on a Tape the grid is rebuilt from that
state's ``body_q`` just before the generation's adjoint runs, so the backward pass sees
the same pairs.
"""
from __future__ import annotations

import math

import numpy as np

import kernelcore as kc
import geometry  # noqa: F401  (adds the hash_grid_* builtins)
from kernelcore.device import get_runtime

from .collide_bodies import (MAX_POINTS, box_edge_contact, segment_params, shape_point,  # noqa: F401
                             spatial_wrench, static_distance)
from .collide_box_faces import box_pair_manifold, vec8
from .contact import material_inputs, mixed_body_contact_force
from .contacts import OVERFLOW_BODY_PAIR, check_contact_overflow, write_contact_slot
from .model import SHAPE_BOX, SHAPE_CAPSULE, SHAPE_SPHERE

SPHERE = kc.constant(0)
BOX = kc.constant(1)
CAPSULE = kc.constant(4)

# what a (shape a, shape b) pair of generate_body_pair_contacts_kernel contributes
ROUND_PAIR = kc.constant(1)   # sphere/capsule against sphere/capsule: closest points of the core segments
ROUND_BOX = kc.constant(2)    # a round shape's point k against a box's signed distance
BOX_CORNERS = kc.constant(3)  # a box's eight corners against a capsule's signed distance
BOX_PAIR = kc.constant(4)     # two boxes: sim.collide_box_faces.box_pair_manifold

ivec8 = kc.vector(length=MAX_POINTS, dtype=int)


@kc.func
def core_half_axis(kind: int, rot: kc.mat33, scale: kc.vec3) -> kc.vec3:
    """Half of a round shape's core segment in world: a capsule's axis times its half height, 0 for a sphere."""
    h = kc.vec3(0.0, 0.0, 0.0)
    if kind == CAPSULE:
        h = rot * kc.vec3(0.0, scale[1], 0.0)
    return h


@kc.kernel
def body_shape_centers_kernel(shape_ids: kc.array(dtype=int), shape_body: kc.array(dtype=int),
                              shape_pos: kc.array(dtype=kc.vec3), body_q: kc.array(dtype=kc.transform),
                              centers: kc.array(dtype=kc.vec3)):
    i = kc.tid()
    s = shape_ids[i]
    centers[i] = kc.transform_point(body_q[shape_body[s]], shape_pos[s])


@kc.func
def pair_relative_velocity(contact: kc.vec3, tfa: kc.transform, qda: kc.spatial_vector, com_a: kc.vec3,
                           tfb: kc.transform, qdb: kc.spatial_vector, com_b: kc.vec3) -> kc.vec3:
    """Velocity [m/s] of body a's material point at ``contact`` relative to body b's."""
    arm_a = contact - kc.transform_point(tfa, com_a)
    arm_b = contact - kc.transform_point(tfb, com_b)
    return (kc.spatial_top(qda) + kc.cross(kc.spatial_bottom(qda), arm_a)
            - kc.spatial_top(qdb) - kc.cross(kc.spatial_bottom(qdb), arm_b))


@kc.func
def impact_gap(gap: float, n: kc.vec3, v_rel: kc.vec3, impact_pair: int, impact_speed: float) -> float:
    """``gap``, or 1e30 (no contact) for a pair of two bodies that sim/toi_body_pairs.py sweeps
    (``impact_pair`` 2) whose normal speed is ``impact_speed`` or more: the sweep takes every impact that
    fast, and a pair moving apart that fast needs no force (the rule of generate_body_pair_contacts_kernel)."""
    out = gap
    if impact_pair == 2 and kc.abs(kc.dot(n, v_rel)) >= impact_speed:
        out = 1.0e30
    return out


@kc.kernel
def generate_body_pair_contacts_kernel(
        grid: kc.uint64, shape_ids: kc.array(dtype=int), shape_bound: kc.array(dtype=float), max_bound: float,
        centers: kc.array(dtype=kc.vec3),
        body_q: kc.array(dtype=kc.transform), body_qd: kc.array(dtype=kc.spatial_vector),
        body_com: kc.array(dtype=kc.vec3),
        shape_type: kc.array(dtype=int), shape_body: kc.array(dtype=int), shape_pos: kc.array(dtype=kc.vec3),
        shape_rot: kc.array(dtype=kc.mat33), shape_scale: kc.array(dtype=kc.vec3),
        shape_swept: kc.array(dtype=int), shape_world: kc.array(dtype=int),
        cohesion_reach: float, dt: float, slots_per_thread: int,
        impact_swept: kc.array(dtype=int), impact_speed: float,
        active: kc.array(dtype=int), point: kc.array(dtype=kc.vec3), normal: kc.array(dtype=kc.vec3),
        depth: kc.array(dtype=float), shape_a: kc.array(dtype=int), shape_b: kc.array(dtype=int),
        count: kc.array(dtype=int), overflow: kc.array(dtype=int)):
    i, k = kc.tid()
    sa = shape_ids[i]
    ka = shape_type[sa]
    ba = shape_body[sa]
    tfa = body_q[ba]
    rot_a = kc.quat_to_matrix(kc.transform_get_rotation(tfa)) * shape_rot[sa]
    pos_a = kc.transform_point(tfa, shape_pos[sa])
    scale_a = shape_scale[sa]
    round_a = ka != BOX
    # a round shape's thread k tests its point k (capsule ends, a sphere's centre); a box's thread 0 does all
    # of the box's pairs: each box pair's manifold once, its eight corners against a capsule in a loop
    points = 1
    if ka == CAPSULE:
        points = 2
    # slots of point r of shape a: [(i * MAX_POINTS + r) * slots_per_thread, + slots_per_thread), filled in the
    # grid query's order; used[r] of them are taken
    used = ivec8()
    if k < points:
        # a tenth of a bound more: the onset smoothing of sim/contact.py starts before the surfaces touch
        query = kc.hash_grid_query(grid, pos_a, shape_bound[i] + max_bound * 1.1 + cohesion_reach)
        j = int(0)
        while kc.hash_grid_query_next(query, j):
            sb = shape_ids[j]
            bb = shape_body[sb]
            kb = shape_type[sb]
            wa = shape_world[sa]
            wb = shape_world[sb]
            same_world = wa == wb or wa < 0 or wb < 0  # environments do not touch each other
            # contacts of this pair: 0: none; round pair (1 point), a round shape's point k against a box (1),
            # a box's corners against a capsule (8), the manifold of two boxes (its count)
            mode = int(0)
            if bb != ba and same_world:
                if round_a:
                    if kb != BOX:
                        if k == 0 and i < j and shape_swept[i] + shape_swept[j] < 2:  # both swept: sim/toi.py
                            mode = ROUND_PAIR
                    else:
                        mode = ROUND_BOX
                elif kb == CAPSULE:
                    mode = BOX_CORNERS
                elif kb == BOX and i < j:  # once per pair, by the lower index
                    mode = BOX_PAIR
            # bounding spheres apart (with the margin of the query): nothing to do
            if kc.length(centers[j] - pos_a) > (shape_bound[i] + shape_bound[j]) * 1.1 + cohesion_reach:
                mode = 0
            if mode != 0:
                tfb = body_q[bb]
                rot_b = kc.quat_to_matrix(kc.transform_get_rotation(tfb)) * shape_rot[sb]
                pos_b = kc.transform_point(tfb, shape_pos[sb])
                scale_b = shape_scale[sb]
                n_pair = int(1)
                if mode == BOX_CORNERS:
                    n_pair = MAX_POINTS
                # two boxes: the face manifold or edge contact of sim/collide_box_faces.py; their corners lie on
                # each other's faces when equal
                n_box = int(0)
                px = vec8()
                py = vec8()
                pz = vec8()
                gaps = vec8()
                n_f = kc.vec3(0.0, 1.0, 0.0)
                side = int(0)
                if mode == BOX_PAIR:
                    n_box, px, py, pz, gaps, n_f, side = box_pair_manifold(pos_a, rot_a, scale_a, pos_b, rot_b,
                                                                           scale_b)
                    n_pair = n_box
                for m in range(n_pair):
                    n = kc.vec3(0.0, 1.0, 0.0)
                    gap = float(1.0e30)
                    contact = pos_a
                    # the contact's shapes: the normal points from s2 to s1, the point lies on s1
                    s1 = sa
                    s2 = sb
                    if mode == ROUND_PAIR:
                        ha = core_half_axis(ka, rot_a, scale_a)
                        hb = core_half_axis(kb, rot_b, scale_b)
                        st = segment_params(pos_a - ha, ha * 2.0, pos_b - hb, hb * 2.0)
                        ca = pos_a - ha + ha * (2.0 * st[0])
                        cb = pos_b - hb + hb * (2.0 * st[1])
                        sep = ca - cb
                        dist = kc.length(sep)
                        if dist > 0.0:
                            n = sep / dist
                        gap = dist - scale_a[0] - scale_b[0]
                        contact = ca - n * scale_a[0]
                    elif mode == BOX_PAIR:
                        contact = kc.vec3(px[m], py[m], pz[m])
                        n = n_f
                        gap = gaps[m]
                        if side != 0:
                            s1 = sb
                            s2 = sa
                    else:
                        pt = shape_point(ka, scale_a, k + m)
                        x = pos_a + rot_a * kc.vec3(pt[0], pt[1], pt[2])
                        nd = static_distance(x, kb, pos_b, rot_b, scale_b, kc.vec3(0.0, 1.0, 0.0), 0.0)
                        n = kc.vec3(nd[0], nd[1], nd[2])
                        gap = nd[3] - pt[3]
                        contact = x - n * pt[3]
                    b1 = shape_body[s1]
                    b2 = shape_body[s2]
                    v_rel = pair_relative_velocity(contact, body_q[b1], body_qd[b1], body_com[b1], body_q[b2],
                                                   body_qd[b2], body_com[b2])
                    # two bodies swept by sim/toi_body_pairs.py: it takes every normal speed from impact_speed
                    # up (approaching), and a pair moving apart that fast needs no force (the onset window
                    # would push it, and hard: it is as wide as the step's motion)
                    if impact_swept[i] + impact_swept[j] == 2 and kc.abs(kc.dot(n, v_rel)) >= impact_speed:
                        gap = 1.0e30
                    if gap < cohesion_reach + 0.5 * dt * kc.length(v_rel):
                        r = k + m
                        used[r] = write_contact_slot(used[r], (i * MAX_POINTS + r) * slots_per_thread,
                                                     slots_per_thread, contact, n, gap, s1, s2, active, point,
                                                     normal, depth, shape_a, shape_b, count, overflow,
                                                     OVERFLOW_BODY_PAIR)


@kc.kernel
def apply_body_pair_contacts_kernel(
        active: kc.array(dtype=int), point: kc.array(dtype=kc.vec3), normal: kc.array(dtype=kc.vec3),
        depth: kc.array(dtype=float), shape_a: kc.array(dtype=int), shape_b: kc.array(dtype=int),
        body_q: kc.array(dtype=kc.transform), body_qd: kc.array(dtype=kc.spatial_vector),
        body_com: kc.array(dtype=kc.vec3), body_inv_mass: kc.array(dtype=float),
        body_inv_inertia: kc.array(dtype=kc.mat33), shape_body: kc.array(dtype=int),
        shape_material: kc.array(dtype=int),
        material_ke: kc.array(dtype=float), material_damping_ratio: kc.array(dtype=float),
        material_mu: kc.array(dtype=float), material_cohesion: kc.array(dtype=float),
        material_cohesion_distance: kc.array(dtype=float), dt: float,
        body_f: kc.array(dtype=kc.spatial_vector)):
    slot = kc.tid()
    if active[slot] != 0:
        sa = shape_a[slot]
        sb = shape_b[slot]
        ba = shape_body[sa]
        bb = shape_body[sb]
        tfa = body_q[ba]
        tfb = body_q[bb]
        contact = point[slot]
        n = normal[slot]
        arm_a = contact - kc.transform_point(tfa, body_com[ba])
        arm_b = contact - kc.transform_point(tfb, body_com[bb])
        v_rel = pair_relative_velocity(contact, tfa, body_qd[ba], body_com[ba], tfb, body_qd[bb], body_com[bb])
        ra = kc.quat_to_matrix(kc.transform_get_rotation(tfa))
        rb = kc.quat_to_matrix(kc.transform_get_rotation(tfb))
        rna = kc.cross(arm_a, n)
        rnb = kc.cross(arm_b, n)
        w = (body_inv_mass[ba] + kc.dot(rna, ra * body_inv_inertia[ba] * kc.transpose(ra) * rna)
             + body_inv_mass[bb] + kc.dot(rnb, rb * body_inv_inertia[bb] * kc.transpose(rb) * rnb))
        f = mixed_body_contact_force(n, -depth[slot], v_rel, w, shape_material[sa], shape_material[sb], material_ke,
                                material_damping_ratio, material_mu, material_cohesion,
                                material_cohesion_distance, dt)
        kc.atomic_add(body_f, ba, spatial_wrench(f, arm_a))
        kc.atomic_add(body_f, bb, spatial_wrench(-f, arm_b))


def apply_body_pair_contacts(model, state, contacts, wrenches, dt: float, skip_empty: bool = True):
    """Add the penalty wrenches [N, N m] of the body-body ``contacts`` (found in ``state``; the primitive
    pairs' and those of sim/collide_body_mesh.py) to ``wrenches`` (B,).  ``skip_empty``: read ``count``
    back and launch nothing when no slot is active (False: no read-back; the solver's step reads back
    only its overflow counters)."""
    if contacts.capacity == 0 or (skip_empty and contacts.count.numpy()[0] == 0):
        return  # nothing touches
    kc.launch(apply_body_pair_contacts_kernel, dim=contacts.capacity,
              inputs=[contacts.active, contacts.point, contacts.normal, contacts.depth, contacts.shape_a,
                      contacts.shape_b, state.body_q, state.body_qd, model.body_com, model.body_inv_mass,
                      model.body_inv_inertia, model.shape_body, model.shape_material, *material_inputs(model),
                      float(dt)],
              outputs=[wrenches], device=model.device)


def shape_bounding_radius(kind: int, scale) -> float:
    """Radius [m] of a ball about the shape's centre that holds the shape."""
    if kind == SHAPE_SPHERE:
        return float(scale[0])
    if kind == SHAPE_CAPSULE:
        return float(scale[0] + scale[1])
    return float(np.linalg.norm(scale))


class BodyPairContacts:
    """Buffers and hash grid for body-body contacts of one model (made once by the solver).

    Args:
        model: the sim.Model.
        swept_shapes: shape indices that the time-of-impact solver sweeps against each other
            (spheres alone on their body); pairs of two of them are left out here.
        impact_shapes: shapes whose impacts with each other sim/toi_body_pairs.py handles: a
            pair of two of them has a penalty contact only while its normal speed is below
            the resting speed (sim/toi.py's ``resting_speed``).
        grid_dim: hash grid cells per axis (None: from the shape count).
        slots_per_thread: contact slots of each (shape, contact point) thread, i.e. the most
            shapes one box corner, capsule end or sphere may touch in a step (a box's first
            thread also holds its edge-edge contacts); more raises a RuntimeError.
    """

    def __init__(self, model, swept_shapes=(), grid_dim: int | None = None, slots_per_thread: int = 12,
                 impact_shapes=()):
        if int(slots_per_thread) < 1:
            raise ValueError(f"BodyPairContacts(slots_per_thread={slots_per_thread}): must be at least 1")
        self.slots_per_thread = int(slots_per_thread)
        shape_body = model.shape_body.numpy() if model.shape_count else np.zeros(0, np.int32)
        shape_type = model.shape_type.numpy() if model.shape_count else np.zeros(0, np.int32)
        scale = model.shape_scale.numpy() if model.shape_count else np.zeros((0, 3), np.float32)
        ids = [s for s in range(model.shape_count)
               if shape_body[s] >= 0 and shape_type[s] in (SHAPE_SPHERE, SHAPE_BOX, SHAPE_CAPSULE)]
        self.count = len(ids)
        self.active = len(set(int(shape_body[s]) for s in ids)) > 1
        bound = np.array([shape_bounding_radius(shape_type[s], scale[s]) for s in ids], np.float32).reshape(-1)
        self.max_bound = float(bound.max()) if self.count else 0.0
        dev = model.device
        self.shape_ids = kc.array(np.asarray(ids, np.int32).reshape(-1), dtype=kc.int32, device=dev)
        self.shape_bound = kc.array(bound, dtype=float, device=dev)
        self.centers = kc.zeros(self.count, dtype=kc.vec3, device=dev)
        self.speed_bound = kc.zeros(1, dtype=float, device=dev)  # largest body speed seen [m/s] (sim/toi.py)
        swept = set(int(s) for s in swept_shapes)
        self.shape_swept = kc.array(np.array([int(s in swept) for s in ids], np.int32).reshape(-1), dtype=kc.int32,
                                    device=dev)
        impact = set(int(s) for s in impact_shapes)
        self.impact_swept = kc.array(np.array([int(s in impact) for s in ids], np.int32).reshape(-1),
                                     dtype=kc.int32, device=dev)
        self.has_impact_shapes = bool(impact)
        self.grid = None
        if self.active:
            if grid_dim is None:
                grid_dim = int(min(128, max(8, 2 ** math.ceil(math.log2(max(1.0, 1.5 * self.count ** (1 / 3)))))))
            self.grid = geometry.HashGrid(grid_dim, grid_dim, grid_dim, device=dev)
            self.grid.reserve(self.count)

    def _rebuild(self, model, body_q):
        kc.launch(body_shape_centers_kernel, dim=self.count,
                  inputs=[self.shape_ids, model.shape_body, model.shape_pos, body_q], outputs=[self.centers],
                  device=model.device, record_tape=False)
        self.grid.build(self.centers, 2.1 * self.max_bound + model.material_max_cohesion_distance)

    def _impact_speed(self, model, dt: float) -> float:
        """Normal speed [m/s] from which a pair of two ``impact_shapes`` has no penalty contact."""
        if not self.has_impact_shapes:
            return 1.0e30
        from .toi import resting_speed

        return resting_speed(model, dt)

    def capacity(self) -> int:
        """Contact slots a step needs: ``slots_per_thread`` for each (shape, contact point) thread."""
        return self.count * MAX_POINTS * self.slots_per_thread if self.active else 0

    def generate(self, model, state, contacts, dt: float):
        """Contact generation: fill ``contacts`` (sim.contacts.Contacts of :meth:`capacity` slots) with
        ``state``'s body-body contacts; contacts beyond a thread's ``slots_per_thread`` are counted in
        ``contacts.overflow[OVERFLOW_BODY_PAIR]`` (added to, not reset: see :meth:`eval`)."""
        contacts.active.zero_()
        contacts.count.zero_()
        if not self.active:
            return
        self._rebuild(model, state.body_q)
        kc.launch(generate_body_pair_contacts_kernel, dim=(self.count, 2),  # k < 2: a capsule's two ends
                  inputs=[self.grid.id, self.shape_ids, self.shape_bound, self.max_bound, self.centers, state.body_q,
                          state.body_qd, model.body_com, model.shape_type, model.shape_body, model.shape_pos,
                          model.shape_rot, model.shape_scale, self.shape_swept, model.shape_world,
                          model.material_max_cohesion_distance, float(dt), self.slots_per_thread,
                          self.impact_swept, self._impact_speed(model, dt)],
                  outputs=[contacts.active, contacts.point, contacts.normal, contacts.depth, contacts.shape_a,
                           contacts.shape_b, contacts.count, contacts.overflow], device=model.device)
        # the generation's adjoint queries the grid again: rebuild it from this state first
        self.record_rebuild(model, state.body_q)

    def overflow_message(self, family: int, dropped: int) -> str:
        """The error for ``dropped`` contacts that found no slot (sim.contacts.check_contact_overflow)."""
        return (f"body-body contacts: {dropped} contacts did not fit in slots_per_thread={self.slots_per_thread} "
                f"(one shape's contact point touches that many shapes); pass a larger "
                f"body_pair_slots to SolverSemiImplicit")

    def apply(self, model, state, contacts, wrenches, dt: float, skip_empty: bool = True):
        """Add the penalty wrenches [N, N m] of ``contacts`` (found in ``state``) to ``wrenches`` (B,)."""
        apply_body_pair_contacts(model, state, contacts, wrenches, dt, skip_empty)

    def eval(self, model, state, wrenches, dt: float, contacts=None, meshes=None, check_overflow: bool = True):
        """Add the body-body contact wrenches [N, N m] of ``state`` to ``wrenches`` (spatial_vector, (B,)).

        ``contacts``: the sim.contacts.Contacts to generate into (the solver passes
        ``state_out.body_pair_contacts``); None: a temporary one.  ``meshes``: a
        sim.collide_body_mesh.BodyMeshContacts whose body-body mesh contacts go into the same
        arrays, in the slots after the primitives' (``contacts`` then needs room for both).
        ``check_overflow``: zero ``contacts.overflow`` first and raise (one read-back) when a family's
        contacts did not fit; False: the caller does both (the solver, once per step for all families)."""
        from .contacts import Contacts

        mesh_capacity = meshes.pair_capacity() if meshes is not None else 0
        if not self.active and not mesh_capacity:
            return
        if contacts is None:
            contacts = Contacts(self.capacity() + mesh_capacity, model.device, model.requires_grad)
        if check_overflow:
            contacts.overflow.zero_()
        self.generate(model, state, contacts, dt)
        if mesh_capacity:
            meshes.generate_pairs(model, state, contacts, self.capacity(), dt)
        if check_overflow:
            check_contact_overflow(contacts.overflow, self, meshes)
        self.apply(model, state, contacts, wrenches, dt, skip_empty=check_overflow)

    def record_rebuild(self, model, body_q):
        """On an active Tape, rebuild the grid from ``body_q`` just before the adjoint of the last
        recorded launch runs, so that it sees the pairs its forward saw."""
        tapes = get_runtime().tape_stack
        if tapes:
            tapes[-1].record_func(lambda: self._rebuild(model, body_q), [])
