"""Draw a sim.Model / sim.State with any renderer of the render/ interface.

This is the one place where simulation data meets the renderers (render/ knows nothing
of sim/): static colliders are drawn once; particles (with velocities), springs and the
shapes of rigid bodies every frame (body shapes as time-sampled transforms in a USD file).
Objects are named by the prim path they came from ("World/grains", "World/crate/box"), so a
USD output mirrors the input's hierarchy and two prims called "grains" under different
parents stay two objects.
"""
from __future__ import annotations

import numpy as np

from sim.builder import quat_to_matrix
from sim.model import SHAPE_BOX, SHAPE_CAPSULE, SHAPE_MESH, SHAPE_PLANE, SHAPE_SPHERE

PARTICLE_COLOR = (0.85, 0.55, 0.2)
BODY_COLOR = (0.3, 0.55, 0.85)
COLLIDER_COLOR = (0.55, 0.58, 0.65)
SPRING_COLOR = (0.9, 0.9, 0.75)
# one colour per contact material index (material 0, the default, gets PARTICLE_COLOR)
MATERIAL_PALETTE = [(0.85, 0.55, 0.2), (0.25, 0.55, 0.85), (0.45, 0.75, 0.3), (0.8, 0.3, 0.35),
                    (0.65, 0.45, 0.8), (0.9, 0.8, 0.3), (0.35, 0.75, 0.75), (0.75, 0.6, 0.5)]


