"""SolverFeatherstone: articulated rigid bodies in generalised coordinates (kernels in
sim/featherstone_kernels.py).

Each step: forward kinematics of ``state_in``; penalty contacts of the bodies' shapes
with the ground and static shapes (sim/collide_bodies.py) and ``Control.body_f`` as body
wrenches; bias forces by recursive Newton–Euler (which maps those wrenches to the dofs,
``J^T w``); the joint-space mass matrix by the composite-rigid-body algorithm; a dense
Cholesky solve per articulation; semi-implicit Euler of ``joint_q``/``joint_qd``; then
forward kinematics of ``state_out`` so its ``body_q``/``body_qd`` match its coordinates.

Every articulation of the model (every environment of an ``add_builder`` batch) is one
thread of the same launches.  Intermediate arrays belong to the output state (made on
its first use), so a Tape that records a rollout through distinct states replays each
step's adjoint with that step's values.
"""
from __future__ import annotations

import operator
from types import SimpleNamespace

import numpy as np

import kernelcore as kc

from ..worlds import require_one_environment, static_shapes_in_environments
from ..articulation import _fk_inputs, articulation_tables
from ..collide_bodies import body_static_pairs
from ..contact_limits import warn_if_capped
from ..featherstone_contacts import fs_contact_inputs, fs_step_contacts_kernel, pairs_by_articulation
from ..featherstone_kernels import fs_assemble_kernel, fs_kinematics_kernel, fs_step_kernel
from ..featherstone_mesh_contacts import fs_mesh_contact_inputs, mesh_link_pairs
from ..featherstone_self_contacts import self_contact_pairs
from ..featherstone_toi import (MAX_IMPACTS, ToiBuffers, fs_step_toi_kernel, fs_toi_inputs,
                               swept_shapes_by_articulation)
from ..toi_mesh_body import mesh_shape_info
from ..toi_mesh_seams import static_mesh_seams
from ..toi import TOI_STATIC_KINDS, resting_speed
from .checks import check_dt, check_step_arguments, reports_non_finite


# One step is a whole articulation's dynamics per thread (~1 us for a cart-pole, ~10-15 us for a
# legged robot with contacts), so batches far below kernelcore's default parallel_grain (4096
# threads, for kernels of a few ns per thread) gain from every core.  Not below a few hundred:
# on a loaded machine each parallel launch waits for a descheduled thread at its end (64
# cart-poles on 2 threads under load 6 ran at 0.5x of one thread; 1024 at 1.2x).
STEP_PARALLEL_GRAIN = 256
for _kernel in (fs_step_kernel, fs_step_contacts_kernel, fs_step_toi_kernel):
    _kernel.parallel_grain = STEP_PARALLEL_GRAIN

# model arrays the step reads (a replaced one rebuilds the launch's arguments)
_MODEL_INPUTS = ("joint_X_p", "joint_X_c", "joint_axis", "joint_armature", "joint_damping", "joint_target_ke",
                 "joint_target_kd", "joint_limit_lower", "joint_limit_upper", "joint_limit_ke", "joint_limit_kd",
                 "joint_effort_limit", "joint_target_pos", "joint_target_vel", "body_com", "body_mass",
                 "body_inertia", "gravity", "articulation_start", "joint_q_start", "joint_qd_start", "joint_type",
                 "joint_parent", "joint_child", "joint_dof_dim")
_CONTACT_INPUTS = ("body_inv_mass", "body_inv_inertia", "shape_type", "shape_body", "shape_pos", "shape_rot",
                   "shape_scale", "shape_material", "shape_mesh", "ground_normal", "ground_offset", "ground_material",
                   "material_max_cohesion_distance", "material_ke", "material_damping_ratio", "material_mu",
                   "material_cohesion", "material_cohesion_distance")


class _StepBuffers:
    """Per-step intermediates of one output state (see the module docstring)."""

    def __init__(self, model, h_size):
        dev, rg = model.device, model.requires_grad
        b, d = model.body_count, model.joint_dof_count

        def z(n, dtype):
            return kc.zeros(n, dtype=dtype, device=dev, requires_grad=rg)

        self.body_q = z(b, kc.transform)
        self.body_qd = z(b, kc.spatial_vector)
        self.body_v = z(b, kc.spatial_vector)
        self.body_a = z(b, kc.spatial_vector)
        self.body_m = z(b, float)
        self.body_h = z(b, kc.vec3)
        self.body_io = z(b, kc.mat33)
        self.joint_S = z(d, kc.spatial_vector)
        self.f_acc = z(b, kc.spatial_vector)
        self.ic_m = z(b, float)
        self.ic_h = z(b, kc.vec3)
        self.ic_io = z(b, kc.mat33)
        self.H = z(h_size, float)
        self.L = z(h_size, float)
        self.rhs = z(d, float)
        self.y = z(d, float)
        self.qdd = z(d, float)


