"""Internal kernels of the geometry classes (one module: they compile together, once).

Builds run natively on one host thread through one-thread launches; per-element work
(SDF voxels, marching-cubes cells) runs over the launch grid.
"""
import kernelcore as kc

from . import builtins as _builtins  # noqa: F401  (registers the builtins these kernels call)


@kc.kernel(enable_backward=False)
def hash_grid_build(grid: kc.uint64):
    kc._geo_hash_grid_build(grid)


@kc.kernel(enable_backward=False)
def bvh_build(bvh: kc.uint64):
    kc._geo_bvh_build(bvh)


@kc.kernel(enable_backward=False)
def bvh_refit(bvh: kc.uint64):
    kc._geo_bvh_refit(bvh)


@kc.kernel(enable_backward=False)
def mesh_build(mesh: kc.uint64):
    kc._geo_mesh_build(mesh)


@kc.kernel(enable_backward=False)
def mesh_refit(mesh: kc.uint64):
    kc._geo_mesh_refit(mesh)


@kc.kernel(enable_backward=False)
def volume_build_table(volume: kc.uint64):
    kc._geo_volume_build_table(volume)


@kc.kernel(enable_backward=False)
def volume_fill_sdf(volume: kc.uint64, mesh: kc.uint64, band: float, sign_mode: int):
    i = kc.tid()
    kc._geo_volume_fill_sdf(volume, mesh, i, band, sign_mode)


@kc.kernel(enable_backward=False)
def signed_distance(mesh: kc.uint64, points: kc.array(dtype=kc.vec3), max_dist: float, sign_mode: int,
                    out: kc.array(dtype=float)):
    # distance to the mesh (sign by sign_mode: 1 rays, 2 pseudo-normal, 3 winding number), max_dist beyond
    i = kc.tid()
    p = points[i]
    d = max_dist
    if sign_mode == 2:
        q = kc.mesh_query_point_sign_normal(mesh, p, max_dist)
    elif sign_mode == 3:
        q = kc.mesh_query_point_sign_winding_number(mesh, p, max_dist)
    else:
        q = kc.mesh_query_point(mesh, p, max_dist)
    if q.result:
        d = kc.length(p - kc.mesh_eval_position(mesh, q.face, q.u, q.v)) * q.sign
    out[i] = d


@kc.kernel(enable_backward=False)
def mc_count(field: kc.array3d(dtype=float), iso: float, counts: kc.array3d(dtype=kc.int32)):
    i, j, k = kc.tid()
    counts[i, j, k] = kc._geo_mc_cell_count(field, i, j, k, iso)


@kc.kernel(enable_backward=False)
def mc_emit(field: kc.array3d(dtype=float), edge_ids: kc.array(dtype=kc.int32), iso: float,
            tri_offsets: kc.array3d(dtype=kc.int32), tris: kc.array(dtype=kc.int32),
            vert_offsets: kc.array3d(dtype=kc.int32), points: kc.array(dtype=kc.vec3)):
    i, j, k = kc.tid()
    kc._geo_mc_cell_emit(field, edge_ids, i, j, k, iso, tris, tri_offsets[i, j, k], points, vert_offsets[i, j, k])
