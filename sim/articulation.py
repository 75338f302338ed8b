"""Kinematics of articulations: joint transforms, motion subspaces, ``eval_fk`` and ``eval_ik``.

Spatial algebra used by the articulation kernels (here and in sim/featherstone_*.py):
a *twist* is a ``spatial_vector`` (angular velocity w, linear velocity v_O of the body
point passing through the world origin), both in world coordinates; a *wrench* is
(torque about the world origin, force).  Twists of bodies on a chain add:
``V_child = V_parent + sum_k S_k qd_k`` with the joint's motion subspace columns S_k.
The API's ``body_qd`` (COM velocity, angular velocity) converts with
``v_com = v_O + w x c`` (c: the centre of mass in world).

Joint coordinates are described in sim/builder/joints.py.
"""
from __future__ import annotations

import numpy as np

import kernelcore as kc

from .builder.joints import JOINT_BALL, JOINT_D6, JOINT_FIXED, JOINT_FREE, JOINT_PRISMATIC, JOINT_REVOLUTE

PRISMATIC = kc.constant(JOINT_PRISMATIC)
REVOLUTE = kc.constant(JOINT_REVOLUTE)
BALL = kc.constant(JOINT_BALL)
FIXED = kc.constant(JOINT_FIXED)
FREE = kc.constant(JOINT_FREE)
D6 = kc.constant(JOINT_D6)


@kc.func
def joint_transform(jtype: int, q_start: int, qd_start: int, nlin: int, nang: int, joint_q: kc.array(dtype=float),
                    joint_axis: kc.array(dtype=kc.vec3)) -> kc.transform:
    """J(q): the child joint frame relative to the parent joint frame."""
    p = kc.vec3(0.0, 0.0, 0.0)
    r = kc.quat_identity()
    if jtype == REVOLUTE:
        r = kc.quat_from_axis_angle(joint_axis[qd_start], joint_q[q_start])
    elif jtype == PRISMATIC:
        p = joint_axis[qd_start] * joint_q[q_start]
    elif jtype == BALL:
        r = kc.normalize(kc.quat(joint_q[q_start], joint_q[q_start + 1], joint_q[q_start + 2], joint_q[q_start + 3]))
    elif jtype == FREE:
        p = kc.vec3(joint_q[q_start], joint_q[q_start + 1], joint_q[q_start + 2])
        r = kc.normalize(kc.quat(joint_q[q_start + 3], joint_q[q_start + 4], joint_q[q_start + 5],
                                 joint_q[q_start + 6]))
    elif jtype == D6:
        for k in range(nlin):
            p = p + joint_axis[qd_start + k] * joint_q[q_start + k]
        for k in range(nang):
            r = r * kc.quat_from_axis_angle(joint_axis[qd_start + nlin + k], joint_q[q_start + nlin + k])
    return kc.transform(p, r)


@kc.func
def twist_about(axis_world: kc.vec3, point: kc.vec3) -> kc.spatial_vector:
    """Unit twist of a rotation about ``axis_world`` through ``point`` (world)."""
    return kc.spatial_vector(axis_world, kc.cross(point, axis_world))


