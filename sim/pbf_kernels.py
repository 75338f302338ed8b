"""Kernels of the position-based fluid solver (sim/solvers/pbf.py), each with its launcher.

Notation (Macklin & Mueller 2013, written with particle volumes so that every quantity
has plain SI units): ``V_j = m_j / rho0`` is particle j's rest volume [m^3],
``W`` the poly6 kernel and ``grad W`` the spiky kernel's gradient, both of radius h
[m] (W in 1/m^3).  The density constraint of particle i is

    C_i = sum_j V_j W(p_i - p_j) - 1        (dimensionless; 0 at rest density)

clamped at zero from below (the fluid resists compression only; a free surface with too
few neighbours is not pulled together).  A Jacobi iteration computes

    lambda_i = -C_i / (sum_k |grad_k C_i|^2 + eps)                       [m^2]
    dp_i     = sum_j V_j (lambda_i + lambda_j + s_corr_ij) grad W(p_i - p_j)   [m]

with the artificial pressure ``s_corr = -k h^2 (W(r) / W(dq h))^n`` against clustering.
Neighbour lists are built once per step from the predicted positions (kept per step so a
Tape replays the same pairs); they include pairs up to ``NEIGHBOR_SKIN * h`` apart so that
particles drifting during the iterations are still seen.

Boundaries are position projections: shapes on bodies (sim/pbf_bodies.py, with their
reactions), the ground plane, static spheres / boxes / capsules / planes / meshes (signed
distances, as in sim/collide_shapes.py and collide_mesh.py), then the domain box.  A particle
centre is kept its radius away from each surface; walls are frictionless.
"""
from __future__ import annotations

import math

import kernelcore as kc
import geometry  # noqa: F401  (adds the hash_grid_* and mesh_* builtins)

from .pbf_boundary import BOX, CAPSULE, MESH, PLANE, SPHERE, shape_distance, wall_volume  # noqa: F401
from .pbf_bodies import body_density, body_wall_push, project_bodies


#: neighbour search radius in units of h (pairs between h and this many h have W = 0 at
#: the start of the step but may come within h during the constraint iterations)
NEIGHBOR_SKIN = 1.1


def poly6_coefficient(h: float) -> float:
    """315 / (64 pi h^9): W(r) = coef (h^2 - r^2)^3 for r < h [1/m^3]."""
    return 315.0 / (64.0 * math.pi * h ** 9)


def spiky_coefficient(h: float) -> float:
    """-45 / (pi h^6): grad W(d) = coef (h - r)^2 d / r for r < h [1/m^4]."""
    return -45.0 / (math.pi * h ** 6)


@kc.func
def poly6(r2: float, h: float, coef: float) -> float:
    w = float(0.0)
    if r2 < h * h:
        t = h * h - r2
        w = coef * t * t * t
    return w


@kc.func
def spiky_grad(d: kc.vec3, h: float, coef: float) -> kc.vec3:
    # r > 1e-6 h: coincident particles give no direction (and the sqrt no finite adjoint)
    return d * spiky_factor(kc.dot(d, d), h, coef)


@kc.func
def spiky_factor(r2: float, h: float, coef: float) -> float:
    """The scalar f of spiky_grad(d) = d * f for |d|^2 = r2 [1/m^5] (0 outside h and at coincidence)."""
    f = float(0.0)
    if r2 < h * h and r2 > 1.0e-12 * h * h:
        r = kc.sqrt(r2)
        t = h - r
        f = coef * t * t / r
    return f


