"""Time-of-impact (continuous) contacts of particles and sphere bodies (kernels + launchers).

With ``SolverSemiImplicit(model, toi=True)`` a particle, or a body whose only shape is a
sphere, is not pushed out by penalty forces.  Instead the integrator sweeps the sphere
along the straight path of the step, ``x0 + s v1 dt`` for s in [0, 1] (``v1`` the velocity
after this step's forces), against the ground and every static plane, sphere and box
(and, for a sphere body, every other swept sphere body along the relative motion; both
work out the same impulse), and takes the earliest hit ``s``.  There it applies the impact impulse

    normal:   j_n = -(1 + e) v_n / w_n                 (e = 0 below the resting speed)
    friction: j_t = -K_t^-1 v_t, scaled back to |j_t| <= mu j_n   (K_t: :func:`friction_impulse`;
              v_t after the normal impulse: :func:`contact_impulse`)

(``w`` the effective inverse mass of the contact point along the direction) to the
velocity at the time of impact, ``v0 + s dt a``, adds the rest of the step's acceleration
``(1 - s) dt a`` (stopped by a second, inelastic impulse if it would press into the
surface: resting contact), and moves the rest of the step with the new velocity.  So a
hit at the very end of one step and one at the start of the next give the same state,
and the result is continuous in the initial conditions.  Because ``s`` is a smooth
function of the initial conditions, the gradient of a loss after a bounce is that of
the real bounce: for a ball dropped on the ground without gravity, d(final height) /
d(initial height) = -e, where a step-sampled penalty contact gives a value that depends
on the contact stiffness (DiffTaichi's observation, their appendix F).  Nothing tunnels:
the sweep sees a thin wall however far the body moves in one step.

Approach speeds below ``resting_speed`` (two steps of gravity) get no restitution, so a
resting ball stays on the ground instead of hopping by ``g dt^2`` each step.  A box is
swept as the box inflated by the radius (its edges and corners are square, not rounded:
a sphere glancing past an edge may hit up to (sqrt(3) - 1) r early; a sphere that starts
inside it by a rounding hair after an impact takes the nearest face's normal).  After a
bounce the rest of the step is swept again from the impact, up to MAX_IMPACTS impacts per
step (a ball in a narrow gap meets both walls within one step); for a sphere body the later
sweeps meet the static colliders only (not other bodies).  Static capsules and
meshes keep the penalty contact for particles; a sphere body's impacts with swept box, capsule
and compound bodies are sim/toi_body_pairs.py's; compound bodies, and sphere bodies when the
model has static meshes, are swept by sim/toi_shapes.py.
"""
from __future__ import annotations

import numpy as np

import kernelcore as kc

import geometry  # noqa: F401  (adds the hash_grid_* builtins)

from .body_integrate import angular_midpoint, body_frame_from_com, rotate_by
from .model import SHAPE_BOX, SHAPE_PLANE, SHAPE_SPHERE

SPHERE = kc.constant(0)
BOX = kc.constant(1)
PLANE = kc.constant(2)
NO_HIT = kc.constant(2.0)
#: impacts handled per step (a particle or sphere body in a narrow gap meets both sides in one step)
MAX_IMPACTS = 4


@kc.func
def sweep_plane(x0: kc.vec3, d: kc.vec3, r: float, n: kc.vec3, offset: float) -> float:
    """Fraction s in [0, 1] of the move ``d`` [m] at which a sphere (centre ``x0``, radius ``r``)
    touches the plane ``dot(n, x) = offset`` from its free side; NO_HIT if it does not."""
    s = NO_HIT
    dn = kc.dot(n, d)
    gap0 = kc.dot(n, x0) - offset - r
    if dn < 0.0:
        if gap0 + dn < 0.0:
            s = kc.max(gap0, 0.0) / (-dn)
    return s


@kc.func
def sweep_sphere(x0: kc.vec3, d: kc.vec3, r: float, c: kc.vec3, radius: float) -> float:
    """Fraction s in [0, 1] of the move ``d`` at which a sphere (``x0``, ``r``) touches the
    sphere (``c``, ``radius``); 0 when it starts inside moving in; NO_HIT if never."""
    s = NO_HIT
    rel = x0 - c
    reach = r + radius
    a = kc.dot(d, d)
    b = kc.dot(d, rel)
    cc = kc.dot(rel, rel) - reach * reach
    if b < 0.0:
        if cc <= 0.0:
            s = 0.0
        else:
            disc = b * b - a * cc
            if disc > 0.0:
                t = cc / (-b + kc.sqrt(disc))  # the smaller root, written without cancellation
                if t <= 1.0:
                    s = t
    return s


