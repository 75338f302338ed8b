"""UsdPhysics joints for the USD loader: ``PhysicsRevoluteJoint``, ``PhysicsPrismaticJoint``,
``PhysicsSphericalJoint`` and ``PhysicsFixedJoint`` between rigid bodies become builder
joints (``add_joint_revolute`` / ``prismatic`` / ``ball`` / ``fixed``), with their limits,
``PhysicsDriveAPI`` (PD drive gains and targets) and ``PhysicsArticulationRootAPI``.

UsdPhysics conventions kept here: ``physics:body0`` is the parent (no target: the world),
``physics:body1`` the child; ``physics:localPos0/localRot0`` place the joint frame in
body0's local space (scale included), likewise for body1; ``physics:axis`` is X, Y or Z
of the joint frame; angles are in degrees (limits, drive targets, and angular drive
stiffness per degree), lengths in stage units.  The joint coordinate at load time is the
one that the authored body poses imply, so nothing moves when the scene starts.  A body
tree whose root has no joint to the world gets a free joint (a floating base, as an
``PhysicsArticulationRootAPI`` on a body says).  Everything else about joints (D6/generic
joints, cone limits, break forces, acceleration drives, ...) is a warning naming the prim.

This is a mixin of ``usd_loader._Reader``: it uses its ``attr``/``use``/``warn``/``err``/
``decompose`` helpers and its ``bodies`` map (prim path -> body index).
"""
from __future__ import annotations

import math

import numpy as np

JOINT_PRIM_TYPES = {"PhysicsRevoluteJoint": "revolute", "PhysicsPrismaticJoint": "prismatic",
                    "PhysicsSphericalJoint": "ball", "PhysicsFixedJoint": "fixed"}
AXES = {"X": (1.0, 0.0, 0.0), "Y": (0.0, 1.0, 0.0), "Z": (0.0, 0.0, 1.0)}
UNLIMITED = 1e30  # |limit| at or above this (or infinite) means no limit, as in UsdPhysics


def _quat_xyzw(gf_quat):
    im = gf_quat.GetImaginary()
    return np.array([im[0], im[1], im[2], gf_quat.GetReal()], np.float64)


