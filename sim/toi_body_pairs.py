"""Time-of-impact contacts between two swept bodies (sphere-box, box-box,
sphere-capsule, capsule-capsule, capsule-box, compounds, and mesh shapes against all of these and
against each other: sim/toi_mesh_pairs.py).

With ``SolverSemiImplicit(model, toi=True)`` every body made of spheres, boxes, capsules and
meshes is *swept*.  Pairs of swept bodies meet here (two single spheres only with
``max_impacts > 1``, else in sim/toi.py), in a pass that runs before the bodies' own integration (sim/toi.py,
sim/toi_shapes.py, which handle the ground and the static shapes).

**Paths.**  Each body moves through the step as its integrator moves it: the centre of
mass along ``x0 + s dt v1`` (``v1 = v0 + dt a``, semi-implicit) and the Cayley rotation of
the step's midpoint angular velocity ``w`` (sim/body_integrate.py), for s in [0, 1].

**Time of impact.**  The distance of the two shapes is the smallest of their features
(points against signed distances, segment pairs, the box-box edge-edge axis; the
functions of sim/toi_shapes.py, there with a static B, here with B on its own path).
Conservative advancement on both paths, ``s += D(s) / B`` with
``B = (|v1_a - v1_b| + |w_a| R_a + |w_b| R_b) dt`` bounding how fast the gap can close,
then two Newton steps on the active feature land on the root, so ``s`` and the state after
the impact are smooth in the initial conditions (the gradients are those of the real
impact).

**Impulse.**  At ``s`` both bodies have the velocity ``v0 + s dt a`` and the angular velocity
that carries their angular momentum at that rotation (so the impulse changes the total
angular momentum by nothing); the contact
point is the centroid of the features within 1 mm of the closest one (a box landing flat
on a box touches on a face, not at one corner), the normal that of the closest feature.
The impulse on the relative velocity of the two material points, with both bodies'
effective inverse masses, is Newton's impact law, then the Coulomb friction impulse that stops the
sliding the normal impulse leaves, ``-K_t^-1 u_t`` scaled back to ``|j_t| <= mu j_n`` (sim/toi.py
``contact_impulse``): linear in ``u_t`` where it sticks, so the gradient through a head-on hit has
its friction, and it never gains energy for ``e <= 1``.

**Impacts only.**  Only hits approaching at ``resting_speed`` (two steps of gravity) or faster
are impacts here; slower contacts (resting stacks, sliding, rolling) are left to the penalty
contacts of sim/collide_body_pairs.py and sim/collide_body_mesh.py, which stay on for every
pair with a box, a capsule or a mesh (pairs of two swept spheres have none, sim/toi.py).
Resting stacks then behave as with ``toi=False``; a fast impact is caught by the sweep before
the penalty contact could see it.  Two exceptions keep resting stacks from sinking through their impacts:
a body lying on the ground (lowest point within SUPPORT_GAP) takes no share of an impulse that presses it
into the ground (:func:`supported_mass`; the ground takes it, with its friction, :func:`ground_share`), and
two single spheres, which have no penalty contact, get a second, frictionless impulse that stops the rest
of the step's pressing and drives an overlap apart (:func:`pair_rest_impulse`).  A penalty contact's onset
smoothing (sim/contact.py) can still push a pair that starts a step within half a step's closing distance;
that push keeps momentum.

**Both bodies, one answer.**  One thread per body; each finds its earliest impact among the
swept bodies in a hash grid of their centres of mass (:class:`BodyPairToiShapes`; query radius
grown by twice the largest body speed times dt), always evaluating a pair with the lower body index as A,
so both threads of a pair compute bit-identical impulses.  A pair's impact is applied only when it is
the earliest of *both* bodies (ties go to the lower partner index), so each impulse acts on both
bodies and momentum is conserved exactly.

**Several impacts per step (``max_impacts``).**  Pair by pair, in time order, not island-wise:
up to ``max_impacts`` passes, each a find launch (every body's earliest partner on the rest of the
step) and an apply launch (the pairs that are both bodies' earliest).  Each pass resolves at least
the step's earliest remaining impact (its two bodies name each other), and all disjoint pairs at once.
A body struck in a pass continues from its virtual start (below), and its later pairs are swept
from the time of its last impact (``s_last``): before it, its virtual path is not the real one.  A
contact an earlier pass stopped no longer approaches and so is not an impact again.  A later pass sweeps
only the pairs with a body the pass before struck (a body neither of whose pair was struck keeps its
earliest partner), and the launches stop at the first pass that finds nothing.  Why sequential
and not a simultaneous solve of an island's contacts: the order of the impacts is the physics of a
chain (Newton's cradle hands the whole velocity down the row only when the impacts are taken one
after the other; a simultaneous solve spreads it over the row), and pairwise passes keep each
kernel thread to one pair, so that the launches stay small for the NVRTC build.  Each pass writes its
own arrays on ``state_out`` (``body_pair_toi_passes``), so a Tape replays every pass; a pass that
finds no impact ends the loop.  Bodies still struck after the last pass keep their earlier impacts
only (they can pass through a thin body: raise ``max_impacts``).  Two single spheres meet here too
when ``max_impacts > 1`` (sim/toi.py takes one body-body impact per sphere and step); with
``max_impacts = 1`` they meet in sim/toi.py as before.

**Hand-over.**  The impact is turned into a *virtual start*: the pose and velocity at
s = 0 from which the integrator's free step reproduces "move to the impact, apply the
impulse, move on for the rest of the step" (``v0' = v' - s dt a``,
``x0' = x_hit - s dt (v' + (1 - s) dt a)``, ``q0' = q_hit`` turned back by ``w'`` over
``s dt``, and the angular velocity at ``q0'`` that has the angular momentum after the
impact less the torque of ``[0, s dt]``).  These go to per-state arrays (the last pass's of
``state_out.body_pair_toi_passes``) that the integrators then read instead of ``state_in``'s,
so a Tape replays every step on its own.  The ground and static shapes are still swept by
the integrator from the virtual start.
"""
from __future__ import annotations

import numpy as np

import kernelcore as kc

import geometry  # noqa: F401  (adds the hash_grid_* builtins)

from .body_integrate import angular_midpoint, body_frame_from_com, rotate_by
from .model import SHAPE_BOX, SHAPE_CAPSULE, SHAPE_MESH, SHAPE_SPHERE
from .collide_hull_pairs import hull_pair_separation, hull_separation_along, shape_convex_flags
from .toi import contact_impulse, contact_mass
from .toi_mesh import shape_lowest
from .toi_mesh_body import mesh_body_reach, mesh_lowest
from .toi_mesh_pairs import LOOKAHEAD, mesh_pair_closest, mesh_pair_manifold_point, shape_radius
from .toi_shapes import (CA_ITERATIONS, CONTACT_TOL, FEATURES, MANIFOLD_TOL, body_reach, body_shape_lists,
                         feature_distance, pose_at, shape_reach)