@kc.func
def sweep_box(x0: kc.vec3, d: kc.vec3, r: float, pos: kc.vec3, rot: kc.mat33, half: kc.vec3) -> kc.vec4:
    """Earliest touch of a sphere (``x0``, ``r``) moving by ``d`` with a box (``pos``, ``rot``,
    half extents ``half``) inflated by ``r``: (nx, ny, nz, s), the box's outward face normal
    in world and the fraction s, NO_HIT if none (slab test)."""
    lx = kc.transpose(rot) * (x0 - pos)
    ld = kc.transpose(rot) * d
    h = half + kc.vec3(r, r, r)
    t_enter = float(-1.0e30)
    t_exit = float(1.0e30)
    n_local = kc.vec3(0.0, 0.0, 0.0)
    for i in range(3):
        if ld[i] != 0.0:
            inv = 1.0 / ld[i]
            t_near = (-h[i] - lx[i]) * inv
            t_far = (h[i] - lx[i]) * inv
            side = float(-1.0)  # moving towards +: enters through the - face
            if ld[i] < 0.0:
                tmp = t_near
                t_near = t_far
                t_far = tmp
                side = 1.0
            if t_near > t_enter:
                t_enter = t_near
                n_local = kc.vec3(0.0, 0.0, 0.0)
                n_local[i] = side
            t_exit = kc.min(t_exit, t_far)
        elif kc.abs(lx[i]) > h[i]:
            t_exit = -1.0e30  # parallel to this slab and outside it
    out = kc.vec4(0.0, 1.0, 0.0, NO_HIT)
    if t_enter <= t_exit:
        if t_exit > 0.0:
            if t_enter <= 1.0:
                if t_enter < 0.0:
                    # starting inside the inflated box (by a rounding hair, after an impact in this step):
                    # the nearest face decides, not the one the path crossed behind the start
                    depth = float(1.0e30)
                    for j in range(3):
                        gap = h[j] - kc.abs(lx[j])
                        if gap < depth:
                            depth = gap
                            n_local = kc.vec3(0.0, 0.0, 0.0)
                            n_local[j] = 1.0
                            if lx[j] < 0.0:
                                n_local[j] = -1.0
                n = rot * n_local
                if kc.dot(n, d) < 0.0:
                    out = kc.vec4(n[0], n[1], n[2], kc.max(t_enter, 0.0))
    return out


@kc.func
def first_hit(x0: kc.vec3, d: kc.vec3, r: float, ground: int, ground_normal: kc.vec3, ground_offset: float,
              ground_material: int, shape_count: int, shape_type: kc.array(dtype=int),
              shape_body: kc.array(dtype=int), shape_pos: kc.array(dtype=kc.vec3),
              shape_rot: kc.array(dtype=kc.mat33), shape_scale: kc.array(dtype=kc.vec3),
              shape_material: kc.array(dtype=int)) -> kc.vec4:
    """Earliest hit of a sphere (``x0``, ``r``) moving by ``d`` [m] against the ground and the
    static planes, spheres and boxes: (nx, ny, nz, s), the collider's outward normal at the
    hit and the fraction s of the move (NO_HIT when none).  :func:`first_hit_material` gives
    the collider's material."""
    best = kc.vec4(0.0, 1.0, 0.0, NO_HIT)
    if ground != 0:
        s = sweep_plane(x0, d, r, ground_normal, ground_offset)
        if s < best[3]:
            best = kc.vec4(ground_normal[0], ground_normal[1], ground_normal[2], s)
    for k in range(shape_count):
        t = shape_type[k]
        if shape_body[k] < 0:
            hit = kc.vec4(0.0, 1.0, 0.0, NO_HIT)
            if t == PLANE:
                n = shape_rot[k] * kc.vec3(0.0, 1.0, 0.0)
                hit = kc.vec4(n[0], n[1], n[2], sweep_plane(x0, d, r, n, kc.dot(n, shape_pos[k])))
            elif t == SPHERE:
                s = sweep_sphere(x0, d, r, shape_pos[k], shape_scale[k][0])
                if s < NO_HIT:
                    n = kc.normalize(x0 + d * s - shape_pos[k])
                    hit = kc.vec4(n[0], n[1], n[2], s)
            elif t == BOX:
                hit = sweep_box(x0, d, r, shape_pos[k], shape_rot[k], shape_scale[k])
            if hit[3] < best[3]:
                best = hit
    return best


