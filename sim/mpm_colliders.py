"""MPM grid-node collisions with the model's shapes: static colliders and rigid bodies (kc.funcs).

Called by the grid update of sim/mpm_transfer.py for every node that carries mass.

* Static shapes (``shape_body = -1``): sphere, box, capsule, plane and triangle mesh
  (``geometry.Mesh``; the closest point and its side from the angle-weighted
  pseudo-normal, so open meshes such as terrain work).  A node inside (signed distance
  phi < 0) keeps only what the solver's boundary rule allows (sim/mpm_transfer.collide_plane).
* Shapes carried by a rigid body: the same rule applied to the node's velocity *relative
  to the body's surface*, ``v - (v_com + w x (x - com))``, at the body's pose of the step's
  start, moved only the share M / (M + m_contact) of the way (m_contact: the mass of the nodes
  touching the body, a first pass; see add_body_contact_mass).  The momentum the node loses,
  ``m (v_before - v_after)`` [kg m/s],
  is the impulse the material gives the body; divided by dt it is added to the body's wrench
  (force at the centre of mass, torque about it, world) with ``atomic_add``, so that material
  and body exchange momentum exactly (two-way coupling).

Meshes are searched within ``reach`` [m] of a node: a node deeper than that inside a
closed mesh is not seen (the solver takes reach = 4 dx, far more than material penetrates
in one step).
"""
from __future__ import annotations

import kernelcore as kc
import geometry  # noqa: F401  (adds the mesh_* builtins)

from .collide_shapes import box_closest

SPHERE = kc.constant(0)
BOX = kc.constant(1)
PLANE = kc.constant(2)
MESH = kc.constant(3)
CAPSULE = kc.constant(4)

#: signed distance returned for "no collider here" [m]
FAR = kc.constant(1.0e30)


@kc.func
def shape_signed_distance(x: kc.vec3, kind: int, pos: kc.vec3, rot: kc.mat33, scale: kc.vec3, mesh: kc.uint64,
                          reach: float):
    """Outward unit normal and signed distance [m] of point ``x`` (world) to a shape posed at pos/rot.

    Returns vec4 (nx, ny, nz, phi); phi < 0 inside.  ``mesh``: the shape's geometry.Mesh id,
    its vertices in the frame given by pos/rot (identity for static meshes).
    """
    xl = kc.transpose(rot) * (x - pos)
    nl = kc.vec3(0.0, 1.0, 0.0)
    phi = FAR
    if kind == SPHERE:
        r = kc.length(xl)
        phi = r - scale[0]
        if r > 0.0:
            nl = xl / r
    if kind == BOX:
        b = box_closest(xl, scale)
        nl = kc.vec3(b[0], b[1], b[2])
        phi = b[3]
    if kind == CAPSULE:
        d = xl - kc.vec3(0.0, kc.clamp(xl[1], -scale[1], scale[1]), 0.0)
        r = kc.length(d)
        phi = r - scale[0]
        if r > 0.0:
            nl = d / r
    if kind == PLANE:
        phi = xl[1]
    if kind == MESH:
        query = kc.mesh_query_point_sign_normal(mesh, xl, reach)
        if query.result:
            d = xl - kc.mesh_eval_position(mesh, query.face, query.u, query.v)
            dist = kc.length(d)
            side = float(1.0)
            if query.sign < 0.0:
                side = -1.0
            nl = kc.mesh_eval_face_normal(mesh, query.face)
            if dist > 1.0e-7:
                nl = d * (side / dist)
            phi = side * dist
    n = rot * nl
    return kc.vec4(n[0], n[1], n[2], phi)


@kc.func
def collide_node_velocity(v: kc.vec3, n: kc.vec3, phi: float, boundary: int, friction: float):
    """Grid velocity [m/s] of a node at signed distance ``phi`` from a collider with unit normal n.

    Inside (phi < 0): sticky stops the node; slip removes the normal velocity; separate
    removes it only when it points into the collider.  While the node presses on it
    (normal velocity v_n < 0), Coulomb friction slows the tangential velocity by
    ``friction * |v_n|`` (stopping it when that is enough).
    """
    out = v
    if phi < 0.0:
        vn = kc.dot(v, n)
        if boundary == 0:
            out = kc.vec3(0.0, 0.0, 0.0)
        else:
            if boundary == 1 or vn < 0.0:
                vt = v - n * vn
                out = vt
                if vn < 0.0:
                    lt = kc.length(vt)
                    if lt <= -friction * vn:
                        out = kc.vec3(0.0, 0.0, 0.0)
                    else:
                        out = vt * (1.0 + friction * vn / lt)
    return out


