"""Kernels of the staggered-grid (MAC) fluid, 2-D and 3-D, with their launchers.

Layout (see sim/solvers/grid_fluid.py): cell (i, j, k) spans [i dx, (i+1) dx] x ... ; the
x-velocity ``u[i, j, k]`` sits on the face x = i dx, ``v[i, j, k]`` on y = j dx, ``w[i, j, k]``
on z = k dx.  Every kernel here works on 3-D arrays: a 2-D grid is run as one layer of cells
(nz = 1) through reshaped views, with a zero w of shape (nx, ny, 2), so there is one code
path.  Positions inside kernels are in cell units (metres / dx).

A *face field* of axis ``a`` has ``n_a + 1`` entries along a; face index ``f`` along a lies
between cells ``f - 1`` and ``f``.  A face is *constrained* (its velocity is the wall's, zero)
when it lies on the domain boundary or touches a solid cell.

Every kernel writes a fresh output array and never the arrays it reads, so a Tape replays
a step exactly (the seeds' rule on overwriting).
"""
from __future__ import annotations

import kernelcore as kc

F3 = kc.array(dtype=float, ndim=3)
I3 = kc.array(dtype=kc.int32, ndim=3)
V3 = kc.array(dtype=kc.vec3, ndim=3)


# ------------------------------------------------------------------------------------------------
# interpolation and cell tests
# ------------------------------------------------------------------------------------------------
@kc.func
def sample_field(f: F3, x: float, y: float, z: float):
    """Trilinear sample of ``f`` at index-space (x, y, z), clamped to the array (constant extension)."""
    sx = f.shape[0]
    sy = f.shape[1]
    sz = f.shape[2]
    cx = kc.clamp(x, 0.0, float(sx - 1))
    cy = kc.clamp(y, 0.0, float(sy - 1))
    cz = kc.clamp(z, 0.0, float(sz - 1))
    # max(.., 0): a NaN position gives a NaN sample, never an index outside the array
    i0 = kc.max(kc.min(int(cx), sx - 1), 0)
    j0 = kc.max(kc.min(int(cy), sy - 1), 0)
    k0 = kc.max(kc.min(int(cz), sz - 1), 0)
    i1 = kc.min(i0 + 1, sx - 1)
    j1 = kc.min(j0 + 1, sy - 1)
    k1 = kc.min(k0 + 1, sz - 1)
    tx = cx - float(i0)
    ty = cy - float(j0)
    tz = cz - float(k0)
    c00 = f[i0, j0, k0] * (1.0 - tx) + f[i1, j0, k0] * tx
    c10 = f[i0, j1, k0] * (1.0 - tx) + f[i1, j1, k0] * tx
    c01 = f[i0, j0, k1] * (1.0 - tx) + f[i1, j0, k1] * tx
    c11 = f[i0, j1, k1] * (1.0 - tx) + f[i1, j1, k1] * tx
    c0 = c00 * (1.0 - ty) + c10 * ty
    c1 = c01 * (1.0 - ty) + c11 * ty
    return c0 * (1.0 - tz) + c1 * tz


@kc.func
def sample_minmax(f: F3, x: float, y: float, z: float):
    """(min, max) of the 8 values ``sample_field`` blends at (x, y, z): the MacCormack limiter's bounds."""
    sx = f.shape[0]
    sy = f.shape[1]
    sz = f.shape[2]
    i0 = kc.max(kc.min(int(kc.clamp(x, 0.0, float(sx - 1))), sx - 1), 0)
    j0 = kc.max(kc.min(int(kc.clamp(y, 0.0, float(sy - 1))), sy - 1), 0)
    k0 = kc.max(kc.min(int(kc.clamp(z, 0.0, float(sz - 1))), sz - 1), 0)
    i1 = kc.min(i0 + 1, sx - 1)
    j1 = kc.min(j0 + 1, sy - 1)
    k1 = kc.min(k0 + 1, sz - 1)
    lo = kc.min(kc.min(kc.min(f[i0, j0, k0], f[i1, j0, k0]), kc.min(f[i0, j1, k0], f[i1, j1, k0])),
                kc.min(kc.min(f[i0, j0, k1], f[i1, j0, k1]), kc.min(f[i0, j1, k1], f[i1, j1, k1])))
    hi = kc.max(kc.max(kc.max(f[i0, j0, k0], f[i1, j0, k0]), kc.max(f[i0, j1, k0], f[i1, j1, k0])),
                kc.max(kc.max(f[i0, j0, k1], f[i1, j0, k1]), kc.max(f[i0, j1, k1], f[i1, j1, k1])))
    return kc.vec2(lo, hi)