@kc.func
def first_hit_material(x0: kc.vec3, d: kc.vec3, r: float, ground: int, ground_normal: kc.vec3, ground_offset: float,
                       ground_material: int, shape_count: int, shape_type: kc.array(dtype=int),
                       shape_body: kc.array(dtype=int), shape_pos: kc.array(dtype=kc.vec3),
                       shape_rot: kc.array(dtype=kc.mat33), shape_scale: kc.array(dtype=kc.vec3),
                       shape_material: kc.array(dtype=int)) -> int:
    """The material of the collider :func:`first_hit` finds (not differentiable: an index)."""
    best = float(NO_HIT)
    material = ground_material
    if ground != 0:
        best = sweep_plane(x0, d, r, ground_normal, ground_offset)
    for k in range(shape_count):
        t = shape_type[k]
        if shape_body[k] < 0:
            s = float(NO_HIT)
            if t == PLANE:
                n = shape_rot[k] * kc.vec3(0.0, 1.0, 0.0)
                s = sweep_plane(x0, d, r, n, kc.dot(n, shape_pos[k]))
            elif t == SPHERE:
                s = sweep_sphere(x0, d, r, shape_pos[k], shape_scale[k][0])
            elif t == BOX:
                s = sweep_box(x0, d, r, shape_pos[k], shape_rot[k], shape_scale[k])[3]
            if s < best:
                best = s
                material = shape_material[k]
    return material


@kc.func
def contact_mass(arm: kc.vec3, inv_mass: float, inv_inertia: kc.mat33) -> kc.mat33:
    """Velocity change [m/s] of a body's material point ``arm`` [m] from its centre of mass per unit
    impulse [N s] there: ``inv_mass I - [arm]x inv_inertia [arm]x`` (world frame, symmetric)."""
    sk = kc.skew(arm)
    return kc.identity(3, dtype=float) * inv_mass - sk * inv_inertia * sk


@kc.func
def friction_impulse(n: kc.vec3, vt: kc.vec3, k: kc.mat33, w_n: float, cap: float) -> kc.vec3:
    """Coulomb friction impulse [N s] of an impact: the one that stops the tangential velocity ``vt``
    [m/s] (``-K_t^-1 vt``, ``K_t`` the contact mass ``k`` (:func:`contact_mass`, both bodies' summed)
    on the plane normal to ``n``), scaled back to length ``cap = mu j_n`` when longer.

    Linear in ``vt`` where the contact sticks, so the impulse is smooth through ``vt = 0`` (a
    head-on hit): the impulse along ``-vt`` of length ``|vt| / w_t`` has no derivative there, and
    with an anisotropic ``K_t`` does not stop the sliding.  Never gains energy (a fraction up to 1
    of the stopping impulse).  ``w_n``: the contact's inverse mass along ``n`` [1/kg], which
    completes ``K_t`` along ``n`` so that no tangent basis (and no branch) is needed."""
    jt = kc.vec3(0.0, 0.0, 0.0)
    if cap > 0.0:  # (mu = 0: no friction, in the adjoint too where vt = 0)
        nn = kc.outer(n, n)
        proj = kc.identity(3, dtype=float) - nn
        jt = -(kc.inverse(proj * k * proj + nn * w_n) * vt)
        jt_len = kc.length(jt)
        if jt_len > cap:
            jt = jt * (cap / jt_len)
    return jt


@kc.func
def contact_impulse(n: kc.vec3, u: kc.vec3, k: kc.mat33, e: float, mu: float) -> kc.vec3:
    """Impulse [N s] at a contact whose point moves at ``u`` [m/s] relative to the other side
    (approaching when ``u . n < 0``), ``k`` the contact mass [1/kg] (:func:`contact_mass`, both
    bodies' summed): restitution ``e``, Coulomb ``mu``.

    The normal impulse first (Newton's law), then :func:`friction_impulse` on the tangential
    velocity the normal impulse leaves.  Off a body's axis the normal impulse also turns it, and so
    changes ``u_t``; taking the friction on the ``u_t`` from before could gain energy through that
    normal-tangent coupling of ``k`` (up to the whole kinetic energy at ``e = 1``; tests/sim/
    test_rigid_toi_body_pairs.py), this way each of the two impulses loses energy for ``e <= 1``."""
    un = kc.dot(n, u)
    j = kc.vec3(0.0, 0.0, 0.0)
    if un < 0.0:
        w_n = kc.dot(n, k * n)
        jn = -(1.0 + e) * un / w_n
        u1 = u + k * (n * jn)
        j = n * jn + friction_impulse(n, u1 - n * kc.dot(n, u1), k, w_n, mu * jn)
    return j