@kc.func
def project_boundaries(p: kc.vec3, r: float, lower: kc.vec3, upper: kc.vec3,
                       ground: int, ground_normal: kc.vec3, ground_offset: float,
                       shape_count: int, mesh_reach: float, shape_type: kc.array(dtype=int),
                       shape_body: kc.array(dtype=int),
                       shape_pos: kc.array(dtype=kc.vec3), shape_rot: kc.array(dtype=kc.mat33),
                       shape_scale: kc.array(dtype=kc.vec3), shape_mesh: kc.array(dtype=kc.uint64)) -> kc.vec3:
    """Move ``p`` out of the static shapes and the ground (to distance r), then into [lower + r, upper - r]."""
    x = p
    for s in range(shape_count):
        if shape_body[s] < 0:
            nd = shape_distance(x, shape_type[s], shape_pos[s], shape_rot[s], shape_scale[s], shape_mesh[s], mesh_reach)
            if nd[3] < r:
                x = x + kc.vec3(nd[0], nd[1], nd[2]) * (r - nd[3])
    if ground != 0:
        sd = kc.dot(ground_normal, x) - ground_offset
        if sd < r:
            x = x + ground_normal * (r - sd)
    return kc.min(kc.max(x, lower + kc.vec3(r, r, r)), upper - kc.vec3(r, r, r))


@kc.func
def boundary_density(x: kc.vec3, h: float, lower: kc.vec3, upper: kc.vec3,
                     ground: int, ground_normal: kc.vec3, ground_offset: float,
                     shape_count: int, mesh_reach: float, shape_type: kc.array(dtype=int),
                     shape_body: kc.array(dtype=int),
                     shape_pos: kc.array(dtype=kc.vec3), shape_rot: kc.array(dtype=kc.mat33),
                     shape_scale: kc.array(dtype=kc.vec3), shape_mesh: kc.array(dtype=kc.uint64)) -> kc.vec4:
    """Sum of wall_volume over the domain walls, the ground and the static shapes (each locally a
    plane): (d phi / dx (3) [1/m], phi), packed as a vec4."""
    phi = float(0.0)
    grad = kc.vec3(0.0, 0.0, 0.0)
    wx0 = wall_volume(x[0] - lower[0], h)
    wx1 = wall_volume(upper[0] - x[0], h)
    wy0 = wall_volume(x[1] - lower[1], h)
    wy1 = wall_volume(upper[1] - x[1], h)
    wz0 = wall_volume(x[2] - lower[2], h)
    wz1 = wall_volume(upper[2] - x[2], h)
    phi += wx0[0] + wx1[0] + wy0[0] + wy1[0] + wz0[0] + wz1[0]
    grad += kc.vec3(wx0[1] - wx1[1], wy0[1] - wy1[1], wz0[1] - wz1[1])
    if ground != 0:
        g = wall_volume(kc.dot(ground_normal, x) - ground_offset, h)
        phi += g[0]
        grad += ground_normal * g[1]
    for s in range(shape_count):
        if shape_body[s] < 0:
            nd = shape_distance(x, shape_type[s], shape_pos[s], shape_rot[s], shape_scale[s], shape_mesh[s], mesh_reach)
            w = wall_volume(nd[3], h)
            phi += w[0]
            grad += kc.vec3(nd[0], nd[1], nd[2]) * w[1]
    return kc.vec4(grad[0], grad[1], grad[2], phi)


@kc.kernel
def predict_kernel(x: kc.array(dtype=kc.vec3), v: kc.array(dtype=kc.vec3), f_ext: kc.array(dtype=kc.vec3),
                   inv_mass: kc.array(dtype=float), radius: kc.array(dtype=float), gravity: kc.vec3, dt: float,
                   lower: kc.vec3, upper: kc.vec3, ground: int, ground_normal: kc.vec3,
                   ground_offset: float, shape_count: int, mesh_reach: float, shape_type: kc.array(dtype=int),
                   shape_body: kc.array(dtype=int), shape_pos: kc.array(dtype=kc.vec3),
                   shape_rot: kc.array(dtype=kc.mat33), shape_scale: kc.array(dtype=kc.vec3),
                   shape_mesh: kc.array(dtype=kc.uint64),
                   body_shapes: int, body_q: kc.array(dtype=kc.transform), body_com: kc.array(dtype=kc.vec3),
                   mass: kc.array(dtype=float), inv_dt2: float,
                   p: kc.array(dtype=kc.vec3), body_force: kc.array(dtype=kc.vec3),
                   body_torque: kc.array(dtype=kc.vec3)):
    i = kc.tid()
    w = inv_mass[i]
    y = x[i] + v[i] * dt
    if w > 0.0:
        y = x[i] + (v[i] + (gravity + f_ext[i] * w) * dt) * dt
        y = project_bodies(y, radius[i], mass[i] * inv_dt2, body_shapes, shape_count, mesh_reach, shape_type,
                           shape_body, shape_pos, shape_rot, shape_scale, shape_mesh, body_q, body_com, body_force,
                           body_torque)
        y = project_boundaries(y, radius[i], lower, upper, ground, ground_normal, ground_offset,
                               shape_count, mesh_reach, shape_type, shape_body, shape_pos, shape_rot, shape_scale,
                               shape_mesh)
    p[i] = y