@kc.func
def velocity_at(u: F3, v: F3, w: F3, p: kc.vec3):
    """Velocity [m/s] at cell-unit position p, each component from its own staggered grid."""
    return kc.vec3(sample_field(u, p[0], p[1] - 0.5, p[2] - 0.5),
                   sample_field(v, p[0] - 0.5, p[1], p[2] - 0.5),
                   sample_field(w, p[0] - 0.5, p[1] - 0.5, p[2]))


@kc.func
def is_fluid(solid: I3, i: int, j: int, k: int):
    """1 for a cell inside the domain that is not solid, else 0."""
    r = 0
    if i >= 0 and j >= 0 and k >= 0 and i < solid.shape[0] and j < solid.shape[1] and k < solid.shape[2]:
        if solid[i, j, k] == 0:
            r = 1
    return r


@kc.func
def axis_step(axis: int, d: int):
    """Unit index offset along ``axis`` as (di, dj, dk) for axis d's component."""
    r = 0
    if axis == d:
        r = 1
    return r


@kc.func
def face_constrained(solid: I3, axis: int, i: int, j: int, k: int):
    """1 when face (i, j, k) of ``axis`` is on the domain boundary or touches a solid cell."""
    di = axis_step(axis, 0)
    dj = axis_step(axis, 1)
    dk = axis_step(axis, 2)
    return 1 - is_fluid(solid, i, j, k) * is_fluid(solid, i - di, j - dj, k - dk)


@kc.func
def face_inside_solid(solid: I3, axis: int, i: int, j: int, k: int):
    """1 when face (i, j, k) of ``axis`` lies outside the domain or between two solid cells (a ghost face)."""
    di = axis_step(axis, 0)
    dj = axis_step(axis, 1)
    dk = axis_step(axis, 2)
    n0 = solid.shape[0] + di
    n1 = solid.shape[1] + dj
    n2 = solid.shape[2] + dk
    r = 0
    if i < 0 or j < 0 or k < 0 or i >= n0 or j >= n1 or k >= n2:
        r = 1
    else:
        a = 1
        if i < solid.shape[0] and j < solid.shape[1] and k < solid.shape[2]:
            a = solid[i, j, k]
        b = 1
        if i - di >= 0 and j - dj >= 0 and k - dk >= 0:
            b = solid[i - di, j - dj, k - dk]
        if a != 0 and b != 0:
            r = 1
    return r


# ------------------------------------------------------------------------------------------------
# advection
# ------------------------------------------------------------------------------------------------
@kc.kernel
def advect_kernel(q: F3, u: F3, v: F3, w: F3, offset: kc.vec3, h: float, q_out: F3):
    """Semi-Lagrangian advection (midpoint back-trace) of a field sampled at (i, j, k) + offset.

    ``h`` = dt / dx [s/m]; negative for the reverse pass of MacCormack.
    """
    i, j, k = kc.tid()
    p = kc.vec3(float(i), float(j), float(k)) + offset
    v1 = velocity_at(u, v, w, p)
    mid = p - v1 * (0.5 * h)
    v2 = velocity_at(u, v, w, mid)
    back = p - v2 * h - offset
    q_out[i, j, k] = sample_field(q, back[0], back[1], back[2])