@kc.func
def impact_impulse(n: kc.vec3, v: kc.vec3, arm: kc.vec3, inv_mass: float, inv_inertia: kc.mat33, e: float,
                   mu: float, resting_speed: float) -> kc.vec3:
    """Impulse [N s] on a body whose contact point (``arm`` [m] from its centre of mass, velocity
    ``v`` [m/s]) hits a static surface of normal ``n``: restitution ``e`` (none below
    ``resting_speed`` [m/s]), Coulomb ``mu`` (:func:`contact_impulse`).

    ``inv_inertia``: world inverse inertia [1/(kg m^2)] (zero for a particle)."""
    bounce = e
    if kc.dot(n, v) > -resting_speed:
        bounce = 0.0
    return contact_impulse(n, v, contact_mass(arm, inv_mass, inv_inertia), bounce, mu)


@kc.kernel
def integrate_particles_toi_kernel(
        q0: kc.array(dtype=kc.vec3), qd0: kc.array(dtype=kc.vec3), f: kc.array(dtype=kc.vec3),
        inv_mass: kc.array(dtype=float), radius: kc.array(dtype=float), particle_material: kc.array(dtype=int),
        gravity: kc.vec3, damping: float, dt: float,
        ground: int, ground_normal: kc.vec3, ground_offset: float, ground_material: int,
        shape_count: int, shape_type: kc.array(dtype=int), shape_body: kc.array(dtype=int),
        shape_pos: kc.array(dtype=kc.vec3), shape_rot: kc.array(dtype=kc.mat33), shape_scale: kc.array(dtype=kc.vec3),
        shape_material: kc.array(dtype=int), material_restitution: kc.array(dtype=float),
        material_mu: kc.array(dtype=float), resting_speed: float,
        body_q: kc.array(dtype=kc.transform), body_qd: kc.array(dtype=kc.spatial_vector),
        body_com: kc.array(dtype=kc.vec3), body_inv_mass: kc.array(dtype=float),
        body_inv_inertia: kc.array(dtype=kc.mat33), max_impacts: int,
        q1: kc.array(dtype=kc.vec3), qd1: kc.array(dtype=kc.vec3), body_f: kc.array(dtype=kc.spatial_vector)):
    i = kc.tid()
    w = inv_mass[i]
    x0 = q0[i]
    v0 = qd0[i]
    a = kc.vec3(0.0, 0.0, 0.0)
    if w > 0.0:
        a = f[i] * w + gravity - v0 * damping
    v1 = v0 + a * dt
    x1 = x0 + v1 * dt
    if w > 0.0:
        r = radius[i]
        # the motion so far: at fraction s_c of the step, position x_c, velocity v_c; it moves on with
        # v_path (semi-implicit: the velocity at the step's end) until the next impact, up to max_impacts
        x_c = x0
        v_c = v0
        v_path = v1
        s_c = float(0.0)
        for _impact in range(max_impacts):
            if s_c < 1.0:
                d = v_path * ((1.0 - s_c) * dt)
                hit = first_hit(x_c, d, r, ground, ground_normal, ground_offset, ground_material, shape_count,
                                shape_type, shape_body, shape_pos, shape_rot, shape_scale, shape_material)
                s = hit[3]
                n = kc.vec3(hit[0], hit[1], hit[2])
                mb = ground_material
                if s <= 1.0:
                    mb = first_hit_material(x_c, d, r, ground, ground_normal, ground_offset, ground_material,
                                            shape_count, shape_type, shape_body, shape_pos, shape_rot, shape_scale,
                                            shape_material)
                # spheres and boxes on bodies: swept along the motion relative to the body (the body's
                # velocity at the step's start, at the particle); the earliest hit wins
                hit_body = int(-1)
                for k in range(shape_count):
                    bk = shape_body[k]
                    if bk >= 0:
                        tk = shape_type[k]
                        if tk == SPHERE or tk == BOX:
                            tfb = body_q[bk]
                            pos_k = kc.transform_point(tfb, shape_pos[k])
                            com_k = kc.transform_point(tfb, body_com[bk])
                            v_k = kc.spatial_top(body_qd[bk]) + kc.cross(kc.spatial_bottom(body_qd[bk]), x_c - com_k)
                            # the body's shape where it is at s_c (it moves with v_k)
                            pos_k = pos_k + v_k * (s_c * dt)
                            d_rel = d - v_k * ((1.0 - s_c) * dt)
                            hit_k = kc.vec4(0.0, 1.0, 0.0, NO_HIT)
                            if tk == SPHERE:
                                s_k = sweep_sphere(x_c, d_rel, r, pos_k, shape_scale[k][0])
                                if s_k < NO_HIT:
                                    n_k = kc.normalize(x_c + d_rel * s_k - pos_k)
                                    hit_k = kc.vec4(n_k[0], n_k[1], n_k[2], s_k)
                            else:
                                rot_k = kc.quat_to_matrix(kc.transform_get_rotation(tfb)) * shape_rot[k]
                                hit_k = sweep_box(x_c, d_rel, r, pos_k, rot_k, shape_scale[k])
                            if hit_k[3] < s:
                                s = hit_k[3]
                                n = kc.vec3(hit_k[0], hit_k[1], hit_k[2])
                                mb = shape_material[k]
                                hit_body = bk
                if s <= 1.0:
                    ma = particle_material[i]
                    e = 0.5 * (material_restitution[ma] + material_restitution[mb])
                    mu = 0.5 * (material_mu[ma] + material_mu[mb])
                    zero_arm = kc.vec3(0.0, 0.0, 0.0)
                    no_rotation = kc.mat33(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
                    s_hit = s_c + s * (1.0 - s_c)  # the impact's fraction of the whole step
                    rest = (1.0 - s_hit) * dt
                    # the bounce with the velocity at the time of impact, then the rest of the step's
                    # acceleration, stopped (inelastically) if it would press into the surface
                    v_hit = v_c + a * ((s_hit - s_c) * dt)
                    v_end = v_hit
                    if hit_body >= 0:
                        # a body's shape: the impulse on the relative velocity with both inverse masses; the
                        # body takes the reaction as a force over the step at the contact point (it is
                        # integrated after the particles, from these wrenches)
                        tfb = body_q[hit_body]
                        qdb = body_qd[hit_body]
                        com_b = kc.transform_point(tfb, body_com[hit_body]) + kc.spatial_top(qdb) * (s_hit * dt)
                        arm = x_c + d * s - n * r - com_b
                        rot_b = kc.quat_to_matrix(kc.transform_get_rotation(tfb))
                        inv_inertia_b = rot_b * body_inv_inertia[hit_body] * kc.transpose(rot_b)
                        w_pair = w + body_inv_mass[hit_body]
                        v_b = kc.spatial_top(qdb) + kc.cross(kc.spatial_bottom(qdb), arm)
                        j1 = impact_impulse(n, v_hit - v_b, arm, w_pair, inv_inertia_b, e, mu, resting_speed)
                        v_end = v_hit + j1 * w + a * rest
                        j2 = impact_impulse(n, v_end - v_b, arm, w_pair, inv_inertia_b, 0.0, mu, resting_speed)
                        v_end = v_end + j2 * w
                        reaction = (j1 + j2) * (-1.0 / dt)
                        kc.atomic_add(body_f, hit_body, kc.spatial_vector(reaction, kc.cross(arm, reaction)))
                    else:
                        v_end = v_hit + impact_impulse(n, v_hit, zero_arm, w, no_rotation, e, mu,
                                                       resting_speed) * w + a * rest
                        v_end = v_end + impact_impulse(n, v_end, zero_arm, w, no_rotation, 0.0, mu, resting_speed) * w
                    x_c = x_c + d * s
                    v_c = v_end - a * rest
                    v_path = v_end
                    s_c = s_hit
                    v1 = v_end
                    x1 = x_c + v_end * rest
                else:
                    s_c = 2.0  # nothing more is hit: x1, v1 are the step's end
    qd1[i] = v1
    q1[i] = x1


def resting_speed(model, dt: float) -> float:
    """Approach speed [m/s] below which an impact gets no restitution: two steps of gravity."""
    return 2.0 * float(np.linalg.norm(np.asarray(model.gravity, np.float64))) * float(dt) + 1.0e-6


def integrate_particles_toi(model, state_in, forces, state_out, dt: float, wrenches=None):
    """Semi-implicit Euler of the particles with time-of-impact contacts against the static colliders
    and the spheres and boxes on bodies; the reactions on the bodies are added to ``wrenches``
    (spatial_vector (B,), as forces over the step; required when the model has bodies)."""
    if model.particle_count == 0:
        return
    if wrenches is None:
        if model.body_count:
            raise ValueError("integrate_particles_toi: the model has bodies; pass wrenches= (B,) for the reactions")
        wrenches = kc.zeros(0, dtype=kc.spatial_vector, device=model.device)
    kc.launch(integrate_particles_toi_kernel, dim=model.particle_count,
              inputs=[state_in.particle_q, state_in.particle_qd, forces, model.particle_inv_mass,
                      model.particle_radius, model.particle_material, model.gravity, model.particle_damping, float(dt),
                      int(model.ground), model.ground_normal, model.ground_offset, model.ground_material,
                      model.shape_count, model.shape_type, model.shape_body, model.shape_pos, model.shape_rot,
                      model.shape_scale, model.shape_material, model.material_restitution, model.material_mu,
                      resting_speed(model, dt), state_in.body_q, state_in.body_qd, model.body_com,
                      model.body_inv_mass, model.body_inv_inertia, MAX_IMPACTS],
              outputs=[state_out.particle_q, state_out.particle_qd, wrenches], device=model.device)


@kc.kernel
def integrate_bodies_toi_kernel(
        body_q0: kc.array(dtype=kc.transform), body_qd0: kc.array(dtype=kc.spatial_vector),
        body_f: kc.array(dtype=kc.spatial_vector), body_com: kc.array(dtype=kc.vec3),
        inv_mass: kc.array(dtype=float), inertia: kc.array(dtype=kc.mat33), inv_inertia: kc.array(dtype=kc.mat33),
        body_toi_shape: kc.array(dtype=int), gravity: kc.vec3, dt: float,
        ground: int, ground_normal: kc.vec3, ground_offset: float, ground_material: int,
        shape_count: int, shape_type: kc.array(dtype=int), shape_body: kc.array(dtype=int),
        shape_pos: kc.array(dtype=kc.vec3), shape_rot: kc.array(dtype=kc.mat33), shape_scale: kc.array(dtype=kc.vec3),
        shape_material: kc.array(dtype=int), material_restitution: kc.array(dtype=float),
        material_mu: kc.array(dtype=float), resting_speed: float,
        grid: kc.uint64, pair_count: int, pair_shape_ids: kc.array(dtype=int), max_bound: float,
        speed_bound: kc.array(dtype=float), max_impacts: int,
        body_q1: kc.array(dtype=kc.transform), body_qd1: kc.array(dtype=kc.spatial_vector)):
    i = kc.tid()
    tf = body_q0[i]
    q0 = kc.transform_get_rotation(tf)
    qd = body_qd0[i]
    f = body_f[i]
    com = body_com[i]
    a = kc.spatial_top(f) * inv_mass[i] + gravity
    v1 = kc.spatial_top(qd) + a * dt
    w0 = kc.quat_rotate_inv(q0, kc.spatial_bottom(qd))
    tau = kc.quat_rotate_inv(q0, kc.spatial_bottom(f))
    wm = angular_midpoint(w0, tau, inertia[i], inv_inertia[i], dt)
    wm_world = kc.quat_rotate(q0, wm)
    q1 = rotate_by(q0, wm_world, dt)
    w1 = kc.quat_rotate(q1, wm * 2.0 - w0)
    x0 = kc.transform_point(tf, com)
    x1 = x0 + v1 * dt
    sh = body_toi_shape[i]
    if sh >= 0:
        c0 = kc.transform_point(tf, shape_pos[sh])
        r = shape_scale[sh][0]
        d = (v1 + kc.cross(wm_world, c0 - x0)) * dt  # the sphere centre's path, to first order
        hit = first_hit(c0, d, r, ground, ground_normal, ground_offset, ground_material, shape_count, shape_type,
                        shape_body, shape_pos, shape_rot, shape_scale, shape_material)
        s = hit[3]
        n = kc.vec3(hit[0], hit[1], hit[2])
        mb = int(0)
        if s <= 1.0:
            mb = first_hit_material(c0, d, r, ground, ground_normal, ground_offset, ground_material, shape_count,
                                    shape_type, shape_body, shape_pos, shape_rot, shape_scale, shape_material)
        # other swept spheres: sweep along the relative motion, keep the earliest hit
        other = int(-1)
        v_other = kc.vec3(0.0, 0.0, 0.0)
        w_other = float(0.0)
        if pair_count > 0:
            query = kc.hash_grid_query(grid, c0, r + max_bound + 2.0 * speed_bound[0] * dt)
            j = int(0)
            while kc.hash_grid_query_next(query, j):
                sj = pair_shape_ids[j]
                bj = shape_body[sj]
                if bj != i:
                    if body_toi_shape[bj] == sj:
                        c0j = kc.transform_point(body_q0[bj], shape_pos[sj])
                        v1j = kc.spatial_top(body_qd0[bj]) + (kc.spatial_top(body_f[bj]) * inv_mass[bj] + gravity) * dt
                        sj_hit = sweep_sphere(c0, d - v1j * dt, r, c0j, shape_scale[sj][0])
                        if sj_hit < s:
                            s = sj_hit
                            n = kc.normalize(c0 + d * sj_hit - c0j - v1j * (sj_hit * dt))
                            mb = shape_material[sj]
                            other = bj
                            v_other = kc.spatial_top(body_qd0[bj]) + (kc.spatial_top(body_f[bj]) * inv_mass[bj]
                                                                      + gravity) * (sj_hit * dt)
                            w_other = inv_mass[bj]
        if s <= 1.0:
            ma = shape_material[sh]
            e = 0.5 * (material_restitution[ma] + material_restitution[mb])
            mu = 0.5 * (material_mu[ma] + material_mu[mb])
            rest = (1.0 - s) * dt
            # the body at the time of impact (angular velocity: the step's midpoint value)
            x_hit = x0 + v1 * (s * dt)
            q_hit = rotate_by(q0, wm_world, s * dt)
            c_hit = x_hit + kc.quat_rotate(q_hit, shape_pos[sh] - com)
            arm = c_hit - n * r - x_hit
            rot = kc.quat_to_matrix(q_hit)
            inv_inertia_world = rot * inv_inertia[i] * kc.transpose(rot)
            v_hit = kc.spatial_top(qd) + a * (s * dt)
            if other >= 0:
                # sphere on sphere: both threads work out the same impulse (the other's spin is not
                # seen: it acts through friction only); this body takes its share
                jp = impact_impulse(n, v_hit + kc.cross(wm_world, arm) - v_other, arm, inv_mass[i] + w_other,
                                    inv_inertia_world, e, mu, 0.0)
                v1 = v_hit + jp * inv_mass[i] + a * rest
                w1 = wm_world + inv_inertia_world * kc.cross(arm, jp)
            else:
                # as for particles: bounce with the velocity at impact, then the rest of the step's
                # acceleration, stopped inelastically if it presses into the surface
                j1 = impact_impulse(n, v_hit + kc.cross(wm_world, arm), arm, inv_mass[i], inv_inertia_world, e, mu,
                                    resting_speed)
                v_end = v_hit + j1 * inv_mass[i] + a * rest
                w_end = wm_world + inv_inertia_world * kc.cross(arm, j1)
                j2 = impact_impulse(n, v_end + kc.cross(w_end, arm), arm, inv_mass[i], inv_inertia_world, 0.0, mu,
                                    resting_speed)
                v1 = v_end + j2 * inv_mass[i]
                w1 = w_end + inv_inertia_world * kc.cross(arm, j2)
            x1 = x_hit + v1 * rest
            q1 = rotate_by(q_hit, w1, rest)
            # the rest of the step swept again against the static colliders, from impact to impact (a
            # ball in a narrow gap meets both sides in one step); other bodies are met in the first sweep only
            x_c = x_hit
            q_c = q_hit
            v_c = v1 - a * rest  # the velocity at the impact; v1 adds the rest of the step's acceleration
            s_c = s
            for _impact in range(max_impacts - 1):
                if s_c < 1.0:
                    rest_c = (1.0 - s_c) * dt
                    c_c = x_c + kc.quat_rotate(q_c, shape_pos[sh] - com)
                    d_c = (v1 + kc.cross(w1, c_c - x_c)) * rest_c
                    hit_c = first_hit(c_c, d_c, r, ground, ground_normal, ground_offset, ground_material, shape_count,
                                      shape_type, shape_body, shape_pos, shape_rot, shape_scale, shape_material)
                    s2 = hit_c[3]
                    if s2 <= 1.0:
                        n2 = kc.vec3(hit_c[0], hit_c[1], hit_c[2])
                        mb2 = first_hit_material(c_c, d_c, r, ground, ground_normal, ground_offset, ground_material,
                                                 shape_count, shape_type, shape_body, shape_pos, shape_rot, shape_scale,
                                                 shape_material)
                        ma2 = shape_material[sh]
                        e2 = 0.5 * (material_restitution[ma2] + material_restitution[mb2])
                        mu2 = 0.5 * (material_mu[ma2] + material_mu[mb2])
                        s_hit = s_c + s2 * (1.0 - s_c)
                        rest2 = (1.0 - s_hit) * dt
                        x_hit2 = x_c + v1 * (s2 * rest_c)
                        q_hit2 = rotate_by(q_c, w1, s2 * rest_c)
                        arm2 = kc.quat_rotate(q_hit2, shape_pos[sh] - com) - n2 * r  # centre of mass to contact point
                        rot2 = kc.quat_to_matrix(q_hit2)
                        inv_inertia2 = rot2 * inv_inertia[i] * kc.transpose(rot2)
                        v_hit2 = v_c + a * ((s_hit - s_c) * dt)
                        j1 = impact_impulse(n2, v_hit2 + kc.cross(w1, arm2), arm2, inv_mass[i], inv_inertia2, e2, mu2,
                                            resting_speed)
                        v_end2 = v_hit2 + j1 * inv_mass[i] + a * rest2
                        w_end2 = w1 + inv_inertia2 * kc.cross(arm2, j1)
                        j2 = impact_impulse(n2, v_end2 + kc.cross(w_end2, arm2), arm2, inv_mass[i], inv_inertia2, 0.0,
                                            mu2, resting_speed)
                        v1 = v_end2 + j2 * inv_mass[i]
                        w1 = w_end2 + inv_inertia2 * kc.cross(arm2, j2)
                        x_c = x_hit2
                        q_c = q_hit2
                        v_c = v1 - a * rest2
                        s_c = s_hit
                        x1 = x_hit2 + v1 * rest2
                        q1 = rotate_by(q_hit2, w1, rest2)
                    else:
                        s_c = 2.0  # nothing more is hit
    if sh != -2:  # -2: a box or capsule body, stepped by sim/toi_shapes.py
        body_q1[i] = body_frame_from_com(x1, q1, com)
        body_qd1[i] = kc.spatial_vector(v1, w1)


def body_toi_shapes(model):
    """int (B,): the sphere shape swept for each body (bodies whose only shape is one sphere), else -1."""
    shape_body = model.shape_body.numpy() if model.shape_count else np.zeros(0, np.int32)
    shape_type = model.shape_type.numpy() if model.shape_count else np.zeros(0, np.int32)
    out = np.full(model.body_count, -1, np.int32)
    for b in range(model.body_count):
        mine = np.nonzero(shape_body == b)[0]
        if len(mine) == 1 and shape_type[mine[0]] == SHAPE_SPHERE:
            out[b] = mine[0]
    return out


#: static collider kinds the sweep handles (others keep penalty contacts)
TOI_STATIC_KINDS = (SHAPE_PLANE, SHAPE_SPHERE, SHAPE_BOX)


@kc.kernel
def body_speed_bound_kernel(body_qd: kc.array(dtype=kc.spatial_vector), body_f: kc.array(dtype=kc.spatial_vector),
                            inv_mass: kc.array(dtype=float), gravity: kc.vec3, dt: float,
                            speed_bound: kc.array(dtype=float)):
    i = kc.tid()
    v = kc.spatial_top(body_qd[i]) + (kc.spatial_top(body_f[i]) * inv_mass[i] + gravity) * dt
    kc.atomic_max(speed_bound, 0, kc.length(v))


def integrate_bodies_toi(model, state_in, wrenches, state_out, dt: float, toi_shapes, pairs=None, no_speed=None):
    """Newton–Euler step of the bodies (as sim.body_integrate) with time-of-impact contacts for the
    bodies that ``toi_shapes`` (kc int (B,), from :func:`body_toi_shapes`) marks.

    ``pairs``: the solver's ``sim.collide_body_pairs.BodyPairContacts`` (its hash grid must hold
    ``state_in``'s shapes) to sweep swept spheres against each other, or None.  Its
    ``speed_bound`` only grows (the largest body speed seen), so that the grid search
    radius replayed in the backward pass is never smaller than the forward one.  ``no_speed``:
    a float array (1,) passed in its place when there are no pairs (preallocated by the caller).
    """
    if model.body_count == 0:
        return
    grid_id, pair_count, pair_ids, max_bound, speed_bound = 0, 0, toi_shapes, 0.0, None
    if pairs is not None and pairs.active:
        kc.launch(body_speed_bound_kernel, dim=model.body_count,
                  inputs=[state_in.body_qd, wrenches, model.body_inv_mass, model.gravity, float(dt)],
                  outputs=[pairs.speed_bound], device=model.device, record_tape=False)
        grid_id, pair_count, pair_ids, max_bound = pairs.grid.id, pairs.count, pairs.shape_ids, pairs.max_bound
        speed_bound = pairs.speed_bound
    if speed_bound is None:
        speed_bound = no_speed if no_speed is not None else kc.zeros(1, dtype=float, device=model.device)
    kc.launch(integrate_bodies_toi_kernel, dim=model.body_count,
              inputs=[state_in.body_q, state_in.body_qd, wrenches, model.body_com, model.body_inv_mass,
                      model.body_inertia, model.body_inv_inertia, toi_shapes, model.gravity, float(dt),
                      int(model.ground), model.ground_normal, model.ground_offset, model.ground_material,
                      model.shape_count, model.shape_type, model.shape_body, model.shape_pos, model.shape_rot,
                      model.shape_scale, model.shape_material, model.material_restitution, model.material_mu,
                      resting_speed(model, dt), grid_id, pair_count, pair_ids, max_bound, speed_bound, MAX_IMPACTS],
              outputs=[state_out.body_q, state_out.body_qd], device=model.device)
    if pair_count:
        pairs.record_rebuild(model, state_in.body_q)