def predict(model, state_in, f_ext, gravity, dt, bounds, bodies, p_out):
    """p_out = boundary projection of x + dt (v + dt (g + f_ext / m)) (kinematic particles: x + dt v);
    ``bodies``: a BodyCoupling (the body shapes' poses; their reactions are accumulated)."""
    kc.launch(predict_kernel, dim=model.particle_count,
              inputs=[state_in.particle_q, state_in.particle_qd, f_ext, model.particle_inv_mass,
                      model.particle_radius, gravity, float(dt), *bounds, *shape_inputs(model),
                      *bodies.inputs(model, dt)],
              outputs=[p_out, *bodies.outputs()], device=model.device)


def boundary_inputs(model, lower, upper, mesh_reach):
    """The scalar boundary arguments in kernel order: box corners [m], the ground plane, the shape
    count and how far meshes are searched [m] (at least the kernel radius and a particle diameter)."""
    return [lower, upper, int(model.ground), model.ground_normal, float(model.ground_offset), model.shape_count,
            float(mesh_reach)]


def shape_inputs(model):
    """The shape arrays in the order project_boundaries takes them."""
    return [model.shape_type, model.shape_body, model.shape_pos, model.shape_rot, model.shape_scale,
            model.shape_mesh]


@kc.kernel
def neighbors_kernel(grid: kc.uint64, p: kc.array(dtype=kc.vec3), search: float, max_neighbors: int,
                     nb: kc.array(dtype=int, ndim=2), nb_count: kc.array(dtype=int), overflow: kc.array(dtype=int)):
    t = kc.tid()
    i = kc.hash_grid_point_id(grid, t)
    if i >= 0:
        x = p[i]
        query = kc.hash_grid_query(grid, x, search)
        j = int(0)
        c = int(0)
        while kc.hash_grid_query_next(query, j):
            if j != i:
                d = x - p[j]
                if kc.dot(d, d) < search * search:
                    if c < max_neighbors:
                        nb[i, c] = j
                    c += 1
        nb_count[i] = kc.min(c, max_neighbors)
        if c > max_neighbors:
            kc.atomic_max(overflow, 0, c)


def find_neighbors(grid, p, h, nb, nb_count, overflow, device, fast_math=False):
    """Fill the neighbour lists ``nb`` (N, cap) / ``nb_count`` (N,) of the points ``p``.

    ``grid`` must have been built over ``p``; not recorded on a Tape (integer output,
    nothing to differentiate).  ``overflow[0]`` gets the largest count beyond capacity.
    """
    kc.launch(pick(neighbors_kernel, fast_math), dim=p.shape[0], inputs=[grid.id, p, NEIGHBOR_SKIN * h, nb.shape[1]],
              outputs=[nb, nb_count, overflow], device=device, record_tape=False)