SPHERE = kc.constant(0)
BOX = kc.constant(1)
MESH = kc.constant(3)
CAPSULE = kc.constant(4)
FAR = kc.constant(1.0e30)
NO_HIT = kc.constant(2.0)
#: a segment/edge feature must be this much closer [m] than the point features to be the closest
EDGE_TIE = kc.constant(1.0e-5)
#: the impact is taken this far [m] before touching, where the normals are those of the gap (two
#: equal boxes meeting face to face touch corner to corner, and a corner on a corner has no normal)
TOI_GAP = kc.constant(1.0e-5)
#: overlap [m] an impact of two single spheres leaves as it is, and the share of a deeper one it takes out
#: a step, at most RECOVERY_SPEED [m/s] (:func:`recovery_speed`)
OVERLAP_SLOP = kc.constant(2.0e-4)
RECOVERY_RATE = kc.constant(0.2)
RECOVERY_SPEED = kc.constant(0.2)
#: a body whose lowest point is this close [m] to the ground rests on it in a pair's impulse (:func:`ground_support`)
SUPPORT_GAP = kc.constant(1.0e-3)
#: two hulls take a face axis for their impact normal when it separates them by this much [m] more than
#: the closest feature's normal does
HULL_FACE_TOL = kc.constant(1.0e-3)


@kc.func
def body_path(b: int, body_q0: kc.array(dtype=kc.transform), body_qd0: kc.array(dtype=kc.spatial_vector),
              body_f: kc.array(dtype=kc.spatial_vector), body_com: kc.array(dtype=kc.vec3),
              inv_mass: kc.array(dtype=float), inertia: kc.array(dtype=kc.mat33),
              inv_inertia: kc.array(dtype=kc.mat33), gravity: kc.vec3, dt: float):
    """The step's path of body ``b``: (centre of mass x0 [m], rotation q0, semi-implicit velocity
    v1 [m/s], world midpoint angular velocity w [rad/s], linear acceleration a [m/s^2])."""
    tf = body_q0[b]
    q0 = kc.transform_get_rotation(tf)
    qd = body_qd0[b]
    f = body_f[b]
    a = kc.spatial_top(f) * inv_mass[b] + gravity
    w0 = kc.quat_rotate_inv(q0, kc.spatial_bottom(qd))
    tau = kc.quat_rotate_inv(q0, kc.spatial_bottom(f))
    wm = angular_midpoint(w0, tau, inertia[b], inv_inertia[b], dt)
    return kc.transform_point(tf, body_com[b]), q0, kc.spatial_top(qd) + a * dt, kc.quat_rotate(q0, wm), a


@kc.func
def spin_at(b: int, body_q0: kc.array(dtype=kc.transform), body_qd0: kc.array(dtype=kc.spatial_vector),
            body_f: kc.array(dtype=kc.spatial_vector), inertia: kc.array(dtype=kc.mat33),
            inv_inertia: kc.array(dtype=kc.mat33), q_hit: kc.quat, tau: float) -> kc.vec3:
    """World angular velocity [rad/s] of body ``b`` at rotation ``q_hit``, ``tau`` [s] into the step: the
    one with the body's angular momentum then (start value plus torque x tau), so that the impact
    impulse changes the angular momentum by exactly its moment."""
    r0 = kc.quat_to_matrix(kc.transform_get_rotation(body_q0[b]))
    r1 = kc.quat_to_matrix(q_hit)
    momentum = r0 * inertia[b] * (kc.transpose(r0) * kc.spatial_bottom(body_qd0[b])) + kc.spatial_bottom(body_f[b]) * tau
    return r1 * inv_inertia[b] * (kc.transpose(r1) * momentum)


@kc.func
def hit_approach(lo: int, hi: int, s: float, n: kc.vec3, p: kc.vec3,
                 body_q0: kc.array(dtype=kc.transform), body_qd0: kc.array(dtype=kc.spatial_vector),
                 body_f: kc.array(dtype=kc.spatial_vector), body_com: kc.array(dtype=kc.vec3),
                 inv_mass: kc.array(dtype=float), inertia: kc.array(dtype=kc.mat33),
                 inv_inertia: kc.array(dtype=kc.mat33), gravity: kc.vec3, dt: float) -> float:
    """Speed [m/s] at which body ``lo``'s surface approaches ``hi``'s at the impact (s, n, p)."""
    xa, qa, va, wa, aa = body_path(lo, body_q0, body_qd0, body_f, body_com, inv_mass, inertia, inv_inertia,
                                   gravity, dt)
    xb, qb, vb, wb, ab = body_path(hi, body_q0, body_qd0, body_f, body_com, inv_mass, inertia, inv_inertia,
                                   gravity, dt)
    tau = s * dt
    qa_hit = rotate_by(qa, wa, tau)
    qb_hit = rotate_by(qb, wb, tau)
    wa_hit = spin_at(lo, body_q0, body_qd0, body_f, inertia, inv_inertia, qa_hit, tau)
    wb_hit = spin_at(hi, body_q0, body_qd0, body_f, inertia, inv_inertia, qb_hit, tau)
    u = (kc.spatial_top(body_qd0[lo]) + aa * tau + kc.cross(wa_hit, p - xa - va * tau)
         - kc.spatial_top(body_qd0[hi]) - ab * tau - kc.cross(wb_hit, p - xb - vb * tau))
    return -kc.dot(n, u)


@kc.func
def pair_closest(ka: int, pos_a: kc.vec3, rot_a: kc.mat33, scale_a: kc.vec3,
                 kb: int, pos_b: kc.vec3, rot_b: kc.mat33, scale_b: kc.vec3):
    """Closest feature of shapes A and B (world poses): (distance [m], unit normal from B to A, point on A).

    A segment or edge feature (f >= 16, after every point feature) wins only when it is closer by
    EDGE_TIE: two boxes meeting face to face also touch edge to edge, and the separating-axis
    test may then report an edge axis (a normal across the faces) at the same distance."""
    best = float(FAR)
    best_n = kc.vec3(0.0, 1.0, 0.0)
    best_p = pos_a
    no_ground = kc.vec3(0.0, 1.0, 0.0)
    for f in range(FEATURES):
        d, n, p = feature_distance(f, ka, pos_a, rot_a, scale_a, kb, pos_b, rot_b, scale_b, no_ground, 0.0)
        margin = float(0.0)
        if f >= 16:
            margin = EDGE_TIE
        if d < best - margin:
            best = d
            best_n = n
            best_p = p
    return best, best_n, best_p


@kc.func
def pair_manifold_point(ka: int, pos_a: kc.vec3, rot_a: kc.mat33, scale_a: kc.vec3,
                        kb: int, pos_b: kc.vec3, rot_b: kc.mat33, scale_b: kc.vec3, d_min: float) -> kc.vec3:
    """Centroid [m] of the contact points of the features within MANIFOLD_TOL of the closest one.

    Point features (corners, capsule ends, sphere centres) when any is that close, else the
    segment and edge features: where both exist (two parallel capsules) a segment feature
    repeats one of the points and would pull the centroid off the middle."""
    points = kc.vec3(0.0, 0.0, 0.0)
    n_points = float(0.0)
    segments = kc.vec3(0.0, 0.0, 0.0)
    n_segments = float(0.0)
    no_ground = kc.vec3(0.0, 1.0, 0.0)
    for f in range(FEATURES):
        d, n, p = feature_distance(f, ka, pos_a, rot_a, scale_a, kb, pos_b, rot_b, scale_b, no_ground, 0.0)
        if d < d_min + MANIFOLD_TOL:
            if f < 16:
                points = points + p
                n_points = n_points + 1.0
            else:
                segments = segments + p
                n_segments = n_segments + 1.0
    out = segments / kc.max(n_segments, 1.0)
    if n_points > 0.0:
        out = points / n_points
    return out


