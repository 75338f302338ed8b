"""Newton–Euler integration of rigid bodies (kernels + launchers).

Linear motion is semi-implicit Euler on the centre of mass, like particles:
``v1 = v0 + dt (f / m + g)``, ``x1 = x0 + dt v1``.

Rotation solves Euler's equations in the body frame with the implicit midpoint rule,

    I (w1 - w0) + dt  wm x (I wm) = dt tau,        wm = (w0 + w1) / 2,

by three Newton iterations (no branches, so it differentiates cleanly), and turns the
frame by the Cayley rotation of ``dt wm``: ``q1 = normalize((dt wm_world / 2, 1) q0)``.
The midpoint rule keeps the quadratic invariants of a torque-free body, kinetic energy
and |angular momentum|, and the Cayley rotation (whose angle 2 atan(|w| dt / 2) is what
the normalised first-order quaternion update gives) is exactly the one that keeps the
world angular momentum fixed as well.  The explicit gyroscopic update gains energy and
tumbles away at large spin; this one stays on the energy ellipsoid at any step (the
intermediate-axis flip keeps its period to O(dt^2)).
"""
from __future__ import annotations

import kernelcore as kc


@kc.kernel
def zero_spatial_kernel(a: kc.array(dtype=kc.spatial_vector)):
    i = kc.tid()
    a[i] = kc.spatial_vector(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)


def zero_body_forces(wrenches):
    """Set a spatial_vector wrench array (B,) to zero (a launch, so it is recorded on a Tape)."""
    if wrenches is not None and wrenches.shape[0]:
        kc.launch(zero_spatial_kernel, dim=wrenches.shape[0], inputs=[wrenches], device=wrenches.device)


@kc.kernel
def add_spatial_kernel(src: kc.array(dtype=kc.spatial_vector), dst: kc.array(dtype=kc.spatial_vector)):
    i = kc.tid()
    dst[i] += src[i]


def eval_body_control_forces(model, control, wrenches):
    """Add the control's external wrenches ``control.body_f`` (B,) [N, N m] to ``wrenches``."""
    if control is None or getattr(control, "body_f", None) is None or model.body_count == 0:
        return
    kc.launch(add_spatial_kernel, dim=model.body_count, inputs=[control.body_f, wrenches], device=model.device)


@kc.func
def angular_midpoint(w0: kc.vec3, tau: kc.vec3, inertia: kc.mat33, inv_inertia: kc.mat33, dt: float) -> kc.vec3:
    """Midpoint angular velocity wm [rad/s] of the implicit midpoint step, body frame.

    Solves ``2 I (wm - w0) + dt wm x (I wm) = dt tau`` (body-frame w0 [rad/s], torque tau
    [N m]) by Newton's method from the explicit guess.
    """
    wm = w0 + inv_inertia * (tau - kc.cross(w0, inertia * w0)) * (0.5 * dt)
    for _k in range(3):
        iw = inertia * wm
        g = (wm - w0) * 2.0 - inv_inertia * (tau - kc.cross(wm, iw)) * dt
        # d g / d wm, premultiplied by inv_inertia: 2 + dt I^-1 (skew(wm) I - skew(I wm))
        jac = kc.identity(3, dtype=float) * 2.0 + inv_inertia * (kc.skew(wm) * inertia - kc.skew(iw)) * dt
        wm = wm - kc.inverse(jac) * g
    return wm


@kc.func
def unit_quat(q: kc.quat) -> kc.quat:
    """``q / |q|`` computed in float64.

    The float32 ``normalize`` leaves |q|^2 about one ulp above 1 on average; every rotation
    by q then scales vectors by that much, and over 10^4 steps the angular velocity (so the
    kinetic energy) of a spinning body drifts by ~1e-3.  Rounding a float64 result is unbiased.
    """
    x = kc.float64(q[0])
    y = kc.float64(q[1])
    z = kc.float64(q[2])
    w = kc.float64(q[3])
    s = kc.float64(1.0) / kc.sqrt(x * x + y * y + z * z + w * w)
    return kc.quat(kc.float32(x * s), kc.float32(y * s), kc.float32(z * s), kc.float32(w * s))


@kc.func
def rotate_by(q: kc.quat, w: kc.vec3, dt: float) -> kc.quat:
    """``q`` turned by the Cayley rotation of ``w`` [rad/s, world] over ``dt`` [s] (a unit quaternion)."""
    h = w * (0.5 * dt)
    return unit_quat(kc.quat(h[0], h[1], h[2], 1.0) * q)


@kc.func
def body_frame_from_com(x_com: kc.vec3, q: kc.quat, com: kc.vec3) -> kc.transform:
    """The body frame whose centre of mass (``com`` in the body frame) sits at ``x_com`` (world)."""
    return kc.transform(x_com - kc.quat_rotate(q, com), q)


@kc.kernel
def integrate_bodies_kernel(body_q0: kc.array(dtype=kc.transform), body_qd0: kc.array(dtype=kc.spatial_vector),
                            body_f: kc.array(dtype=kc.spatial_vector), body_com: kc.array(dtype=kc.vec3),
                            inv_mass: kc.array(dtype=float), inertia: kc.array(dtype=kc.mat33),
                            inv_inertia: kc.array(dtype=kc.mat33), gravity: kc.vec3, dt: float,
                            body_q1: kc.array(dtype=kc.transform), body_qd1: kc.array(dtype=kc.spatial_vector)):
    i = kc.tid()
    tf = body_q0[i]
    q0 = kc.transform_get_rotation(tf)
    qd = body_qd0[i]
    f = body_f[i]
    com = body_com[i]
    v1 = kc.spatial_top(qd) + (kc.spatial_top(f) * inv_mass[i] + gravity) * dt
    w0 = kc.quat_rotate_inv(q0, kc.spatial_bottom(qd))
    tau = kc.quat_rotate_inv(q0, kc.spatial_bottom(f))
    wm = angular_midpoint(w0, tau, inertia[i], inv_inertia[i], dt)
    q1 = rotate_by(q0, kc.quat_rotate(q0, wm), dt)
    w1 = kc.quat_rotate(q1, wm * 2.0 - w0)
    x1 = kc.transform_point(tf, com) + v1 * dt
    body_q1[i] = body_frame_from_com(x1, q1, com)
    body_qd1[i] = kc.spatial_vector(v1, w1)


def integrate_bodies(model, state_in, wrenches, state_out, dt: float):
    """Advance the bodies of ``state_in`` by ``dt`` [s] into ``state_out`` under ``wrenches`` (B,) and gravity."""
    if model.body_count == 0:
        return
    kc.launch(integrate_bodies_kernel, dim=model.body_count,
              inputs=[state_in.body_q, state_in.body_qd, wrenches, model.body_com, model.body_inv_mass,
                      model.body_inertia, model.body_inv_inertia, model.gravity, float(dt)],
              outputs=[state_out.body_q, state_out.body_qd], device=model.device)