@kc.kernel
def lambda_kernel(p: kc.array(dtype=kc.vec3), volume: kc.array(dtype=float), nb: kc.array(dtype=int, ndim=2),
                  nb_count: kc.array(dtype=int), h: float, poly6_coef: float, spiky_coef: float, eps: float,
                  walls: int, lower: kc.vec3, upper: kc.vec3, ground: int, ground_normal: kc.vec3,
                  ground_offset: float, shape_count: int, mesh_reach: float, shape_type: kc.array(dtype=int),
                  shape_body: kc.array(dtype=int), shape_pos: kc.array(dtype=kc.vec3),
                  shape_rot: kc.array(dtype=kc.mat33), shape_scale: kc.array(dtype=kc.vec3),
                  shape_mesh: kc.array(dtype=kc.uint64), body_shapes: int,
                  body_q: kc.array(dtype=kc.transform), store_pairs: int,
                  lam: kc.array(dtype=float), pairs: kc.array(dtype=float, ndim=2)):
    i = kc.tid()
    x = p[i]
    ratio = volume[i] * poly6(0.0, h, poly6_coef)    # rho_i / rho0
    grad_i = kc.vec3(0.0, 0.0, 0.0)
    sum_sq = float(0.0)
    for k in range(nb_count[i]):
        j = nb[i, k]
        d = x - p[j]
        r2 = kc.dot(d, d)
        ratio += volume[j] * poly6(r2, h, poly6_coef)
        f = spiky_factor(r2, h, spiky_coef)
        g = d * (f * volume[j])
        grad_i += g
        sum_sq += kc.dot(g, g)
        if store_pairs != 0:   # the square root and division delta_kernel needs at the same positions
            pairs[i, k] = f
    if walls != 0:
        wb = boundary_density(x, h, lower, upper, ground, ground_normal, ground_offset, shape_count, mesh_reach,
                              shape_type, shape_body, shape_pos, shape_rot, shape_scale, shape_mesh)
        ratio += wb[3]
        grad_i += kc.vec3(wb[0], wb[1], wb[2])
        bb = body_density(x, h, body_shapes, shape_count, mesh_reach, shape_type, shape_body, shape_pos, shape_rot,
                          shape_scale, shape_mesh, body_q)
        ratio += bb[3]
        grad_i += kc.vec3(bb[0], bb[1], bb[2])
    c = kc.max(ratio - 1.0, 0.0)
    lam[i] = -c / (sum_sq + kc.dot(grad_i, grad_i) + eps)


def scorr_constants(h, scorr_k, scorr_dq):
    """(k h^2 [m^2], 1 / W(dq h) [m^3]) of the artificial pressure s_corr = -k h^2 (W(r) / W(dq h))^4."""
    w_dq = poly6_coefficient(h) * (h * h * (1.0 - scorr_dq * scorr_dq)) ** 3
    return scorr_k * h * h, 1.0 / w_dq


def compute_lambda(model, p, volume, nbl, h, eps, walls, bounds, bodies, lam, pairs=None, fast_math=False):
    """Constraint multipliers lambda (N,) [m^2] of positions ``p`` (vec3 (N,)); ``walls``: count the
    boundaries' volume (wall_volume) in the density, body shapes at ``bodies``' poses included.

    ``pairs`` (float (N, max_neighbors) or None): also store each listed pair's spiky_factor
    for apply_delta at the same positions, which then skips the square roots and divisions.
    Not for taped steps (the pair array would have to be kept per iteration for the backward
    pass).
    """
    store = pairs is not None
    kc.launch(pick(lambda_kernel, fast_math), dim=model.particle_count,
              inputs=[p, volume, nbl.nb, nbl.count, h, poly6_coefficient(h), spiky_coefficient(h), eps, int(walls),
                      *bounds, *shape_inputs(model), bodies.count, bodies.body_q, int(store)],
              outputs=[lam, pairs if store else _no_pairs(model.device, "written")], device=model.device)


_NO_PAIRS = {}


def _no_pairs(device, side):
    """A (1, 1) array standing in for the pair cache when it is off (kernels need an array).

    ``side`` ("written" or "read"): the kernels that would store pairs get one placeholder and the
    kernels that would read them another, so that a Tape does not see a (never used) float array
    written from grad arrays and read by the next launch (its gradless-intermediate warning).
    """
    key = (str(device), side)
    if key not in _NO_PAIRS:
        _NO_PAIRS[key] = kc.zeros((1, 1), dtype=float, device=device)
    return _NO_PAIRS[key]


