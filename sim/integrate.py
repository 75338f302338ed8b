"""Force bookkeeping and semi-implicit Euler integration of particles (kernels + launchers)."""
from __future__ import annotations

import kernelcore as kc


@kc.kernel
def zero_vec3_kernel(a: kc.array(dtype=kc.vec3)):
    i = kc.tid()
    a[i] = kc.vec3(0.0, 0.0, 0.0)


def zero_forces(forces):
    """Set a vec3 force array (n,) [N] to zero (a launch, so it is recorded on a Tape)."""
    if forces.shape[0]:
        kc.launch(zero_vec3_kernel, dim=forces.shape[0], inputs=[forces], device=forces.device)


@kc.kernel
def add_vec3_kernel(src: kc.array(dtype=kc.vec3), dst: kc.array(dtype=kc.vec3)):
    i = kc.tid()
    dst[i] += src[i]


def eval_control_forces(model, control, forces):
    """Add the control's external particle forces (n,) [N] to ``forces``."""
    if control is None or getattr(control, "particle_f_ext", None) is None or model.particle_count == 0:
        return
    kc.launch(add_vec3_kernel, dim=model.particle_count, inputs=[control.particle_f_ext, forces], device=model.device)


@kc.kernel
def integrate_particles_kernel(q0: kc.array(dtype=kc.vec3), qd0: kc.array(dtype=kc.vec3),
                               f: kc.array(dtype=kc.vec3), inv_mass: kc.array(dtype=float),
                               gravity: kc.vec3, damping: float, dt: float,
                               q1: kc.array(dtype=kc.vec3), qd1: kc.array(dtype=kc.vec3)):
    i = kc.tid()
    w = inv_mass[i]
    v0 = qd0[i]
    a = kc.vec3(0.0, 0.0, 0.0)
    if w > 0.0:
        a = f[i] * w + gravity - v0 * damping
    v1 = v0 + a * dt
    qd1[i] = v1
    q1[i] = q0[i] + v1 * dt


def integrate_particles(model, state_in, forces, state_out, dt: float):
    """Semi-implicit Euler: ``v1 = v0 + dt (f w + g - c v0)``, ``x1 = x0 + dt v1``.

    Kinematic particles (inverse mass 0) keep their velocity.  ``forces``: vec3 (n,) [N].
    """
    if model.particle_count == 0:
        return
    kc.launch(integrate_particles_kernel, dim=model.particle_count,
              inputs=[state_in.particle_q, state_in.particle_qd, forces, model.particle_inv_mass,
                      model.gravity, model.particle_damping, float(dt)],
              outputs=[state_out.particle_q, state_out.particle_qd], device=model.device)
