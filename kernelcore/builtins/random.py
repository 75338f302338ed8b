"""Random numbers (native/kc_random.h): a uint32 state per thread. Not differentiable."""
from .registry import register

register("rand_init", ["int32"], "uint32", differentiable=False, doc="state from a seed")
register("rand_init", ["int32", "int32"], "uint32", differentiable=False, doc="state from a seed and an offset (e.g. the thread id)")
register("randi", ["uint32"], "int32", differentiable=False, mutates=(0,))
register("randi", ["uint32", "int32", "int32"], "int32", differentiable=False, mutates=(0,), doc="uniform integer in [lo, hi)")
register("randf", ["uint32"], "float32", differentiable=False, mutates=(0,), doc="uniform float in [0, 1)")
register("randf", ["uint32", "float32", "float32"], "float32", differentiable=False, mutates=(0,), doc="uniform float in [lo, hi)")
register("randn", ["uint32"], "float32", differentiable=False, mutates=(0,), doc="standard normal sample")
for fn, res in (("sample_unit_square", "vec(2,float32)"), ("sample_unit_cube", "vec(3,float32)"),
                ("sample_unit_disk", "vec(2,float32)"), ("sample_unit_ring", "vec(2,float32)"),
                ("sample_unit_sphere", "vec(3,float32)"), ("sample_unit_sphere_surface", "vec(3,float32)"),
                ("sample_unit_hemisphere", "vec(3,float32)"), ("sample_unit_hemisphere_surface", "vec(3,float32)"),
                ("sample_triangle", "vec(2,float32)")):
    register(fn, ["uint32"], res, differentiable=False, mutates=(0,))
register("poisson", ["uint32", "float32"], "uint32", differentiable=False, mutates=(0,))