@kc.func
def swept_pair_closest(is_mesh: int, ka: int, pos_a: kc.vec3, rot_a: kc.mat33, scale_a: kc.vec3,
                       mesh_a: kc.uint64, info_a: kc.vec3, kb: int, pos_b: kc.vec3, rot_b: kc.mat33,
                       scale_b: kc.vec3, mesh_b: kc.uint64, info_b: kc.vec3, lookahead: float):
    """Closest feature of shapes A and B (world poses): (distance [m], unit normal from B to A, point on A);
    ``is_mesh`` 1 when either is a mesh (sim/toi_mesh_pairs.py ``mesh_pair_closest``, its signed distances
    searched ``lookahead`` [m] around), else :func:`pair_closest`."""
    d = float(0.0)
    n = kc.vec3(0.0, 1.0, 0.0)
    p = pos_a
    if is_mesh != 0:
        d, n, p = mesh_pair_closest(ka, pos_a, rot_a, scale_a, mesh_a, info_a, kb, pos_b, rot_b, scale_b, mesh_b,
                                    info_b, lookahead)
    else:
        d, n, p = pair_closest(ka, pos_a, rot_a, scale_a, kb, pos_b, rot_b, scale_b)
    return d, n, p


@kc.func
def pair_time_of_impact(is_mesh: int, ka: int, scale_a: kc.vec3, off_a: kc.vec3, rl_a: kc.mat33, mesh_a: kc.uint64,
                        info_a: kc.vec3, xa: kc.vec3, qa: kc.quat, va: kc.vec3, wa: kc.vec3,
                        kb: int, scale_b: kc.vec3, off_b: kc.vec3, rl_b: kc.mat33, mesh_b: kc.uint64,
                        info_b: kc.vec3, xb: kc.vec3, qb: kc.quat, vb: kc.vec3, wb: kc.vec3, dt: float,
                        s0: float):
    """First time of impact of shapes A and B on their paths at or after ``s0``, as a fraction s of the step
    (NO_HIT when none): (s, depth at s [m] (< 0: overlap), normal from B to A, point on A).

    ``is_mesh``: 1 when either shape is a mesh (``mesh``, ``info``: sim/toi_mesh_body.py
    ``mesh_shape_info``; the features of sim/toi_mesh_pairs.py, queried only once the shapes'
    bounding balls are near: their distance is a lower bound and cheap), else 0 (the primitives'
    features, :func:`pair_closest`).  ``off``: the shape's position relative to its centre of mass,
    body frame; ``rl`` its rotation in the body frame; (x, q, v, w) the body's path (see
    :func:`body_path`).  Conservative advancement on both paths, then two Newton steps on the active
    feature."""
    rad_a = shape_radius(ka, scale_a, info_a)
    rad_b = shape_radius(kb, scale_b, info_b)
    bound = (kc.length(va - vb) + kc.length(wa) * (kc.length(off_a) + rad_a)
             + kc.length(wb) * (kc.length(off_b) + rad_b)) * dt
    look = bound + LOOKAHEAD
    # (meshes) while the bounding balls are farther apart than this, their distance is the step's lower bound
    ball_gap = 0.1 * kc.min(rad_a, rad_b)
    s = s0
    done = int(0)  # converged: the remaining iterations evaluate nothing
    for _k in range(CA_ITERATIONS):
        if s <= 1.0 and done == 0:
            x_a, q_a, pa, ra = pose_at(xa, qa, va, wa, s * dt, off_a, rl_a)
            x_b, q_b, pb, rb = pose_at(xb, qb, vb, wb, s * dt, off_b, rl_b)
            d = float(0.0)
            near = int(1)
            if is_mesh != 0:
                d = kc.length(pa - pb) - rad_a - rad_b
                if d >= ball_gap:
                    near = 0
            if near != 0:
                dm, nm, pm = swept_pair_closest(is_mesh, ka, pa, ra, scale_a, mesh_a, info_a, kb, pb, rb, scale_b,
                                                mesh_b, info_b, look)
                d = dm
            if d > CONTACT_TOL:
                if bound > 0.0:
                    s = s + (d - TOI_GAP) / bound  # never closer than TOI_GAP: outside normals
                else:
                    s = 2.0
            else:
                done = 1
    hit_s = float(NO_HIT)
    depth = float(0.0)
    n_out = kc.vec3(0.0, 1.0, 0.0)
    p_out = xa
    if s <= 1.0:
        x_a, q_a, pa, ra = pose_at(xa, qa, va, wa, s * dt, off_a, rl_a)
        x_b, q_b, pb, rb = pose_at(xb, qb, vb, wb, s * dt, off_b, rl_b)
        d, n, p = swept_pair_closest(is_mesh, ka, pa, ra, scale_a, mesh_a, info_a, kb, pb, rb, scale_b, mesh_b,
                                     info_b, look)
        if d <= CONTACT_TOL:
            # Newton on the active feature: lands on the gap TOI_GAP, smooth in the inputs
            for _newton in range(2):
                x_a, q_a, pa, ra = pose_at(xa, qa, va, wa, s * dt, off_a, rl_a)
                x_b, q_b, pb, rb = pose_at(xb, qb, vb, wb, s * dt, off_b, rl_b)
                d, n, p = swept_pair_closest(is_mesh, ka, pa, ra, scale_a, mesh_a, info_a, kb, pb, rb, scale_b,
                                             mesh_b, info_b, look)
                h = s * dt * 0.5
                wa_c = wa / (1.0 + kc.dot(wa, wa) * h * h)
                wb_c = wb / (1.0 + kc.dot(wb, wb) * h * h)
                rate = kc.dot(n, va + kc.cross(wa_c, p - x_a) - vb - kc.cross(wb_c, p - x_b)) * dt
                if rate < 0.0:
                    s = kc.min(kc.max(s - (d - TOI_GAP) / rate, s0), 1.0)
            x_a, q_a, pa, ra = pose_at(xa, qa, va, wa, s * dt, off_a, rl_a)
            x_b, q_b, pb, rb = pose_at(xb, qb, vb, wb, s * dt, off_b, rl_b)
            d, n, p = swept_pair_closest(is_mesh, ka, pa, ra, scale_a, mesh_a, info_a, kb, pb, rb, scale_b, mesh_b,
                                         info_b, look)
            hit_s = s
            depth = d
            n_out = n
            if is_mesh != 0:
                p_out = mesh_pair_manifold_point(ka, pa, ra, scale_a, mesh_a, info_a, kb, pb, rb, scale_b, mesh_b,
                                                 info_b, d, look)
            else:
                p_out = pair_manifold_point(ka, pa, ra, scale_a, kb, pb, rb, scale_b, d)
    return hit_s, depth, n_out, p_out


@kc.func
def pair_impulse(n: kc.vec3, u: kc.vec3, ra: kc.vec3, rb: kc.vec3, ma_inv: float, ia_inv: kc.mat33,
                 mb_inv: float, ib_inv: kc.mat33, e: float, mu: float) -> kc.vec3:
    """Impulse [N s] on body A (B takes its negative) at a contact where A's material point moves at
    ``u`` [m/s] relative to B's; ``n`` from B to A, arms ``ra``/``rb`` [m] from the centres of mass,
    world inverse inertias; restitution ``e``, Coulomb ``mu`` (sim/toi.py :func:`contact_impulse`
    with both bodies' contact masses)."""
    return contact_impulse(n, u, contact_mass(ra, ma_inv, ia_inv) + contact_mass(rb, mb_inv, ib_inv), e, mu)