@kc.func
def joint_subspace(jtype: int, k: int, q_start: int, qd_start: int, nlin: int, joint_q: kc.array(dtype=float),
                   joint_axis: kc.array(dtype=kc.vec3), x_wj: kc.transform, com_world: kc.vec3) -> kc.spatial_vector:
    """Motion subspace column S_k (a twist, world) of dof ``k`` of a joint whose parent joint frame is ``x_wj``.

    ``com_world``: the child's centre of mass in world (the free joint turns about it).
    """
    rot = kc.transform_get_rotation(x_wj)
    origin = kc.transform_get_translation(x_wj)
    s = kc.spatial_vector(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    if jtype == REVOLUTE:
        s = twist_about(kc.quat_rotate(rot, joint_axis[qd_start]), origin)
    elif jtype == PRISMATIC:
        s = kc.spatial_vector(kc.vec3(0.0, 0.0, 0.0), kc.quat_rotate(rot, joint_axis[qd_start]))
    elif jtype == BALL:
        s = twist_about(kc.quat_rotate(rot, joint_axis[qd_start + k]), origin)
    elif jtype == FREE:
        a = kc.quat_rotate(rot, joint_axis[qd_start + k])
        if k < 3:
            s = kc.spatial_vector(kc.vec3(0.0, 0.0, 0.0), a)
        else:
            s = twist_about(a, com_world)
    elif jtype == D6:
        if k < nlin:
            s = kc.spatial_vector(kc.vec3(0.0, 0.0, 0.0), kc.quat_rotate(rot, joint_axis[qd_start + k]))
        else:
            # the frame after the slides and the turns before this one
            p = kc.vec3(0.0, 0.0, 0.0)
            for i in range(nlin):
                p = p + joint_axis[qd_start + i] * joint_q[q_start + i]
            r = rot
            for i in range(nlin, k):
                r = r * kc.quat_from_axis_angle(joint_axis[qd_start + i], joint_q[q_start + i])
            s = twist_about(kc.quat_rotate(r, joint_axis[qd_start + k]), kc.transform_point(x_wj, p))
    return s


@kc.func
def twist_from_body_qd(qd: kc.spatial_vector, com_world: kc.vec3) -> kc.spatial_vector:
    """(w, v_O) from the API's (v_com, w)."""
    w = kc.spatial_bottom(qd)
    return kc.spatial_vector(w, kc.spatial_top(qd) - kc.cross(w, com_world))


@kc.func
def body_qd_from_twist(v: kc.spatial_vector, com_world: kc.vec3) -> kc.spatial_vector:
    """The API's (v_com, w) from a twist (w, v_O)."""
    w = kc.spatial_top(v)
    return kc.spatial_vector(kc.spatial_bottom(v) + kc.cross(w, com_world), w)


@kc.func
def parent_joint_frame(parent: int, body_q: kc.array(dtype=kc.transform), x_p: kc.transform) -> kc.transform:
    """World frame of a joint's parent side: body_q[parent] * X_p (X_p alone for the world)."""
    x = x_p
    if parent >= 0:
        x = kc.transform_multiply(body_q[parent], x_p)
    return x


@kc.func
def fk_articulation(a: int, art_table: kc.array(dtype=int, ndim=2), joint_table: kc.array(dtype=int, ndim=2),
                    joint_X_p: kc.array(dtype=kc.transform), joint_X_c: kc.array(dtype=kc.transform),
                    joint_axis: kc.array(dtype=kc.vec3),
                    joint_q: kc.array(dtype=float), joint_qd: kc.array(dtype=float),
                    body_com: kc.array(dtype=kc.vec3), body_q: kc.array(dtype=kc.transform),
                    body_qd: kc.array(dtype=kc.spatial_vector)):
    """Forward kinematics of articulation ``a``: body_q / body_qd of its joints' children."""
    for j in range(art_table[a, 0], art_table[a, 1]):
        jtype = joint_table[j, 0]
        parent = joint_table[j, 1]
        child = joint_table[j, 2]
        qs = joint_table[j, 3]
        ds = joint_table[j, 4]
        nlin = joint_table[j, 6]
        nang = joint_table[j, 7]
        x_wj = parent_joint_frame(parent, body_q, joint_X_p[j])
        x_joint = joint_transform(jtype, qs, ds, nlin, nang, joint_q, joint_axis)
        x_child = kc.transform_multiply(kc.transform_multiply(x_wj, x_joint), kc.transform_inverse(joint_X_c[j]))
        com = kc.transform_point(x_child, body_com[child])
        v = kc.spatial_vector(0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        if parent >= 0:
            v = twist_from_body_qd(body_qd[parent], kc.transform_point(body_q[parent], body_com[parent]))
        for k in range(joint_table[j, 5] - ds):
            v = v + joint_subspace(jtype, k, qs, ds, nlin, joint_q, joint_axis, x_wj, com) * joint_qd[ds + k]
        body_q[child] = x_child
        body_qd[child] = body_qd_from_twist(v, com)


@kc.kernel
def eval_fk_kernel(art_table: kc.array(dtype=int, ndim=2), joint_table: kc.array(dtype=int, ndim=2),
                   joint_X_p: kc.array(dtype=kc.transform), joint_X_c: kc.array(dtype=kc.transform),
                   joint_axis: kc.array(dtype=kc.vec3),
                   joint_q: kc.array(dtype=float), joint_qd: kc.array(dtype=float), body_com: kc.array(dtype=kc.vec3),
                   body_q: kc.array(dtype=kc.transform), body_qd: kc.array(dtype=kc.spatial_vector)):
    fk_articulation(kc.tid(), art_table, joint_table, joint_X_p, joint_X_c,
                    joint_axis, joint_q, joint_qd, body_com, body_q,
                    body_qd)


_TOPOLOGY = ("articulation_start", "joint_type", "joint_parent", "joint_child", "joint_q_start", "joint_qd_start",
             "joint_dof_dim")


def articulation_tables(model):
    """The model's joint topology packed into two int tables for the articulation kernels.

    ``art_table`` (A, 5): first joint, end joint, first dof, end dof, start of the
    articulation's dense n x n block in a flat array of all blocks (SolverFeatherstone's H);
    ``joint_table`` (J, 8): type, parent body, child body, first coordinate, first dof, end
    dof, linear dofs, angular dofs.  Two arrays instead of ten make each launch cheaper
    (kc.launch costs a few microseconds per array argument).  Made once and kept on the
    model; rebuilt if one of the topology arrays is replaced by another.
    """
    key = tuple(id(getattr(model, name)) for name in _TOPOLOGY)
    cached = getattr(model, "_articulation_tables", None)
    if cached is not None and cached[0] == key:
        return cached[1], cached[2]
    art = model.articulation_start.numpy().astype(np.int64)
    q_start = model.joint_q_start.numpy().astype(np.int64)
    qd_start = model.joint_qd_start.numpy().astype(np.int64)
    nj = model.joint_count
    dof_start = qd_start[art]
    sizes = np.diff(dof_start)
    h_start = np.concatenate([[0], np.cumsum(sizes ** 2)])
    art_table = np.stack([art[:-1], art[1:], dof_start[:-1], dof_start[1:], h_start[:-1]], axis=1)
    dims = model.joint_dof_dim.numpy().reshape(-1, 2).astype(np.int64)
    joint_table = np.stack([model.joint_type.numpy(), model.joint_parent.numpy(), model.joint_child.numpy(),
                            q_start[:nj], qd_start[:nj], qd_start[1:nj + 1], dims[:, 0], dims[:, 1]], axis=1)
    if np.abs(h_start[-1]) >= 2 ** 31:
        raise ValueError(f"articulation_tables: the articulations' mass matrices need {int(h_start[-1])} entries, "
                         f"more than an int32 index reaches")
    tables = (kc.array(art_table.astype(np.int32).reshape(-1, 5), dtype=kc.int32, device=model.device),
              kc.array(joint_table.astype(np.int32).reshape(-1, 8), dtype=kc.int32, device=model.device))
    model._articulation_tables = (key,) + tables
    return tables


def _fk_inputs(model):
    art_table, joint_table = articulation_tables(model)
    return [art_table, joint_table, model.joint_X_p, model.joint_X_c, model.joint_axis]


def eval_fk(model, joint_q, joint_qd, state):
    """Forward kinematics: write ``state.body_q`` / ``state.body_qd`` of every joint's child body
    from generalised coordinates ``joint_q`` (C,) and velocities ``joint_qd`` (D,).

    ``state`` may be a State or anything with ``body_q`` / ``body_qd`` arrays (B,).  Bodies
    that are no joint's child are left as they are.  One thread per articulation; recorded
    on a Tape (differentiable w.r.t. ``joint_q``, ``joint_qd`` and the model's frames).
    """
    _check_joint_arrays(model, joint_q, joint_qd, "eval_fk")
    if model.articulation_count == 0:
        return
    kc.launch(eval_fk_kernel, dim=model.articulation_count,
              inputs=_fk_inputs(model) + [joint_q, joint_qd, model.body_com],
              outputs=[state.body_q, state.body_qd], device=model.device)


@kc.func
def revolute_angle(r: kc.quat, axis: kc.vec3) -> float:
    """Angle [rad] in (-pi, pi] of rotation ``r`` about unit ``axis`` (its twist part about the axis)."""
    s = r[0] * axis[0] + r[1] * axis[1] + r[2] * axis[2]
    w = r[3]
    if w < 0.0:
        s = -s
        w = -w
    return 2.0 * kc.atan2(s, w)


@kc.kernel
def eval_ik_kernel(joint_type: kc.array(dtype=int), joint_parent: kc.array(dtype=int),
                   joint_child: kc.array(dtype=int), joint_X_p: kc.array(dtype=kc.transform),
                   joint_X_c: kc.array(dtype=kc.transform), joint_q_start: kc.array(dtype=int),
                   joint_qd_start: kc.array(dtype=int), joint_dof_dim: kc.array(dtype=int, ndim=2),
                   joint_axis: kc.array(dtype=kc.vec3), body_com: kc.array(dtype=kc.vec3),
                   body_q: kc.array(dtype=kc.transform), body_qd: kc.array(dtype=kc.spatial_vector),
                   joint_q: kc.array(dtype=float), joint_qd: kc.array(dtype=float)):
    j = kc.tid()
    jtype = joint_type[j]
    parent = joint_parent[j]
    child = joint_child[j]
    qs = joint_q_start[j]
    ds = joint_qd_start[j]
    nlin = joint_dof_dim[j, 0]
    nang = joint_dof_dim[j, 1]
    x_wj = parent_joint_frame(parent, body_q, joint_X_p[j])
    x_cj = kc.transform_multiply(body_q[child], joint_X_c[j])
    rel = kc.transform_multiply(kc.transform_inverse(x_wj), x_cj)
    p = kc.transform_get_translation(rel)
    r = kc.transform_get_rotation(rel)
    rot = kc.transform_get_rotation(x_wj)
    com = kc.transform_point(body_q[child], body_com[child])
    dv = twist_from_body_qd(body_qd[child], com)
    if parent >= 0:
        dv = dv - twist_from_body_qd(body_qd[parent], kc.transform_point(body_q[parent], body_com[parent]))
    dw = kc.spatial_top(dv)
    dlin = kc.spatial_bottom(dv)
    if jtype == REVOLUTE:
        joint_q[qs] = revolute_angle(r, joint_axis[ds])
        joint_qd[ds] = kc.dot(kc.quat_rotate(rot, joint_axis[ds]), dw)
    elif jtype == PRISMATIC:
        joint_q[qs] = kc.dot(p, joint_axis[ds])
        joint_qd[ds] = kc.dot(kc.quat_rotate(rot, joint_axis[ds]), dlin)
    elif jtype == BALL:
        w_local = kc.quat_rotate_inv(rot, dw)
        for k in range(4):
            joint_q[qs + k] = r[k]
        for k in range(3):
            joint_qd[ds + k] = w_local[k]
    elif jtype == FREE:
        w_local = kc.quat_rotate_inv(rot, dw)
        v_local = kc.quat_rotate_inv(rot, dlin - kc.cross(com, dw))
        for k in range(3):
            joint_q[qs + k] = p[k]
            joint_qd[ds + k] = v_local[k]
            joint_qd[ds + 3 + k] = w_local[k]
        for k in range(4):
            joint_q[qs + 3 + k] = r[k]
    elif jtype == D6:
        # slides along orthonormal axes, then at most one turn (checked on the host)
        pivot = kc.transform_point(x_wj, p)
        lin = dlin
        if nang == 1:
            a_local = joint_axis[ds + nlin]
            joint_q[qs + nlin] = revolute_angle(r, a_local)
            a_world = kc.quat_rotate(rot, a_local)
            rate = kc.dot(a_world, dw)
            joint_qd[ds + nlin] = rate
            lin = dlin - kc.cross(pivot, a_world) * rate
        for k in range(nlin):
            joint_q[qs + k] = kc.dot(p, joint_axis[ds + k])
            joint_qd[ds + k] = kc.dot(kc.quat_rotate(rot, joint_axis[ds + k]), lin)


def _check_joint_arrays(model, joint_q, joint_qd, who):
    for name, arr, n in (("joint_q", joint_q, model.joint_coord_count), ("joint_qd", joint_qd, model.joint_dof_count)):
        if arr is None or arr.shape[0] != n:
            got = None if arr is None else arr.shape[0]
            raise ValueError(f"{who}: {name} must have {n} entries (the model's "
                             f"{'coordinates' if name == 'joint_q' else 'dofs'}), got {got}")
        _check_finite(who, name, arr)


def _check_finite(who, name, arr):
    """A NaN or infinite entry of ``arr`` is a one-line error naming ``who``, the argument and the
    entry (the kernels would otherwise spread it through every body downstream, silently)."""
    if arr is None or arr.size == 0:
        return
    vals = np.asarray(arr.numpy())
    bad = ~np.isfinite(vals.reshape(vals.shape[0], -1)).all(axis=1)
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"{who}: {name}[{i}] is not finite ({vals[i].tolist()})")


def _check_ik_supported(model):
    cached = getattr(model, "_ik_checked", None)
    if cached is None:
        types = model.joint_type.numpy() if model.joint_count else np.zeros(0)
        dims = model.joint_dof_dim.numpy().reshape(-1, 2) if model.joint_count else np.zeros((0, 2))
        axes = model.joint_axis.numpy().reshape(-1, 3) if model.joint_dof_count else np.zeros((0, 3))
        starts = model.joint_qd_start.numpy()
        cached = ""
        for j in np.nonzero(types == JOINT_D6)[0]:
            nlin, nang = dims[j]
            lin = axes[starts[j]:starts[j] + nlin]
            if nang > 1 or not np.allclose(lin @ lin.T, np.eye(nlin), atol=1e-5):
                cached = (f"eval_ik: d6 joint {j} ('{model.joint_name[j]}') has {nang} angular axes and "
                          f"{'non-' if nlin and not np.allclose(lin @ lin.T, np.eye(nlin), atol=1e-5) else ''}"
                          f"orthonormal linear axes; only d6 joints with orthonormal linear axes and at most one "
                          f"angular axis can be inverted")
                break
        model._ik_checked = cached
    if cached:
        raise ValueError(cached)


def eval_ik(model, state, joint_q, joint_qd):
    """Inverse kinematics: generalised coordinates ``joint_q`` (C,) and velocities ``joint_qd`` (D,)
    from ``state.body_q`` / ``state.body_qd`` (one thread per joint).

    Revolute angles come back in (-pi, pi]; a ball/free quaternion as the relative rotation
    (its sign is not fixed).  The inverse of :func:`eval_fk` for poses FK can produce.
    """
    _check_joint_arrays(model, joint_q, joint_qd, "eval_ik")
    if model.joint_count == 0:
        return
    _check_ik_supported(model)
    _check_finite("eval_ik", "state.body_q", state.body_q)
    _check_finite("eval_ik", "state.body_qd", state.body_qd)
    kc.launch(eval_ik_kernel, dim=model.joint_count,
              inputs=[model.joint_type, model.joint_parent, model.joint_child, model.joint_X_p, model.joint_X_c,
                      model.joint_q_start, model.joint_qd_start, model.joint_dof_dim, model.joint_axis,
                      model.body_com, state.body_q, state.body_qd],
              outputs=[joint_q, joint_qd], device=model.device)
