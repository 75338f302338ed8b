"""Joints: the ModelBuilder part that links bodies into articulations (kinematic trees).

A joint connects a ``parent`` body (-1: the world) to a ``child`` body.  It has a frame
on the parent, ``parent_xform`` (X_p, in the parent body's frame, or in world for
``parent=-1``), and one on the child, ``child_xform`` (X_c, child body frame); its
generalised coordinates ``q`` move the child joint frame relative to the parent one:

    body_q[child] = body_q[parent] * X_p * J(q) * X_c^-1

Coordinates and velocities per joint type (Newton's layout):

=========== ====== ===== =========================================================
type        coords  dofs  meaning
=========== ====== ===== =========================================================
prismatic   1      1     slide ``q`` [m] along ``axis`` (joint frame)
revolute    1      1     turn ``q`` [rad] about ``axis`` (joint frame)
ball        4      3     quaternion (x, y, z, w); qd: angular velocity [rad/s] of the
                         child relative to the parent, in the parent joint frame
fixed       0      0     rigid weld
free        7      6     position [m] + quaternion (x, y, z, w) of the child joint
                         frame; qd: linear velocity [m/s] of the child's centre of
                         mass, then angular velocity [rad/s], relative to the parent
                         joint frame and expressed in it (for ``parent=-1`` with
                         identity frames: exactly the child's ``body_qd``)
d6          n      n     up to 3 prismatic then up to 3 revolute axes (``linear_axes``,
                         ``angular_axes``), applied in that order
=========== ====== ===== =========================================================

Default coordinates are in ``builder.joint_q`` / ``builder.joint_qd`` (flat lists, the
joint's slice starts at ``builder.joint_q_start[j]``); set them there or with ``q0`` /
``qd0``.  A free joint starts at its child body's current pose and velocity.  At
``finalize`` the bodies of joints are placed by forward kinematics from these defaults.

Joints must be added parents first (a child body's joint after its parent body's);
each articulation (a tree rooted at a joint whose parent is the world) is a contiguous
run of joints, which is what ``add_builder`` and the importers produce.
"""
from __future__ import annotations

import numpy as np

import kernelcore as kc

from .shapes import _check_quat

# joint_type values (Newton's numbering)
JOINT_PRISMATIC = 0
JOINT_REVOLUTE = 1
JOINT_BALL = 2
JOINT_FIXED = 3
JOINT_FREE = 4
JOINT_D6 = 6
JOINT_TYPE_NAMES = {JOINT_PRISMATIC: "prismatic", JOINT_REVOLUTE: "revolute", JOINT_BALL: "ball",
                    JOINT_FIXED: "fixed", JOINT_FREE: "free", JOINT_D6: "d6"}

#: default penalty stiffness [N m/rad or N/m] and damping of joint limits
DEFAULT_LIMIT_KE = 1.0e4
DEFAULT_LIMIT_KD = 1.0e1
#: limits meaning "no limit"
NO_LIMIT = 1.0e10


# --- numpy transform helpers (x, y, z, w quaternions; transforms as 7 numbers p, q) ----------------
def quat_mul(a, b):
    """Hamilton product a b of quaternions (x, y, z, w)."""
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return np.array([aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw,
                     aw * bw - ax * bx - ay * by - az * bz])


def quat_rotate(q, v):
    """Rotate vector v (3,) by unit quaternion q (x, y, z, w)."""
    u, w = np.asarray(q[:3], np.float64), float(q[3])
    v = np.asarray(v, np.float64)
    return v + 2.0 * np.cross(u, np.cross(u, v) + w * v)


def quat_conj(q):
    return np.array([-q[0], -q[1], -q[2], q[3]], np.float64)


def tf_mul(a, b):
    """Composition a * b of transforms (7,): apply b, then a."""
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    return np.concatenate([a[:3] + quat_rotate(a[3:], b[:3]), quat_mul(a[3:], b[3:])])


def tf_inv(a):
    a = np.asarray(a, np.float64)
    qi = quat_conj(a[3:])
    return np.concatenate([-quat_rotate(qi, a[:3]), qi])


def quat_axis_angle(axis, angle):
    axis = np.asarray(axis, np.float64)
    s = np.sin(0.5 * angle)
    return np.array([axis[0] * s, axis[1] * s, axis[2] * s, np.cos(0.5 * angle)])


IDENTITY_TF = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0)