class SolverFeatherstone:
    """Articulated-body dynamics in generalised coordinates (composite-rigid-body algorithm).

    Args:
        model: a :class:`sim.Model` whose every body is the child of a joint (a floating
            robot gets ``add_joint_free`` at its base).
        contacts: collide the bodies' shapes with the ground and static shapes (penalty
            contacts with the shapes' materials; static triangle meshes and mesh links:
            sim/featherstone_mesh_contacts.py).  Bodies of one robot do not collide with
            each other, nor with other robots.
        toi: time-of-impact contacts for the sphere shapes of the links against the ground and
            static planes, spheres and boxes, and for their box, capsule and mesh shapes against
            those, static capsules and meshes (spheres too when the model has static triangle
            meshes; sim/featherstone_toi.py): an impulse through the
            articulated inertia at the time of impact, with the materials' restitution and
            friction, so a fast link does not pass through a thin static box.  Needs ``contacts``.
        max_impacts: with ``toi``, impacts per articulation per step (>= 1): after each the rest of
            the step is swept again with the new velocities (a link between two close walls meets
            both), and the contacts hit at the same time (feet landing or standing together) are
            resolved together.
        self_collision: contacts between the shapes of different links of one robot
            (sim/featherstone_self_contacts.py), except links joined by a joint (parent and
            child).  Off by default: most robot models overlap their links by design.

    ``step(model, state_in, state_out, control, dt)`` reads ``state_in.joint_q``/``joint_qd``
    and ``control.joint_f``, ``joint_target_pos``/``joint_target_vel``, ``body_f``; writes
    ``state_out.joint_q``, ``joint_qd``, ``body_q``, ``body_qd`` and ``body_f`` (the contact
    and control wrenches of the step).  A PD drive whose force would exceed the joint's
    ``effort_limit`` pushes with the limit (explicitly, for that step).
    """

    def __init__(self, model, contacts: bool = True, toi: bool = False, self_collision: bool = False,
                 max_impacts: int = MAX_IMPACTS):
        if int(max_impacts) != max_impacts or max_impacts < 1:
            raise ValueError(f"SolverFeatherstone: max_impacts must be an integer >= 1, got {max_impacts!r}")
        self.max_impacts = int(max_impacts)
        if toi and not contacts:
            raise ValueError("SolverFeatherstone: toi=True needs contacts=True (the impacts are contacts)")
        if toi and static_shapes_in_environments(model):
            require_one_environment(model, "SolverFeatherstone", "toi=True against static shapes of one environment")
        if model.joint_count == 0:
            raise ValueError("SolverFeatherstone: the model has no joints (add_joint_* on the builder)")
        self.model = model
        child = model.joint_child.numpy()
        body_joint = np.full(model.body_count, -1, np.int32)
        body_joint[child] = np.arange(model.joint_count, dtype=np.int32)
        loose = np.nonzero(body_joint < 0)[0]
        if len(loose):
            b = int(loose[0])
            raise ValueError(f"SolverFeatherstone: body {b} ('{model.body_name[b]}') is the child of no joint "
                             f"({len(loose)} such bodies); give it a joint (add_joint_free({b}) for a free body)")
        art = model.articulation_start.numpy()
        dof_start = model.joint_qd_start.numpy()[art]
        sizes = np.diff(dof_start)
        h_start = np.concatenate([[0], np.cumsum(sizes.astype(np.int64) ** 2)])
        dev = model.device
        self.body_joint = kc.array(body_joint, dtype=kc.int32, device=dev)
        self.articulation_dof_start = kc.array(dof_start.astype(np.int32), dtype=kc.int32, device=dev)
        self.articulation_H_start = kc.array(h_start.astype(np.int32), dtype=kc.int32, device=dev)
        self.h_size = int(h_start[-1])
        self.max_dofs = int(sizes.max()) if len(sizes) else 0
        self.contacts = bool(contacts)
        self.toi = bool(toi)
        self._toi_shape = self._art_toi_start = None
        swept = swept_all = ()
        if self.toi:
            self._toi_shape, self._art_toi_start, swept, swept_all = swept_shapes_by_articulation(model, body_joint)
            static_mesh_seams(model)  # once, here: the sweep reads them each step (and a Tape need not see it)
        self.pairs = body_static_pairs(model, swept_shapes=swept, swept_kinds=TOI_STATIC_KINDS,
                                       swept_shapes_all=swept_all) if self.contacts else None
        if self.pairs is None and self_collision:  # no static pairs, only the links' own
            self.pairs = tuple(kc.zeros(0, dtype=kc.int32, device=dev) for _ in range(2))
        self.self_collision = bool(self_collision)
        self.self_pairs = self_contact_pairs(model, body_joint, self.self_collision)
        # without toi, the link shapes against static meshes and the mesh links against every static collider
        # (with toi the sweep meets them)
        self.mesh_pairs = mesh_link_pairs(model, body_joint) if self.contacts and not self.toi else None
        info = mesh_shape_info(model).reshape(-1, 3) if model.shape_count else np.zeros((1, 3), np.float32)
        self._shape_info = kc.array(info, dtype=kc.vec3, device=dev)
        if self.mesh_pairs is None:
            self.mesh_pairs = tuple(kc.zeros(n, dtype=kc.int32, device=dev) for n in (0, 0, model.articulation_count + 1))
        if self.pairs is None and self.mesh_pairs[0].shape[0]:
            self.pairs = tuple(kc.zeros(0, dtype=kc.int32, device=dev) for _ in range(2))
        self._art_pair_start = None
        if self.pairs is not None and (self.pairs[0].shape[0] or self.toi or self.self_pairs[0].shape[0]
                                       or self.mesh_pairs[0].shape[0]):
            # one launch per step: each articulation's thread handles its own shapes' contacts
            self.pairs, self._art_pair_start = pairs_by_articulation(model, self.pairs, body_joint)
        self._zero_joint = kc.zeros(model.joint_dof_count, dtype=float, device=dev)
        self._zero_bodies = kc.zeros(model.body_count, dtype=kc.spatial_vector, device=dev)
        self._cap_checked = set()  # time steps checked by sim/contact_limits.py
        self._step_args = {}  # _step_key -> (kernel, inputs, outputs, keep-alive), see _prepare_step
        self._model_inputs = operator.attrgetter(*(_MODEL_INPUTS + (_CONTACT_INPUTS if self._art_pair_start
                                                                     is not None else ())
                                                   + (("material_restitution", "ground") if self.toi else ())))

    def _buffers(self, state_out):
        buf = getattr(state_out, "featherstone_buffers", None)
        if buf is None:
            buf = _StepBuffers(self.model, self.h_size)
            state_out.featherstone_buffers = buf
        return buf

    @reports_non_finite
    def step(self, model, state_in, state_out, control, dt: float):
        """Advance ``state_in`` by ``dt`` [s] into ``state_out`` (``control`` may be None)."""
        check_dt(dt, "SolverFeatherstone")
        key = self._step_key(model, state_in, state_out, control, dt)
        args = self._step_args.get(key)
        if args is None:
            args = self._prepare_step(model, state_in, state_out, control, dt, key)
        # no kc.launch(device=...): an explicit device takes launch's general path (~2x the Python time)
        kc.launch(args[0], dim=model.articulation_count, inputs=args[1], outputs=args[2])

    def _step_key(self, model, state_in, state_out, control, dt):
        """What the launch's arguments are made of, by identity: the same key, the same argument
        lists (the arguments' values are read by the kernel, not here)."""
        c = control
        return (id(model), id(state_in), id(state_out), id(c), dt, id(state_in.joint_q), id(state_in.joint_qd),
                id(state_out.joint_q), id(state_out.joint_qd), id(state_out.body_q), id(state_out.body_qd),
                id(state_out.body_f),
                0 if c is None else (id(c.joint_f), id(c.joint_target_pos), id(c.joint_target_vel), id(c.body_f)),
                self._model_key(model))

    def _model_key(self, model):
        return tuple(map(id, self._model_inputs(model)))

    def _prepare_step(self, model, state_in, state_out, control, dt, key):
        """Check the step's arguments and build its launch (kernel, inputs, outputs), kept under
        ``key``: a rollout that alternates two states checks and builds twice, then only launches."""
        if model is not self.model:
            raise ValueError("SolverFeatherstone.step: model is not the model this solver was made for")
        check_step_arguments(model, state_in, state_out, control)
        if not (np.isfinite(dt) and dt > 0):
            raise ValueError(f"SolverFeatherstone.step: dt must be finite and > 0, got {dt!r}")
        if state_in.joint_q is None or state_out.joint_q is None:
            raise ValueError("SolverFeatherstone.step: states have no joint_q (make them with model.state())")
        buf = self._buffers(state_out)
        if self._art_pair_start is not None and dt not in self._cap_checked:
            self._cap_checked.add(dt)
            warn_if_capped(model, dt, "SolverFeatherstone")  # light bodies' contacts softened (sim/contact.py)

        def pick(name, default):
            value = getattr(control, name, None) if control is not None else None
            return default if value is None else value

        art_table, joint_table = articulation_tables(model)
        common = [art_table, joint_table, model.joint_X_p, model.joint_X_c, model.joint_axis, self.body_joint,
                  state_in.joint_q, state_in.joint_qd, model.joint_armature, model.joint_damping,
                  model.joint_target_ke, model.joint_target_kd, model.joint_limit_lower, model.joint_limit_upper,
                  model.joint_limit_ke, model.joint_limit_kd, model.joint_effort_limit,
                  pick("joint_f", self._zero_joint),
                  pick("joint_target_pos", model.joint_target_pos), pick("joint_target_vel", model.joint_target_vel),
                  model.body_com]
        control_body_f = pick("body_f", self._zero_bodies)
        stage1 = [buf.body_q, buf.body_qd, buf.body_v, buf.body_a, buf.body_m, buf.body_h, buf.body_io, buf.joint_S]
        outputs = [buf.f_acc, buf.ic_m, buf.ic_h, buf.ic_io, buf.H, buf.rhs, buf.L, buf.y, buf.qdd,
                   state_out.joint_q, state_out.joint_qd, state_out.body_q, state_out.body_qd]
        inputs = common + [model.body_mass, model.body_inertia, control_body_f, model.gravity, float(dt)]
        outputs = stage1 + [state_out.body_f] + outputs
        if self.toi:
            kernel = fs_step_toi_kernel
            inputs = inputs + fs_contact_inputs(model, self.pairs, self._art_pair_start, self.self_pairs) + fs_toi_inputs(
                model, self._toi_shape, self._art_toi_start, resting_speed(model, dt), self.max_impacts)
            toi_buf = getattr(buf, "toi", None)
            toi_size = (self.max_impacts, int(self._toi_shape.shape[0]))
            if toi_buf is None or toi_buf.size != toi_size:
                toi_buf = buf.toi = ToiBuffers(model, *toi_size)
            outputs = outputs + toi_buf.outputs()
        elif self._art_pair_start is None:
            kernel = fs_step_kernel
        else:
            kernel = fs_step_contacts_kernel
            inputs = inputs + fs_contact_inputs(model, self.pairs, self._art_pair_start, self.self_pairs) + \
                fs_mesh_contact_inputs(model, self.mesh_pairs, self._shape_info)
        if len(self._step_args) >= 8:  # a rollout through many distinct states: keep the newest few
            self._step_args.pop(next(iter(self._step_args)))
        # the key holds ids: keep the objects alive with the entry so that no id is reused while cached
        args = (kernel, inputs, outputs, (state_in, state_out, control))
        self._step_args[key] = args
        return args

    def mass_matrix(self, state):
        """The joint-space mass matrices of ``state`` (with armature and the implicit drive terms of
        ``dt = 0``, i.e. armature only): a list of numpy (n, n) arrays, one per articulation.  For tests
        and inspection (reads back to the host)."""
        model = self.model
        scratch = SimpleNamespace()
        buf = _StepBuffers(model, self.h_size)
        scratch.body_f = kc.zeros(model.body_count, dtype=kc.spatial_vector, device=model.device)
        kc.launch(fs_kinematics_kernel, dim=model.articulation_count,
                  inputs=_fk_inputs(model) + [state.joint_q, state.joint_qd, model.body_com, model.body_mass,
                                              model.body_inertia, self._zero_bodies],
                  outputs=[buf.body_q, buf.body_qd, buf.body_v, buf.body_a, buf.body_m, buf.body_h, buf.body_io,
                           buf.joint_S, scratch.body_f], device=model.device, record_tape=False)
        kc.launch(fs_assemble_kernel, dim=model.articulation_count,
                  inputs=[*articulation_tables(model), model.joint_X_p, self.body_joint, state.joint_q, state.joint_qd,
                          model.joint_armature, model.joint_damping, model.joint_target_ke, model.joint_target_kd,
                          model.joint_limit_lower, model.joint_limit_upper, model.joint_limit_ke,
                          model.joint_limit_kd, model.joint_effort_limit, self._zero_joint, model.joint_target_pos,
                          model.joint_target_vel,
                          buf.body_q, model.body_com, scratch.body_f, buf.body_v, buf.body_a, buf.body_m, buf.body_h,
                          buf.body_io, buf.joint_S, model.gravity, 0.0],
                  outputs=[buf.f_acc, buf.ic_m, buf.ic_h, buf.ic_io, buf.H, buf.rhs], device=model.device,
                  record_tape=False)
        h = buf.H.numpy()
        hs = self.articulation_H_start.numpy()
        return [h[hs[a]:hs[a + 1]].reshape(int(round((hs[a + 1] - hs[a]) ** 0.5)), -1)
                for a in range(model.articulation_count)]
