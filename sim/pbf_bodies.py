"""Two-way coupling of the position-based fluid (sim/pbf_kernels.py) with rigid bodies.

Shapes carried by bodies (sphere, box, capsule, closed mesh) are boundaries of the fluid
at the bodies' poses predicted for the end of the step (free flight under gravity and the
control wrench), exactly like the static shapes: counted as fluid at rest in the density
(``wall_volume``) and projected out of (particle centres kept their radius away).  Every
position correction a body causes -- the projection and the body's share of the density
constraint's gradient, ``grad phi_b lambda_i`` -- is a velocity change ``dp / dt`` of the
particle, i.e. an impulse ``m_i dp / dt``; the body receives the opposite impulse, as a
force ``-m_i dp / dt^2`` [N] at the particle and its torque about the body's centre of mass
[N m], accumulated into ``force`` / ``torque`` (vec3 (B,)).  The solver then integrates the
bodies with that wrench (sim/body_integrate.py), so fluid plus bodies conserve momentum.

The functions here are called by the PBF kernels (predict, lambda, delta) with ``count`` =
0 when the model has no body shapes (then they do nothing).
"""
from __future__ import annotations

import kernelcore as kc

from .pbf_boundary import shape_distance, wall_volume


@kc.func
def body_shape_distance(x: kc.vec3, s: int, shape_type: kc.array(dtype=int), shape_body: kc.array(dtype=int),
                        shape_pos: kc.array(dtype=kc.vec3), shape_rot: kc.array(dtype=kc.mat33),
                        shape_scale: kc.array(dtype=kc.vec3), shape_mesh: kc.array(dtype=kc.uint64),
                        body_q: kc.array(dtype=kc.transform), reach: float) -> kc.vec4:
    """Signed distance [m] of ``x`` (world) from body shape ``s`` at its body's pose ``body_q`` and the
    outward world normal there, packed (nx, ny, nz, d).  The point is taken into the shape's own
    frame (where a body mesh is stored) and the normal rotated back."""
    tf = body_q[shape_body[s]]
    rot = kc.quat_to_matrix(kc.transform_get_rotation(tf)) * shape_rot[s]
    pos = kc.transform_point(tf, shape_pos[s])
    local = kc.transpose(rot) * (x - pos)
    nd = shape_distance(local, shape_type[s], kc.vec3(0.0, 0.0, 0.0), kc.identity(3, dtype=float), shape_scale[s],
                        shape_mesh[s], reach)
    n = rot * kc.vec3(nd[0], nd[1], nd[2])
    return kc.vec4(n[0], n[1], n[2], nd[3])


@kc.func
def push_body(b: int, x: kc.vec3, dp: kc.vec3, mass_over_dt2: float, body_q: kc.array(dtype=kc.transform),
              body_com: kc.array(dtype=kc.vec3), force: kc.array(dtype=kc.vec3), torque: kc.array(dtype=kc.vec3)):
    """The reaction of moving a particle at ``x`` by ``dp`` [m]: force -m dp / dt^2 on body ``b`` at ``x``."""
    f = dp * (-mass_over_dt2)
    kc.atomic_add(force, b, f)
    kc.atomic_add(torque, b, kc.cross(x - kc.transform_point(body_q[b], body_com[b]), f))


@kc.func
def project_bodies(p: kc.vec3, r: float, mass_over_dt2: float, count: int, shape_count: int, reach: float,
                   shape_type: kc.array(dtype=int), shape_body: kc.array(dtype=int), shape_pos: kc.array(dtype=kc.vec3),
                   shape_rot: kc.array(dtype=kc.mat33), shape_scale: kc.array(dtype=kc.vec3),
                   shape_mesh: kc.array(dtype=kc.uint64), body_q: kc.array(dtype=kc.transform),
                   body_com: kc.array(dtype=kc.vec3), force: kc.array(dtype=kc.vec3),
                   torque: kc.array(dtype=kc.vec3)) -> kc.vec3:
    """Move ``p`` out of the body shapes (to distance r [m]); each push's reaction goes to its body."""
    x = p
    if count > 0:
        for s in range(shape_count):
            b = shape_body[s]
            if b >= 0:
                nd = body_shape_distance(x, s, shape_type, shape_body, shape_pos, shape_rot, shape_scale, shape_mesh,
                                         body_q, reach)
                if nd[3] < r:
                    move = kc.vec3(nd[0], nd[1], nd[2]) * (r - nd[3])
                    push_body(b, x, move, mass_over_dt2, body_q, body_com, force, torque)
                    x = x + move
    return x


