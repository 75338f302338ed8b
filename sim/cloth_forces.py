"""Cloth forces for SolverSemiImplicit: membrane, bending and air (kernels + launchers).

Membrane (one linear triangle, St. Venant-Kirchhoff):
    F = [x1 - x0, x2 - x0] D^-1 (3x2; D^-1 = ``tri_poses``), E = (F^T F - I) / 2 (Green strain),
    psi = mu |E|^2 + lambda / 2 tr(E)^2   [J/m^2],  S = 2 mu E + lambda tr(E) I + kd dE/dt,
    forces on corners 1, 2: -A F S D^-T (A = ``tri_areas``), corner 0 the negative sum.
  ``tri_ke`` = mu [N/m] (shear), ``tri_ka`` = lambda [N/m] (the trace term penalises area
  change: together with mu it gives the areal modulus mu + lambda); ``tri_kd`` [N s/m]
  multiplies the Green strain rate (Kelvin-Voigt damping: it damps stretching and
  shearing, never rigid motion).  Why StVK: its strain is rotation invariant, so large
  rotations (folds, drapes) are exact, and its force is a polynomial of the positions —
  smooth, cheap and exactly differentiable; its weakness (softening under strong
  compression) does not matter for cloth, which buckles instead.  Uniaxial tension with
  lambda = 0 has the closed form  P = mu s (s^2 - 1)  (s the stretch), used by the tests.

Bending (per interior edge; particles o0, o1 opposite, e0-e1 shared):
    theta = signed dihedral angle between the normals of (o0, e0, e1) and (o1, e1, e0),
    energy  edge_ke / 2 (theta - rest)^2  [J], damping torque  edge_kd dtheta/dt,
  forces along the exact gradient of theta (the closed form of Bridson et al. 2003).

Air (optional, per triangle, ``tri_drag`` / ``tri_lift`` [kg/m^3]): with v the mean
velocity of the corners relative to the air (``Model.air_velocity``, the wind [m/s]), n the unit normal, c = n . v/|v|:
    drag  -tri_drag A |v|^2 |c| v/|v|,   lift  -tri_lift A |v|^2 c sqrt(1 - c^2) l,
  l the unit vector in the n-v plane normal to v; each corner gets a third.
"""
from __future__ import annotations

import kernelcore as kc


@kc.func
def dihedral_theta(x0: kc.vec3, x1: kc.vec3, x2: kc.vec3, x3: kc.vec3) -> float:
    """Signed dihedral angle [rad] of bending edge (o0=x0, o1=x1, e0=x2, e1=x3); 0 when flat."""
    e = x3 - x2
    n1 = kc.cross(x2 - x0, x3 - x0)
    n2 = kc.cross(x3 - x1, x2 - x1)
    return kc.atan2(kc.dot(kc.cross(n1, n2), e) / kc.length(e), kc.dot(n1, n2))


@kc.func
def dihedral_gradient(x0: kc.vec3, x1: kc.vec3, x2: kc.vec3, x3: kc.vec3, k: int) -> kc.vec3:
    """d theta / d x_k of dihedral_theta [1/m] (k = 0..3)."""
    e = x3 - x2
    el = kc.length(e)
    n1 = kc.cross(x0 - x2, x0 - x3)
    n2 = kc.cross(x1 - x3, x1 - x2)
    a = n1 / kc.dot(n1, n1)
    b = n2 / kc.dot(n2, n2)
    g = kc.vec3(0.0, 0.0, 0.0)
    if k == 0:
        g = a * el
    elif k == 1:
        g = b * el
    elif k == 2:
        g = a * (kc.dot(x0 - x3, e) / el) + b * (kc.dot(x1 - x3, e) / el)
    else:
        g = -(a * (kc.dot(x0 - x2, e) / el) + b * (kc.dot(x1 - x2, e) / el))
    return -g