@kc.kernel
def maccormack_kernel(q: F3, q_fwd: F3, q_bwd: F3, u: F3, v: F3, w: F3, offset: kc.vec3, h: float, q_out: F3):
    """MacCormack correction ``q_fwd + (q - q_bwd) / 2``, clamped to the values the forward step blended."""
    i, j, k = kc.tid()
    p = kc.vec3(float(i), float(j), float(k)) + offset
    v1 = velocity_at(u, v, w, p)
    mid = p - v1 * (0.5 * h)
    v2 = velocity_at(u, v, w, mid)
    back = p - v2 * h - offset
    bounds = sample_minmax(q, back[0], back[1], back[2])
    corrected = q_fwd[i, j, k] + 0.5 * (q[i, j, k] - q_bwd[i, j, k])
    q_out[i, j, k] = kc.clamp(corrected, bounds[0], bounds[1])


@kc.kernel
def advect_pair_kernel(q1: F3, q2: F3, u: F3, v: F3, w: F3, offset: kc.vec3, h: float, q1_out: F3, q2_out: F3):
    """advect_kernel for two fields on the same grid (density and temperature): one back-trace for both."""
    i, j, k = kc.tid()
    p = kc.vec3(float(i), float(j), float(k)) + offset
    v1 = velocity_at(u, v, w, p)
    mid = p - v1 * (0.5 * h)
    v2 = velocity_at(u, v, w, mid)
    back = p - v2 * h - offset
    q1_out[i, j, k] = sample_field(q1, back[0], back[1], back[2])
    q2_out[i, j, k] = sample_field(q2, back[0], back[1], back[2])


def advect_pair(q1, q2, u, v, w, offset, h, q1_out, q2_out):
    """Semi-Lagrangian advection of two fields of one shape with one back-trace."""
    kc.launch(advect_pair_kernel, dim=q1.shape, inputs=[q1, q2, u, v, w, kc.vec3(*offset), float(h)],
              outputs=[q1_out, q2_out], device=q1.device)


def advect(q, u, v, w, offset, h, q_out):
    """Launch semi-Lagrangian advection of ``q`` (3-D view) into ``q_out``; offset in cell units."""
    kc.launch(advect_kernel, dim=q.shape, inputs=[q, u, v, w, kc.vec3(*offset), float(h)], outputs=[q_out],
              device=q.device)


def maccormack(q, q_fwd, q_bwd, u, v, w, offset, h, q_out):
    kc.launch(maccormack_kernel, dim=q.shape, inputs=[q, q_fwd, q_bwd, u, v, w, kc.vec3(*offset), float(h)],
              outputs=[q_out], device=q.device)


# ------------------------------------------------------------------------------------------------
# forces: buoyancy and vorticity confinement
# ------------------------------------------------------------------------------------------------
@kc.func
def cell_velocity(u: F3, v: F3, w: F3, i: int, j: int, k: int):
    return kc.vec3(0.5 * (u[i, j, k] + u[i + 1, j, k]), 0.5 * (v[i, j, k] + v[i, j + 1, k]),
                   0.5 * (w[i, j, k] + w[i, j, k + 1]))


@kc.kernel
def vorticity_kernel(u: F3, v: F3, w: F3, inv_dx: float, omega: V3):
    """Cell-centred vorticity curl(u) [1/s] from central differences of cell-centred velocities
    (one-sided at the domain boundary; zero along an axis one cell thick)."""
    i, j, k = kc.tid()
    nx = omega.shape[0]
    ny = omega.shape[1]
    nz = omega.shape[2]
    ip = kc.min(i + 1, nx - 1)
    im = kc.max(i - 1, 0)
    jp = kc.min(j + 1, ny - 1)
    jm = kc.max(j - 1, 0)
    kp = kc.min(k + 1, nz - 1)
    km = kc.max(k - 1, 0)
    ddx = kc.vec3(0.0, 0.0, 0.0)
    ddy = kc.vec3(0.0, 0.0, 0.0)
    ddz = kc.vec3(0.0, 0.0, 0.0)
    if ip > im:
        ddx = (cell_velocity(u, v, w, ip, j, k) - cell_velocity(u, v, w, im, j, k)) * (inv_dx / float(ip - im))
    if jp > jm:
        ddy = (cell_velocity(u, v, w, i, jp, k) - cell_velocity(u, v, w, i, jm, k)) * (inv_dx / float(jp - jm))
    if kp > km:
        ddz = (cell_velocity(u, v, w, i, j, kp) - cell_velocity(u, v, w, i, j, km)) * (inv_dx / float(kp - km))
    omega[i, j, k] = kc.vec3(ddy[2] - ddz[1], ddz[0] - ddx[2], ddx[1] - ddy[0])


