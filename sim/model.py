"""Model (static description), State (time-varying quantities) and Control (inputs).

A :class:`Model` is produced by :meth:`sim.ModelBuilder.finalize`; it owns the kc
arrays that do not change during a simulation (masses, radii, springs, colliders,
materials) and the scalar settings (gravity, ground plane).  ``model.state()`` gives a
fresh :class:`State`; a solver reads one state and writes another.

Units are SI throughout: metres, seconds, kilograms, newtons.
"""
from __future__ import annotations

import numpy as np

import kernelcore as kc

# shape_type values (kept in sync with the collision kernels)
SHAPE_SPHERE = 0
SHAPE_BOX = 1
SHAPE_PLANE = 2
SHAPE_MESH = 3
SHAPE_CAPSULE = 4
SHAPE_TYPE_NAMES = {SHAPE_SPHERE: "sphere", SHAPE_BOX: "box", SHAPE_PLANE: "plane", SHAPE_MESH: "mesh",
                    SHAPE_CAPSULE: "capsule"}


class State:
    """Time-varying simulation quantities.

    Attributes:
        particle_q: kc.array(vec3), shape (particle_count,) — positions [m].
        particle_qd: kc.array(vec3), shape (particle_count,) — velocities [m/s].
        particle_f: kc.array(vec3), shape (particle_count,) — forces acting during the
            step that produced this state's successor [N]; solvers accumulate into the
            *output* state's array so that the input state is never written.
        body_q: kc.array(transform), shape (body_count,) — body frames in world: position [m]
            and rotation quaternion (x, y, z, w).
        body_qd: kc.array(spatial_vector), shape (body_count,) — linear velocity of the
            centre of mass in world [m/s], then angular velocity in world [rad/s].
        body_f: kc.array(spatial_vector), shape (body_count,) — force [N] at the centre of
            mass, then torque about it [N m], world; like particle_f, the wrench of the step
            that produced this state's successor.
        joint_q: kc.array(float), shape (joint_coord_count,) — generalised coordinates
            (layout in sim/builder/joints.py); None without joints.
        joint_qd: kc.array(float), shape (joint_dof_count,) — generalised velocities.

    Continuum (MPM) particles, present when the model has particles with a volume:
        particle_F: kc.array(mat33) (particle_count,) — elastic deformation gradient.
        particle_C: kc.array(mat33) (particle_count,) — APIC affine velocity matrix [1/s].
        particle_Jp: kc.array(float) (particle_count,) — snow: det of the plastic
            deformation; fluid: volume ratio J; 1 otherwise.
        mpm_grid: the grid buffers SolverMPM wrote while producing this state (attached on
            the first step that writes into this state; see sim/solvers/mpm.py).
    """

    def __init__(self, particle_q, particle_qd, particle_f, body_q=None, body_qd=None, body_f=None):
        self.particle_q = particle_q
        self.particle_qd = particle_qd
        self.particle_f = particle_f
        self.body_q = body_q
        self.body_qd = body_qd
        self.body_f = body_f
        self.joint_q = None
        self.joint_qd = None
        self.particle_F = None
        self.particle_C = None
        self.particle_Jp = None
        self.mpm_grid = None

    @property
    def body_count(self) -> int:
        return 0 if self.body_q is None else self.body_q.shape[0]

    @property
    def particle_count(self) -> int:
        return self.particle_q.shape[0]

    def arrays(self):
        """(name, array) pairs of every quantity (for NaN checks and copying)."""
        out = [("particle_q", self.particle_q), ("particle_qd", self.particle_qd), ("particle_f", self.particle_f)]
        if self.body_q is not None:
            out += [("body_q", self.body_q), ("body_qd", self.body_qd), ("body_f", self.body_f)]
        if self.joint_q is not None:
            out += [("joint_q", self.joint_q), ("joint_qd", self.joint_qd)]
        if self.particle_F is not None:
            out += [("particle_F", self.particle_F), ("particle_C", self.particle_C), ("particle_Jp", self.particle_Jp)]
        return out

    def assign(self, other: "State"):
        """Copy every quantity of ``other`` into this state (differentiable, like kc.copy)."""
        for (_, dst), (_, src) in zip(self.arrays(), other.arrays()):
            if dst.size:
                kc.copy(dst, src)


