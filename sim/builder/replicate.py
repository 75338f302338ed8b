"""``ModelBuilder.add_builder``: copy a whole builder into another, so N environments are one model.

Each domain mixin copies its own lists in a method named ``_add_builder_<domain>(other,
offsets, xform, world)``; ``add_builder`` calls every such method it finds, so a new
mixin joins by defining one.  ``offsets`` maps "particle", "body", "shape", "joint",
"coord", "dof", "material", "spring" to the counts of this builder before the copy.

The copy belongs to environment ``world`` (a new one by default): ``shape_world``,
``body_world`` and ``particle_world`` record it and the contact kernels let two shapes,
a particle and a shape, or two particles touch only when they are in the same
environment or one of them is shared (world -1, like the ground).
"""
from __future__ import annotations

import numpy as np

from .joints import JOINT_FREE, IDENTITY_TF, _check_xform, quat_mul, quat_rotate, tf_mul


class ReplicateBuilder:
    """Mixin: ``add_builder`` and the per-domain copies of the base domains."""

    def add_builder(self, other, xform=None, world: int | None = None, separate_world: bool = True):
        """Append everything of builder ``other`` (bodies, shapes, joints, particles, springs, materials).

        Args:
            other: a ModelBuilder (not modified).
            xform: transform (7 numbers) applied to the copy: bodies, static shapes, particles
                and the world-side frames of its root joints are moved by it (None: identity).
            world: environment index of the copy (None: the next unused one).
            separate_world: False keeps the copy in the shared world -1 (it collides with everything).
        Returns:
            the copy's environment index (-1 when ``separate_world`` is False).
        """
        if other is self:
            raise ValueError("add_builder: cannot add a builder to itself")
        xf = _check_xform(xform, "add_builder", "xform")
        if separate_world:
            w = self.num_worlds if world is None else int(world)
            if w < 0:
                raise ValueError(f"add_builder: world must be >= 0, got {world!r}")
            self.num_worlds = max(self.num_worlds, w + 1)
        else:
            w = -1
        offsets = dict(particle=self.particle_count, body=self.body_count, shape=self.shape_count,
                       joint=self.joint_count, coord=self.joint_coord_count, dof=self.joint_dof_count,
                       material=self.material_count, spring=self.spring_count)
        for name in sorted(dir(type(self))):
            if name.startswith("_add_builder_"):
                getattr(self, name)(other, offsets, xf, w)
        return w

    # -- base domains ----------------------------------------------------------------------------
    def _add_builder_a_materials(self, other, offsets, xf, world):
        for key in ("ke", "restitution", "mu", "cohesion", "cohesion_distance", "continuum"):
            getattr(self, "material_" + key).extend(getattr(other, "material_" + key))

    def _add_builder_b_particles(self, other, offsets, xf, world):
        moff = offsets["material"]
        self._pad_particle_world()  # this builder's own particles first
        if other.particle_count:  # all particles at once (quat_rotate broadcasts over rows): packing is cheap
            q = np.asarray(other.particle_q, np.float64).reshape(-1, 3)
            qd = np.asarray(other.particle_qd, np.float64).reshape(-1, 3)
            self.particle_q.extend(map(tuple, (xf[:3] + quat_rotate(xf[3:], q)).tolist()))
            self.particle_qd.extend(map(tuple, quat_rotate(xf[3:], qd).tolist()))
        self.particle_mass.extend(other.particle_mass)
        self.particle_radius.extend(other.particle_radius)
        self.particle_material.extend(m + moff for m in other.particle_material)
        self.particle_volume.extend(other.particle_volume)
        self.particle_world.extend(world if w < 0 else w for w in other._pad_particle_world())

    def _add_builder_c_springs(self, other, offsets, xf, world):
        poff = offsets["particle"]
        self.spring_indices.extend(i + poff for i in other.spring_indices)
        self.spring_rest_length.extend(other.spring_rest_length)
        self.spring_stiffness.extend(other.spring_stiffness)
        self.spring_damping.extend(other.spring_damping)

    def _add_builder_d_bodies(self, other, offsets, xf, world):
        for q, qd in zip(other.body_q, other.body_qd):
            self.body_q.append(tuple(tf_mul(xf, q)))
            v = quat_rotate(xf[3:], qd[:3])
            w = quat_rotate(xf[3:], qd[3:])
            self.body_qd.append(tuple(v) + tuple(w))
        self.body_mass_given.extend(other.body_mass_given)
        self.body_inertia_given.extend(other.body_inertia_given)
        self.body_com_given.extend(other.body_com_given)
        self.body_name.extend(other.body_name)
        self.body_world.extend(world if w < 0 else w for w in other.body_world)

    def _add_builder_e_shapes(self, other, offsets, xf, world):
        boff, moff = offsets["body"], offsets["material"]
        for s in range(other.shape_count):
            b = other.shape_body[s]
            pos, quat = np.asarray(other.shape_pos[s]), np.asarray(other.shape_quat[s])
            mesh = other.shape_mesh_data[s]
            if b < 0:  # static shapes are in world: move them with the copy
                pos = xf[:3] + quat_rotate(xf[3:], pos)
                quat = quat_mul(xf[3:], quat)
                if mesh is not None:
                    pts, idx = mesh
                    pts = xf[:3] + np.stack([quat_rotate(xf[3:], p) for p in pts])
                    mesh = (pts, idx)
            self.shape_type.append(other.shape_type[s])
            self.shape_pos.append(tuple(pos))
            self.shape_quat.append(tuple(quat))
            self.shape_scale.append(other.shape_scale[s])
            self.shape_material.append(other.shape_material[s] + moff)
            self.shape_body.append(b + boff if b >= 0 else -1)
            self.shape_density.append(other.shape_density[s])
            self.shape_mesh_data.append(mesh)
            self.shape_mesh_closed.append(other.shape_mesh_closed[s])
            self.shape_mesh_convex.append(other.shape_mesh_convex[s])
            self.shape_name.append(other.shape_name[s])
            ow = other.shape_world[s]
            self.shape_world.append(world if ow < 0 else ow)
        if other.ground and not self.ground:
            self.set_ground_plane(other.ground_normal, other.ground_offset, other.ground_material + offsets["material"])

    def _add_builder_f_joints(self, other, offsets, xf, world):
        boff, coff = offsets["body"], offsets["coord"]
        doff = offsets["dof"]
        for j in range(other.joint_count):
            p = other.joint_parent[j]
            xp = np.asarray(other.joint_X_p[j], np.float64)
            qs = other.joint_q_start[j]
            ncoord = (other.joint_q_start[j + 1] if j + 1 < other.joint_count else other.joint_coord_count) - qs
            q = list(other.joint_q[qs:qs + ncoord])
            if p < 0:
                if other.joint_type[j] == JOINT_FREE and np.allclose(xp, IDENTITY_TF):
                    # keep "a floating base's coordinates are its world pose": move q instead of X_p
                    t = tf_mul(xf, q)
                    q = list(t)
                    ds = other.joint_qd_start[j]
                    qd = other.joint_qd[ds:ds + 6]
                    other_qd = list(quat_rotate(xf[3:], qd[:3])) + list(quat_rotate(xf[3:], qd[3:]))
                else:
                    xp = tf_mul(xf, xp)
                    other_qd = None
            else:
                other_qd = None
            self.joint_type.append(other.joint_type[j])
            self.joint_parent.append(p + boff if p >= 0 else -1)
            self.joint_child.append(other.joint_child[j] + boff)
            self.joint_X_p.append(tuple(xp))
            self.joint_X_c.append(other.joint_X_c[j])
            self.joint_name.append(other.joint_name[j])
            self.joint_q_start.append(qs + coff)
            self.joint_qd_start.append(other.joint_qd_start[j] + doff)
            self.joint_dof_dim.append(other.joint_dof_dim[j])
            ow = other.joint_world[j]
            self.joint_world.append(world if ow < 0 else ow)
            self.joint_q.extend(float(x) for x in q)
            ds = other.joint_qd_start[j]
            nd = sum(other.joint_dof_dim[j])
            self.joint_qd.extend(float(x) for x in (other_qd if other_qd is not None else other.joint_qd[ds:ds + nd]))
        for key in ("axis", "limit_lower", "limit_upper", "limit_ke", "limit_kd", "target_ke", "target_kd",
                    "target_pos", "target_vel", "armature", "damping", "effort_limit"):
            getattr(self, "joint_" + key).extend(getattr(other, "joint_" + key))