@kc.func
def pair_rest_impulse(n: kc.vec3, u: kc.vec3, jimp: kc.vec3, k: kc.mat33, a_rel: kc.vec3, rest: float,
                      depth: float, dt: float) -> kc.vec3:
    """Normal impulse [N s] on body A (B takes its negative) after the impact impulse ``jimp`` [N s] (``u``
    [m/s]: A's contact point relative to B's before it; ``n`` from B to A; ``k`` the pair's contact mass
    [1/kg]), inelastic and frictionless: what the rest of the step's relative acceleration ``a_rel``
    [m/s^2] (A's less B's, over ``rest`` [s]) presses into the contact is stopped (the second solve of
    sim/toi_shapes.py's sweep, for two bodies: two single spheres have no penalty contact to hold them, and
    a sphere on a sphere sank 0.013 mm a step without it), and a pair caught overlapping by ``-depth`` [m]
    leaves at :func:`recovery_speed`.  No friction: the impact took it.  Zero for two free bodies that
    touch from outside (``a_rel`` = 0, no overlap): the impact's own gradients are kept."""
    j = kc.vec3(0.0, 0.0, 0.0)
    rec = recovery_speed(depth, dt)
    if rec > 0.0 or kc.dot(n, a_rel) < 0.0:
        j = contact_impulse(n, u + k * jimp + a_rel * rest - n * rec, k, 0.0, 0.0)
    return j


@kc.func
def recovery_speed(depth: float, dt: float) -> float:
    """Separating speed [m/s] that two spheres overlapping by ``-depth`` [m] at their impact leave with:
    RECOVERY_RATE of the overlap beyond OVERLAP_SLOP a step (``dt`` [s]), at most RECOVERY_SPEED.  A speed
    and not a position shift: a body resting on the ground, moved, would go into it (its sweep stops
    velocities only)."""
    out = float(0.0)
    if depth < -OVERLAP_SLOP:
        out = kc.min(RECOVERY_RATE * (-depth - OVERLAP_SLOP) / dt, RECOVERY_SPEED)
    return out


@kc.func
def ground_gap(b: int, x: kc.vec3, rot: kc.mat33, first: kc.array(dtype=int), count: kc.array(dtype=int),
               shape_list: kc.array(dtype=int), body_com: kc.array(dtype=kc.vec3), shape_type: kc.array(dtype=int),
               shape_pos: kc.array(dtype=kc.vec3), shape_rot: kc.array(dtype=kc.mat33),
               shape_scale: kc.array(dtype=kc.vec3), shape_mesh: kc.array(dtype=kc.uint64),
               shape_info: kc.array(dtype=kc.vec3), ground_normal: kc.vec3, ground_offset: float) -> float:
    """Height [m] of body ``b``'s lowest point (centre of mass at ``x``, rotation ``rot``) above the ground
    plane ``ground_normal . x = ground_offset``."""
    low = float(FAR)
    for k in range(count[b]):
        sh = shape_list[first[b] + k]
        pos = x + rot * (shape_pos[sh] - body_com[b])
        r = rot * shape_rot[sh]
        if shape_type[sh] == MESH:
            low = kc.min(low, mesh_lowest(shape_mesh[sh], int(shape_info[sh][0]), pos, r, ground_normal))
        else:
            low = kc.min(low, shape_lowest(shape_type[sh], pos, r, shape_scale[sh], ground_normal))
    return low - ground_offset


@kc.func
def ground_support(b: int, x: kc.vec3, rot: kc.mat33, press: kc.vec3, first: kc.array(dtype=int),
                   count: kc.array(dtype=int), shape_list: kc.array(dtype=int), body_com: kc.array(dtype=kc.vec3),
                   shape_type: kc.array(dtype=int), shape_pos: kc.array(dtype=kc.vec3),
                   shape_rot: kc.array(dtype=kc.mat33), shape_scale: kc.array(dtype=kc.vec3),
                   shape_mesh: kc.array(dtype=kc.uint64), shape_info: kc.array(dtype=kc.vec3), ground: int,
                   ground_normal: kc.vec3, ground_offset: float) -> float:
    """1.0 when body ``b`` rests on the ground (its lowest point within SUPPORT_GAP [m]) and a pair's impulse
    along ``press`` pushes it into the ground, else 0.0 (:func:`supported_mass`)."""
    out = float(0.0)
    if ground != 0 and kc.dot(press, ground_normal) < 0.0:
        if ground_gap(b, x, rot, first, count, shape_list, body_com, shape_type, shape_pos, shape_rot, shape_scale,
                      shape_mesh, shape_info, ground_normal, ground_offset) < SUPPORT_GAP:
            out = 1.0
    return out


@kc.func
def supported_mass(k: kc.mat33, support: float, ground_normal: kc.vec3) -> kc.mat33:
    """A body's contact mass ``k`` [1/kg] (:func:`sim.toi.contact_mass`) as a pair's impulse sees it when
    ``support`` is 1 (:func:`ground_support`): nothing along the ground normal, which the ground takes.

    Why: the pair's impulse treated a box lying on the ground as free, so half of a sphere's impact went
    into the box, which the ground sweep then stopped, and the sphere kept sinking (0.03 m/s with three
    spheres stacked on a box: the lowest sphere's impacts come faster than the resting speed, where the
    penalty contact alone does not hold it)."""
    proj = kc.identity(3, dtype=float) - kc.outer(ground_normal, ground_normal) * support
    return proj * k * proj


@kc.func
def ground_share(j: kc.vec3, v: kc.vec3, inv_mass: float, ground_normal: kc.vec3, mu: float) -> kc.vec3:
    """The part [N s] of a pair's impulse ``j`` on a body resting on the ground (velocity ``v`` [m/s]) that
    moves it: the ground takes what presses into it and, with Coulomb ``mu``, gives the friction of that
    press against the body's sliding after ``j`` (as its sweep would have; without it a pushed hull stack's
    bottom cube slid on by the friction of the cube above).  The friction acts at the centre of mass."""
    jn = kc.dot(ground_normal, j)
    out = j
    if jn < 0.0:
        out = j - ground_normal * jn
        v1 = v + out * inv_mass
        vt = v1 - ground_normal * kc.dot(ground_normal, v1)
        ft = vt * (-1.0 / inv_mass)
        ft_len = kc.length(ft)
        if ft_len > -mu * jn:
            ft = ft * (-mu * jn / ft_len)
        out = out + ft
    return out


@kc.func
def supported(v: kc.vec3, support: float, ground_normal: kc.vec3) -> kc.vec3:
    """Velocity or acceleration ``v`` of a body less its part into the ground when ``support`` is 1 (the
    ground stops it: :func:`ground_support`)."""
    return v - ground_normal * (support * kc.min(kc.dot(ground_normal, v), 0.0))


