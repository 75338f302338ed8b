"""Joints in maximal coordinates: stiff penalty forces that hold jointed bodies together.

``SolverSemiImplicit`` integrates every body on its own (sim/body_integrate.py); a joint
is kept by a spring-damper between its two frames, the parent's ``body_q[parent] X_p``
and the child's ``body_q[child] X_c`` (which coincide, up to the joint's motion J(q),
when the joint holds; see sim/builder/joints.py):

* position: the child frame's origin is pulled onto the parent frame's origin with
  stiffness ``attach_ke`` [N/m] and damping ``attach_kd`` [N s/m] on the relative
  velocity of the two origins -- all three directions for revolute, ball and fixed joints,
  the two directions across the axis for prismatic ones;
* orientation: fixed and prismatic joints pull the relative rotation to identity, revolute
  joints pull the child's axis onto the parent's, with ``attach_ke`` [N m/rad] and
  ``attach_kd`` [N m s/rad] (the same numbers, as in Newton's semi-implicit solver);
  ball joints leave it free;
* along the free directions of revolute and prismatic joints the joint's own forces act on
  its coordinate ``q`` (angle or slide, measured from the bodies as ``eval_ik`` does) and
  rate ``qd``: ``Control.joint_f``, the PD drive ``target_ke (q_t - q) + target_kd (v_t - qd)``
  saturated at ``effort_limit``, viscous ``damping``, and the penalty limits
  ``limit_ke (limit - q) - limit_kd qd`` outside [limit_lower, limit_upper];
* ball joints get ``joint_f`` (torques in the parent joint frame) and ``damping``; free joints
  ``joint_f`` (force at the child's centre of mass and torque, parent joint frame) and
  ``damping`` on the child's velocity relative to the parent.

Every force acts on the child at the child frame's origin (the free joint's at its
centre of mass) and its opposite on the parent at the same point, so a joint never
changes the total linear or angular momentum.  All forces are explicit: the step must
resolve the joints' stiffness, ``dt < 0.2 sqrt(m / attach_ke)`` for the lightest body
mass m and ``dt < 0.2 sqrt(I / attach_ke)`` for its smallest principal inertia I (and
``dt attach_kd < I``).  Armature (added rotor inertia) has no maximal-coordinate
counterpart and is not modelled here; d6 joints are not supported (the solver says so).
"""
from __future__ import annotations

import kernelcore as kc

from .articulation import BALL, FIXED, FREE, PRISMATIC, REVOLUTE, parent_joint_frame, revolute_angle
from .collide_bodies import spatial_wrench


@kc.func
def rotation_error(r: kc.quat) -> kc.vec3:
    """Small-angle rotation vector [rad] of unit quaternion ``r`` (2 vec(r), sign chosen so |angle| <= pi)."""
    e = kc.vec3(r[0], r[1], r[2]) * 2.0
    if r[3] < 0.0:
        e = -e
    return e


@kc.func
def drive_force(q: float, qd: float, dof: int, joint_target_ke: kc.array(dtype=float),
                joint_target_kd: kc.array(dtype=float), joint_effort_limit: kc.array(dtype=float),
                joint_limit_lower: kc.array(dtype=float), joint_limit_upper: kc.array(dtype=float),
                joint_limit_ke: kc.array(dtype=float), joint_limit_kd: kc.array(dtype=float),
                joint_damping: kc.array(dtype=float), joint_f: kc.array(dtype=float),
                target_pos: kc.array(dtype=float), target_vel: kc.array(dtype=float)) -> float:
    """Generalised force [N or N m] on a 1-dof coordinate ``q`` with rate ``qd``: control, PD drive, damping, limits."""
    drive = joint_target_ke[dof] * (target_pos[dof] - q) + joint_target_kd[dof] * (target_vel[dof] - qd)
    effort = joint_effort_limit[dof]
    drive = kc.clamp(drive, -effort, effort)
    f = joint_f[dof] + drive - joint_damping[dof] * qd
    if q < joint_limit_lower[dof]:
        f = f + joint_limit_ke[dof] * (joint_limit_lower[dof] - q) - joint_limit_kd[dof] * qd
    elif q > joint_limit_upper[dof]:
        f = f + joint_limit_ke[dof] * (joint_limit_upper[dof] - q) - joint_limit_kd[dof] * qd
    return f