class UsdJointReader:
    """Mixin for usd_loader._Reader: collect joint prims while reading, add them after the bodies."""

    def _init_joints(self):
        self.joint_prims = []
        self.read_apis = set()  # (prim path, applied schema name) handled here, for check_unused

    def collect_joint(self, prim):
        self.kinds[prim.GetPath()] = "joint"
        self.joint_prims.append(prim)

    # -- helpers ---------------------------------------------------------------------------------------
    def _joint_body(self, prim, rel_name):
        """(body index or -1, the target prim or None) of a joint's physics:body0/1 relationship."""
        self.use(prim, rel_name)
        rel = prim.GetRelationship(rel_name)
        targets = rel.GetTargets() if rel and rel.HasAuthoredTargets() else []
        if not targets:
            return -1, None
        if len(targets) > 1:
            raise self.err(prim, f"{rel_name} has {len(targets)} targets (one body expected)")
        target = self.stage.GetPrimAtPath(targets[0])
        if not target or not target.IsValid():
            raise self.err(prim, f"{rel_name} targets {targets[0]}, which does not exist")
        owner = self.body_prim_of(target)
        if owner is None:
            return -1, target  # a static prim: the joint frame is fixed in world
        if owner != target:
            raise self.err(prim, f"{rel_name} targets {target.GetPath()}, which is part of the rigid body "
                                 f"{owner.GetPath()}; target the body itself")
        return self.bodies[str(owner.GetPath())], target

    def _local_frame(self, prim, k, target):
        """Joint frame (p [m], q) in the body frame of ``target`` (or in world for a static/absent target)."""
        pos = self.attr(prim, f"physics:localPos{k}", np.zeros(3), kind="vec3")
        self.use(prim, f"physics:localRot{k}")
        a = prim.GetAttribute(f"physics:localRot{k}")
        rot = _quat_xyzw(a.Get()) if a and a.HasAuthoredValue() else np.array([0.0, 0.0, 0.0, 1.0])
        if np.linalg.norm(rot) < 1e-12:
            raise self.err(prim, f"physics:localRot{k} is a zero quaternion")
        rot = rot / np.linalg.norm(rot)
        if target is None:
            return pos * self.mpu, rot
        t, q, s = self.decompose(target, allow_shear=True)
        local = (pos * s * self.mpu, rot)
        if self.body_prim_of(target) is None:  # static: put the frame in world
            return _tf_mul((t, q), local)
        return local

    def _body_tf(self, b):
        bq = self.scene.builder.body_q[b]
        return np.asarray(bq[:3], np.float64), np.asarray(bq[3:], np.float64)

    def _drive(self, prim, kind, scale_angle):
        """(target_ke, target_kd, target_pos, target_vel, effort_limit) of the joint's PhysicsDriveAPI."""
        name = "angular" if kind == "revolute" else "linear"
        api = f"PhysicsDriveAPI:{name}"
        if api not in [str(s) for s in prim.GetAppliedSchemas()]:
            return 0.0, 0.0, 0.0, 0.0, None
        self.read_apis.add((prim.GetPath(), api))
        base = f"drive:{name}:physics:"
        ke = self.attr(prim, base + "stiffness", 0.0)
        kd = self.attr(prim, base + "damping", 0.0)
        tp = self.attr(prim, base + "targetPosition", 0.0)
        tv = self.attr(prim, base + "targetVelocity", 0.0)
        fmax = self.attr(prim, base + "maxForce")
        dtype = self.attr(prim, base + "type", "force", kind="token")
        for n, v in (("stiffness", ke), ("damping", kd)):
            if np.ndim(v) or v < 0:
                raise self.err(prim, f"{base}{n} must be a number >= 0, got {v}")
        if dtype != "force":
            self.warn(prim, f"{base}type '{dtype}' is not supported: the drive applies a force/torque")
        # angular drives: stiffness per degree, damping per degree/s, targets in degrees
        ke, kd = ke * scale_angle, kd * scale_angle
        tp, tv = tp / scale_angle, tv / scale_angle
        if kind == "prismatic":  # targets in stage units; gains are taken as authored
            tp, tv = tp * self.mpu, tv * self.mpu
        effort = None if fmax is None or not math.isfinite(fmax) or fmax >= UNLIMITED else float(fmax)
        return float(ke), float(kd), float(tp), float(tv), effort

    def _limits(self, prim, scale_angle):
        lo = self.attr(prim, "physics:lowerLimit")
        hi = self.attr(prim, "physics:upperLimit")
        out = []
        for v, sign in ((lo, -1), (hi, 1)):
            if v is None or not math.isfinite(v) or abs(v) >= UNLIMITED:
                out.append(None)
            else:
                out.append(float(v) / scale_angle)
        if out[0] is not None and out[1] is not None and out[0] > out[1]:
            raise self.err(prim, f"physics:lowerLimit {lo} is above physics:upperLimit {hi}")
        return out

    # -- reading ---------------------------------------------------------------------------------------
    def read_joints(self):
        b = self.scene.builder
        for prim in self.prims():
            if prim.HasAPI(self.UsdPhysics.ArticulationRootAPI):  # a tree without a world joint floats anyway
                self.read_apis.add((prim.GetPath(), "PhysicsArticulationRootAPI"))
                if not self.joint_prims:
                    self.warn(prim, "PhysicsArticulationRootAPI without any joint in the scene has no effect")
        if not self.joint_prims:
            return
        if not hasattr(b, "add_joint_revolute"):
            for prim in self.joint_prims:
                self.warn(prim, "joints are not supported by this build of sim (ignored)")
            return
        specs = []
        for prim in self.joint_prims:
            self.use(prim, "physics:jointEnabled")
            if not self.attr(prim, "physics:jointEnabled", True, kind="bool"):
                self.scene.notes.append(f"{prim.GetPath()}: joint disabled (physics:jointEnabled = false)")
                continue
            kind = JOINT_PRIM_TYPES[str(prim.GetTypeName())]
            p, t0 = self._joint_body(prim, "physics:body0")
            c, t1 = self._joint_body(prim, "physics:body1")
            x0 = self._local_frame(prim, 0, t0)
            x1 = self._local_frame(prim, 1, t1)
            sign = 1.0
            if c < 0 and p >= 0:  # the body is body0: make it the child, turning the other way
                p, c, x0, x1, sign = c, p, x1, x0, -1.0
            if c < 0:
                raise self.err(prim, "a joint needs a rigid body as physics:body0 or physics:body1")
            if p == c:
                raise self.err(prim, "physics:body0 and physics:body1 are the same body")
            if self.attr(prim, "physics:excludeFromArticulation", False, kind="bool"):
                self.warn(prim, "physics:excludeFromArticulation (a loop-closing maximal joint) is not supported; "
                                "the joint is part of the articulation")
            for name in ("physics:breakForce", "physics:breakTorque"):
                v = self.attr(prim, name)
                if v is not None and math.isfinite(v) and abs(v) < UNLIMITED:
                    self.warn(prim, f"{name} is not supported (the joint never breaks)")
            self.attr(prim, "physics:collisionEnabled", False, kind="bool")  # contacts between joint bodies: as always
            specs.append((prim, kind, p, c, x0, x1, sign))
        # parents first: order the joints along each tree from its root
        by_child = {}
        for s in specs:
            if s[3] in by_child:
                raise self.err(s[0], f"body {self.scene.builder.body_name[s[3]]} already has a parent joint "
                                     f"({by_child[s[3]][0].GetPath()})")
            by_child[s[3]] = s
        ordered, placed = [], set()

        def place(s, chain):
            if s[3] in placed:
                return
            if s[3] in chain:
                raise self.err(s[0], "the joints form a cycle")
            if s[2] >= 0 and s[2] in by_child:
                place(by_child[s[2]], chain | {s[3]})
            elif s[2] >= 0 and s[2] not in placed:
                root = self._free_root(s[2])
                placed.add(s[2])
                ordered.append(root)
            placed.add(s[3])
            ordered.append(s)

        for s in specs:
            place(s, set())
        for s in ordered:
            self._add_joint(*s)

    def _free_root(self, body):
        """A free joint for the root body of a joint tree that no joint ties to the world."""
        return (None, "free", -1, body, None, None, 1.0)

    def _add_joint(self, prim, kind, p, c, x0, x1, sign):
        b = self.scene.builder
        if prim is None:
            b.add_joint_free(c, parent=-1, name=f"{b.body_name[c]}_root")
            self.scene.items.append((b.body_name[c], "free joint to the world (root of an articulation)"))
            return
        path = prim.GetPath()
        deg = 180.0 / math.pi
        w0 = x0 if p < 0 else _tf_mul(self._body_tf(p), x0)
        w1 = _tf_mul(self._body_tf(c), x1)
        size = max(1.0, float(np.abs(w0[0]).max()))
        if np.linalg.norm(w0[0] - w1[0]) > 1e-4 * size and kind != "prismatic":
            self.warn(prim, f"the joint frames on body0 and body1 are {np.linalg.norm(w0[0] - w1[0]):.3g} m apart; "
                            f"the child body is moved to close the joint")
        xp = tuple(np.concatenate([x0[0], x0[1]]))
        xc = tuple(np.concatenate([x1[0], x1[1]]))
        try:
            if kind == "fixed":
                b.add_joint_fixed(p, c, parent_xform=xp, child_xform=xc, name=prim.GetName())
            elif kind == "ball":
                for name in ("physics:coneAngle0Limit", "physics:coneAngle1Limit"):
                    v = self.attr(prim, name)
                    if v is not None and math.isfinite(v) and 0 <= v < 180:
                        self.warn(prim, f"{name} (a cone limit) is not supported (ignored)")
                self.attr(prim, "physics:axis", "X", kind="token")
                rel = _quat_mul(_quat_conj(w0[1]), w1[1])
                b.add_joint_ball(p, c, parent_xform=xp, child_xform=xc, name=prim.GetName(), q0=tuple(rel))
            else:
                axis_name = self.attr(prim, "physics:axis", "X", kind="token")
                if axis_name not in AXES:
                    raise self.err(prim, f"physics:axis must be X, Y or Z, got '{axis_name}'")
                axis = np.asarray(AXES[axis_name]) * sign
                scale = deg if kind == "revolute" else 1.0 / self.mpu
                lo, hi = self._limits(prim, scale)
                ke, kd, tp, tv, effort = self._drive(prim, kind, deg if kind == "revolute" else 1.0)
                rel = _quat_mul(_quat_conj(w0[1]), w1[1])
                if kind == "revolute":  # the angle the authored poses imply, about the axis (joint frame)
                    q0 = 2.0 * math.atan2(float(np.dot(rel[:3], axis)), rel[3])
                    q0 = (q0 + math.pi) % (2 * math.pi) - math.pi
                    add = b.add_joint_revolute
                else:
                    q0 = float(np.dot(_rotate(_quat_conj(w0[1]), w1[0] - w0[0]), axis))
                    add = b.add_joint_prismatic
                add(p, c, parent_xform=xp, child_xform=xc, axis=tuple(axis), limit_lower=lo, limit_upper=hi,
                    target_ke=ke, target_kd=kd, target_pos=tp, target_vel=tv, effort_limit=effort,
                    name=prim.GetName(), q0=q0)
        except ValueError as e:
            raise self.err(prim, str(e)) from None
        what = {"fixed": "fixed joint", "ball": "spherical joint", "revolute": "revolute joint",
                "prismatic": "prismatic joint"}[kind]
        parent = "the world" if p < 0 else f"body {p}"
        self.scene.items.append((str(path), f"{what}: {parent} -> body {c}"))

    def free_loose_bodies(self):
        """SolverFeatherstone moves bodies through joints only: a rigid body that no joint holds gets a
        free joint (it moves as it would on its own)."""
        b = self.scene.builder
        held = set(b.joint_child)
        for body in range(b.body_count):
            if body not in held:
                b.add_joint_free(body, parent=-1, name=f"{b.body_name[body]}_free")

    def joint_api_read(self, path, api):
        """True when check_unused should skip ``api`` on ``path`` (read here)."""
        return (path, api) in self.read_apis


