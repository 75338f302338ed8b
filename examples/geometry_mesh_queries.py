"""Meshes and volumes: marching cubes of an SDF, closest points, rays and a sparse SDF volume.

A torus signed distance field on a dense grid is turned into a closed triangle mesh
(geometry.marching_cubes); particles are projected onto it with the seeds' ``project``
kernel (``mesh_query_point``); rays are cast at it (``mesh_query_ray``); and a sparse
volume holding the mesh's SDF is sampled with trilinear interpolation.

Run: python examples/geometry_mesh_queries.py --res 64 --particles 10000
"""
from __future__ import annotations

import argparse

import numpy as np

import kernelcore as kc
import geometry


@kc.kernel
def project(positions: kc.array(dtype=kc.vec3), mesh: kc.uint64, output_pos: kc.array(dtype=kc.vec3),
            output_face: kc.array(dtype=int)):
    tid = kc.tid()
    x = positions[tid]
    face_index = int(0)
    face_u = float(0.0)
    face_v = float(0.0)
    sign = float(0.0)
    max_dist = 2.0
    if kc.mesh_query_point(mesh, x, max_dist, sign, face_index, face_u, face_v):
        output_pos[tid] = kc.mesh_eval_position(mesh, face_index, face_u, face_v)
        output_face[tid] = face_index


@kc.kernel
def cast(mesh: kc.uint64, origin: kc.vec3, dirs: kc.array(dtype=kc.vec3), t_hit: kc.array(dtype=float)):
    i = kc.tid()
    q = kc.mesh_query_ray(mesh, origin, dirs[i], 100.0)
    t_hit[i] = -1.0
    if q.result:
        t_hit[i] = q.t


@kc.kernel
def sample_sdf(volume: kc.uint64, points: kc.array(dtype=kc.vec3), out: kc.array(dtype=float)):
    i = kc.tid()
    out[i] = kc.volume_sample_f(volume, kc.volume_world_to_index(volume, points[i]), kc.Volume.LINEAR)


def torus_sdf(p, R=0.6, r=0.25):
    q = np.sqrt(p[..., 0] ** 2 + p[..., 1] ** 2) - R
    return np.sqrt(q ** 2 + p[..., 2] ** 2) - r


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--res", type=int, default=64, help="grid samples per axis")
    parser.add_argument("--particles", type=int, default=10000)
    args = parser.parse_args(argv)
    h = 2.4 / (args.res - 1)
    x = np.linspace(-1.2, 1.2, args.res)
    field = torus_sdf(np.stack(np.meshgrid(x, x, x, indexing="ij"), -1))
    mesh = geometry.marching_cubes(field, spacing=h, iso=0.0, origin=(-1.2, -1.2, -1.2), return_mesh=True)
    print(f"marching cubes: {mesh.num_points} vertices, {mesh.num_faces} triangles")

    rng = np.random.default_rng(0)
    pts = kc.array(rng.uniform(-1.0, 1.0, size=(args.particles, 3)), dtype=kc.vec3)
    out_pos, out_face = kc.zeros(args.particles, dtype=kc.vec3), kc.zeros(args.particles, dtype=int)
    kc.launch(project, dim=args.particles, inputs=[pts, mesh.id, out_pos, out_face])
    surf = np.abs(torus_sdf(out_pos.numpy().astype(np.float64)))
    print(f"projected {args.particles} points: max |sdf| at the projections {surf.max():.4f} (grid spacing {h:.4f})")

    dirs = rng.normal(size=(1000, 3)).astype(np.float32)
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    t_hit = kc.zeros(1000, dtype=float)
    kc.launch(cast, dim=1000, inputs=[mesh.id, kc.vec3(0.6, 0.0, 0.0), dirs, t_hit])   # from inside the tube
    print(f"rays from inside the tube: {np.mean(t_hit.numpy() > 0) * 100:.1f}% hit, mean t {t_hit.numpy().mean():.3f}")

    vol = geometry.Volume.from_mesh_sdf(mesh, voxel_size=2 * h, band_width=6 * h)
    samples = kc.zeros(args.particles, dtype=float)
    kc.launch(sample_sdf, dim=args.particles, inputs=[vol.id, pts, samples])
    ref = np.clip(torus_sdf(pts.numpy().astype(np.float64)), -6 * h, 6 * h)
    err = np.abs(samples.numpy() - ref)
    print(f"sparse SDF volume: {vol.num_bricks} bricks of 8^3; median |error| vs analytic SDF {np.median(err):.4f}")
    return mesh, vol


if __name__ == "__main__":
    main()