@kc.func
def body_density(x: kc.vec3, h: float, count: int, shape_count: int, reach: float, shape_type: kc.array(dtype=int),
                 shape_body: kc.array(dtype=int), shape_pos: kc.array(dtype=kc.vec3),
                 shape_rot: kc.array(dtype=kc.mat33), shape_scale: kc.array(dtype=kc.vec3),
                 shape_mesh: kc.array(dtype=kc.uint64), body_q: kc.array(dtype=kc.transform)) -> kc.vec4:
    """The body shapes' share of boundary_density (sim/pbf_kernels.py): (d phi / dx [1/m], phi)."""
    from_walls = kc.vec4(0.0, 0.0, 0.0, 0.0)
    if count > 0:
        for s in range(shape_count):
            if shape_body[s] >= 0:
                nd = body_shape_distance(x, s, shape_type, shape_body, shape_pos, shape_rot, shape_scale, shape_mesh,
                                         body_q, reach)
                w = wall_volume(nd[3], h)
                from_walls += kc.vec4(nd[0] * w[1], nd[1] * w[1], nd[2] * w[1], w[0])
    return from_walls


@kc.func
def body_wall_push(x: kc.vec3, h: float, lam: float, mass_over_dt2: float, count: int, shape_count: int,
                   reach: float, shape_type: kc.array(dtype=int), shape_body: kc.array(dtype=int),
                   shape_pos: kc.array(dtype=kc.vec3), shape_rot: kc.array(dtype=kc.mat33),
                   shape_scale: kc.array(dtype=kc.vec3), shape_mesh: kc.array(dtype=kc.uint64),
                   body_q: kc.array(dtype=kc.transform), body_com: kc.array(dtype=kc.vec3),
                   force: kc.array(dtype=kc.vec3), torque: kc.array(dtype=kc.vec3)) -> kc.vec3:
    """The body shapes' share of particle i's constraint update, grad phi_b lambda_i [m], with its reactions."""
    dp = kc.vec3(0.0, 0.0, 0.0)
    if count > 0:
        for s in range(shape_count):
            b = shape_body[s]
            if b >= 0:
                nd = body_shape_distance(x, s, shape_type, shape_body, shape_pos, shape_rot, shape_scale, shape_mesh,
                                         body_q, reach)
                w = wall_volume(nd[3], h)
                if w[1] != 0.0:
                    push = kc.vec3(nd[0], nd[1], nd[2]) * (w[1] * lam)
                    push_body(b, x, push, mass_over_dt2, body_q, body_com, force, torque)
                    dp += push
    return dp


@kc.kernel
def wrench_kernel(force: kc.array(dtype=kc.vec3), torque: kc.array(dtype=kc.vec3),
                  control: kc.array(dtype=kc.spatial_vector), use_control: int,
                  wrench: kc.array(dtype=kc.spatial_vector)):
    b = kc.tid()
    w = kc.spatial_vector(force[b], torque[b])
    if use_control != 0:
        w = w + control[b]
    wrench[b] = w


def body_wrench(force, torque, control_wrench, wrench, device):
    """wrench (B,) = (force, torque) of the fluid [N, N m] + ``control_wrench`` (B,) (may be None)."""
    use = control_wrench is not None
    kc.launch(wrench_kernel, dim=force.shape[0], inputs=[force, torque, control_wrench if use else wrench, int(use)],
              outputs=[wrench], device=device)


