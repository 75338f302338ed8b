"""Vector and matrix builtins (native/kc_vec.h)."""
from .registry import register

V, M = "vec(N,S)", "mat(R,C,S)"
# adj_ignores / adj_bilinear: see registry.register (linear rows' adjoints read no values)
LINEAR2, LINEAR1 = dict(adj_ignores=(0, 1)), dict(adj_ignores=(0,))
BILINEAR = dict(adj_bilinear=True)
for op in ("add", "sub"):
    register(op, [V, V], V, **LINEAR2)
    register(op, [M, M], M, **LINEAR2)
register("neg", [V], V, **LINEAR1)
register("pos", [V], V, **LINEAR1)
register("neg", [M], M, **LINEAR1)
register("pos", [M], M, **LINEAR1)
register("mul", [V, "S"], V, **BILINEAR)
register("mul", ["S", V], V, **BILINEAR)
register("mul", [M, "S"], M, **BILINEAR)
register("mul", ["S", M], M, **BILINEAR)
register("mul", ["mat(R,C,S)", "vec(C,S)"], "vec(R,S)", doc="matrix-vector product", **BILINEAR)
register("mul", ["vec(R,S)", "mat(R,C,S)"], "vec(C,S)", doc="row vector times matrix", **BILINEAR)
register("mul", ["mat(R,K,S)", "mat(K,C,S)"], "mat(R,C,S)", doc="matrix product", **BILINEAR)
register("div", [V, "S"], V)
register("div", ["S", V], V)
register("div", [M, "S"], M)
for op in ("cw_mul", "cw_div"):
    register(op, [V, V], V, doc=f"component-wise {op[3:]}", **(BILINEAR if op == "cw_mul" else {}))
    register(op, [M, M], M, doc=f"component-wise {op[3:]}", **(BILINEAR if op == "cw_mul" else {}))
for op in ("eq", "ne"):
    register(op, [V, V], "bool", differentiable=False)
    register(op, [M, M], "bool", differentiable=False)

register("dot", [V, V], "S", doc="dot product", **BILINEAR)
register("cross", ["vec(3,S)", "vec(3,S)"], "vec(3,S)", doc="cross product")
register("length", ["vec(N,F)"], "F", doc="Euclidean length; adjoint 0 at the zero vector")
register("length_sq", [V], "S", doc="squared length")
register("normalize", ["vec(N,F)"], "vec(N,F)", doc="unit vector (zero stays zero, with adjoint 0)")
register("outer", ["vec(R,S)", "vec(C,S)"], "mat(R,C,S)", doc="outer product a b^T", **BILINEAR)
register("outer_scaled", ["vec(R,S)", "vec(C,S)", "S"], "mat(R,C,S)",
         doc="outer(a, b) * s; the compiler fuses that product (passes.fuse_scaled_outer)")
register("transpose", [M], "mat(C,R,S)", **LINEAR1)
register("trace", ["mat(N,N,S)"], "S", **LINEAR1)
register("diag", ["vec(N,S)"], "mat(N,N,S)", doc="diagonal matrix from a vector")
register("get_diag", ["mat(N,N,S)"], "vec(N,S)", doc="diagonal of a square matrix")
register("ddot", [M, M], "S", doc="double contraction sum_ij a_ij b_ij")
register("skew", ["vec(3,S)"], "mat(3,3,S)", doc="cross-product matrix: skew(a) b = a x b")
for n in (2, 3, 4):
    register("determinant", [f"mat({n},{n},F)"], "F")
    register("inverse", [f"mat({n},{n},F)"], f"mat({n},{n},F)", doc="matrix inverse (zero if singular)")
register("min", [V], "S", doc="smallest component")
register("max", [V], "S", doc="largest component")
register("min", [V, V], V)
register("max", [V, V], V)
register("abs", [V], V)
register("lerp", ["vec(N,F)", "vec(N,F)", "F"], "vec(N,F)")

# Element access (the frontend emits these for v[i], v.x, m[i], m[i, j] and their SSA updates).
register("extract", [V, "int32"], "S", **LINEAR1)
register("extract", [M, "int32"], "vec(C,S)", **LINEAR1)
register("extract", [M, "int32", "int32"], "S", **LINEAR1)
register("assign_copy", [V, "int32", "S"], V)
register("assign_copy", [M, "int32", "int32", "S"], M)
register("assign_copy", [M, "int32", "vec(C,S)"], M)