@kc.kernel
def joint_force_kernel(joint_type: kc.array(dtype=int), joint_parent: kc.array(dtype=int),
                       joint_child: kc.array(dtype=int), joint_X_p: kc.array(dtype=kc.transform),
                       joint_X_c: kc.array(dtype=kc.transform), joint_qd_start: kc.array(dtype=int),
                       joint_axis: kc.array(dtype=kc.vec3), joint_target_ke: kc.array(dtype=float),
                       joint_target_kd: kc.array(dtype=float), joint_effort_limit: kc.array(dtype=float),
                       joint_limit_lower: kc.array(dtype=float), joint_limit_upper: kc.array(dtype=float),
                       joint_limit_ke: kc.array(dtype=float), joint_limit_kd: kc.array(dtype=float),
                       joint_damping: kc.array(dtype=float), joint_f: kc.array(dtype=float),
                       target_pos: kc.array(dtype=float), target_vel: kc.array(dtype=float),
                       body_q: kc.array(dtype=kc.transform), body_qd: kc.array(dtype=kc.spatial_vector),
                       body_com: kc.array(dtype=kc.vec3), attach_ke: float, attach_kd: float,
                       body_f: kc.array(dtype=kc.spatial_vector)):
    j = kc.tid()
    jtype = joint_type[j]
    parent = joint_parent[j]
    child = joint_child[j]
    ds = joint_qd_start[j]
    x_wp = parent_joint_frame(parent, body_q, joint_X_p[j])
    x_wc = kc.transform_multiply(body_q[child], joint_X_c[j])
    r_p = kc.transform_get_rotation(x_wp)
    r_c = kc.transform_get_rotation(x_wc)
    p_p = kc.transform_get_translation(x_wp)
    p_c = kc.transform_get_translation(x_wc)
    com_c = kc.transform_point(body_q[child], body_com[child])
    v_c = kc.spatial_top(body_qd[child])
    w_c = kc.spatial_bottom(body_qd[child])
    com_p = p_p
    v_p = kc.vec3(0.0, 0.0, 0.0)
    w_p = kc.vec3(0.0, 0.0, 0.0)
    if parent >= 0:
        com_p = kc.transform_point(body_q[parent], body_com[parent])
        v_p = kc.spatial_top(body_qd[parent])
        w_p = kc.spatial_bottom(body_qd[parent])
    # error of the child frame's origin and its rate (velocities of the two origins)
    err = p_c - p_p
    derr = (v_c + kc.cross(w_c, p_c - com_c)) - (v_p + kc.cross(w_p, p_p - com_p))
    dw = w_c - w_p
    at = p_c  # where the force acts (on both bodies)
    f = kc.vec3(0.0, 0.0, 0.0)
    tau = kc.vec3(0.0, 0.0, 0.0)
    if jtype == REVOLUTE or jtype == BALL or jtype == FIXED:
        f = -(err * attach_ke + derr * attach_kd)
    if jtype == FIXED or jtype == PRISMATIC:
        r_rel = kc.quat_inverse(r_p) * r_c
        tau = -(kc.quat_rotate(r_p, rotation_error(r_rel)) * attach_ke + dw * attach_kd)
    if jtype == PRISMATIC:
        a = kc.quat_rotate(r_p, joint_axis[ds])
        q = kc.dot(err, a)
        qd = kc.dot(derr, a)
        across = err - a * q
        dacross = derr - a * qd
        fa = drive_force(q, qd, ds, joint_target_ke, joint_target_kd, joint_effort_limit, joint_limit_lower,
                         joint_limit_upper, joint_limit_ke, joint_limit_kd, joint_damping, joint_f, target_pos,
                         target_vel)
        f = a * fa - (across * attach_ke + dacross * attach_kd)
    elif jtype == REVOLUTE:
        a = kc.quat_rotate(r_p, joint_axis[ds])
        a_c = kc.quat_rotate(r_c, joint_axis[ds])
        q = revolute_angle(kc.quat_inverse(r_p) * r_c, joint_axis[ds])
        qd = kc.dot(dw, a)
        ta = drive_force(q, qd, ds, joint_target_ke, joint_target_kd, joint_effort_limit, joint_limit_lower,
                         joint_limit_upper, joint_limit_ke, joint_limit_kd, joint_damping, joint_f, target_pos,
                         target_vel)
        # the swing cross(a_c, a) turns the child's axis back onto the parent's
        tau = a * ta + kc.cross(a_c, a) * attach_ke - (dw - a * qd) * attach_kd
    elif jtype == BALL:
        t_local = kc.vec3(joint_f[ds], joint_f[ds + 1], joint_f[ds + 2])
        damp = kc.vec3(joint_damping[ds], joint_damping[ds + 1], joint_damping[ds + 2])
        w_local = kc.quat_rotate_inv(r_p, dw)
        tau = kc.quat_rotate(r_p, t_local - kc.cw_mul(damp, w_local))
    elif jtype == FREE:
        at = com_c
        dv = v_c - (v_p + kc.cross(w_p, com_c - com_p))
        f_local = kc.vec3(joint_f[ds], joint_f[ds + 1], joint_f[ds + 2])
        t_local = kc.vec3(joint_f[ds + 3], joint_f[ds + 4], joint_f[ds + 5])
        damp_lin = kc.vec3(joint_damping[ds], joint_damping[ds + 1], joint_damping[ds + 2])
        damp_ang = kc.vec3(joint_damping[ds + 3], joint_damping[ds + 4], joint_damping[ds + 5])
        f = kc.quat_rotate(r_p, f_local - kc.cw_mul(damp_lin, kc.quat_rotate_inv(r_p, dv)))
        tau = kc.quat_rotate(r_p, t_local - kc.cw_mul(damp_ang, kc.quat_rotate_inv(r_p, dw)))
    kc.atomic_add(body_f, child, spatial_wrench(f, at - com_c) + kc.spatial_vector(kc.vec3(0.0, 0.0, 0.0), tau))
    if parent >= 0:
        kc.atomic_add(body_f, parent,
                      spatial_wrench(-f, at - com_p) - kc.spatial_vector(kc.vec3(0.0, 0.0, 0.0), tau))