@kc.func
def compound_time_of_impact(lo: int, hi: int, first: kc.array(dtype=int), count: kc.array(dtype=int),
                                shape_list: kc.array(dtype=int), body_com: kc.array(dtype=kc.vec3),
                                shape_type: kc.array(dtype=int), shape_pos: kc.array(dtype=kc.vec3),
                                shape_rot: kc.array(dtype=kc.mat33), shape_scale: kc.array(dtype=kc.vec3),
                                shape_mesh: kc.array(dtype=kc.uint64), shape_info: kc.array(dtype=kc.vec3),
                                shape_convex: kc.array(dtype=int), xa: kc.vec3, qa: kc.quat, va: kc.vec3, wa: kc.vec3,
                                xb: kc.vec3, qb: kc.quat, vb: kc.vec3, wb: kc.vec3, dt: float, s0: float):
    """First time of impact of bodies ``lo`` and ``hi`` (each one or several shapes) on their paths at or after
    ``s0`` (the later of their last impacts in this step: before it one of them is on a virtual path): the
    earliest over their shape pairs (pairs with a mesh: sim/toi_mesh_pairs.py; ``shape_info``:
    sim/toi_mesh_body.py ``mesh_shape_info``).  (s (NO_HIT when none), depth, normal from hi to lo,
    point on lo, lo's shape, hi's shape)."""
    best = float(NO_HIT)
    depth = float(0.0)
    n = kc.vec3(0.0, 1.0, 0.0)
    p = xa
    s_lo = shape_list[first[lo]]
    s_hi = shape_list[first[hi]]
    for ka in range(count[lo]):
        sa = shape_list[first[lo] + ka]
        off_a = shape_pos[sa] - body_com[lo]
        for kb in range(count[hi]):
            sb = shape_list[first[hi] + kb]
            off_b = shape_pos[sb] - body_com[hi]
            s = float(NO_HIT)
            d = float(0.0)
            nn = kc.vec3(0.0, 1.0, 0.0)
            pp = xa
            is_mesh = int(0)
            if shape_type[sa] == MESH or shape_type[sb] == MESH:
                is_mesh = 1
            s, d, nn, pp = pair_time_of_impact(is_mesh, shape_type[sa], shape_scale[sa], off_a, shape_rot[sa],
                                               shape_mesh[sa], shape_info[sa], xa, qa, va, wa, shape_type[sb],
                                               shape_scale[sb], off_b, shape_rot[sb], shape_mesh[sb], shape_info[sb],
                                               xb, qb, vb, wb, dt, s0)
            if s <= 1.0 and shape_convex[sa] + shape_convex[sb] == 2:
                # two hulls: the closest feature's normal unless a face axis separates them better (on coplanar
                # faces a corner's closest face may be a side face, along which the hulls overlap by a whole
                # width; sim/collide_hull_pairs.py).  Edge or vertex first, the feature's normal separates them.
                x_a, q_a, pa, ra = pose_at(xa, qa, va, wa, s * dt, off_a, shape_rot[sa])
                x_b, q_b, pb, rb = pose_at(xb, qb, vb, wb, s * dt, off_b, shape_rot[sb])
                nva = int(shape_info[sa][0])
                nvb = int(shape_info[sb][0])
                sep = hull_pair_separation(shape_mesh[sa], nva, int(shape_info[sa][1]), pa, ra, shape_mesh[sb], nvb,
                                           int(shape_info[sb][1]), pb, rb)
                if hull_separation_along(shape_mesh[sa], nva, pa, ra, shape_mesh[sb], nvb, pb, rb, nn) < (
                        sep[3] - HULL_FACE_TOL):
                    nn = kc.vec3(sep[0], sep[1], sep[2])
            if s < best:
                best = s
                depth = d
                n = nn
                p = pp
                s_lo = sa
                s_hi = sb
    return best, depth, n, p, s_lo, s_hi


@kc.func
def swept_body_reach(first: int, count: int, shape_list: kc.array(dtype=int), shape_type: kc.array(dtype=int),
                     shape_pos: kc.array(dtype=kc.vec3), shape_scale: kc.array(dtype=kc.vec3),
                     shape_info: kc.array(dtype=kc.vec3), com: kc.vec3) -> float:
    """Bound [m] on the distance of any point of the body's shapes (meshes too) from its centre of mass."""
    return kc.max(body_reach(first, count, shape_list, shape_type, shape_pos, shape_scale, com),
                  mesh_body_reach(first, count, shape_list, shape_pos, shape_info, com))


@kc.func
def pair_start(lo: int, hi: int, s_last: kc.array(dtype=float)) -> float:
    """Fraction of the step from which bodies ``lo`` and ``hi`` are both on their real paths: the later of
    their last impacts of this step (before it, one of them follows its virtual start's path)."""
    return kc.max(s_last[lo], s_last[hi])


@kc.func
def struck(b: int, partner: kc.array(dtype=int)) -> int:
    """1 when body ``b`` and its partner name each other (the apply launch gave them their impact), else 0."""
    out = int(0)
    p = partner[b]
    if p >= 0:
        if partner[p] == b:
            out = 1
    return out


@kc.kernel
def body_pair_toi_find_kernel(
        body_q0: kc.array(dtype=kc.transform), body_qd0: kc.array(dtype=kc.spatial_vector),
        body_f: kc.array(dtype=kc.spatial_vector), body_com: kc.array(dtype=kc.vec3),
        inv_mass: kc.array(dtype=float), inertia: kc.array(dtype=kc.mat33), inv_inertia: kc.array(dtype=kc.mat33),
        body_first: kc.array(dtype=int), body_shape_count: kc.array(dtype=int), shape_list: kc.array(dtype=int),
        sphere_body: kc.array(dtype=int), sphere_pairs: int, gravity: kc.vec3, dt: float,
        shape_type: kc.array(dtype=int), shape_pos: kc.array(dtype=kc.vec3),
        shape_rot: kc.array(dtype=kc.mat33), shape_scale: kc.array(dtype=kc.vec3), resting_speed: float,
        shape_mesh: kc.array(dtype=kc.uint64), shape_info: kc.array(dtype=kc.vec3),
        shape_convex: kc.array(dtype=int), grid: kc.uint64, grid_bodies: kc.array(dtype=int),
        body_q_grid: kc.array(dtype=kc.transform), max_reach: float, speed_bound: kc.array(dtype=float),
        s_last: kc.array(dtype=float), first_pass: int, partner_prev: kc.array(dtype=int),
        s_best_prev: kc.array(dtype=float),
        partner: kc.array(dtype=int), found: kc.array(dtype=int), s_best: kc.array(dtype=float)):
    """Each swept body's earliest impact partner on the rest of the step (-1: none), ties to the lower index.

    ``body_q0``/``body_qd0``: the start of this pass (``state_in`` or the previous pass's virtual start);
    ``body_q_grid``: the poses the grid was built from (``state_in``'s).  ``found[0]`` counts the bodies with
    a partner.  ``partner_prev``, ``s_best_prev``: the previous pass's partners and their times of impact
    (unread in the first pass, ``first_pass`` 1, which sweeps every pair).  Later passes sweep again only the
    pairs with a body the previous pass struck (its two bodies named each other): every other pair is where
    the bodies were, so its time of impact is the same.  A body keeps its previous partner when neither was
    struck, else it sweeps all its pairs again (its second earliest is not kept).  ``s_best``: each body's
    time of impact with ``partner`` (NO_HIT: none)."""
    i = kc.tid()
    other = int(-1)
    best = float(NO_HIT)
    if body_shape_count[i] > 0:
        every = first_pass
        if first_pass == 0:
            if struck(i, partner_prev) != 0:
                every = 1
            elif partner_prev[i] >= 0:
                if struck(partner_prev[i], partner_prev) != 0:
                    every = 1
                else:
                    other = partner_prev[i]
                    best = s_best_prev[i]
        com_i = kc.transform_point(body_q_grid[i], body_com[i])
        reach_i = swept_body_reach(body_first[i], body_shape_count[i], shape_list, shape_type, shape_pos, shape_scale,
                                   shape_info, body_com[i])
        # the grid holds the swept bodies' centres of mass at the step's start (BodyPairToiShapes)
        radius = reach_i + max_reach + 2.0 * speed_bound[0] * dt
        query = kc.hash_grid_query(grid, com_i, radius)
        j = int(0)
        while kc.hash_grid_query_next(query, j):
            bj = grid_bodies[j]
            both_spheres = int(0)
            if sphere_body[i] != 0 and sphere_body[bj] != 0:
                both_spheres = 1
            # two single spheres: here with sphere_pairs (several impacts per step), else sim/toi.py
            changed = every
            if changed == 0:
                changed = struck(bj, partner_prev)
            if bj != i and body_shape_count[bj] > 0 and (both_spheres == 0 or sphere_pairs != 0) and changed != 0:
                # the lower body index is A in both threads: bit-identical answers
                lo = kc.min(i, bj)
                hi = kc.max(i, bj)
                s0 = pair_start(lo, hi, s_last)
                xa, qa, va, wa, aa = body_path(lo, body_q0, body_qd0, body_f, body_com, inv_mass, inertia,
                                               inv_inertia, gravity, dt)
                xb, qb, vb, wb, ab = body_path(hi, body_q0, body_qd0, body_f, body_com, inv_mass, inertia,
                                               inv_inertia, gravity, dt)
                reach_lo = swept_body_reach(body_first[lo], body_shape_count[lo], shape_list, shape_type,
                                            shape_pos, shape_scale, shape_info, body_com[lo])
                reach_hi = swept_body_reach(body_first[hi], body_shape_count[hi], shape_list, shape_type,
                                            shape_pos, shape_scale, shape_info, body_com[hi])
                # bounding balls about the centres of mass that cannot meet in the rest of the step: no sweep
                closing = (kc.length(va - vb) + kc.length(wa) * reach_lo + kc.length(wb) * reach_hi) * dt * (1.0 - s0)
                gap0 = kc.length((xa + va * (s0 * dt)) - (xb + vb * (s0 * dt))) - reach_lo - reach_hi
                s = float(NO_HIT)
                depth = float(0.0)
                n = kc.vec3(0.0, 1.0, 0.0)
                p = xa
                s_lo = int(0)
                s_hi = int(0)
                if gap0 <= closing:
                    s, depth, n, p, s_lo, s_hi = compound_time_of_impact(
                        lo, hi, body_first, body_shape_count, shape_list, body_com, shape_type, shape_pos,
                        shape_rot, shape_scale, shape_mesh, shape_info, shape_convex, xa, qa, va, wa, xb, qb, vb,
                        wb, dt, s0)
                if s < best or (s == best and s <= 1.0 and bj < other):
                    # impacts only: slower contacts (resting, sliding) are the penalty contacts; two spheres have
                    # none, so every approach of theirs is an impact (as in sim/toi.py)
                    threshold = resting_speed
                    if both_spheres != 0:
                        threshold = 1.0e-3 * resting_speed
                    if hit_approach(lo, hi, s, n, p, body_q0, body_qd0, body_f, body_com, inv_mass, inertia,
                                    inv_inertia, gravity, dt) >= threshold:
                        best = s
                        other = bj
    partner[i] = other
    s_best[i] = best
    if other >= 0:
        kc.atomic_add(found, 0, 1)