def _check_xform(xform, who, what):
    if xform is None:
        return np.array(IDENTITY_TF)
    t = np.asarray(list(xform), np.float64).reshape(-1)
    if t.shape != (7,) or not np.all(np.isfinite(t)):
        raise ValueError(f"{who}: {what} must be a transform (p, q) of 7 finite numbers, got {xform!r}")
    return np.concatenate([t[:3], _check_quat(t[3:], f"{who}: {what}")])


def _check_axis(axis, who):
    a = np.asarray(axis, np.float64).reshape(-1)
    if a.shape != (3,) or not np.all(np.isfinite(a)):
        raise ValueError(f"{who}: axis must be 3 finite numbers, got {axis!r}")
    n = np.linalg.norm(a)
    if n < 1e-9:
        raise ValueError(f"{who}: axis {tuple(a.tolist())} has zero length")
    return a / n


def _nonneg(value, who, what):
    v = float(value)
    if not (np.isfinite(v) and v >= 0):
        raise ValueError(f"{who}: {what} must be finite and >= 0, got {value!r}")
    return v


def joint_transform_np(jtype, axes, q):
    """J(q) (7,) of one joint: ``axes`` (dofs, 3) unit axes in the joint frame, ``q`` its coordinates."""
    if jtype == JOINT_REVOLUTE:
        return np.concatenate([np.zeros(3), quat_axis_angle(axes[0], q[0])])
    if jtype == JOINT_PRISMATIC:
        return np.concatenate([axes[0] * q[0], [0, 0, 0, 1]])
    if jtype == JOINT_BALL:
        return np.concatenate([np.zeros(3), np.asarray(q[:4]) / np.linalg.norm(q[:4])])
    if jtype == JOINT_FREE:
        return np.concatenate([q[:3], np.asarray(q[3:7]) / np.linalg.norm(q[3:7])])
    if jtype == JOINT_D6:
        raise NotImplementedError  # handled by the caller with dof_dim
    return np.array(IDENTITY_TF)