@kc.func
def vorticity_norm(omega: V3, i: int, j: int, k: int):
    o = omega[i, j, k]
    return kc.sqrt(kc.dot(o, o) + 1.0e-20)


@kc.kernel
def confinement_kernel(omega: V3, solid: I3, eps_dx: float, force: V3):
    """Vorticity-confinement acceleration eps dx (N x omega) [m/s^2], N = grad|omega| / |grad|omega||."""
    i, j, k = kc.tid()
    nx = omega.shape[0]
    ny = omega.shape[1]
    nz = omega.shape[2]
    ip = kc.min(i + 1, nx - 1)
    im = kc.max(i - 1, 0)
    jp = kc.min(j + 1, ny - 1)
    jm = kc.max(j - 1, 0)
    kp = kc.min(k + 1, nz - 1)
    km = kc.max(k - 1, 0)
    gx = 0.0
    gy = 0.0
    gz = 0.0
    if ip > im:
        gx = (vorticity_norm(omega, ip, j, k) - vorticity_norm(omega, im, j, k)) / float(ip - im)
    if jp > jm:
        gy = (vorticity_norm(omega, i, jp, k) - vorticity_norm(omega, i, jm, k)) / float(jp - jm)
    if kp > km:
        gz = (vorticity_norm(omega, i, j, kp) - vorticity_norm(omega, i, j, km)) / float(kp - km)
    g = kc.vec3(gx, gy, gz)
    n = g / kc.sqrt(kc.dot(g, g) + 1.0e-20)
    f = kc.cross(n, omega[i, j, k]) * eps_dx
    if solid[i, j, k] != 0:
        f = kc.vec3(0.0, 0.0, 0.0)
    force[i, j, k] = f


@kc.kernel
def face_forces_kernel(q: F3, axis: int, solid: I3, density: F3, temperature: F3, conf: V3, use_conf: int,
                       smoke_weight: float, heat_lift: float, ambient: float, dt: float, q_out: F3):
    """q_out = q + dt f on the free faces of ``axis``: buoyancy ``-smoke_weight rho + heat_lift (T - T_amb)``
    [m/s^2] along +y (axis 1) plus the vorticity-confinement acceleration, averaged from the two cells;
    0 on constrained faces (the walls, as enforce_walls_kernel: one pass over the faces instead of two)."""
    i, j, k = kc.tid()
    di = axis_step(axis, 0)
    dj = axis_step(axis, 1)
    dk = axis_step(axis, 2)
    val = q[i, j, k]
    if face_constrained(solid, axis, i, j, k) == 0:
        f = 0.0
        if axis == 1:
            rho = 0.5 * (density[i, j, k] + density[i - di, j - dj, k - dk])
            temp = 0.5 * (temperature[i, j, k] + temperature[i - di, j - dj, k - dk])
            f = heat_lift * (temp - ambient) - smoke_weight * rho
        if use_conf != 0:
            f = f + 0.5 * (conf[i, j, k][axis] + conf[i - di, j - dj, k - dk][axis])
        val = val + dt * f
    else:
        val = 0.0
    q_out[i, j, k] = val


def vorticity_confinement(u, v, w, solid, dx, eps, omega, force):
    """Cell-centred confinement acceleration into ``force`` (vec3 cells); ``omega`` is scratch output."""
    kc.launch(vorticity_kernel, dim=solid.shape, inputs=[u, v, w, 1.0 / dx], outputs=[omega], device=solid.device)
    kc.launch(confinement_kernel, dim=solid.shape, inputs=[omega, solid, eps * dx], outputs=[force],
              device=solid.device)


def face_forces(q, axis, solid, density, temperature, conf, use_conf, smoke_weight, heat_lift, ambient, dt, q_out):
    kc.launch(face_forces_kernel, dim=q.shape, inputs=[q, int(axis), solid, density, temperature, conf, int(use_conf),
                                                      float(smoke_weight), float(heat_lift), float(ambient), float(dt)],
              outputs=[q_out], device=q.device)