@kc.kernel
def body_pair_toi_apply_kernel(
        body_q0: kc.array(dtype=kc.transform), body_qd0: kc.array(dtype=kc.spatial_vector),
        body_f: kc.array(dtype=kc.spatial_vector), body_com: kc.array(dtype=kc.vec3),
        inv_mass: kc.array(dtype=float), inertia: kc.array(dtype=kc.mat33), inv_inertia: kc.array(dtype=kc.mat33),
        body_first: kc.array(dtype=int), body_shape_count: kc.array(dtype=int), shape_list: kc.array(dtype=int),
        gravity: kc.vec3, dt: float,
        shape_type: kc.array(dtype=int), shape_pos: kc.array(dtype=kc.vec3),
        shape_rot: kc.array(dtype=kc.mat33), shape_scale: kc.array(dtype=kc.vec3),
        shape_material: kc.array(dtype=int), material_restitution: kc.array(dtype=float),
        material_mu: kc.array(dtype=float),
        shape_mesh: kc.array(dtype=kc.uint64), shape_info: kc.array(dtype=kc.vec3),
        shape_convex: kc.array(dtype=int), partner: kc.array(dtype=int), s_last: kc.array(dtype=float),
        ground: int, ground_normal: kc.vec3, ground_offset: float, ground_material: int,
        body_q_start: kc.array(dtype=kc.transform), body_qd_start: kc.array(dtype=kc.spatial_vector),
        s_last_out: kc.array(dtype=float)):
    """The impact of each body whose earliest partner (``partner``, from :func:`body_pair_toi_find_kernel`) has
    it as its earliest too, as a new virtual start; every other body keeps its start of this pass."""
    i = kc.tid()
    q_out = body_q0[i]
    qd_out = body_qd0[i]
    s_out = s_last[i]
    other = partner[i]
    if struck(i, partner) != 0:
        lo = kc.min(i, other)
        hi = kc.max(i, other)
        xa, qa, va, wa, aa = body_path(lo, body_q0, body_qd0, body_f, body_com, inv_mass, inertia, inv_inertia,
                                       gravity, dt)
        xb, qb, vb, wb, ab = body_path(hi, body_q0, body_qd0, body_f, body_com, inv_mass, inertia, inv_inertia,
                                       gravity, dt)
        s, depth, n, p, s_lo, s_hi = compound_time_of_impact(
            lo, hi, body_first, body_shape_count, shape_list, body_com, shape_type, shape_pos, shape_rot,
            shape_scale, shape_mesh, shape_info, shape_convex, xa, qa, va, wa, xb, qb, vb, wb, dt,
            pair_start(lo, hi, s_last))
        s_out = s
        tau = s * dt
        no_offset = kc.vec3(0.0, 0.0, 0.0)
        xa_hit, qa_hit, pa, ra_rot = pose_at(xa, qa, va, wa, tau, no_offset, shape_rot[s_lo])
        xb_hit, qb_hit, pb, rb_rot = pose_at(xb, qb, vb, wb, tau, no_offset, shape_rot[s_hi])
        va_hit = kc.spatial_top(body_qd0[lo]) + aa * tau
        vb_hit = kc.spatial_top(body_qd0[hi]) + ab * tau
        arm_a = p - xa_hit
        arm_b = p - xb_hit
        rot_a = kc.quat_to_matrix(qa_hit)
        rot_b = kc.quat_to_matrix(qb_hit)
        ia_inv = rot_a * inv_inertia[lo] * kc.transpose(rot_a)
        ib_inv = rot_b * inv_inertia[hi] * kc.transpose(rot_b)
        wa_hit = spin_at(lo, body_q0, body_qd0, body_f, inertia, inv_inertia, qa_hit, tau)
        wb_hit = spin_at(hi, body_q0, body_qd0, body_f, inertia, inv_inertia, qb_hit, tau)
        # a body lying on the ground that the impulse presses into it: the ground takes that part
        fa = ground_support(lo, xa_hit, rot_a, n, body_first, body_shape_count, shape_list, body_com, shape_type,
                            shape_pos, shape_rot, shape_scale, shape_mesh, shape_info, ground, ground_normal,
                            ground_offset)
        fb = ground_support(hi, xb_hit, rot_b, -n, body_first, body_shape_count, shape_list, body_com, shape_type,
                            shape_pos, shape_rot, shape_scale, shape_mesh, shape_info, ground, ground_normal,
                            ground_offset)
        u = (supported(va_hit, fa, ground_normal) + kc.cross(wa_hit, arm_a) - supported(vb_hit, fb, ground_normal)
             - kc.cross(wb_hit, arm_b))
        k = (supported_mass(contact_mass(arm_a, inv_mass[lo], ia_inv), fa, ground_normal)
             + supported_mass(contact_mass(arm_b, inv_mass[hi], ib_inv), fb, ground_normal))
        ma = shape_material[s_lo]
        mb = shape_material[s_hi]
        e = 0.5 * (material_restitution[ma] + material_restitution[mb])
        mu = 0.5 * (material_mu[ma] + material_mu[mb])
        jimp = contact_impulse(n, u, k, e, mu)
        if (shape_type[s_lo] == SPHERE and shape_type[s_hi] == SPHERE and body_shape_count[lo] == 1
                and body_shape_count[hi] == 1):
            # two single spheres have no penalty contact to hold them (sim/collide_body_pairs.py): the impulse
            # holds them for the rest of the step too.  Not the others: their penalty contact holds them, and
            # a second impulse or an overlap recovery on top of it rocked a pushed hull stack (cubes kicked at
            # 0.3-0.9 rad/s until 1.8 s instead of resting by 1 s)
            a_rel = supported(aa, fa, ground_normal) - supported(ab, fb, ground_normal)
            jimp = jimp + pair_rest_impulse(n, u, jimp, k, a_rel, (1.0 - s) * dt, depth, dt)
        support = fa
        s_body = s_lo
        # this body's share
        x_hit = xa_hit
        q_hit = qa_hit
        v_hit = va_hit
        arm = arm_a
        inv_i = ia_inv
        w_hit = wa_hit
        a = aa
        if i == hi:
            jimp = -jimp
            support = fb
            s_body = s_hi
            x_hit = xb_hit
            q_hit = qb_hit
            v_hit = vb_hit
            w_hit = wb_hit
            arm = arm_b
            inv_i = ib_inv
            a = ab
        if support > 0.0:
            mu_g = 0.5 * (material_mu[ground_material] + material_mu[shape_material[s_body]])
            jimp = ground_share(jimp, v_hit, inv_mass[i], ground_normal, mu_g)
        v_new = v_hit + jimp * inv_mass[i]
        w_new = w_hit + inv_i * kc.cross(arm, jimp)
        # the virtual start from which the free step reproduces the impact (module docstring)
        v_rest = v_new + a * ((1.0 - s) * dt)
        x_start = x_hit - v_rest * tau
        q_start = rotate_by(q_hit, w_new, -tau)
        # the angular velocity at the virtual start that carries the angular momentum after the
        # impact, I_hit w_new (the free step keeps world angular momentum; w_new itself would not
        # be right for an asymmetric body turned back to q_start)
        rot_hit = kc.quat_to_matrix(q_hit)
        rot_start = kc.quat_to_matrix(q_start)
        # (less the torque of [0, s dt]: the free step applies the step's torque from the start)
        momentum = rot_hit * inertia[i] * (kc.transpose(rot_hit) * w_new) - kc.spatial_bottom(body_f[i]) * tau
        w_start = rot_start * inv_inertia[i] * (kc.transpose(rot_start) * momentum)
        q_out = body_frame_from_com(x_start, q_start, body_com[i])
        qd_out = kc.spatial_vector(v_new - a * tau, w_start)
    body_q_start[i] = q_out
    body_qd_start[i] = qd_out
    s_last_out[i] = s_out