@kc.func
def collide_node_shapes(v: kc.vec3, m: float, xi: kc.vec3, boundary: int, friction: float, dt: float, reach: float,
                        shape_count: int, shape_type: kc.array(dtype=kc.int32), shape_body: kc.array(dtype=kc.int32),
                        shape_pos: kc.array(dtype=kc.vec3), shape_rot: kc.array(dtype=kc.mat33),
                        shape_scale: kc.array(dtype=kc.vec3), shape_mesh: kc.array(dtype=kc.uint64),
                        body_q: kc.array(dtype=kc.transform), body_qd: kc.array(dtype=kc.spatial_vector),
                        body_com: kc.array(dtype=kc.vec3), body_mass: kc.array(dtype=float),
                        contact_mass: kc.array(dtype=float), body_f: kc.array(dtype=kc.spatial_vector)):
    """Velocity [m/s] of a node (mass ``m`` [kg], at ``xi`` [m]) after every static shape and body shape.

    Body shapes add the node's momentum loss / dt to ``body_f`` of their body [N, N m].
    """
    out = v
    for s in range(shape_count):
        b = shape_body[s]
        pos = shape_pos[s]
        rot = shape_rot[s]
        vb = kc.vec3(0.0, 0.0, 0.0)
        arm = kc.vec3(0.0, 0.0, 0.0)
        if shape_type[s] == MESH and b < 0:   # static mesh vertices are stored in world
            pos = kc.vec3(0.0, 0.0, 0.0)
            rot = kc.identity(n=3, dtype=float)
        if b >= 0:
            tf = body_q[b]
            rot = kc.quat_to_matrix(kc.transform_get_rotation(tf)) * rot
            pos = kc.transform_point(tf, pos)
            arm = xi - kc.transform_point(tf, body_com[b])
            qd = body_qd[b]
            vb = kc.spatial_top(qd) + kc.cross(kc.spatial_bottom(qd), arm)
        g = shape_signed_distance(xi, shape_type[s], pos, rot, shape_scale[s], shape_mesh[s], reach)
        if g[3] < 0.0:
            n = kc.vec3(g[0], g[1], g[2])
            new_v = collide_node_velocity(out - vb, n, g[3], boundary, friction) + vb
            if b >= 0:
                # inelastic share: the node moves M / (M + m_contact) of the way to the surface
                # velocity, the body takes the opposite momentum (see body_contact_mass_*)
                M = body_mass[b]
                new_v = out + (new_v - out) * (M / (M + contact_mass[b]))
                impulse = (out - new_v) * m
                kc.atomic_add(body_f, b, kc.spatial_vector(impulse / dt, kc.cross(arm, impulse) / dt))
            out = new_v
    return out


@kc.func
def add_body_contact_mass(v: kc.vec3, m: float, xi: kc.vec3, boundary: int, reach: float, shape_count: int,
                          shape_type: kc.array(dtype=kc.int32), shape_body: kc.array(dtype=kc.int32),
                          shape_pos: kc.array(dtype=kc.vec3), shape_rot: kc.array(dtype=kc.mat33),
                          shape_scale: kc.array(dtype=kc.vec3), shape_mesh: kc.array(dtype=kc.uint64),
                          body_q: kc.array(dtype=kc.transform), body_qd: kc.array(dtype=kc.spatial_vector),
                          body_com: kc.array(dtype=kc.vec3), contact_mass: kc.array(dtype=float)):
    """Add the node's mass ``m`` [kg] to ``contact_mass`` of every body whose shape it is inside and
    (separate rule) approaching.

    Why: projecting every such node fully onto a light body's surface velocity and giving the
    body the reaction (explicit coupling) overshoots when the contact nodes outweigh the body
    (the body bounces back faster than it came, and that grows).  Moving the nodes only
    M / (M + m_contact) of the way gives, for nodes that share a velocity u, exactly the
    perfectly inelastic result (M V + m_contact u) / (M + m_contact) for both sides, and
    tends to the static-collider rule for a heavy body.
    """
    for s in range(shape_count):
        b = shape_body[s]
        if b >= 0:
            tf = body_q[b]
            rot = kc.quat_to_matrix(kc.transform_get_rotation(tf)) * shape_rot[s]
            pos = kc.transform_point(tf, shape_pos[s])
            arm = xi - kc.transform_point(tf, body_com[b])
            qd = body_qd[b]
            vb = kc.spatial_top(qd) + kc.cross(kc.spatial_bottom(qd), arm)
            g = shape_signed_distance(xi, shape_type[s], pos, rot, shape_scale[s], shape_mesh[s], reach)
            if g[3] < 0.0:
                if boundary != 2 or kc.dot(v - vb, kc.vec3(g[0], g[1], g[2])) < 0.0:
                    kc.atomic_add(contact_mass, b, m)