class Control:
    """Inputs applied during a step.

    Attributes:
        particle_f_ext: kc.array(vec3), shape (particle_count,) — external forces [N]
            added to every particle each step (zero by default).
        body_f: kc.array(spatial_vector), shape (body_count,) — external wrenches: force [N]
            at the centre of mass, then torque [N m], world (zero by default).
        particle_actuation: kc.array(float), shape (particle_count,) — active stress [Pa]
            of continuum (MPM) particles along the solver's ``actuation_axis`` (muscle
            fibres, as in DiffTaichi's diffmpm); None or zeros when unused.
        joint_f: kc.array(float), shape (joint_dof_count,) — generalised forces [N or N m]
            added to each dof (zero by default).
        joint_target_pos: kc.array(float), shape (joint_dof_count,) — PD drive position targets
            [m or rad] of 1-dof joints and d6 dofs (defaults from the builder's ``target_pos``).
        joint_target_vel: kc.array(float), shape (joint_dof_count,) — PD drive velocity targets.
    """

    def __init__(self, particle_f_ext=None, body_f=None, particle_actuation=None, joint_f=None,
                 joint_target_pos=None, joint_target_vel=None):
        self.particle_f_ext = particle_f_ext
        self.body_f = body_f
        self.particle_actuation = particle_actuation
        self.joint_f = joint_f
        self.joint_target_pos = joint_target_pos
        self.joint_target_vel = joint_target_vel