class BodyPairToiShapes:
    """What :func:`body_pair_toi` needs of the model: the swept bodies' shape lists
    (``sim.toi_shapes.SweptBodyShapes``) and ``sphere_body`` (kc int (B,), 1 for a body that
    sim/toi.py steps (one sphere): two of those meet there).

    Broad phase: a ``geometry.HashGrid`` of the swept bodies' centres of mass (``grid``, ``grid_bodies``:
    the body of each grid point), rebuilt from ``state_in`` every step; a body queries the bodies within
    its reach, the largest reach (``max_reach`` [m], mesh shapes included) and twice the largest body
    speed times dt (``speed_bound``, which only grows, so that the adjoint's search is never smaller
    than the forward's).  ``sphere_pairs``: two single spheres meet here too (the solver's
    ``max_impacts > 1``: sim/toi.py takes one body-body impact per sphere and step), else in sim/toi.py."""

    def __init__(self, model, swept, sphere_body, grid_dim: int | None = None, sphere_pairs: bool = False):
        import math

        self.swept = swept
        self.sphere_pairs = bool(sphere_pairs)
        dev = model.device
        #: float (B,) zeros: no body has had an impact before the first pass
        self.no_impact = kc.zeros(model.body_count, dtype=float, device=dev)
        #: int (B,) zeros: the first pass's (unread) previous partners
        self.no_partner = kc.zeros(model.body_count, dtype=kc.int32, device=dev)
        self.sphere_body = kc.array(np.asarray(sphere_body, np.int32), dtype=kc.int32, device=dev)
        first, count, shapes = body_shape_lists(model, meshes=True)
        bodies = np.nonzero(count > 0)[0].astype(np.int32)
        self.body_count = len(bodies)
        self.grid_bodies = kc.array(bodies if len(bodies) else np.zeros(1, np.int32), dtype=kc.int32, device=dev)
        self.max_reach = float(max([_body_reach(model, shapes[first[b]:first[b] + count[b]], b) for b in bodies],
                                   default=0.0))
        self.centers = kc.zeros(max(self.body_count, 1), dtype=kc.vec3, device=dev)
        self.speed_bound = kc.zeros(1, dtype=float, device=dev)
        #: int (S,): 1 for convex mesh shapes on bodies (two of them touch along their pair's axis)
        self.shape_convex = kc.array(shape_convex_flags(model), dtype=kc.int32, device=dev)
        if grid_dim is None:
            grid_dim = int(min(128, max(8, 2 ** math.ceil(math.log2(max(1.0, 1.5 * self.body_count ** (1 / 3)))))))
        self.grid = geometry.HashGrid(grid_dim, grid_dim, grid_dim, device=dev)
        self.grid.reserve(max(self.body_count, 1))

    def rebuild(self, model, body_q):
        """Sort the swept bodies' centres of mass at ``body_q`` into the grid."""
        kc.launch(body_centers_kernel, dim=self.body_count, inputs=[self.grid_bodies, body_q, model.body_com],
                  outputs=[self.centers], device=model.device, record_tape=False)
        self.grid.build(self.centers, 2.1 * self.max_reach + 1.0e-6)


@kc.kernel
def body_centers_kernel(bodies: kc.array(dtype=int), body_q: kc.array(dtype=kc.transform),
                        body_com: kc.array(dtype=kc.vec3), centers: kc.array(dtype=kc.vec3)):
    i = kc.tid()
    b = bodies[i]
    centers[i] = kc.transform_point(body_q[b], body_com[b])


def _body_reach(model, shapes, b) -> float:
    """Bound [m] on the distance of body ``b``'s shapes (indices ``shapes``) from its centre of mass."""
    from .collide_body_pairs import shape_bounding_radius

    com = model.body_com.numpy()[b].astype(np.float64)
    pos = model.shape_pos.numpy().astype(np.float64)
    kind = model.shape_type.numpy()
    scale = model.shape_scale.numpy()
    reach = 0.0
    for s in shapes:
        if kind[s] == SHAPE_MESH:
            radius = float(np.linalg.norm(np.asarray(model.shape_mesh_points[s][0], np.float64), axis=1).max())
        else:
            radius = shape_bounding_radius(kind[s], scale[s])
        reach = max(reach, float(np.linalg.norm(pos[s] - com)) + radius * (1.0 + 1.0e-6))
    return reach


