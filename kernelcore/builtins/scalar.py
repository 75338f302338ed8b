"""Scalar operators and math builtins (forward and adjoint in native/kc_scalar.h)."""
from .registry import register

# Operators: the frontend maps Python operators to these names.
for op in ("add", "sub"):
    register(op, ["S", "S"], "S", doc=f"scalar {op}", adj_ignores=(0, 1))
register("mul", ["S", "S"], "S", doc="scalar mul", adj_bilinear=True)
register("div", ["S", "S"], "S", doc="scalar div")
for op in ("mod", "floordiv"):
    register(op, ["S", "S"], "S", doc=f"Python-style {op} (sign of the divisor)")
register("neg", ["S"], "S", adj_ignores=(0,))
register("pos", ["S"], "S", adj_ignores=(0,))
for op in ("lt", "le", "gt", "ge", "eq", "ne"):
    register(op, ["S", "S"], "bool", differentiable=False)
register("eq", ["bool", "bool"], "bool", differentiable=False)
register("ne", ["bool", "bool"], "bool", differentiable=False)
for op in ("bit_and", "bit_or", "bit_xor", "lshift", "rshift"):
    register(op, ["I", "I"], "I", differentiable=False)
register("invert", ["I"], "I", differentiable=False)
register("logical_and", ["bool", "bool"], "bool", differentiable=False)
register("logical_or", ["bool", "bool"], "bool", differentiable=False)
register("logical_not", ["bool"], "bool", differentiable=False)
register("truth", ["S"], "bool", differentiable=False, doc="x != 0")
register("select", ["bool", "T", "T"], "T", doc="branch merge: c ? a : b")
register("where", ["bool", "T", "T"], "T", doc="where(cond, a, b) = a if cond else b")

# Math library: one argument float functions.
_MATH_DOCS = {
    "asin": "asin(x), argument clamped to [-1, 1]; adjoint 0 at |x| >= 1 (infinite slope / clamped)",
    "acos": "acos(x), argument clamped to [-1, 1]; adjoint 0 at |x| >= 1 (infinite slope / clamped), "
            "e.g. the angle between parallel unit vectors",
    "sqrt": "sqrt(x); adjoint +inf at x = 0 (the one-sided limit, as in Warp; catch it with a func_grad)",
    "cbrt": "cbrt(x); adjoint +inf at x = 0 (the one-sided limit)",
    "round": "nearest integer, halves away from zero (C round; zero adjoint)",
    "rint": "nearest integer, halves to even (like numpy.round; zero adjoint)",
    "floor": "floor(x) (zero adjoint)", "ceil": "ceil(x) (zero adjoint)", "trunc": "round toward zero (zero adjoint)",
    "degrees": "radians -> degrees", "radians": "degrees -> radians",
}
for fn in ("sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "exp", "log", "log2",
           "log10", "sqrt", "cbrt", "floor", "ceil", "trunc", "round", "rint", "degrees", "radians"):
    register(fn, ["F"], "F", doc=_MATH_DOCS.get(fn, f"{fn}(x) on float scalars"))
register("atan2", ["F", "F"], "F", doc="atan2(y, x); adjoint 0 at (0, 0)")
register("pow", ["F", "F"], "F", doc="x ** y; adjoint w.r.t. x: 0 when y = 0, +inf at x = 0 for 0 < y < 1 (the one-sided "
         "limit, as sqrt); w.r.t. y: x**y log(x) for x > 0, else 0 (its limit at x -> 0+)")
register("abs", ["S"], "S", doc="absolute value")
register("sign", ["S"], "S", doc="-1 if x < 0 else 1 (sign(0) is 1; zero adjoint)")
for fn in ("min", "max"):
    register(fn, ["S", "S"], "S", doc=f"{fn}(a, b)")
register("clamp", ["S", "S", "S"], "S", doc="clamp(x, lo, hi)")
register("lerp", ["F", "F", "F"], "F", doc="a + (b - a) * t")
register("smoothstep", ["F", "F", "F"], "F", doc="smoothstep(edge0, edge1, x): cubic Hermite ramp")
register("step", ["F"], "F", doc="1 if x < 0 else 0 (zero adjoint)")
for fn in ("isnan", "isinf", "isfinite"):
    register(fn, ["F"], "bool", differentiable=False)
