"""Quaternion, transform and spatial-vector builtins (native/kc_quat.h).

Quaternions are stored (x, y, z, w); a transform is a translation p (vec3) and a
rotation q (quat).  ``kc.transform(p, q)`` / ``kc.quat(x, y, z, w)`` inside a kernel are
type constructors handled by the frontend (they are not table rows).
"""
from .. import types as T
from .registry import register

Q, X = "quat(F)", "transform(F)"
V3 = "vec(3,F)"

# ---- quaternion arithmetic (component-wise except mul(quat, quat)) -------------------------
for op in ("add", "sub"):
    register(op, [Q, Q], Q, doc=f"component-wise {op}")
register("neg", [Q], Q)
register("pos", [Q], Q)
register("mul", [Q, "F"], Q, doc="scale every component")
register("mul", ["F", Q], Q, doc="scale every component")
register("div", [Q, "F"], Q, doc="divide every component")
register("mul", [Q, Q], Q, doc="Hamilton product a b (rotation b first, then a)")
for op in ("eq", "ne"):
    register(op, [Q, Q], "bool", differentiable=False)
register("extract", [Q, "int32"], "F", doc="component i (x, y, z, w)")
register("assign_copy", [Q, "int32", "F"], Q)

register("dot", [Q, Q], "F", doc="4D dot product")
register("length", [Q], "F", doc="4D Euclidean length; adjoint 0 at zero")
register("length_sq", [Q], "F", doc="squared 4D length")
register("normalize", [Q], Q, doc="unit quaternion (zero stays zero, with adjoint 0)")
register("lerp", [Q, Q, "F"], Q, doc="component-wise a + (b - a) t (not normalised)")

# ---- rotations ----------------------------------------------------------------------------
register("quat_identity", [], "quat(float32)", differentiable=False,
         doc="(0, 0, 0, 1) as float32; for float64 write kc.quatd(0.0, 0.0, 0.0, 1.0)")
register("quat_from_axis_angle", [V3, "F"], Q, doc="rotation of angle radians about axis (the axis is normalised)")
register("quat_to_axis_angle", [Q, V3, "F"], None, differentiable=False, mutates=(1, 2),
         doc="writes the rotation axis (unit) and angle in [0, 2 pi) of q into the local variables axis, angle; "
             "no adjoint (a Tape backward through it raises): use `axis, angle = kc.quat_to_axis_angle(q)`")


def _axis_angle_result(args, b):
    return T.Tuple((T.vector(3, args[0]._dtype), args[0]._dtype))


_axis_angle_result.doc = "(vec(3,F), F)"
register("quat_to_axis_angle", [Q], _axis_angle_result,
         doc="axis, angle = quat_to_axis_angle(q): unit rotation axis (x for the identity) and angle 2 atan2(|v|, w) "
             "in [0, 2 pi) of q = (v, w); differentiable, adjoint 0 at v = 0 (no rotation)")
register("quat_rpy", ["F", "F", "F"], Q,
         doc="from roll (about x), pitch (about y), yaw (about z) in radians: q_z(yaw) q_y(pitch) q_x(roll)")
register("quat_inverse", [Q], Q, doc="conjugate (-x, -y, -z, w): the inverse of a unit quaternion")
register("quat_rotate", [Q, V3], V3, doc="rotate v by the unit quaternion q (q v q*)")
register("quat_rotate_inv", [Q, V3], V3, doc="rotate v by the inverse of the unit quaternion q (q* v q)")
register("quat_to_matrix", [Q], "mat(3,3,F)", doc="3x3 rotation matrix of a unit quaternion (quat_to_matrix(q) v == quat_rotate(q, v))")
register("quat_from_matrix", ["mat(3,3,F)"], Q,
         doc="unit quaternion of a rotation matrix (Shepperd's method; the sign of the result is arbitrary)")
register("quat_slerp", [Q, Q, "F"], Q,
         doc="spherical interpolation from a (t=0) to b (t=1) along the shorter arc")

# ---- transforms ---------------------------------------------------------------------------
register("transform_identity", [], "transform(float32)", differentiable=False,
         doc="identity transform (float32)")
register("transform_get_translation", [X], V3, doc="translation part p (also t.p)")
register("transform_get_rotation", [X], Q, doc="rotation part q (also t.q)")
register("extract", [X, "int32"], "F", doc="component i of (p.x, p.y, p.z, q.x, q.y, q.z, q.w)")
register("mul", [X, X], X, doc="composition a * b: apply b first, then a")
register("transform_multiply", [X, X], X, doc="composition a * b: apply b first, then a")
register("transform_inverse", [X], X, doc="inverse of a rigid transform (unit rotation)")
register("transform_point", [X, V3], V3, doc="p + rotate(q, x)")
register("transform_vector", [X, V3], V3, doc="rotate(q, x) (no translation)")
register("transform_point", ["mat(4,4,F)", V3], V3, doc="M[:3, :3] x + M[:3, 3] (homogeneous point)")
register("transform_vector", ["mat(4,4,F)", V3], V3, doc="M[:3, :3] x (homogeneous direction)")
register("transform_to_matrix", [X], "mat(4,4,F)", doc="homogeneous 4x4 matrix of a transform")
for op in ("add", "sub"):
    register(op, [X, X], X, doc=f"component-wise {op} (for blending; not a composition)")
register("neg", [X], X)
register("mul", [X, "F"], X, doc="scale every component")
register("mul", ["F", X], X, doc="scale every component")
for op in ("eq", "ne"):
    register(op, [X, X], "bool", differentiable=False)

# ---- spatial vectors: (top, bottom) = (angular, linear) --------------------------------------
V6 = "vec(6,F)"
register("spatial_top", [V6], V3, doc="first three components")
register("spatial_bottom", [V6], V3, doc="last three components")
register("spatial_dot", [V6, V6], "F", doc="dot product of two 6D vectors")
register("spatial_cross", [V6, V6], V6, doc="motion cross product (w1 x w2, w1 x v2 + v1 x w2)")
register("spatial_cross_dual", [V6, V6], V6, doc="force cross product (w1 x f2 + v1 x t2, w1 x t2)")