def _quat_mul(a, b):
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return np.array([aw * bx + ax * bw + ay * bz - az * by, aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw, aw * bw - ax * bx - ay * by - az * bz])


def _quat_conj(q):
    return np.array([-q[0], -q[1], -q[2], q[3]], np.float64)


def _rotate(q, v):
    from sim.builder import quat_to_matrix

    return quat_to_matrix(q) @ np.asarray(v, np.float64)


def _tf_mul(a, b):
    return (np.asarray(a[0], np.float64) + _rotate(a[1], b[0]), _quat_mul(a[1], b[1]))


class UsdRobotReader:
    """Mixin for usd_loader._Reader: an ``Xform`` with ``asset kc:robot = @arm.urdf@`` (or an MJCF
    file) imports that robot at the prim's world transform (``bool kc:robot:floating``: a free
    base for a URDF).  The file's lengths are metres; its own up axis is kept, so a Z-up robot
    in a Y-up stage needs a rotation on the prim."""

    def read_robot(self, prim):
        import os
        import warnings

        import sim

        self.kinds[prim.GetPath()] = "robot"
        self.use(prim, "kc:robot", "kc:robot:floating")
        a = prim.GetAttribute("kc:robot")
        value = a.Get(self.Usd.TimeCode.EarliestTime())
        if not hasattr(value, "path") or not value.path:
            raise self.err(prim, f"kc:robot must be an asset path (@robot.urdf@), got {str(value)[:60]}")
        path = value.resolvedPath or value.path
        if not os.path.isabs(path):
            layer = a.GetPropertyStack(self.Usd.TimeCode.Default())[0].layer if a.GetPropertyStack() else None
            base = os.path.dirname(layer.realPath) if layer is not None and layer.realPath else os.path.dirname(
                os.path.abspath(self.path))
            path = os.path.join(base, path)
        floating = self.attr(prim, "kc:robot:floating", False, kind="bool")
        t, q, s = self.decompose(prim, allow_shear=True)
        if np.abs(np.abs(s) - 1.0).max() > 1e-6:
            self.warn(prim, f"the scale {np.round(s, 6).tolist()} of a kc:robot prim is not applied (robots keep "
                            f"their file's size)")
        b = self.scene.builder
        first_shape = b.shape_count
        urdf = path.lower().endswith(".urdf")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", sim.ModelImportWarning)  # reported through self.warn below
            try:
                if urdf:
                    result = sim.parse_urdf(path, b, xform=tuple(t) + tuple(q), floating=floating)
                else:
                    if floating:
                        self.warn(prim, "kc:robot:floating applies to URDF files (MJCF bodies say it with a free "
                                        "joint)")
                    result = sim.parse_mjcf(path, b, xform=tuple(t) + tuple(q), use_file_gravity=False)
            except sim.ModelFileError as e:
                raise self.err(prim, f"kc:robot: {e}") from None
        for w in result.warnings:
            if "gravity" in w and "differs from the builder" in w:
                continue  # the stage's gravity applies to everything in it
            self.warn(prim, f"kc:robot: {w}")
        self.scene.notes += [f"{prim.GetPath()}: {n}" for n in result.notes]
        for s_ in range(first_shape, b.shape_count):
            self.scene.shape_paths.append(f"{prim.GetPath()}/{b.shape_name[s_]}")
        self.scene.items.append((str(prim.GetPath()), f"robot {os.path.basename(path)}: "
                                                     f"{len(set(result.bodies.values()) - {-1})} bodies, "
                                                     f"{len(result.joints)} joints"))