def needs_body_pair_toi(model, sphere_body, sphere_pairs: bool = False) -> bool:
    """True when at least two bodies are swept and one of them is not a sphere body of sim/toi.py
    (``sphere_body``: (B,) 1 for those), or, with ``sphere_pairs`` (two spheres meet here too), when
    at least two bodies are swept."""
    first, count, shapes = body_shape_lists(model, meshes=True)
    swept = np.nonzero(count > 0)[0]
    return len(swept) >= 2 and (sphere_pairs or any(not sphere_body[b] for b in swept))


class _StartState:
    """What the integrators read of ``state_in``: the virtual start of the step."""

    def __init__(self, body_q, body_qd):
        self.body_q = body_q
        self.body_qd = body_qd


class _ImpactPass:
    """One pass's arrays, kept on ``state_out`` so that a Tape replays each pass on its own: the partners found
    (int (B,)) and the time of impact with them (float (B,), ``s_best``), how many bodies found one (int (1,)), the virtual start after the pass (transform (B,),
    spatial_vector (B,)) and each body's last impact so far as a fraction of the step (float (B,))."""

    def __init__(self, model):
        n, dev, grad = model.body_count, model.device, model.requires_grad
        self.partner = kc.zeros(n, dtype=kc.int32, device=dev)
        self.found = kc.zeros(1, dtype=kc.int32, device=dev)
        self.body_q = kc.zeros(n, dtype=kc.transform, device=dev, requires_grad=grad)
        self.body_qd = kc.zeros(n, dtype=kc.spatial_vector, device=dev, requires_grad=grad)
        # the next pass's sweeps start at s_last: a time the impacts computed from the state, so it carries a
        # gradient (nonzero where a sweep is clamped to it) and the Tape has no gradless intermediate to warn about
        self.s_last = kc.zeros(n, dtype=float, device=dev, requires_grad=grad)
        self.s_best = kc.zeros(n, dtype=float, device=dev)


def _impact_passes(model, state_out, count: int):
    """``count`` :class:`_ImpactPass` es of ``state_out`` (made on first use, then reused)."""
    passes = getattr(state_out, "body_pair_toi_passes", None)
    if passes is None or passes[0].body_q.shape[0] != model.body_count:
        passes = []
        state_out.body_pair_toi_passes = passes
    while len(passes) < count:
        passes.append(_ImpactPass(model))
    return passes


def body_pair_toi(model, state_in, wrenches, state_out, dt: float, body_shape, pairs=None, max_impacts: int = 1):
    """Time-of-impact impulses between swept bodies, as a virtual start state (module docstring).

    Up to ``max_impacts`` passes (a runtime bound: one find and one apply launch each, stopped early when a
    pass finds no impact); each pass resolves every pair that is both bodies' earliest impact in the rest of
    the step, so every pass takes at least the step's earliest remaining impact.
    ``body_shape``: a :class:`BodyPairToiShapes` of the model (its grid is rebuilt here from
    ``state_in``); ``pairs``: unused (the penalty contacts' grid, which holds no mesh shapes).
    Returns an object with ``body_q``, ``body_qd`` (per-state arrays kept on ``state_out``, or
    ``state_in``'s own when nothing is hit) for the integrators to read in place of ``state_in``'s."""
    from .toi import body_speed_bound_kernel, resting_speed

    passes = _impact_passes(model, state_out, max_impacts)
    dev = model.device
    body_shape.rebuild(model, state_in.body_q)
    q, qd = state_in.body_q, state_in.body_qd
    s_last = body_shape.no_impact
    partner_prev, s_best_prev = body_shape.no_partner, body_shape.no_impact  # unread: the first pass sweeps all
    for k in range(max_impacts):
        # after an impact a body may be faster than at the start: the search radius grows with it
        kc.launch(body_speed_bound_kernel, dim=model.body_count,
                  inputs=[qd, wrenches, model.body_inv_mass, model.gravity, float(dt)],
                  outputs=[body_shape.speed_bound], device=dev, record_tape=False)
        out = passes[k]
        out.found.zero_()
        # the partners are decisions, not differentiated: not recorded (the apply launch replays them)
        kc.launch(body_pair_toi_find_kernel, dim=model.body_count,
                  inputs=[q, qd, wrenches, model.body_com, model.body_inv_mass, model.body_inertia,
                          model.body_inv_inertia, body_shape.swept.first, body_shape.swept.count,
                          body_shape.swept.shapes, body_shape.sphere_body, int(body_shape.sphere_pairs),
                          model.gravity, float(dt), model.shape_type, model.shape_pos, model.shape_rot,
                          model.shape_scale, resting_speed(model, dt), model.shape_mesh, body_shape.swept.info,
                          body_shape.shape_convex, body_shape.grid.id, body_shape.grid_bodies, state_in.body_q,
                          body_shape.max_reach, body_shape.speed_bound, s_last, int(k == 0), partner_prev,
                          s_best_prev],
                  outputs=[out.partner, out.found, out.s_best], device=dev, record_tape=False)
        if int(out.found.numpy()[0]) == 0:
            break
        kc.launch(body_pair_toi_apply_kernel, dim=model.body_count,
                  inputs=[q, qd, wrenches, model.body_com, model.body_inv_mass, model.body_inertia,
                          model.body_inv_inertia, body_shape.swept.first, body_shape.swept.count,
                          body_shape.swept.shapes, model.gravity, float(dt), model.shape_type, model.shape_pos,
                          model.shape_rot, model.shape_scale, model.shape_material, model.material_restitution,
                          model.material_mu, model.shape_mesh, body_shape.swept.info, body_shape.shape_convex,
                          out.partner, s_last, int(model.ground), model.ground_normal, model.ground_offset,
                          model.ground_material],
                  outputs=[out.body_q, out.body_qd, out.s_last], device=dev)
        q, qd, s_last, partner_prev, s_best_prev = out.body_q, out.body_qd, out.s_last, out.partner, out.s_best
    return _StartState(q, qd)


def warn_unswept_bodies(model, solver_name: str = "SolverSemiImplicit"):
    """Warn (once, at solver construction) about the contacts ``toi=True`` does not sweep: bodies with a
    shape other than a sphere, box, capsule or mesh have only penalty contacts with other bodies, so
    there they can tunnel and their bounce gradients depend on ``ke`` and ``dt``.  (Mesh bodies meet
    other bodies here since sim/toi_mesh_pairs.py.)  Returns the list of those body indices (none when
    the model has a single body)."""
    import warnings

    if model.body_count < 2 or model.shape_count == 0:
        return []
    shape_body = model.shape_body.numpy()
    shape_type = model.shape_type.numpy()
    other = []
    for b in range(model.body_count):
        mine = np.nonzero(shape_body == b)[0]
        if any(shape_type[s] not in (SHAPE_SPHERE, SHAPE_BOX, SHAPE_CAPSULE, SHAPE_MESH) for s in mine):
            other.append(b)
    if other:
        warnings.warn(f"{solver_name}(toi=True): body-body contacts not swept: {len(other)} bodies with a shape "
                      f"other than a sphere, box, capsule or mesh (indices {_first(other)}): their contacts with "
                      f"other bodies stay penalty contacts (they can pass through thin bodies, and those bounce "
                      f"gradients depend on ke and dt).", stacklevel=3)
    return other


def _first(ids, n: int = 5) -> str:
    return ", ".join(str(i) for i in ids[:n]) + (", ..." if len(ids) > n else "")