@kc.func
def correct_position(x: kc.vec3, dp: kc.vec3, li: float, wb: kc.vec4, walls: int, h: float, r: float,
                     mass_inv_dt2: float, lower: kc.vec3, upper: kc.vec3, ground: int, ground_normal: kc.vec3,
                     ground_offset: float, shape_count: int, mesh_reach: float, shape_type: kc.array(dtype=int),
                     shape_body: kc.array(dtype=int), shape_pos: kc.array(dtype=kc.vec3),
                     shape_rot: kc.array(dtype=kc.mat33), shape_scale: kc.array(dtype=kc.vec3),
                     shape_mesh: kc.array(dtype=kc.uint64), body_shapes: int,
                     body_q: kc.array(dtype=kc.transform), body_com: kc.array(dtype=kc.vec3),
                     body_force: kc.array(dtype=kc.vec3), body_torque: kc.array(dtype=kc.vec3)) -> kc.vec3:
    """Particle i's new position [m] from x, its pair correction dp [m] and multiplier li [m^2]:
    with ``walls``, the walls' share ``wb`` (boundary_density at x) and the body walls' push (their
    reactions accumulated), then the projections onto bodies and boundaries (radius r [m])."""
    if walls != 0:
        dp += kc.vec3(wb[0], wb[1], wb[2]) * li
        dp += body_wall_push(x, h, li, mass_inv_dt2, body_shapes, shape_count, mesh_reach, shape_type,
                             shape_body, shape_pos, shape_rot, shape_scale, shape_mesh, body_q, body_com,
                             body_force, body_torque)
    y = project_bodies(x + dp, r, mass_inv_dt2, body_shapes, shape_count, mesh_reach, shape_type, shape_body,
                       shape_pos, shape_rot, shape_scale, shape_mesh, body_q, body_com, body_force, body_torque)
    return project_boundaries(y, r, lower, upper, ground, ground_normal, ground_offset, shape_count, mesh_reach,
                              shape_type, shape_body, shape_pos, shape_rot, shape_scale, shape_mesh)


@kc.kernel
def delta_kernel(p: kc.array(dtype=kc.vec3), volume: kc.array(dtype=float), inv_mass: kc.array(dtype=float),
                 radius: kc.array(dtype=float), nb: kc.array(dtype=int, ndim=2), nb_count: kc.array(dtype=int),
                 lam: kc.array(dtype=float), h: float, poly6_coef: float, spiky_coef: float,
                 scorr_k: float, scorr_inv_w: float, walls: int, lower: kc.vec3, upper: kc.vec3, ground: int,
                 ground_normal: kc.vec3, ground_offset: float, shape_count: int, mesh_reach: float,
                 shape_type: kc.array(dtype=int), shape_body: kc.array(dtype=int), shape_pos: kc.array(dtype=kc.vec3),
                 shape_rot: kc.array(dtype=kc.mat33), shape_scale: kc.array(dtype=kc.vec3),
                 shape_mesh: kc.array(dtype=kc.uint64),
                 body_shapes: int, body_q: kc.array(dtype=kc.transform), body_com: kc.array(dtype=kc.vec3),
                 mass: kc.array(dtype=float), inv_dt2: float, use_pairs: int,
                 pairs: kc.array(dtype=float, ndim=2),
                 p_out: kc.array(dtype=kc.vec3), body_force: kc.array(dtype=kc.vec3),
                 body_torque: kc.array(dtype=kc.vec3)):
    i = kc.tid()
    x = p[i]
    if inv_mass[i] > 0.0:
        li = lam[i]
        dp = kc.vec3(0.0, 0.0, 0.0)
        for k in range(nb_count[i]):
            j = nb[i, k]
            d = x - p[j]
            r2 = kc.dot(d, d)
            s = poly6(r2, h, poly6_coef) * scorr_inv_w
            s2 = s * s
            f = float(0.0)
            if use_pairs != 0:   # stored by lambda_kernel at these positions
                f = pairs[i, k]
            else:
                f = spiky_factor(r2, h, spiky_coef)
            dp += d * (f * (volume[j] * (li + lam[j] - scorr_k * s2 * s2)))
        wb = kc.vec4(0.0, 0.0, 0.0, 0.0)
        if walls != 0:   # the walls' share of particle i's own constraint gradient
            wb = boundary_density(x, h, lower, upper, ground, ground_normal, ground_offset, shape_count,
                                  mesh_reach, shape_type, shape_body, shape_pos, shape_rot, shape_scale, shape_mesh)
        x = correct_position(x, dp, li, wb, walls, h, radius[i], mass[i] * inv_dt2, lower, upper, ground,
                             ground_normal, ground_offset, shape_count, mesh_reach, shape_type, shape_body, shape_pos,
                             shape_rot, shape_scale, shape_mesh, body_shapes, body_q, body_com, body_force,
                             body_torque)
    p_out[i] = x


