"""Damped linear springs between particle pairs (kernel + launcher)."""
from __future__ import annotations

import kernelcore as kc


@kc.kernel
def eval_springs_kernel(q: kc.array(dtype=kc.vec3), qd: kc.array(dtype=kc.vec3), indices: kc.array(dtype=int),
                        rest_length: kc.array(dtype=float), stiffness: kc.array(dtype=float),
                        damping: kc.array(dtype=float), f: kc.array(dtype=kc.vec3)):
    s = kc.tid()
    i = indices[2 * s]
    j = indices[2 * s + 1]
    d = q[i] - q[j]
    length = kc.length(d)
    if length > 1.0e-9:
        direction = d / length
        stretch = length - rest_length[s]
        speed = kc.dot(qd[i] - qd[j], direction)
        fs = direction * (stiffness[s] * stretch + damping[s] * speed)
        f[i] += -fs
        f[j] += fs


def eval_springs(model, state, forces):
    """Add spring forces [N] of ``state`` to ``forces`` (vec3, (particle_count,))."""
    if model.spring_count == 0:
        return
    kc.launch(eval_springs_kernel, dim=model.spring_count,
              inputs=[state.particle_q, state.particle_qd, model.spring_indices, model.spring_rest_length,
                      model.spring_stiffness, model.spring_damping],
              outputs=[forces], device=model.device)
