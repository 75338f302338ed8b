"""Cloth particles attached to rigid bodies (kernel + launcher), used by SolverSemiImplicit.

An attachment ties particle p to a point fixed in body b's frame (``anchor``, the particle's
position in that frame when the attachment was added) with a stiff damped zero-length
spring:  f_p = ke (x_anchor - x_p) + kd (v_anchor - v_p)  [N], and the body receives -f_p
(as a wrench about its centre of mass, along the line through the particle, so the pair
exchanges linear and angular momentum without creating any).  The particle therefore
follows the body frame (within f / ke) and the cloth's pull moves the body.  Everything is
an ordinary force of the step: differentiable like the other forces.
"""
from __future__ import annotations

import kernelcore as kc


@kc.kernel
def eval_cloth_attachments_kernel(q: kc.array(dtype=kc.vec3), qd: kc.array(dtype=kc.vec3),
                                  particle: kc.array(dtype=int), body: kc.array(dtype=int),
                                  anchor: kc.array(dtype=kc.vec3), props: kc.array(dtype=float, ndim=2),
                                  body_q: kc.array(dtype=kc.transform), body_qd: kc.array(dtype=kc.spatial_vector),
                                  body_com: kc.array(dtype=kc.vec3),
                                  f: kc.array(dtype=kc.vec3), body_f: kc.array(dtype=kc.spatial_vector)):
    a = kc.tid()
    p = particle[a]
    b = body[a]
    tf = body_q[b]
    xa = kc.transform_point(tf, anchor[a])
    com = kc.transform_point(tf, body_com[b])
    va = kc.spatial_top(body_qd[b]) + kc.cross(kc.spatial_bottom(body_qd[b]), xa - com)
    fs = (xa - q[p]) * props[a, 0] + (va - qd[p]) * props[a, 1]
    kc.atomic_add(f, p, fs)
    kc.atomic_add(body_f, b, kc.spatial_vector(-fs, kc.cross(q[p] - com, -fs)))


def eval_cloth_attachments(model, state, forces, wrenches):
    """Add attachment forces [N] to ``forces`` (particles) and their reactions to ``wrenches`` (bodies)."""
    if getattr(model, "attachment_count", 0) == 0:
        return
    kc.launch(eval_cloth_attachments_kernel, dim=model.attachment_count,
              inputs=[state.particle_q, state.particle_qd, model.attachment_particle, model.attachment_body,
                      model.attachment_anchor, model.attachment_properties, state.body_q, state.body_qd,
                      model.body_com],
              outputs=[forces, wrenches], device=model.device)
