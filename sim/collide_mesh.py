"""Particle contacts with static triangle meshes (geometry.Mesh) (kernel + launcher).

The closest point on each mesh within reach gives the contact normal and gap; the side
comes from the angle-weighted pseudo-normal, so open meshes (terrain, bowls) work too.
"""
from __future__ import annotations

import kernelcore as kc
import geometry  # noqa: F401  (adds the mesh_* builtins)

from .contact import material_inputs, mixed_contact_force


#: distance reported when no mesh face lies within the query radius [m]
FAR = kc.constant(1.0e30)


@kc.func
def mesh_surface_distance(mesh: kc.uint64, x: kc.vec3, max_dist: float) -> kc.vec4:
    """(nx, ny, nz, d): unit normal from the mesh's closest point towards ``x`` (outward when x is
    outside) and the signed distance [m] (< 0 inside), in the mesh's frame; d = FAR when no face
    lies within ``max_dist`` [m]."""
    out = kc.vec4(0.0, 1.0, 0.0, FAR)
    query = kc.mesh_query_point_sign_normal(mesh, x, max_dist)
    if query.result:
        cp = kc.mesh_eval_position(mesh, query.face, query.u, query.v)
        d = x - cp
        dist = kc.length(d)
        side = float(1.0)
        if query.sign < 0.0:
            side = -1.0
        n = kc.mesh_eval_face_normal(mesh, query.face)
        if dist > 1.0e-7:
            n = d * (side / dist)
        out = kc.vec4(n[0], n[1], n[2], side * dist)
    return out

@kc.kernel
def eval_particle_mesh_contacts_kernel(
        q: kc.array(dtype=kc.vec3), qd: kc.array(dtype=kc.vec3), radius: kc.array(dtype=float),
        inv_mass: kc.array(dtype=float), particle_material: kc.array(dtype=int), particle_world: kc.array(dtype=int),
        mesh_count: int, mesh_shapes: kc.array(dtype=int), shape_mesh: kc.array(dtype=kc.uint64), shape_material: kc.array(dtype=int),
        shape_world: kc.array(dtype=int),
        material_ke: kc.array(dtype=float), material_damping_ratio: kc.array(dtype=float),
        material_mu: kc.array(dtype=float), material_cohesion: kc.array(dtype=float),
        material_cohesion_distance: kc.array(dtype=float), reach: float, dt: float, f: kc.array(dtype=kc.vec3)):
    t = kc.tid()
    i = t // mesh_count
    s = mesh_shapes[t - i * mesh_count]
    w = inv_mass[i]
    wi = particle_world[i]
    ws = shape_world[s]
    # a mesh of another environment is not there for this particle (-1: shared by all)
    if w > 0.0 and (wi < 0 or ws < 0 or ws == wi):
        x = q[i]
        v = qd[i]
        r = radius[i]
        mesh = shape_mesh[s]
        # the smoothing window of sim/contact.py reaches |v| dt / 2 beyond the surface
        g = mesh_surface_distance(mesh, x, r + reach + kc.length(v) * dt)
        if g[3] < FAR:
            n = kc.vec3(g[0], g[1], g[2])
            fi = mixed_contact_force(n, g[3] - r, v, w, particle_material[i], shape_material[s], material_ke,
                                     material_damping_ratio, material_mu, material_cohesion,
                                     material_cohesion_distance, dt)
            f[i] += fi


def eval_particle_mesh_contacts(model, state, forces, dt):
    """Add contact forces [N] between particles and the model's mesh shapes to ``forces`` (vec3, (n,))."""
    k = len(model.mesh_shape_indices)
    if model.particle_count == 0 or k == 0:
        return
    kc.launch(eval_particle_mesh_contacts_kernel, dim=model.particle_count * k,
              inputs=[state.particle_q, state.particle_qd, model.particle_radius, model.particle_inv_mass,
                      model.particle_material, model.particle_world, k, model.mesh_shapes, model.shape_mesh,
                      model.shape_material, model.shape_world,
                      *material_inputs(model), model.material_max_cohesion_distance, float(dt)],
              outputs=[forces], device=model.device)