def apply_delta(model, p, volume, nbl, lam, h, scorr_k, scorr_dq, walls, bounds, bodies, dt, p_out, pairs=None,
                fast_math=False):
    """p_out = boundary projection of p + dp (one Jacobi update; kinematic particles keep p); the body
    shapes' reactions are accumulated into ``bodies`` (a BodyCoupling).  ``pairs``: what
    compute_lambda stored at the same ``p`` (or None: recompute)."""
    k_h2, inv_w = scorr_constants(h, scorr_k, scorr_dq)
    use = pairs is not None
    kc.launch(pick(delta_kernel, fast_math), dim=model.particle_count,
              inputs=[p, volume, model.particle_inv_mass, model.particle_radius, nbl.nb, nbl.count, lam, h,
                      poly6_coefficient(h), spiky_coefficient(h), k_h2, inv_w, int(walls), *bounds,
                      *shape_inputs(model), *bodies.inputs(model, dt), int(use),
                      pairs if use else _no_pairs(model.device, "read")],
              outputs=[p_out, *bodies.outputs()], device=model.device)


@kc.kernel
def velocity_kernel(x: kc.array(dtype=kc.vec3), p: kc.array(dtype=kc.vec3), inv_dt: float,
                    v: kc.array(dtype=kc.vec3)):
    i = kc.tid()
    v[i] = (p[i] - x[i]) * inv_dt


def update_velocity(model, x, p, dt, v_out):
    """v_out = (p - x) / dt [m/s]."""
    kc.launch(velocity_kernel, dim=model.particle_count, inputs=[x, p, 1.0 / dt], outputs=[v_out],
              device=model.device)


@kc.kernel
def vorticity_kernel(p: kc.array(dtype=kc.vec3), v: kc.array(dtype=kc.vec3), volume: kc.array(dtype=float),
                     nb: kc.array(dtype=int, ndim=2), nb_count: kc.array(dtype=int), h: float, spiky_coef: float,
                     poly6_coef: float, store_pairs: int,
                     omega: kc.array(dtype=kc.vec3), omega_norm: kc.array(dtype=float),
                     pairs: kc.array(dtype=float, ndim=2)):
    i = kc.tid()
    x = p[i]
    vi = v[i]
    w = kc.vec3(0.0, 0.0, 0.0)
    for k in range(nb_count[i]):
        j = nb[i, k]
        d = x - p[j]
        f = spiky_factor(kc.dot(d, d), h, spiky_coef)
        # curl of sum_j V_j v_j W(x - x_j), with v_i subtracted (exact for uniform flow)
        w += kc.cross(d * f, v[j] - vi) * volume[j]
        if store_pairs != 0:   # the square root and division finish_kernel needs at the same positions
            pairs[i, k] = f
    omega[i] = w
    omega_norm[i] = kc.length(w)


def compute_vorticity(model, p, v, volume, nbl, h, omega, omega_norm, pairs=None, fast_math=False):
    """SPH estimate of the vorticity curl(v) [1/s] at each particle (vec3 (N,)) and its norm (N,);
    ``pairs`` (or None): also store each pair's spiky_factor for finish_velocity."""
    store = pairs is not None
    kc.launch(pick(vorticity_kernel, fast_math), dim=model.particle_count,
              inputs=[p, v, volume, nbl.nb, nbl.count, h, spiky_coefficient(h), poly6_coefficient(h), int(store)],
              outputs=[omega, omega_norm, pairs if store else _no_pairs(model.device, "written")], device=model.device)


