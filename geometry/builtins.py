"""The geometry builtin table: kernel-visible functions backed by geometry/native/*.h.

One row per overload; each native forward has its ``adj_`` twin beside it in the header.
Importing this module fills kernelcore's builtin table and adds the native headers.
"""
from __future__ import annotations

from kernelcore.builtins import register
from kernelcore.types import opaque

from . import _native
from .query_types import MeshQueryPoint, MeshQueryRay

_native.register_headers()

opaque("hash_grid_query_t", "geo::hash_grid_query_t")
opaque("bvh_query_t", "geo::bvh_query_t")
opaque("mesh_query_aabb_t", "geo::bvh_query_t")

V3 = "vec(3,float32)"
ID = "uint64"
F = "float32"
I = "int32"


def _row(name, args, result, native=None, **kw):
    register(name, args, result, native=native or f"geo::{name}", **kw)


# ---- hash grid ------------------------------------------------------------------------------
_row("hash_grid_query", [ID, V3, F], "hash_grid_query_t", differentiable=False,
     doc="hash_grid_query(id, point, max_dist): iterator over candidate neighbours: every point within max_dist "
         "of point, once, plus some others from the cells the ball meets (test the distance yourself)")
_row("hash_grid_query_next", ["hash_grid_query_t", I], "bool", differentiable=False, mutates=(0, 1),
     doc="hash_grid_query_next(query, index): writes the next candidate's original point index; False when done")
_row("hash_grid_point_id", [ID, I], I, differentiable=False,
     doc="hash_grid_point_id(id, index): original index of the point at position index of the cell-sorted order "
         "(-1 out of range)")

# ---- BVH ------------------------------------------------------------------------------------
_row("bvh_query_aabb", [ID, V3, V3], "bvh_query_t", differentiable=False,
     doc="bvh_query_aabb(id, lower, upper): iterator over the items whose bounds overlap the box")
_row("bvh_query_aabb", [ID, V3, V3, I], "bvh_query_t", differentiable=False, doc="... from node root (-1: whole tree)")
_row("bvh_query_ray", [ID, V3, V3], "bvh_query_t", differentiable=False,
     doc="bvh_query_ray(id, start, dir): iterator over the items whose bounds the ray crosses")
_row("bvh_query_ray", [ID, V3, V3, I], "bvh_query_t", differentiable=False, doc="... from node root (-1: whole tree)")
_row("bvh_query_next", ["bvh_query_t", I], "bool", differentiable=False, mutates=(0, 1),
     doc="bvh_query_next(query, index): writes the next item index; False when done")
_row("bvh_query_next", ["bvh_query_t", I, F], "bool", differentiable=False, mutates=(0, 1),
     doc="bvh_query_next(query, index, max_dist): ray queries only report items entered before max_dist * |dir|")

# ---- mesh: closest point ----------------------------------------------------------------------
_MQP = lambda args, b: MeshQueryPoint  # noqa: E731
_mqp = MeshQueryPoint._ctype
for name, extra in (("mesh_query_point", []), ("mesh_query_point_no_sign", []),
                    ("mesh_query_point_sign_normal", [F]), ("mesh_query_point_sign_winding_number", [F, F])):
    register(name, [ID, V3, F] + extra, _MQP, native=f"geo::{name}_s<{_mqp}>",
             doc=f"{name}(id, point, max_dist{', ...' if extra else ''}) -> MeshQueryPoint")
for name, note in (("mesh_query_point_sign_normal", "epsilon 1e-3"), ("mesh_query_point_sign_winding_number", "accuracy 2, threshold 0.5")):
    register(name, [ID, V3, F], _MQP, native=f"geo::{name}_s<{_mqp}>", doc=f"{name}(id, point, max_dist) ({note})")
# the seeds' out-argument forms: bool f(id, point, max_dist, [inside,] face, u, v[, extra]) writing in place
_row("mesh_query_point", [ID, V3, F, F, I, F, F], "bool", mutates=(3, 4, 5, 6),
     doc="mesh_query_point(id, point, max_dist, inside, face, u, v) -> found; sign by three axis rays")
_row("mesh_query_point_no_sign", [ID, V3, F, I, F, F], "bool", mutates=(3, 4, 5))
_row("mesh_query_point_sign_normal", [ID, V3, F, F, I, F, F, F], "bool", mutates=(3, 4, 5, 6),
     doc="(..., epsilon): sign from the angle-weighted pseudo-normal of the closest feature")