# ------------------------------------------------------------------------------------------------
# viscosity, walls, divergence, pressure gradient
# ------------------------------------------------------------------------------------------------
@kc.func
def viscous_term(q: F3, solid: I3, axis: int, i: int, j: int, k: int, b: int, no_slip: int):
    """Sum over the two neighbours along axis ``b`` of (q_nb - q_c) for face (i, j, k) of ``axis``.

    Along the face's own axis the neighbours are faces that always exist (walls hold 0).
    Across it, a neighbour outside the domain or inside a solid is a ghost: free-slip mirrors
    the velocity (zero shear: contributes 0), no-slip negates it (zero velocity on the wall:
    contributes -2 q_c).
    """
    db = axis_step(b, 0)
    eb = axis_step(b, 1)
    fb = axis_step(b, 2)
    qc = q[i, j, k]
    s = 0.0
    for side in range(2):
        sgn = 2 * side - 1
        ni = i + sgn * db
        nj = j + sgn * eb
        nk = k + sgn * fb
        if b == axis:
            s = s + q[ni, nj, nk] - qc
        else:
            if face_inside_solid(solid, axis, ni, nj, nk) != 0:
                if no_slip != 0:
                    s = s - 2.0 * qc
            else:
                s = s + q[ni, nj, nk] - qc
    return s


@kc.kernel
def viscosity_kernel(q: F3, axis: int, solid: I3, dims: int, no_slip: int, nu_dt_dx2: float, q_out: F3):
    """One explicit diffusion step q + nu dt / dx^2 L q on the free faces of ``axis`` (L the 5/7-point Laplacian)."""
    i, j, k = kc.tid()
    val = q[i, j, k]
    if face_constrained(solid, axis, i, j, k) == 0:
        lap = 0.0
        for b in range(dims):
            lap = lap + viscous_term(q, solid, axis, i, j, k, b, no_slip)
        val = val + nu_dt_dx2 * lap
    q_out[i, j, k] = val


@kc.kernel
def enforce_walls_kernel(q: F3, axis: int, solid: I3, q_out: F3):
    """Zero the normal velocity on constrained faces (static walls and solids)."""
    i, j, k = kc.tid()
    val = q[i, j, k]
    if face_constrained(solid, axis, i, j, k) != 0:
        val = 0.0
    q_out[i, j, k] = val


@kc.kernel
def net_outflow_kernel(u: F3, v: F3, w: F3, solid: I3, scale: float, out: F3):
    """scale x (net outflow of each fluid cell in m/s: sum of face velocities out minus in); 0 in solids."""
    i, j, k = kc.tid()
    val = 0.0
    if solid[i, j, k] == 0:
        val = scale * (u[i + 1, j, k] - u[i, j, k] + v[i, j + 1, k] - v[i, j, k] + w[i, j, k + 1] - w[i, j, k])
    out[i, j, k] = val


@kc.kernel
def subtract_gradient_kernel(q: F3, axis: int, solid: I3, psi: F3, q_out: F3):
    """q_out = q - (psi_c - psi_{c - e_axis}) on free faces: the projection's velocity update."""
    i, j, k = kc.tid()
    val = q[i, j, k]
    if face_constrained(solid, axis, i, j, k) == 0:
        di = axis_step(axis, 0)
        dj = axis_step(axis, 1)
        dk = axis_step(axis, 2)
        val = val - (psi[i, j, k] - psi[i - di, j - dj, k - dk])
    q_out[i, j, k] = val


@kc.kernel
def scale_kernel(a: F3, s: float, out: F3):
    i, j, k = kc.tid()
    out[i, j, k] = s * a[i, j, k]


MAX_CHUNK = 1024  # faces per thread of max_abs: one atomic per chunk, not one per face (they all hit out[0])


@kc.kernel
def max_abs_kernel(q: kc.array(dtype=float), out: kc.array(dtype=float)):
    t = kc.tid()
    n = q.shape[0]
    m = 0.0
    for c in range(t * MAX_CHUNK, kc.min(t * MAX_CHUNK + MAX_CHUNK, n)):
        a = kc.abs(q[c])
        if not kc.isfinite(a):
            a = 3.0e38  # NaN/inf: max() would skip a NaN; report a huge speed instead
        m = kc.max(m, a)
    kc.atomic_max(out, 0, m)