@kc.kernel
def finish_kernel(p: kc.array(dtype=kc.vec3), v: kc.array(dtype=kc.vec3), omega: kc.array(dtype=kc.vec3),
                  omega_norm: kc.array(dtype=float), volume: kc.array(dtype=float), inv_mass: kc.array(dtype=float),
                  nb: kc.array(dtype=int, ndim=2), nb_count: kc.array(dtype=int), h: float, poly6_coef: float,
                  spiky_coef: float, xsph: float, confinement: float, dt: float, use_pairs: int,
                  pairs: kc.array(dtype=float, ndim=2), v_out: kc.array(dtype=kc.vec3)):
    i = kc.tid()
    vi = v[i]
    if inv_mass[i] > 0.0:
        x = p[i]
        smooth = kc.vec3(0.0, 0.0, 0.0)
        eta = kc.vec3(0.0, 0.0, 0.0)
        wi = omega_norm[i]
        for k in range(nb_count[i]):
            j = nb[i, k]
            d = x - p[j]
            r2 = kc.dot(d, d)
            smooth += (v[j] - vi) * (volume[j] * poly6(r2, h, poly6_coef))
            if confinement > 0.0:
                f = float(0.0)
                if use_pairs != 0:   # stored by vorticity_kernel at these positions
                    f = pairs[i, k]
                else:
                    f = spiky_factor(r2, h, spiky_coef)
                eta += d * (f * (volume[j] * (omega_norm[j] - wi)))
        acc = kc.vec3(0.0, 0.0, 0.0)
        eta_len = kc.length(eta)
        if confinement > 0.0 and eta_len > 1.0e-12:
            acc = kc.cross(eta / eta_len, omega[i]) * confinement
        vi = vi + smooth * xsph + acc * dt
    v_out[i] = vi


def finish_velocity(model, p, v, omega, omega_norm, volume, nbl, h, xsph, confinement, dt, v_out, pairs=None,
                    fast_math=False):
    """v_out = v + XSPH smoothing + dt * vorticity confinement (kinematic particles keep v); ``pairs``:
    what compute_vorticity stored at the same ``p`` (only with confinement > 0), or None."""
    use = pairs is not None
    kc.launch(pick(finish_kernel, fast_math), dim=model.particle_count,
              inputs=[p, v, omega, omega_norm, volume, model.particle_inv_mass, nbl.nb, nbl.count, h,
                      poly6_coefficient(h), spiky_coefficient(h), xsph, confinement, float(dt), int(use),
                      pairs if use else _no_pairs(model.device, "read")],
              outputs=[v_out], device=model.device)


@kc.kernel
def density_kernel(grid: kc.uint64, p: kc.array(dtype=kc.vec3), mass: kc.array(dtype=float), h: float,
                   poly6_coef: float, rho: kc.array(dtype=float)):
    i = kc.tid()
    x = p[i]
    query = kc.hash_grid_query(grid, x, h)
    j = int(0)
    s = float(0.0)
    while kc.hash_grid_query_next(query, j):
        d = x - p[j]
        s += mass[j] * poly6(kc.dot(d, d), h, poly6_coef)
    rho[i] = s


def sph_density(grid, p, mass, h, rho, device):
    """rho (N,) = sum_j m_j W(p_i - p_j) [kg/m^3] (grid built over p with cells >= h); not taped."""
    kc.launch(density_kernel, dim=p.shape[0], inputs=[grid.id, p, mass, h, poly6_coefficient(h)], outputs=[rho],
              device=device, record_tape=False)


# Fast-math twins of the pair-loop kernels (SolverPBF(fast_math=True), docs/cpu_codegen.md "Fast
# math"): the same Python source built with reassociation, reciprocals and FMA allowed. Made
# here, at import, so that the first fast step builds all of them in one translation unit.
_FAST_TWINS = {k: kc.kernel(k.func, fast_math=True, enable_backward=k.enable_backward, module=__name__)
               for k in (neighbors_kernel, lambda_kernel, delta_kernel, vorticity_kernel, finish_kernel)}


def pick(kernel, fast_math: bool):
    """``kernel`` or its fast-math twin."""
    return _FAST_TWINS[kernel] if fast_math else kernel
