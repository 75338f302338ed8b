"""Kernel value types returned by the mesh queries (fields as in the seeds' API)."""
import kernelcore as kc


@kc.struct
class MeshQueryPoint:
    """Result of the ``mesh_query_point*`` builtins.

    result: a face closer than max_dist was found; sign: < 0 inside, > 0 outside (0 for the
    unsigned query); face: index of the closest face; u, v: barycentric weights of the face's
    first two vertices at the closest point (differentiable with respect to the query point).
    """
    result: kc.bool
    sign: float
    face: kc.int32
    u: float
    v: float


@kc.struct
class MeshQueryRay:
    """Result of ``mesh_query_ray``.

    result: a hit with t < max_t; sign: > 0 when the ray hit the front of the face; face: hit
    face; t: ray parameter of the hit in multiples of |dir|; u, v: barycentric weights of the
    face's first two vertices; normal: unit face normal (winding order). t, u and v are
    differentiable with respect to the ray start and direction.
    """
    result: kc.bool
    sign: float
    face: kc.int32
    t: float
    u: float
    v: float
    normal: kc.vec3