@kc.kernel
def body_contact_mass_2d_kernel(grid_mv: kc.array(dtype=kc.vec2, ndim=2), grid_m: kc.array(dtype=float, ndim=2),
                                min_mass: float, gravity: kc.vec3, dt: float, boundary: int, grid_lower: kc.vec3,
                                dx: float, reach: float, shape_count: int, shape_type: kc.array(dtype=kc.int32),
                                shape_body: kc.array(dtype=kc.int32), shape_pos: kc.array(dtype=kc.vec3),
                                shape_rot: kc.array(dtype=kc.mat33), shape_scale: kc.array(dtype=kc.vec3),
                                shape_mesh: kc.array(dtype=kc.uint64), body_q: kc.array(dtype=kc.transform),
                                body_qd: kc.array(dtype=kc.spatial_vector), body_com: kc.array(dtype=kc.vec3),
                                contact_mass: kc.array(dtype=float)):
    i, j = kc.tid()
    m = grid_m[i, j]
    if m > min_mass:
        mv = grid_mv[i, j]
        v = kc.vec3(mv[0] / m + gravity[0] * dt, mv[1] / m + gravity[1] * dt, 0.0)
        xi = grid_lower + kc.vec3(float(i), float(j), 0.0) * dx
        add_body_contact_mass(v, m, xi, boundary, reach, shape_count, shape_type, shape_body, shape_pos, shape_rot,
                              shape_scale, shape_mesh, body_q, body_qd, body_com, contact_mass)


@kc.kernel
def body_contact_mass_3d_kernel(grid_mv: kc.array(dtype=kc.vec3, ndim=3), grid_m: kc.array(dtype=float, ndim=3),
                                min_mass: float, gravity: kc.vec3, dt: float, boundary: int, grid_lower: kc.vec3,
                                dx: float, reach: float, shape_count: int, shape_type: kc.array(dtype=kc.int32),
                                shape_body: kc.array(dtype=kc.int32), shape_pos: kc.array(dtype=kc.vec3),
                                shape_rot: kc.array(dtype=kc.mat33), shape_scale: kc.array(dtype=kc.vec3),
                                shape_mesh: kc.array(dtype=kc.uint64), body_q: kc.array(dtype=kc.transform),
                                body_qd: kc.array(dtype=kc.spatial_vector), body_com: kc.array(dtype=kc.vec3),
                                contact_mass: kc.array(dtype=float)):
    i, j, k = kc.tid()
    m = grid_m[i, j, k]
    if m > min_mass:
        v = grid_mv[i, j, k] / m + gravity * dt
        xi = grid_lower + kc.vec3(float(i), float(j), float(k)) * dx
        add_body_contact_mass(v, m, xi, boundary, reach, shape_count, shape_type, shape_body, shape_pos, shape_rot,
                              shape_scale, shape_mesh, body_q, body_qd, body_com, contact_mass)


@kc.kernel
def zero_floats_kernel(a: kc.array(dtype=float)):
    a[kc.tid()] = 0.0


def body_contact_mass(model, grid, min_mass, gravity, boundary, dt, reach, body_q, body_qd, contact_mass):
    """Mass [kg] (B,) of the grid nodes inside and approaching each body's shapes, into ``contact_mass``."""
    kc.launch(zero_floats_kernel, dim=model.body_count, inputs=[contact_mass], device=model.device)
    kernel = body_contact_mass_2d_kernel if len(grid.shape) == 2 else body_contact_mass_3d_kernel
    kc.launch(kernel, dim=grid.shape,
              inputs=[grid.mv, grid.m, float(min_mass), gravity, float(dt), boundary, grid.lower, grid.dx,
                      float(reach), model.shape_count, model.shape_type, model.shape_body, model.shape_pos,
                      model.shape_rot, model.shape_scale, model.shape_mesh, body_q, body_qd, model.body_com],
              outputs=[contact_mass], device=model.device)