_row("mesh_query_point_sign_winding_number", [ID, V3, F, F, I, F, F, F, F], "bool", mutates=(3, 4, 5, 6),
     doc="(..., accuracy, threshold): inside when the generalised winding number exceeds threshold")

# ---- mesh: rays, boxes, evaluation ----------------------------------------------------------------
register("mesh_query_ray", [ID, V3, V3, F], lambda args, b: MeshQueryRay, native=f"geo::mesh_query_ray_s<{MeshQueryRay._ctype}>",
         doc="mesh_query_ray(id, start, dir, max_t) -> MeshQueryRay (closest hit, t in multiples of |dir|)")
_row("mesh_query_ray", [ID, V3, V3, F, F, F, F, F, V3, I], "bool", mutates=(4, 5, 6, 7, 8, 9),
     doc="mesh_query_ray(id, start, dir, max_t, t, u, v, sign, normal, face) -> hit")
_row("mesh_query_aabb", [ID, V3, V3], "mesh_query_aabb_t", differentiable=False,
     doc="mesh_query_aabb(id, lower, upper): iterator over faces whose bounds overlap the box")
for name in ("mesh_query_aabb_next", "mesh_query_next"):
    _row(name, ["mesh_query_aabb_t", I], "bool", native="geo::mesh_query_aabb_next", differentiable=False, mutates=(0, 1),
         doc=f"{name}(query, index): writes the next face index; False when done")
_row("mesh_eval_position", [ID, I, F, F], V3, doc="u * p0 + v * p1 + (1 - u - v) * p2 of the face")
_row("mesh_eval_velocity", [ID, I, F, F], V3, doc="velocities interpolated like mesh_eval_position (zero without velocities)")
_row("mesh_eval_face_normal", [ID, I], V3, differentiable=False, doc="unit normal of the face (winding order)")
_row("mesh_get_point", [ID, I], V3, differentiable=False, doc="vertex position")
_row("mesh_get_index", [ID, I], I, differentiable=False, doc="entry of the flat index array")
_row("mesh_get_bvh", [ID], ID, differentiable=False, doc="id of the mesh's BVH (items are faces)")

# ---- volumes -------------------------------------------------------------------------------------
_row("volume_sample_f", [ID, V3, I], F, doc="volume_sample_f(id, uvw, mode): sample at index-space uvw "
     "(Volume.CLOSEST or Volume.LINEAR); differentiable in uvw")
_row("volume_sample_local", [ID, V3, I], F, native="geo::volume_sample_f", doc="alias of volume_sample_f")
_row("volume_sample_world", [ID, V3, I], F, doc="sample at world-space xyz")
_row("volume_sample_grad_f", [ID, V3, I, V3], F, mutates=(3,),
     doc="volume_sample_grad_f(id, uvw, mode, grad) -> value; writes the index-space gradient into grad")
_row("volume_lookup_f", [ID, I, I, I], F, differentiable=False, doc="voxel value (background outside the bricks)")
_row("volume_store_f", [ID, I, I, I, F], None, differentiable=False, side_effect=True,
     doc="store a voxel value (ignored where no brick is allocated)")
for name in ("volume_index_to_world", "volume_world_to_index", "volume_index_to_world_dir", "volume_world_to_index_dir"):
    _row(name, [ID, V3], V3, doc=f"{name}(id, xyz)")
_row("volume_transform", [ID, V3], V3, native="geo::volume_index_to_world", doc="alias of volume_index_to_world")
_row("volume_transform_inv", [ID, V3], V3, native="geo::volume_world_to_index", doc="alias of volume_world_to_index")

# ---- internal: builds (one host thread), used by the geometry classes ------------------------------
for name in ("hash_grid_build", "bvh_build", "bvh_refit", "mesh_build", "mesh_refit", "volume_build_table"):
    _row("_geo_" + name, [ID], None, native=f"geo::{name}", differentiable=False, side_effect=True)
_row("_geo_volume_fill_sdf", [ID, ID, I, F, I], None, native="geo::volume_fill_sdf", differentiable=False, side_effect=True)
_row("_geo_mc_cell_count", ["array(float32)", I, I, I, F], I, native="geo::mc_cell_count", differentiable=False)
_row("_geo_mc_cell_emit", ["array(float32)", "array(int32)", I, I, I, F, "array(int32)", I, "array(vec(3,float32))", I], None,
     native="geo::mc_cell_emit", differentiable=False, side_effect=True)