@kc.kernel
def zero_vec3_kernel(a: kc.array(dtype=kc.vec3), b: kc.array(dtype=kc.vec3)):
    i = kc.tid()
    a[i] = kc.vec3(0.0, 0.0, 0.0)
    b[i] = kc.vec3(0.0, 0.0, 0.0)


def zero_reactions(force, torque, device):
    """Zero the reaction accumulators (a taped kernel, so a replay starts them from zero too)."""
    kc.launch(zero_vec3_kernel, dim=force.shape[0], outputs=[force, torque], device=device)


class BodyCoupling:
    """One step's body arrays (owned by the state the step writes, like PBFBuffers).

    count: number of shapes on bodies (0: the coupling functions do nothing); body_q / body_qd:
    transform / spatial_vector (B,) the bodies' predicted end-of-step poses [m] and velocities;
    force / torque: vec3 (B,) the fluid's reaction [N], [N m] (about the centre of mass);
    wrench: spatial_vector (B,) reaction plus control wrench, what the bodies are integrated with;
    wrench_free: spatial_vector (B,) the control wrench alone, for the free-flight prediction (its
    own array: a Tape replays both uses).
    Without bodies the arrays have one unused element (kernels need an array).
    """

    def __init__(self, model, device, requires_grad):
        body = model.shape_body.numpy() if model.shape_count else []
        self.count = int(sum(1 for b in body if b >= 0))
        nb = max(1, model.body_count)
        self.body_q = kc.zeros(nb, dtype=kc.transform, device=device, requires_grad=requires_grad)
        self.body_qd = kc.zeros(nb, dtype=kc.spatial_vector, device=device, requires_grad=requires_grad)
        self.force = kc.zeros(nb, dtype=kc.vec3, device=device, requires_grad=requires_grad)
        self.torque = kc.zeros(nb, dtype=kc.vec3, device=device, requires_grad=requires_grad)
        self.wrench = kc.zeros(nb, dtype=kc.spatial_vector, device=device, requires_grad=requires_grad)
        self.wrench_free = kc.zeros(nb, dtype=kc.spatial_vector, device=device, requires_grad=requires_grad)
        self.body_com = model.body_com if model.body_count else kc.zeros(1, dtype=kc.vec3, device=device)

    def inputs(self, model, dt, mass=None):
        """Kernel arguments: body shape count, predicted poses, centres of mass, particle masses
        (``mass``: float (N,) [kg] in the kernel's particle order; default the model's), 1 / dt^2."""
        return [self.count, self.body_q, self.body_com, model.particle_mass if mass is None else mass,
                1.0 / (dt * dt)]

    def outputs(self):
        return [self.force, self.torque]

    def predict(self, model, state_in, control_wrench, gravity, dt):
        """Free flight of the bodies over ``dt`` under gravity and ``control_wrench`` (the poses the fluid
        sees during the step); zero the reactions."""
        zero_reactions(self.force, self.torque, model.device)
        body_wrench(self.force, self.torque, control_wrench, self.wrench_free, model.device)
        integrate(model, state_in.body_q, state_in.body_qd, self.wrench_free, gravity, dt, self.body_q, self.body_qd)

    def finish(self, model, state_in, control_wrench, gravity, dt, state_out):
        """Integrate the bodies of ``state_in`` over ``dt`` with the fluid's reaction plus the control wrench."""
        body_wrench(self.force, self.torque, control_wrench, self.wrench, model.device)
        integrate(model, state_in.body_q, state_in.body_qd, self.wrench, gravity, dt, state_out.body_q,
                  state_out.body_qd)


def integrate(model, body_q, body_qd, wrench, gravity, dt, body_q_out, body_qd_out):
    """Semi-implicit Euler of the bodies (sim/body_integrate.py) under ``wrench`` and ``gravity``."""
    from .body_integrate import integrate_bodies_kernel

    kc.launch(integrate_bodies_kernel, dim=model.body_count,
              inputs=[body_q, body_qd, wrench, model.body_com, model.body_inv_mass, model.body_inertia,
                      model.body_inv_inertia, gravity, float(dt)],
              outputs=[body_q_out, body_qd_out], device=model.device)
