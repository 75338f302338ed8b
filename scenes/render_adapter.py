"""Draw a sim.Model / sim.State with any renderer of the render/ interface.

This is the one place where simulation data meets the renderers (render/ knows nothing
of sim/): static colliders are drawn once, particles and the shapes of rigid bodies every frame
(as time-sampled transforms in a USD file).
"""
from __future__ import annotations

import numpy as np

from sim.builder import quat_to_matrix
from sim.model import SHAPE_BOX, SHAPE_CAPSULE, SHAPE_MESH, SHAPE_PLANE, SHAPE_SPHERE

PARTICLE_COLOR = (0.85, 0.55, 0.2)
BODY_COLOR = (0.3, 0.55, 0.85)
COLLIDER_COLOR = (0.55, 0.58, 0.65)


class ModelRenderer:
    """Renders one model's colliders and particles into ``renderer`` (UsdRenderer, OpenGLViewer, ...).

    Args:
        renderer: object with begin_frame/render_points/render_mesh/render_sphere/
            render_box/render_plane/end_frame.
        model: the sim.Model.
        particle_groups: optional list of (name, index range) to draw particle sets as
            separate objects; default one object "particles".
        ground_size: width [m] of the drawn ground plane (the simulated one is infinite).
    """

    def __init__(self, renderer, model, particle_groups=None, ground_size: float = 10.0):
        self.renderer = renderer
        self.model = model
        n = model.particle_count
        self.groups = list(particle_groups) if particle_groups else ([("particles", range(n))] if n else [])
        self.ground_size = float(ground_size)
        self._radius = model.particle_radius.numpy().copy() if n else np.zeros(0, np.float32)
        self._static_done = False
        body = model.shape_body.numpy() if model.shape_count else np.zeros(0, np.int32)
        self._body_shapes = [s for s in range(model.shape_count) if body[s] >= 0]

    def render_static(self):
        """Colliders and ground (call inside a frame; the USD writer keeps them for all frames)."""
        r, m = self.renderer, self.model
        types = m.shape_type.numpy() if m.shape_count else []
        pos = m.shape_pos.numpy() if m.shape_count else []
        scale = m.shape_scale.numpy() if m.shape_count else []
        body = m.shape_body.numpy() if m.shape_count else []
        for s, t in enumerate(types):
            if body[s] >= 0:
                continue  # drawn every frame
            name = _safe_name(m.shape_name[s])
            rot = tuple(float(x) for x in m.shape_quat[s])
            p = tuple(float(x) for x in pos[s])
            if t == SHAPE_SPHERE:
                r.render_sphere(name, p, rot, float(scale[s][0]), color=COLLIDER_COLOR)
            elif t == SHAPE_BOX:
                r.render_box(name, p, rot, tuple(float(x) for x in scale[s]), color=COLLIDER_COLOR)
            elif t == SHAPE_CAPSULE:
                r.render_capsule(name, p, rot, float(scale[s][0]), float(scale[s][1]), color=COLLIDER_COLOR)
            elif t == SHAPE_PLANE:
                w = float(scale[s][0]) or self.ground_size
                length = float(scale[s][1]) or self.ground_size
                r.render_plane(name, p, rot, w, length, color=COLLIDER_COLOR)
            elif t == SHAPE_MESH:
                pts, idx = m.shape_mesh_points[s]
                r.render_mesh(name, pts, idx, colors=COLLIDER_COLOR)
        if m.ground:
            n = np.asarray(m.ground_normal, np.float64)
            r.render_plane("ground", tuple(n * m.ground_offset), _quat_from_y(n), self.ground_size, self.ground_size,
                           color=(0.35, 0.37, 0.4))
        self._static_done = True

    def render(self, state, time: float):
        """One frame at ``time`` [s] with the particles of ``state``."""
        r = self.renderer
        r.begin_frame(time)
        if not self._static_done:
            self.render_static()
        if self._body_shapes:
            self.render_bodies(state)
        if self.groups:
            q = state.particle_q.numpy()
            for name, rng in self.groups:
                sl = slice(rng.start, rng.stop)
                r.render_points(_safe_name(name), q[sl], self._radius[sl], colors=PARTICLE_COLOR)
        r.end_frame()


    def render_bodies(self, state):
        """The shapes of the rigid bodies at ``state.body_q`` (world pose = body frame x shape frame)."""
        r, m = self.renderer, self.model
        body_q = state.body_q.numpy()
        types, body = m.shape_type.numpy(), m.shape_body.numpy()
        pos, scale = m.shape_pos.numpy(), m.shape_scale.numpy()
        for s in self._body_shapes:
            bq = body_q[body[s]].astype(np.float64)
            p = bq[:3] + quat_to_matrix(bq[3:]) @ pos[s]
            q = _quat_mul(bq[3:], m.shape_quat[s])
            name = _safe_name(m.shape_name[s])
            p, q = tuple(float(x) for x in p), tuple(float(x) for x in q)
            if types[s] == SHAPE_SPHERE:
                r.render_sphere(name, p, q, float(scale[s][0]), color=BODY_COLOR)
            elif types[s] == SHAPE_BOX:
                r.render_box(name, p, q, tuple(float(x) for x in scale[s]), color=BODY_COLOR)
            elif types[s] == SHAPE_CAPSULE:
                r.render_capsule(name, p, q, float(scale[s][0]), float(scale[s][1]), color=BODY_COLOR)


def _quat_mul(a, b):
    """Hamilton product a b of quaternions (x, y, z, w)."""
    ax, ay, az, aw = (float(x) for x in a)
    bx, by, bz, bw = (float(x) for x in b)
    return np.array([aw * bx + ax * bw + ay * bz - az * by, aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw, aw * bw - ax * bx - ay * by - az * bz])


def _quat_from_y(n):
    """Quaternion (x, y, z, w) rotating +Y onto the unit vector n."""
    y = np.array([0.0, 1.0, 0.0])
    n = np.asarray(n, np.float64) / np.linalg.norm(n)
    c = float(np.dot(y, n))
    if c < -0.999999:
        return (1.0, 0.0, 0.0, 0.0)
    axis = np.cross(y, n)
    q = np.array([axis[0], axis[1], axis[2], 1.0 + c])
    q /= np.linalg.norm(q)
    return tuple(float(x) for x in q)


def _safe_name(name: str) -> str:
    """A prim-name-safe version of ``name`` (letters, digits, underscores; not starting with a digit)."""
    out = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in str(name)) or "object"
    return out if not out[0].isdigit() else "_" + out