class Model:
    """Static description of a simulation; create with :meth:`sim.ModelBuilder.finalize`.

    Particles (``N = particle_count``):
        particle_q, particle_qd: vec3 (N,) — initial positions [m] / velocities [m/s].
        particle_mass: float (N,) [kg]; particle_inv_mass: float (N,) [1/kg], 0 = fixed.
        particle_radius: float (N,) [m]; particle_material: int (N,) index into material_*.
        particle_world: int32 (N,) — environment index (-1: shared, touches every environment);
            particles of different environments do not collide, nor with other environments' shapes.
        particle_volume: float (N,) — continuum volume [m^3] (SolverMPM), 0 for plain particles;
        particle_continuum: bool — some particle has a volume (states then carry F, C, Jp).
        particle_max_radius: float [m] — largest radius (sizes the contact search).
        particle_damping: float [1/s] — linear drag, acceleration ``-particle_damping * v``.

    Springs (``S = spring_count``):
        spring_indices: int (2 S,) — particle pairs, flattened.
        spring_rest_length: float (S,) [m]; spring_stiffness: float (S,) [N/m];
        spring_damping: float (S,) [N s/m].

    Contact materials (``M = material_count``; a pair mixes by averaging):
        material_ke: float (M,) — normal stiffness [N/m].
        material_damping_ratio: float (M,) — critical-damping fraction of the normal
            spring, derived from the restitution coefficient (see sim/builder/materials.py).
        material_restitution: float (M,) — coefficient of restitution in [0, 1].
        material_mu: float (M,) — Coulomb friction coefficient.
        material_cohesion: float (M,) — attractive force at contact [N].
        material_cohesion_distance: float (M,) — gap over which cohesion fades [m].
        material_max_cohesion_distance: float [m] — the largest of them.

    Continuum materials (SolverMPM; see sim/mpm_constitutive.py):
        material_mpm_model: int (M,) — 0 none, 1 neo_hookean, 2 fixed_corotated, 3 snow,
            4 sand, 5 fluid; material_mpm_model_names: the same as a list of names/None.
        material_youngs_modulus [Pa], material_poisson_ratio, material_hardening,
        material_critical_compression, material_critical_stretch,
        material_friction_angle [rad], material_viscosity [Pa s]: float (M,).

    Rigid bodies (``B = body_count``, see sim/builder/bodies.py):
        body_q: transform (B,) — initial body frames; body_qd: spatial_vector (B,) — initial
            COM velocity [m/s] and angular velocity [rad/s], world.
        body_mass: float (B,) [kg]; body_inv_mass: float (B,) [1/kg].
        body_com: vec3 (B,) — centre of mass in the body frame [m].
        body_inertia, body_inv_inertia: mat33 (B,) — inertia about the COM in the body frame
            [kg m^2] and its inverse.
        body_name: list of B names.

    Shapes (``K = shape_count``):
        shape_type: int (K,) — SHAPE_SPHERE, SHAPE_BOX, SHAPE_PLANE, SHAPE_MESH or SHAPE_CAPSULE.
        shape_body: int (K,) — -1 = static collider (pos/rot in world), else the body carrying it
            (pos/rot in the body frame).
        shape_pos: vec3 (K,) [m]; shape_rot: mat33 (K,) — parent-from-local rotation.
        shape_quat: numpy (K, 4) — the same rotations as quaternions (x, y, z, w).
        shape_scale: vec3 (K,) — sphere (r, 0, 0), box half extents, capsule (r, half height, 0),
            plane (width, length, 0) (display only), mesh the scale baked into its vertices [m].
        shape_density: float (K,) [kg/m^3] (body shapes).
        shape_name: list of K names.
        shape_mesh_points: {shape index: (points (n, 3) [m], indices (3 m,))} of meshes: static ones
            in world, those on bodies in the shape's own frame (scale applied; shape_pos/shape_rot
            then place it in the body frame).
        shape_mesh: uint64 (K,) — ``geometry.Mesh.id`` of mesh shapes (in the frames above), else 0.
        shape_mesh_convex: {shape index: bool} — the mesh is a convex hull (``is_convex=True``).
        shape_material: int (K,).
        shape_meshes: list of ``geometry.Mesh`` (kept alive here).
        mesh_shapes: int (number of static mesh shapes,) — indices of the static mesh shapes.
        mesh_shape_indices: the same as a Python list.
        body_mesh_shape_indices: list of the mesh shapes carried by bodies; body_mesh_shapes: the same as
            an int kc array.
        shape_seams: int (K + static triangles,) — the seam flags of the static meshes' triangles, set by
            the time-of-impact solvers at construction (sim/toi_mesh_seams.py has the layout); None before.

    Joints (``J = joint_count``, ``C = joint_coord_count``, ``D = joint_dof_count``; see
    sim/builder/joints.py for the coordinate layout):
        joint_type, joint_parent (-1: world), joint_child: int (J,).
        joint_X_p, joint_X_c: transform (J,) — joint frames on the parent (world for -1) and child.
        joint_q_start: int (J+1,) — first coordinate of each joint (last entry: C);
        joint_qd_start: int (J+1,) — first dof (last entry: D).
        joint_dof_dim: int (J, 2) — (linear, angular) dof counts.
        joint_q, joint_qd: float (C,), (D,) — default coordinates / velocities.
        joint_axis: vec3 (D,) — unit axis of each dof in the joint frame.
        joint_limit_lower/upper: float (D,) [m or rad] (+-1e10: none); joint_limit_ke/kd: penalty.
        joint_target_ke/kd: float (D,) — PD gains; joint_target_pos/vel: float (D,) default targets.
        joint_armature: float (D,) [kg or kg m^2]; joint_damping: float (D,) [N s/m or N m s/rad];
        joint_effort_limit: float (D,) [N or N m] bound on drive forces.
        joint_articulation: int (J,); articulation_start: int (A+1,) — each articulation's first
            joint (last entry: J); articulation_count: A.
        joint_world, body_world, shape_world: int — environment index (-1: shared);
        num_worlds: number of environments made by add_builder / begin_world.
        joint_name: list of J names.

    Cloth (``T = tri_count`` triangles, ``E = edge_count`` bending edges; sim/builder/cloth.py):
        tri_indices: int (T, 3); tri_poses: mat22 (T,) — inverse rest edge matrix in the
            triangle's plane [1/m]; tri_areas: float (T,) [m^2]; tri_materials: float (T, 5) —
            (ke mu [N/m], ka lambda [N/m], kd [N s/m], drag, lift [kg/m^3]).
        edge_indices: int (E, 4) — opposite vertices o0, o1, then the shared edge e0, e1;
        edge_rest_angle: float (E,) [rad]; edge_bending_properties: float (E, 2) —
            (ke [N m/rad^2], kd [N m s/rad^2]).

    Scene settings:
        gravity: kc.vec3 [m/s^2]; ground: bool; ground_normal: kc.vec3 (unit);
        ground_offset: float [m] — the ground is ``{x : dot(ground_normal, x) = ground_offset}``;
        ground_material: int.
    """

    def __init__(self, device="cpu"):
        self.device = kc.get_device(device)
        self.requires_grad = False
        self.particle_count = 0
        self.spring_count = 0
        self.shape_count = 0
        self.body_count = 0
        self.material_count = 0
        self.joint_count = 0
        self.joint_coord_count = 0
        self.joint_dof_count = 0
        self.articulation_count = 0
        self.num_worlds = 0
        self.tri_count = 0
        self.edge_count = 0
        self.gravity = kc.vec3(0.0, -9.81, 0.0)
        self.ground = False
        self.ground_normal = kc.vec3(0.0, 1.0, 0.0)
        self.ground_offset = 0.0
        self.ground_material = 0
        self.particle_damping = 0.0
        self.particle_max_radius = 0.0
        self.shape_meshes = []
        self.shape_quat = np.zeros((0, 4), np.float32)
        self.mesh_shape_indices = []
        self.body_mesh_shape_indices = []
        self.shape_seams = None  # sim/toi_mesh_seams.py, at the first time-of-impact solver

    # -- factories ---------------------------------------------------------------------------
    def state(self, requires_grad=None) -> State:
        """A new State holding copies of the initial positions and velocities."""
        rg = self.requires_grad if requires_grad is None else requires_grad
        s = State(kc.clone(self.particle_q, requires_grad=rg),
                  kc.clone(self.particle_qd, requires_grad=rg),
                  kc.zeros(self.particle_count, dtype=kc.vec3, device=self.device, requires_grad=rg),
                  kc.clone(self.body_q, requires_grad=rg),
                  kc.clone(self.body_qd, requires_grad=rg),
                  kc.zeros(self.body_count, dtype=kc.spatial_vector, device=self.device, requires_grad=rg))
        if self.joint_count:
            s.joint_q = kc.clone(self.joint_q, requires_grad=rg)
            s.joint_qd = kc.clone(self.joint_qd, requires_grad=rg)
        if getattr(self, "particle_continuum", False):
            n = self.particle_count
            eye = np.tile(np.eye(3, dtype=np.float32), (n, 1, 1))
            s.particle_F = kc.array(eye, dtype=kc.mat33, device=self.device, requires_grad=rg)
            s.particle_C = kc.zeros(n, dtype=kc.mat33, device=self.device, requires_grad=rg)
            s.particle_Jp = kc.array(np.ones(n, np.float32), dtype=float, device=self.device, requires_grad=rg)
        return s

    def control(self, requires_grad=None) -> Control:
        """A new Control with zero external forces."""
        rg = self.requires_grad if requires_grad is None else requires_grad
        act = None
        if getattr(self, "particle_continuum", False):
            act = kc.zeros(self.particle_count, dtype=float, device=self.device, requires_grad=rg)
        c = Control(kc.zeros(self.particle_count, dtype=kc.vec3, device=self.device, requires_grad=rg),
                    kc.zeros(self.body_count, dtype=kc.spatial_vector, device=self.device, requires_grad=rg),
                    particle_actuation=act)
        if self.joint_count:
            c.joint_f = kc.zeros(self.joint_dof_count, dtype=float, device=self.device, requires_grad=rg)
            c.joint_target_pos = kc.clone(self.joint_target_pos, requires_grad=rg)
            c.joint_target_vel = kc.clone(self.joint_target_vel, requires_grad=rg)
        return c

    # -- introspection --------------------------------------------------------------------------
    def shape_types(self):
        """Python list of shape type names, e.g. ["sphere", "mesh"]."""
        return [SHAPE_TYPE_NAMES[int(t)] for t in self.shape_type.numpy()] if self.shape_count else []

    def summary(self) -> str:
        g = np.asarray(self.gravity, dtype=np.float64)
        lines = [f"particles: {self.particle_count}", f"springs: {self.spring_count}",
                 f"materials: {self.material_count}", f"bodies: {self.body_count}",
                 f"joints: {self.joint_count} ({self.joint_dof_count} dofs, {self.articulation_count} articulations)",
                 f"shapes: {self.shape_count} {self.shape_types() if self.shape_count else ''}".rstrip(),
                 f"gravity: ({g[0]:g}, {g[1]:g}, {g[2]:g}) m/s^2",
                 f"ground: {'yes' if self.ground else 'no'}"]
        return "\n".join(lines)