class JointBuilder:
    """Mixin: joints between bodies, their generalised coordinates, drives and limits;
    ``add_builder`` to replicate environments."""

    def _init_joints(self):
        self.joint_type = []
        self.joint_parent = []
        self.joint_child = []
        self.joint_X_p = []          # (7,) parent joint frame
        self.joint_X_c = []          # (7,) child joint frame
        self.joint_name = []
        self.joint_q_start = []      # first coordinate of each joint in joint_q
        self.joint_qd_start = []     # first dof of each joint in joint_qd and the per-dof lists
        self.joint_dof_dim = []      # (linear, angular) dof counts (d6; the others for reference)
        self.joint_world = []
        # generalised coordinates / velocities (flat, Newton's builder.joint_q)
        self.joint_q = []
        self.joint_qd = []
        # per dof
        self.joint_axis = []
        self.joint_limit_lower = []
        self.joint_limit_upper = []
        self.joint_limit_ke = []
        self.joint_limit_kd = []
        self.joint_target_ke = []
        self.joint_target_kd = []
        self.joint_target_pos = []
        self.joint_target_vel = []
        self.joint_armature = []
        self.joint_damping = []
        self.joint_effort_limit = []
        # environment index of bodies, shapes, joints (-1: shared by all, e.g. the ground)
        self.current_world = -1
        self.num_worlds = 0

    @property
    def joint_count(self) -> int:
        return len(self.joint_type)

    @property
    def joint_coord_count(self) -> int:
        return len(self.joint_q)

    @property
    def joint_dof_count(self) -> int:
        return len(self.joint_qd)

    # -- joints ------------------------------------------------------------------------------
    def _check_link(self, parent, child, who):
        nb = self.body_count
        if not isinstance(child, (int, np.integer)) or not 0 <= int(child) < nb:
            raise ValueError(f"{who}: child body {child!r} does not exist ({nb} bodies)")
        if not isinstance(parent, (int, np.integer)) or not -1 <= int(parent) < nb:
            raise ValueError(f"{who}: parent body {parent!r} does not exist ({nb} bodies; -1 means the world)")
        parent, child = int(parent), int(child)
        if parent == child:
            raise ValueError(f"{who}: body {child} cannot be its own parent")
        if child in self.joint_child:
            j = self.joint_child.index(child)
            raise ValueError(f"{who}: body {child} ('{self.body_name[child]}') already has a parent "
                             f"(joint {j} '{self.joint_name[j]}'); a body can be the child of only one joint")
        # walking up from the parent must not reach the child (a cycle)
        b, seen = parent, 0
        while b >= 0 and seen <= len(self.joint_child):
            if b == child:
                raise ValueError(f"{who}: joint from body {parent} to body {child} would close a cycle "
                                 f"(body {child} is an ancestor of body {parent})")
            b = self.joint_parent[self.joint_child.index(b)] if b in self.joint_child else -1
            seen += 1
        return parent, child

    def _add_joint(self, jtype, parent, child, parent_xform, child_xform, linear_axes, angular_axes, q0, qd0,
                   limit_lower, limit_upper, limit_ke, limit_kd, target_ke, target_kd, target_pos, target_vel,
                   armature, damping, effort_limit, name, who):
        parent, child = self._check_link(parent, child, who)
        xp = _check_xform(parent_xform, who, "parent_xform")
        xc = _check_xform(child_xform, who, "child_xform")
        lin = [_check_axis(a, who) for a in linear_axes]
        ang = [_check_axis(a, who) for a in angular_axes]
        ndof = len(lin) + len(ang)
        ncoord = {JOINT_BALL: 4, JOINT_FREE: 7, JOINT_FIXED: 0}.get(jtype, ndof)

        def per_dof(value, what, check=None):
            v = np.broadcast_to(np.asarray(value, np.float64), (ndof,)) if ndof else np.zeros(0)
            if not np.all(np.isfinite(v)) if check is None else not check(v):
                raise ValueError(f"{who}: {what} must be {'finite' if check is None else 'finite and >= 0'}"
                                 f" (one value or one per dof), got {value!r}")
            return [float(x) for x in v]

        nonneg = lambda v: np.all(np.isfinite(v)) and np.all(v >= 0)  # noqa: E731
        lower = per_dof(-NO_LIMIT if limit_lower is None else limit_lower, "limit_lower")
        upper = per_dof(NO_LIMIT if limit_upper is None else limit_upper, "limit_upper")
        for lo, hi in zip(lower, upper):
            if lo > hi:
                raise ValueError(f"{who}: limit_lower {lo} is above limit_upper {hi}")
        fields = dict(limit_ke=per_dof(limit_ke, "limit_ke", nonneg), limit_kd=per_dof(limit_kd, "limit_kd", nonneg),
                      target_ke=per_dof(target_ke, "target_ke", nonneg),
                      target_kd=per_dof(target_kd, "target_kd", nonneg),
                      target_pos=per_dof(target_pos, "target_pos"), target_vel=per_dof(target_vel, "target_vel"),
                      armature=per_dof(armature, "armature", nonneg), damping=per_dof(damping, "damping", nonneg),
                      effort_limit=per_dof(NO_LIMIT if effort_limit is None else effort_limit, "effort_limit",
                                           nonneg))
        # default coordinates
        if q0 is None:
            if jtype == JOINT_BALL:
                q = [0.0, 0.0, 0.0, 1.0]
            elif jtype == JOINT_FREE:
                q = self._free_q_from_body(parent, child, xp, xc)
            else:
                q = [0.0] * ncoord
        else:
            q = np.asarray(q0, np.float64).reshape(-1)
            if q.shape != (ncoord,) or not np.all(np.isfinite(q)):
                raise ValueError(f"{who}: q0 must be {ncoord} finite numbers, got {q0!r}")
            if jtype in (JOINT_BALL, JOINT_FREE):
                qq = q[-4:]
                if np.linalg.norm(qq) < 1e-12:
                    raise ValueError(f"{who}: the quaternion of q0 must be non-zero, got {tuple(qq.tolist())}")
                q[-4:] = qq / np.linalg.norm(qq)
            q = [float(x) for x in q]
        if qd0 is None:
            qd = self._free_qd_from_body(parent, child) if (jtype == JOINT_FREE and parent < 0) else [0.0] * ndof
        else:
            qd = np.asarray(qd0, np.float64).reshape(-1)
            if qd.shape != (ndof,) or not np.all(np.isfinite(qd)):
                raise ValueError(f"{who}: qd0 must be {ndof} finite numbers, got {qd0!r}")
            qd = [float(x) for x in qd]
        self.joint_type.append(jtype)
        self.joint_parent.append(parent)
        self.joint_child.append(child)
        self.joint_X_p.append(tuple(xp))
        self.joint_X_c.append(tuple(xc))
        self.joint_name.append(name or f"joint_{self.joint_count - 1}")
        self.joint_q_start.append(self.joint_coord_count)
        self.joint_qd_start.append(self.joint_dof_count)
        self.joint_dof_dim.append((len(lin), len(ang)))
        self.joint_world.append(self.current_world)
        self.joint_q.extend(q)
        self.joint_qd.extend(qd)
        axes = lin + ang
        if jtype in (JOINT_BALL, JOINT_FREE):
            axes = [np.eye(3)[k % 3] for k in range(ndof)]
        self.joint_axis.extend(tuple(a) for a in axes)
        self.joint_limit_lower.extend(lower)
        self.joint_limit_upper.extend(upper)
        for key, values in fields.items():
            getattr(self, "joint_" + key).extend(values)
        return self.joint_count - 1

    def _free_q_from_body(self, parent, child, xp, xc):
        """Coordinates of a free joint that keep the child body where add_body put it."""
        wp = np.array(IDENTITY_TF) if parent < 0 else np.asarray(self.body_q[parent], np.float64)
        rel = tf_mul(tf_inv(tf_mul(wp, xp)), tf_mul(np.asarray(self.body_q[child], np.float64), xc))
        return [float(x) for x in rel]

    def _free_qd_from_body(self, parent, child):
        return [float(x) for x in self.body_qd[child]]

    def add_joint_revolute(self, parent: int, child: int, parent_xform=None, child_xform=None, axis=(0.0, 0.0, 1.0),
                           limit_lower=None, limit_upper=None, target_ke: float = 0.0, target_kd: float = 0.0,
                           armature: float = 0.0, damping: float = 0.0, name: str | None = None,
                           q0: float | None = None, qd0: float | None = None, target_pos: float = 0.0,
                           target_vel: float = 0.0, limit_ke: float = DEFAULT_LIMIT_KE,
                           limit_kd: float = DEFAULT_LIMIT_KD, effort_limit: float | None = None) -> int:
        """Hinge turning ``child`` about ``axis`` (joint frame) relative to ``parent`` (-1: world); returns its index.

        Args:
            parent_xform, child_xform: joint frames on the parent / child body (transforms, 7 numbers).
            axis: rotation axis in the joint frame (normalised; zero length is an error).
            limit_lower, limit_upper: angle limits [rad] (None: unlimited), enforced by a penalty
                torque of stiffness ``limit_ke`` [N m/rad] and damping ``limit_kd`` [N m s/rad].
            target_ke, target_kd: PD drive gains [N m/rad], [N m s/rad] towards
                ``Control.joint_target_pos`` / ``joint_target_vel`` (defaults ``target_pos``, ``target_vel``).
            armature: added inertia of the dof [kg m^2] (rotor inertia).
            damping: viscous joint damping [N m s/rad].
            q0, qd0: initial angle [rad] and rate [rad/s].
            effort_limit: bound on the drive torque [N m] (None: unbounded).
        """
        return self._add_joint(JOINT_REVOLUTE, parent, child, parent_xform, child_xform, [], [axis],
                               None if q0 is None else [q0], None if qd0 is None else [qd0], limit_lower,
                               limit_upper, limit_ke, limit_kd, target_ke, target_kd, target_pos, target_vel,
                               armature, damping, effort_limit, name, "add_joint_revolute")

    def add_joint_prismatic(self, parent: int, child: int, parent_xform=None, child_xform=None,
                            axis=(1.0, 0.0, 0.0), limit_lower=None, limit_upper=None, target_ke: float = 0.0,
                            target_kd: float = 0.0, armature: float = 0.0, damping: float = 0.0,
                            name: str | None = None, q0: float | None = None, qd0: float | None = None,
                            target_pos: float = 0.0, target_vel: float = 0.0, limit_ke: float = DEFAULT_LIMIT_KE,
                            limit_kd: float = DEFAULT_LIMIT_KD, effort_limit: float | None = None) -> int:
        """Slider moving ``child`` along ``axis`` (joint frame) relative to ``parent``; returns its index.

        Same arguments as :meth:`add_joint_revolute` with lengths [m], forces [N], armature [kg].
        """
        return self._add_joint(JOINT_PRISMATIC, parent, child, parent_xform, child_xform, [axis], [],
                               None if q0 is None else [q0], None if qd0 is None else [qd0], limit_lower,
                               limit_upper, limit_ke, limit_kd, target_ke, target_kd, target_pos, target_vel,
                               armature, damping, effort_limit, name, "add_joint_prismatic")

    def add_joint_ball(self, parent: int, child: int, parent_xform=None, child_xform=None, armature: float = 0.0,
                       damping: float = 0.0, name: str | None = None, q0=None, qd0=None) -> int:
        """Spherical joint: 4 coordinates (quaternion x, y, z, w), 3 dofs (relative angular velocity
        [rad/s] in the parent joint frame); ``armature`` [kg m^2], ``damping`` [N m s/rad] per dof."""
        return self._add_joint(JOINT_BALL, parent, child, parent_xform, child_xform, [],
                               [(1, 0, 0), (0, 1, 0), (0, 0, 1)], q0, qd0, None, None, 0.0, 0.0, 0.0, 0.0, 0.0,
                               0.0, armature, damping, None, name, "add_joint_ball")

    def add_joint_fixed(self, parent: int, child: int, parent_xform=None, child_xform=None,
                        name: str | None = None) -> int:
        """Weld ``child`` to ``parent`` (no coordinates)."""
        return self._add_joint(JOINT_FIXED, parent, child, parent_xform, child_xform, [], [], None, None, None, None,
                               0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, None, name, "add_joint_fixed")

    def add_joint_free(self, child: int, parent: int = -1, parent_xform=None, child_xform=None,
                       armature: float = 0.0, damping: float = 0.0, name: str | None = None, q0=None,
                       qd0=None) -> int:
        """Six-dof joint (floating base): 7 coordinates (position [m], quaternion x, y, z, w), 6 dofs
        (linear velocity of the child's centre of mass [m/s], angular velocity [rad/s]).

        Starts at the child body's current pose and velocity unless ``q0`` / ``qd0`` are given.
        """
        return self._add_joint(JOINT_FREE, parent, child, parent_xform, child_xform,
                               [(1, 0, 0), (0, 1, 0), (0, 0, 1)], [(1, 0, 0), (0, 1, 0), (0, 0, 1)], q0, qd0,
                               None, None, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, armature, damping, None, name,
                               "add_joint_free")

    def add_joint_d6(self, parent: int, child: int, linear_axes=(), angular_axes=(), parent_xform=None,
                     child_xform=None, limit_lower=None, limit_upper=None, target_ke=0.0, target_kd=0.0,
                     armature=0.0, damping=0.0, name: str | None = None, q0=None, qd0=None, target_pos=0.0,
                     target_vel=0.0, limit_ke=DEFAULT_LIMIT_KE, limit_kd=DEFAULT_LIMIT_KD, effort_limit=None) -> int:
        """Compound joint: up to 3 slides along ``linear_axes`` then up to 3 turns about
        ``angular_axes`` (joint frame), one coordinate per dof; per-dof arguments take one value or
        one per dof (linear dofs first)."""
        if len(linear_axes) > 3 or len(angular_axes) > 3:
            raise ValueError(f"add_joint_d6: at most 3 linear and 3 angular axes, got {len(linear_axes)} and "
                             f"{len(angular_axes)}")
        return self._add_joint(JOINT_D6, parent, child, parent_xform, child_xform, list(linear_axes),
                               list(angular_axes), q0, qd0, limit_lower, limit_upper, limit_ke, limit_kd, target_ke,
                               target_kd, target_pos, target_vel, armature, damping, effort_limit, name,
                               "add_joint_d6")

    # -- forward kinematics of the defaults (numpy, float64) --------------------------------------
    def _joint_transform(self, j):
        jt = self.joint_type[j]
        qs, ds = self.joint_q_start[j], self.joint_qd_start[j]
        nlin, nang = self.joint_dof_dim[j]
        ncoord = (self.joint_q_start[j + 1] if j + 1 < self.joint_count else self.joint_coord_count) - qs
        q = np.asarray(self.joint_q[qs:qs + ncoord], np.float64)
        axes = np.asarray(self.joint_axis[ds:ds + nlin + nang], np.float64).reshape(-1, 3)
        if jt == JOINT_D6:
            t = np.array(IDENTITY_TF)
            for k in range(nlin):
                t[:3] += axes[k] * q[k]
            for k in range(nang):
                t = tf_mul(t, np.concatenate([np.zeros(3), quat_axis_angle(axes[nlin + k], q[nlin + k])]))
            return t
        return joint_transform_np(jt, axes, q)

    def _fk_defaults(self):
        """body_q (B, 7) with every joint's child placed from the default coordinates (float64)."""
        body_q = np.asarray(self.body_q, np.float64).reshape(-1, 7).copy()
        for j in range(self.joint_count):
            p = self.joint_parent[j]
            wp = np.array(IDENTITY_TF) if p < 0 else body_q[p]
            x = tf_mul(tf_mul(tf_mul(wp, self.joint_X_p[j]), self._joint_transform(j)), tf_inv(self.joint_X_c[j]))
            x[3:] /= np.linalg.norm(x[3:])
            body_q[self.joint_child[j]] = x
        return body_q

    def _articulations(self):
        """(articulation_start (A+1,), joint_articulation (J,)), checking the joint order."""
        child_joint = {c: j for j, c in enumerate(self.joint_child)}
        art = []
        starts = []
        for j in range(self.joint_count):
            p = self.joint_parent[j]
            if p < 0:
                starts.append(j)
                art.append(len(starts) - 1)
                continue
            if p not in child_joint:
                # the parent is a free-standing body: this joint roots a new tree hanging from it
                raise ValueError(f"finalize: joint {j} ('{self.joint_name[j]}') has parent body {p} "
                                 f"('{self.body_name[p]}') which is the child of no joint; connect body {p} to the "
                                 f"world first (add_joint_free({p}) for a floating base)")
            pj = child_joint[p]
            if pj > j:
                raise ValueError(f"finalize: joint {j} ('{self.joint_name[j]}') comes before the joint of its parent "
                                 f"body {p} (joint {pj}); add joints parents first")
            a = art[pj]
            if a != len(starts) - 1:
                raise ValueError(f"finalize: joint {j} ('{self.joint_name[j]}') belongs to articulation {a} but "
                                 f"joints of articulation {len(starts) - 1} were added in between; add each "
                                 f"articulation's joints together")
            art.append(a)
        return np.asarray(starts + [self.joint_count], np.int32), np.asarray(art, np.int32).reshape(-1)

    def _finalize_joints(self, m, device, requires_grad):
        nj, nc, nd = self.joint_count, self.joint_coord_count, self.joint_dof_count
        art_start, joint_art = self._articulations()

        def farr(values, dtype, shape):
            return kc.array(np.asarray(values, np.float32).reshape(shape), dtype=dtype, device=device,
                            requires_grad=requires_grad)

        def iarr(values):
            return kc.array(np.asarray(values, np.int32).reshape(-1), dtype=kc.int32, device=device)

        m.joint_count = nj
        m.joint_coord_count = nc
        m.joint_dof_count = nd
        m.joint_name = list(self.joint_name)
        m.joint_type = iarr(self.joint_type)
        m.joint_parent = iarr(self.joint_parent)
        m.joint_child = iarr(self.joint_child)
        m.joint_X_p = farr(self.joint_X_p, kc.transform, (nj, 7))
        m.joint_X_c = farr(self.joint_X_c, kc.transform, (nj, 7))
        m.joint_q_start = iarr(list(self.joint_q_start) + [nc])
        m.joint_qd_start = iarr(list(self.joint_qd_start) + [nd])
        m.joint_dof_dim = kc.array(np.asarray(self.joint_dof_dim, np.int32).reshape(nj, 2), dtype=kc.int32,
                                   device=device)
        m.joint_world = iarr(self.joint_world)
        m.joint_articulation = iarr(joint_art)
        m.articulation_start = iarr(art_start)
        m.articulation_count = len(art_start) - 1
        m.joint_q = farr(self.joint_q, float, (nc,))
        m.joint_qd = farr(self.joint_qd, float, (nd,))
        m.joint_axis = farr(self.joint_axis, kc.vec3, (nd, 3))
        for key in ("limit_lower", "limit_upper", "limit_ke", "limit_kd", "target_ke", "target_kd", "target_pos",
                    "target_vel", "armature", "damping", "effort_limit"):
            setattr(m, "joint_" + key, farr(getattr(self, "joint_" + key), float, (nd,)))
        m.num_worlds = int(self.num_worlds)
        if nj and m.body_count:
            from ..articulation import eval_fk

            eval_fk(m, m.joint_q, m.joint_qd, m)  # place the jointed bodies from the default coordinates

    # -- environments ----------------------------------------------------------------------------
    def begin_world(self, world: int | None = None):
        """Entities added from now on belong to environment ``world`` (None: a new one); see add_builder."""
        self.current_world = self.num_worlds if world is None else int(world)
        self.num_worlds = max(self.num_worlds, self.current_world + 1)
        return self.current_world

    def end_world(self):
        """Entities added from now on are shared by all environments (world -1)."""
        self.current_world = -1
