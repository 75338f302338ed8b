"""Where a body's collision shape is in the world: the prologue the body-contact kernels share.

A shape on body b sits at ``shape_pos[s]`` (vec3, [m]) with rotation ``shape_rot[s]`` (mat33) in
the body's frame; ``body_q[b]`` (transform) places the body's frame in the world.  The body's
centre of mass ``body_com[b]`` (vec3, [m], body frame) is where its spatial velocity's linear
part is taken, so contact kernels need it in world too, to get a contact point's velocity.
"""
from __future__ import annotations

import kernelcore as kc


@kc.func
def shape_world_frame(body_q: kc.array(dtype=kc.transform), shape_body: kc.array(dtype=int),
                      shape_pos: kc.array(dtype=kc.vec3), shape_rot: kc.array(dtype=kc.mat33), s: int):
    """World position [m] (vec3) and rotation (mat33, shape frame -> world) of shape s on its body
    (``shape_body[s] >= 0``)."""
    tf = body_q[shape_body[s]]
    rot = kc.quat_to_matrix(kc.transform_get_rotation(tf)) * shape_rot[s]
    pos = kc.transform_point(tf, shape_pos[s])
    return pos, rot


@kc.func
def body_com_world(body_q: kc.array(dtype=kc.transform), body_com: kc.array(dtype=kc.vec3), b: int) -> kc.vec3:
    """World position [m] of body b's centre of mass."""
    return kc.transform_point(body_q[b], body_com[b])
