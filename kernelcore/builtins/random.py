"""Random numbers (native/kc_random.h): a uint32 state per thread. Not differentiable."""
from .registry import register

register("rand_init", ["int32"], "uint32", differentiable=False, doc="state from a seed")
register("rand_init", ["int32", "int32"], "uint32", differentiable=False, doc="state from a seed and an offset (e.g. the thread id)")
register("randi", ["uint32"], "int32", differentiable=False, mutates=(0,), doc="random int32 (all 32 bits)")
register("randi", ["uint32", "int32", "int32"], "int32", differentiable=False, mutates=(0,), doc="uniform integer in [lo, hi)")
register("randf", ["uint32"], "float32", differentiable=False, mutates=(0,), doc="uniform float in [0, 1)")
register("randf", ["uint32", "F", "F"], "F", differentiable=False, mutates=(0,), doc="uniform float in [lo, hi) (24 random bits)")
register("randn", ["uint32"], "float32", differentiable=False, mutates=(0,), doc="standard normal sample")
_SAMPLE_DOCS = {
    "sample_unit_square": "uniform in [-0.5, 0.5]^2", "sample_unit_cube": "uniform in [-0.5, 0.5]^3",
    "sample_unit_disk": "uniform in the unit disk", "sample_unit_ring": "uniform on the unit circle",
    "sample_unit_sphere": "uniform in the unit ball", "sample_unit_sphere_surface": "uniform on the unit sphere",
    "sample_unit_hemisphere": "uniform in the unit half ball z >= 0",
    "sample_unit_hemisphere_surface": "uniform on the unit half sphere z >= 0",
    "sample_triangle": "uniform barycentric coordinates (u, v) of a triangle (u, v >= 0, u + v <= 1)",
}
for fn, res in (("sample_unit_square", "vec(2,float32)"), ("sample_unit_cube", "vec(3,float32)"),
                ("sample_unit_disk", "vec(2,float32)"), ("sample_unit_ring", "vec(2,float32)"),
                ("sample_unit_sphere", "vec(3,float32)"), ("sample_unit_sphere_surface", "vec(3,float32)"),
                ("sample_unit_hemisphere", "vec(3,float32)"), ("sample_unit_hemisphere_surface", "vec(3,float32)"),
                ("sample_triangle", "vec(2,float32)")):
    register(fn, ["uint32"], res, differentiable=False, mutates=(0,), doc=_SAMPLE_DOCS[fn])
register("poisson", ["uint32", "float32"], "uint32", differentiable=False, mutates=(0,),
         doc="Poisson-distributed count with mean lam (by inversion; meant for small lam)")