def viscosity_step(q, axis, solid, dims, no_slip, nu_dt_dx2, q_out):
    kc.launch(viscosity_kernel, dim=q.shape, inputs=[q, int(axis), solid, int(dims), int(no_slip), float(nu_dt_dx2)],
              outputs=[q_out], device=q.device)


def enforce_walls(q, axis, solid, q_out):
    kc.launch(enforce_walls_kernel, dim=q.shape, inputs=[q, int(axis), solid], outputs=[q_out], device=q.device)


def net_outflow(u, v, w, solid, scale, out):
    kc.launch(net_outflow_kernel, dim=solid.shape, inputs=[u, v, w, solid, float(scale)], outputs=[out],
              device=solid.device)


def subtract_gradient(q, axis, solid, psi, q_out):
    kc.launch(subtract_gradient_kernel, dim=q.shape, inputs=[q, int(axis), solid, psi], outputs=[q_out],
              device=q.device)


def scale(a, s, out):
    kc.launch(scale_kernel, dim=a.shape, inputs=[a, float(s)], outputs=[out], device=a.device)


def max_abs(q, out):
    """Atomic max of |q| into out[0] (out must hold 0 or a smaller value first); not recorded on a tape."""
    n = 1
    for s in q.shape:
        n *= int(s)
    kc.launch(max_abs_kernel, dim=(n + MAX_CHUNK - 1) // MAX_CHUNK, inputs=[q.reshape((n,))], outputs=[out],
              device=q.device, record_tape=False)


# ------------------------------------------------------------------------------------------------
# solids from signed distances
# ------------------------------------------------------------------------------------------------
@kc.kernel
def solid_sphere_kernel(center: kc.vec3, radius: float, dx: float, solid: I3):
    """Mark cells whose centre lies inside the sphere (signed distance < 0)."""
    i, j, k = kc.tid()
    p = kc.vec3(float(i) + 0.5, float(j) + 0.5, float(k) + 0.5) * dx
    if kc.length(p - center) < radius:
        solid[i, j, k] = 1


@kc.kernel
def solid_box_kernel(center: kc.vec3, half: kc.vec3, dx: float, solid: I3):
    """Mark cells whose centre lies inside the axis-aligned box."""
    i, j, k = kc.tid()
    p = kc.vec3(float(i) + 0.5, float(j) + 0.5, float(k) + 0.5) * dx - center
    if kc.abs(p[0]) < half[0] and kc.abs(p[1]) < half[1] and kc.abs(p[2]) < half[2]:
        solid[i, j, k] = 1


def mark_sphere(center, radius, dx, solid):
    kc.launch(solid_sphere_kernel, dim=solid.shape, inputs=[kc.vec3(*center), float(radius), float(dx)],
              outputs=[solid], device=solid.device, record_tape=False)


def mark_box(center, half_extents, dx, solid):
    kc.launch(solid_box_kernel, dim=solid.shape, inputs=[kc.vec3(*center), kc.vec3(*half_extents), float(dx)],
              outputs=[solid], device=solid.device, record_tape=False)


@kc.kernel
def emit_box_kernel(field: F3, center: kc.vec3, half: kc.vec3, dx: float, value: float, out: F3):
    """out = max(field, value) in cells whose centre lies inside the box, else field (a smoke/heat source)."""
    i, j, k = kc.tid()
    p = kc.vec3(float(i) + 0.5, float(j) + 0.5, float(k) + 0.5) * dx - center
    val = field[i, j, k]
    if kc.abs(p[0]) < half[0] and kc.abs(p[1]) < half[1] and kc.abs(p[2]) < half[2]:
        val = kc.max(val, value)
    out[i, j, k] = val


def emit_box(field, center, half_extents, dx, value, out):
    kc.launch(emit_box_kernel, dim=field.shape, inputs=[field, kc.vec3(*center), kc.vec3(*half_extents), float(dx),
                                                       float(value)], outputs=[out], device=field.device)