@kc.func
def dihedral_angle_gradients(x0: kc.vec3, x1: kc.vec3, x2: kc.vec3, x3: kc.vec3) -> kc.mat44:
    """Row k = (d theta / d x_k [1/m], theta [rad]) of dihedral_theta/dihedral_gradient, their
    cross products computed once (the four gradients and the angle share them).  The edge and
    both normals must not be degenerate (callers test that first)."""
    e = x3 - x2
    el = kc.length(e)
    n1 = kc.cross(x0 - x2, x0 - x3)
    n2 = kc.cross(x1 - x3, x1 - x2)
    a = n1 / kc.dot(n1, n1)
    b = n2 / kc.dot(n2, n2)
    theta = kc.atan2(kc.dot(kc.cross(n1, n2), e) / el, kc.dot(n1, n2))
    g0 = a * (-el)
    g1 = b * (-el)
    g2 = -(a * (kc.dot(x0 - x3, e) / el) + b * (kc.dot(x1 - x3, e) / el))
    g3 = a * (kc.dot(x0 - x2, e) / el) + b * (kc.dot(x1 - x2, e) / el)
    return kc.mat44(g0[0], g0[1], g0[2], theta, g1[0], g1[1], g1[2], theta, g2[0], g2[1], g2[2], theta,
                    g3[0], g3[1], g3[2], theta)


@kc.kernel
def eval_triangles_kernel(q: kc.array(dtype=kc.vec3), qd: kc.array(dtype=kc.vec3),
                          indices: kc.array(dtype=int, ndim=2), poses: kc.array(dtype=kc.mat22),
                          areas: kc.array(dtype=float), materials: kc.array(dtype=float, ndim=2),
                          wind: kc.vec3, f: kc.array(dtype=kc.vec3)):
    t = kc.tid()
    i = indices[t, 0]
    j = indices[t, 1]
    k = indices[t, 2]
    mu = materials[t, 0]
    lam = materials[t, 1]
    kd = materials[t, 2]
    Dinv = poses[t]
    area = areas[t]
    d1 = q[j] - q[i]
    d2 = q[k] - q[i]
    v1 = qd[j] - qd[i]
    v2 = qd[k] - qd[i]
    # deformation gradient columns and their rates
    f0 = d1 * Dinv[0, 0] + d2 * Dinv[1, 0]
    f1 = d1 * Dinv[0, 1] + d2 * Dinv[1, 1]
    r0 = v1 * Dinv[0, 0] + v2 * Dinv[1, 0]
    r1 = v1 * Dinv[0, 1] + v2 * Dinv[1, 1]
    e00 = 0.5 * (kc.dot(f0, f0) - 1.0)
    e11 = 0.5 * (kc.dot(f1, f1) - 1.0)
    e01 = 0.5 * kc.dot(f0, f1)
    # Green strain rate (symmetric part of F^T dF/dt)
    s00 = kc.dot(f0, r0)
    s11 = kc.dot(f1, r1)
    s01 = 0.5 * (kc.dot(f0, r1) + kc.dot(f1, r0))
    tr = e00 + e11
    S00 = 2.0 * mu * e00 + lam * tr + kd * s00
    S11 = 2.0 * mu * e11 + lam * tr + kd * s11
    S01 = 2.0 * mu * e01 + kd * s01
    p0 = f0 * S00 + f1 * S01
    p1 = f0 * S01 + f1 * S11
    fj = -(p0 * Dinv[0, 0] + p1 * Dinv[0, 1]) * area
    fk = -(p0 * Dinv[1, 0] + p1 * Dinv[1, 1]) * area
    kc.atomic_add(f, i, -(fj + fk))
    kc.atomic_add(f, j, fj)
    kc.atomic_add(f, k, fk)
    # air
    drag = materials[t, 3]
    lift = materials[t, 4]
    if drag > 0.0 or lift > 0.0:
        v = (qd[i] + qd[j] + qd[k]) * (1.0 / 3.0) - wind
        nc = kc.cross(d1, d2)
        a_now = 0.5 * kc.length(nc)
        speed = kc.length(v)
        if speed > 1.0e-8 and a_now > 0.0:
            n = nc / (2.0 * a_now)
            vh = v / speed
            c = kc.dot(n, vh)
            fa = vh * (-drag * a_now * speed * speed * kc.abs(c))
            # |n - c vh| = sqrt(1 - c^2): the lift direction times its sine factor
            fa = fa - (n - vh * c) * (lift * a_now * speed * speed * c)
            fa = fa * (1.0 / 3.0)
            kc.atomic_add(f, i, fa)
            kc.atomic_add(f, j, fa)
            kc.atomic_add(f, k, fa)