def eval_joint_forces(model, state, control, wrenches, attach_ke: float, attach_kd: float):
    """Add the joints' forces (see the module docstring) at ``state`` to ``wrenches`` (B,) [N, N m].

    ``control`` may be None (then no ``joint_f`` and the model's default targets).
    """
    if not getattr(model, "joint_count", 0) or model.body_count == 0:
        return
    zeros = getattr(model, "_joint_force_zero_f", None)
    if zeros is None:
        zeros = kc.zeros(model.joint_dof_count, dtype=float, device=model.device)
        model._joint_force_zero_f = zeros

    def pick(name, default):
        value = getattr(control, name, None) if control is not None else None
        return default if value is None else value

    kc.launch(joint_force_kernel, dim=model.joint_count,
              inputs=[model.joint_type, model.joint_parent, model.joint_child, model.joint_X_p, model.joint_X_c,
                      model.joint_qd_start, model.joint_axis, model.joint_target_ke, model.joint_target_kd,
                      model.joint_effort_limit, model.joint_limit_lower, model.joint_limit_upper,
                      model.joint_limit_ke, model.joint_limit_kd, model.joint_damping, pick("joint_f", zeros),
                      pick("joint_target_pos", model.joint_target_pos),
                      pick("joint_target_vel", model.joint_target_vel), state.body_q, state.body_qd,
                      model.body_com, float(attach_ke), float(attach_kd)],
              outputs=[wrenches], device=model.device)


def check_maximal_joints(model, solver_name):
    """Raise for joints this module cannot hold (d6); return a warning text for ignored armature, or None."""
    if not getattr(model, "joint_count", 0):
        return None
    import numpy as np

    from .builder.joints import JOINT_D6

    types = model.joint_type.numpy()
    d6 = np.nonzero(types == JOINT_D6)[0]
    if d6.size:
        j = int(d6[0])
        raise ValueError(f"{solver_name}: joint {j} ('{model.joint_name[j]}') is a d6 joint, which this solver "
                         f"cannot hold in maximal coordinates; use sim.SolverFeatherstone")
    armature = model.joint_armature.numpy() if model.joint_dof_count else np.zeros(0)
    if np.any(armature != 0.0):
        dof = int(np.nonzero(armature != 0.0)[0][0])
        j = int(np.searchsorted(model.joint_qd_start.numpy(), dof, side="right") - 1)
        return (f"{solver_name}: joint armature is not modelled in maximal coordinates and is ignored (joint {j} "
                f"'{model.joint_name[j]}' has {armature[dof]:g}); sim.SolverFeatherstone models it")
    return None