class ModelRenderer:
    """Renders one model's colliders, particles and springs into ``renderer`` (UsdRenderer, OpenGLViewer, ...).

    Args:
        renderer: object with begin_frame/render_points/render_mesh/render_sphere/
            render_box/render_plane/render_line_list/end_frame.
        model: the sim.Model.
        particle_groups: optional list of (name, index range) to draw particle sets as
            separate objects; default one object "particles".  A name may be a prim path.
        ground_size: width [m] of the drawn ground plane (the simulated one is infinite).
        shape_names: optional name per collider (default ``model.shape_name``).
        spring_groups: optional {group name: range of spring indices}; default: all
            springs as one object "springs" (drawn as segments, BasisCurves in USD).
        colors: optional {name: RGB}; particles default to a colour per contact material.
    """

    def __init__(self, renderer, model, particle_groups=None, ground_size: float = 10.0, shape_names=None,
                 spring_groups=None, colors=None, cloth_groups=None, cloth_uvs=None):
        self.renderer = renderer
        # particle groups that are cloth: {group name: (range, triangles (m, 3) local to the range)}
        self.cloth_groups = dict(cloth_groups or {})
        self.cloth_uvs = dict(cloth_uvs or {})   # {group name: texture coordinates (n, 2)}
        self.model = model
        n = model.particle_count
        self.ground_size = float(ground_size)
        self.colors = dict(colors or {})
        self._radius = model.particle_radius.numpy().copy() if n else np.zeros(0, np.float32)
        self._material = model.particle_material.numpy().copy() if n else np.zeros(0, np.int32)
        self._springs = model.spring_indices.numpy().reshape(-1, 2).copy() if model.spring_count else None
        self._names = _UniqueNames()
        groups = list(particle_groups) if particle_groups else ([("particles", range(n))] if n else [])
        shape_names = list(shape_names) if shape_names is not None else list(model.shape_name)
        # colliders first: a particle set (or another collider, e.g. the second shape of a body
        # that is itself a Cube) nested under a collider prim must not inherit its transform
        self.shape_names = []
        for s in shape_names[:model.shape_count]:
            self.shape_names.append(self._names.add(_prim_name(s), avoid_under=self.shape_names))
        self._shape_keys = list(shape_names[:model.shape_count])
        self.groups = []
        for name, rng in groups:
            self.groups.append((self._names.add(_prim_name(name), avoid_under=self.shape_names), rng, name))
        self.spring_groups = []
        if self._springs is not None:
            spring_groups = spring_groups if spring_groups is not None else {"springs": range(model.spring_count)}
            for name, rng in spring_groups.items():
                key = _prim_name(name) + "_springs" if name != "springs" else "springs"
                self.spring_groups.append((self._names.add(key, avoid_under=self.shape_names), rng))
        self._static_done = False
        body = model.shape_body.numpy() if model.shape_count else np.zeros(0, np.int32)
        self._body_shapes = [s for s in range(model.shape_count) if body[s] >= 0]

    def group_color(self, key, rng):
        if key in self.colors:
            return self.colors[key]
        mats = self._material[rng.start:rng.stop]
        if len(mats) and (mats == mats[0]).all():
            return MATERIAL_PALETTE[int(mats[0]) % len(MATERIAL_PALETTE)]
        return np.asarray([MATERIAL_PALETTE[int(m) % len(MATERIAL_PALETTE)] for m in mats], np.float32)

    def render_static(self):
        """Colliders and ground (call inside a frame; the USD writer keeps them for all frames)."""
        r, m = self.renderer, self.model
        types = m.shape_type.numpy() if m.shape_count else []
        pos = m.shape_pos.numpy() if m.shape_count else []
        scale = m.shape_scale.numpy() if m.shape_count else []
        body = m.shape_body.numpy() if m.shape_count else []
        for s, t in enumerate(types):
            if body[s] >= 0:
                continue  # drawn every frame (render_bodies)
            name = self.shape_names[s]
            color = self.colors.get(self._shape_keys[s], COLLIDER_COLOR)
            rot = tuple(float(x) for x in m.shape_quat[s])
            p = tuple(float(x) for x in pos[s])
            if t == SHAPE_SPHERE:
                r.render_sphere(name, p, rot, float(scale[s][0]), color=color)
            elif t == SHAPE_BOX:
                r.render_box(name, p, rot, tuple(float(x) for x in scale[s]), color=color)
            elif t == SHAPE_CAPSULE:
                r.render_capsule(name, p, rot, float(scale[s][0]), float(scale[s][1]), color=color)
            elif t == SHAPE_PLANE:
                w = float(scale[s][0]) or self.ground_size
                length = float(scale[s][1]) or self.ground_size
                r.render_plane(name, p, rot, w, length, color=color)
            elif t == SHAPE_MESH:
                pts, idx = m.shape_mesh_points[s]
                r.render_mesh(name, pts, idx, colors=color)
        if m.ground:
            n = np.asarray(m.ground_normal, np.float64)
            r.render_plane(self._names.add("ground"), tuple(n * m.ground_offset), _quat_from_y(n),
                           self.ground_size, self.ground_size, color=(0.35, 0.37, 0.4))
        self._static_done = True

    def render(self, state, time: float):
        """One frame at ``time`` [s] with the particles of ``state``."""
        r = self.renderer
        r.begin_frame(time)
        if not self._static_done:
            self.render_static()
        if self._body_shapes:
            self.render_bodies(state)
        if self.groups or self.spring_groups:
            q = state.particle_q.numpy()
        if self.groups:
            qd = state.particle_qd.numpy()
            for name, rng, key in self.groups:
                sl = slice(rng.start, rng.stop)
                if key in self.cloth_groups:   # cloth: a time-sampled mesh of constant topology
                    if hasattr(r, "render_cloth"):   # normals per frame (viewer: smooth shading; USD: UVs too)
                        r.render_cloth(name, q[sl], self.cloth_groups[key][1], uvs=self.cloth_uvs.get(key),
                                       colors=self.group_color(key, rng))
                    else:
                        r.render_mesh(name, q[sl], self.cloth_groups[key][1], colors=self.group_color(key, rng))
                    continue
                r.render_points(name, q[sl], self._radius[sl], colors=self.group_color(key, rng), velocities=qd[sl])
        for name, rng in self.spring_groups:
            r.render_line_list(name, q, self._springs[rng.start:rng.stop], color=SPRING_COLOR)
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
            name = self.shape_names[s]
            color = self.colors.get(self._shape_keys[s], BODY_COLOR)
            p, q = tuple(float(x) for x in p), tuple(float(x) for x in q)
            if types[s] == SHAPE_SPHERE:
                r.render_sphere(name, p, q, float(scale[s][0]), color=color)
            elif types[s] == SHAPE_BOX:
                r.render_box(name, p, q, tuple(float(x) for x in scale[s]), color=color)
            elif types[s] == SHAPE_CAPSULE:
                r.render_capsule(name, p, q, float(scale[s][0]), float(scale[s][1]), color=color)
            elif types[s] == SHAPE_MESH:  # vertices in the shape's frame (sim/builder/shapes.py): posed here
                pts, idx = m.shape_mesh_points[s]
                r.render_mesh(name, np.asarray(pts, np.float64) @ quat_to_matrix(q).T + p, idx, colors=color)

    def bounds(self, state):
        """(lower (3,), upper (3,)) [m] of particles and bounded colliders (planes excluded)."""
        m = self.model
        boxes = []
        if m.particle_count:
            q = state.particle_q.numpy()
            r = self._radius[:, None]
            boxes += [(q - r).min(0), (q + r).max(0)]
        types = m.shape_type.numpy() if m.shape_count else []
        pos = m.shape_pos.numpy() if m.shape_count else []
        scale = m.shape_scale.numpy() if m.shape_count else []
        body = m.shape_body.numpy() if m.shape_count else []
        body_q = state.body_q.numpy() if m.body_count else None
        for s, t in enumerate(types):
            if t in (SHAPE_SPHERE, SHAPE_BOX, SHAPE_CAPSULE):
                reach = {SHAPE_BOX: float(np.linalg.norm(scale[s])), SHAPE_SPHERE: float(scale[s][0]),
                         SHAPE_CAPSULE: float(scale[s][0] + scale[s][1])}[t]
                centre = pos[s].astype(np.float64)
                if body[s] >= 0:  # shape_pos is in the body frame
                    bq = body_q[body[s]].astype(np.float64)
                    centre = bq[:3] + quat_to_matrix(bq[3:]) @ centre
                boxes += [centre - reach, centre + reach]
            elif t == SHAPE_MESH:
                pts = np.asarray(m.shape_mesh_points[s][0], np.float64)
                if body[s] >= 0:  # in the shape's frame: its ball about the body's pose
                    bq = body_q[body[s]].astype(np.float64)
                    centre = bq[:3] + quat_to_matrix(bq[3:]) @ pos[s]
                    reach = float(np.linalg.norm(pts, axis=1).max())
                    pts = np.array([centre - reach, centre + reach])
                boxes += [pts.min(0), pts.max(0)]
        if not boxes:
            return np.full(3, -1.0), np.full(3, 1.0)
        boxes = np.asarray(boxes, np.float64)
        return boxes.min(0), boxes.max(0)


class _UniqueNames:
    """Hands out renderer names, never the same one twice (a suffix _1, _2 ... when taken)."""

    def __init__(self):
        self.taken = set()

    def add(self, name, avoid_under=()):
        # an object below a collider's prim would inherit the collider's transform: move it beside
        for parent in avoid_under:
            if name.startswith(parent + "/"):
                name = parent + "_" + name[len(parent) + 1:].replace("/", "_")
        out, i = name, 1
        while out in self.taken:
            out = f"{name}_{i}"
            i += 1
        self.taken.add(out)
        return out


def _prim_name(path) -> str:
    """A prim path ("/World/grains") as a renderer name ("World/grains"), each part made prim-safe."""
    parts = [_safe_name(p) for p in str(path).split("/") if p]
    return "/".join(parts) or "object"


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