def eval_triangles(model, state, forces):
    """Add membrane (and air) forces [N] of ``state`` to ``forces`` (vec3, (particle_count,)).

    No ``device=``: the arrays give it, and kc.launch's fast path (launch.py FastLaunch) is only
    taken without one."""
    if model.tri_count == 0:
        return
    kc.launch(eval_triangles_kernel, dim=model.tri_count,
              inputs=[state.particle_q, state.particle_qd, model.tri_indices, model.tri_poses, model.tri_areas,
                      model.tri_materials, getattr(model, "air_velocity", kc.vec3(0.0, 0.0, 0.0))],
              outputs=[forces])


@kc.kernel
def eval_bending_kernel(q: kc.array(dtype=kc.vec3), qd: kc.array(dtype=kc.vec3),
                        indices: kc.array(dtype=int, ndim=2), rest: kc.array(dtype=float),
                        props: kc.array(dtype=float, ndim=2), f: kc.array(dtype=kc.vec3)):
    e = kc.tid()
    i0 = indices[e, 0]
    i1 = indices[e, 1]
    i2 = indices[e, 2]
    i3 = indices[e, 3]
    x0 = q[i0]
    x1 = q[i1]
    x2 = q[i2]
    x3 = q[i3]
    n1 = kc.cross(x2 - x0, x3 - x0)
    n2 = kc.cross(x3 - x1, x2 - x1)
    el = kc.length(x3 - x2)
    # a collapsed triangle has no normal: skip rather than divide by zero
    if kc.dot(n1, n1) > 1.0e-20 and kc.dot(n2, n2) > 1.0e-20 and el > 1.0e-10:
        m = dihedral_angle_gradients(x0, x1, x2, x3)
        theta = m[0, 3]
        g0 = kc.vec3(m[0, 0], m[0, 1], m[0, 2])
        g1 = kc.vec3(m[1, 0], m[1, 1], m[1, 2])
        g2 = kc.vec3(m[2, 0], m[2, 1], m[2, 2])
        g3 = kc.vec3(m[3, 0], m[3, 1], m[3, 2])
        rate = kc.dot(g0, qd[i0]) + kc.dot(g1, qd[i1]) + kc.dot(g2, qd[i2]) + kc.dot(g3, qd[i3])
        # the angle wraps at +-pi; the difference to the rest angle is taken on the short way round
        d = theta - rest[e]
        if d > 3.14159265:
            d = d - 6.28318531
        elif d < -3.14159265:
            d = d + 6.28318531
        s = -(props[e, 0] * d + props[e, 1] * rate)
        kc.atomic_add(f, i0, g0 * s)
        kc.atomic_add(f, i1, g1 * s)
        kc.atomic_add(f, i2, g2 * s)
        kc.atomic_add(f, i3, g3 * s)


def eval_bending(model, state, forces):
    """Add dihedral bending forces [N] of ``state`` to ``forces`` (vec3, (particle_count,))."""
    if model.edge_count == 0:
        return
    kc.launch(eval_bending_kernel, dim=model.edge_count,
              inputs=[state.particle_q, state.particle_qd, model.edge_indices, model.edge_rest_angle,
                      model.edge_bending_properties],
              outputs=[forces])


def eval_cloth_forces(model, state, forces):
    """Membrane, air and bending forces of ``state`` added to ``forces`` (the SolverSemiImplicit hook)."""
    eval_triangles(model, state, forces)
    eval_bending(model, state, forces)
