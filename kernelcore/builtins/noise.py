"""Perlin-style gradient noise (native/kc_noise.h), differentiable in the coordinate.

``state`` (a uint32 from ``kc.rand_init(seed)``) selects the field and is never advanced.
One noise feature spans one unit of the coordinate; the field is C2 (quintic fade), 0 at
integer lattice points and bounded by sqrt(N)/2 in N dimensions.
"""
from .registry import register

for dt in ("float32", "float64"):
    register("noise", ["uint32", dt], dt,
             doc="1-D gradient noise at x (|value| <= 1/2); the state selects the field and is not advanced")
    for n in (2, 3, 4):
        register("noise", ["uint32", f"vec({n},{dt})"], dt, doc=f"{n}-D gradient noise (|value| <= sqrt({n})/2)")
    register("pnoise", ["uint32", dt, "int32"], dt,
             doc="noise repeating every px units (integer period > 0); periods get no gradient")
    for n in (2, 3, 4):
        register("pnoise", ["uint32", f"vec({n},{dt})"] + ["int32"] * n, dt,
                 doc=f"{n}-D noise repeating every (px, py, ...) units along each axis (integer periods > 0)")
    for n in (2, 3):
        v = f"vec({n},{dt})"
        what = ("(d psi/dy, -d psi/dx) of a noise potential psi" if n == 2
                else "the curl of three noise potentials")
        register("curlnoise", ["uint32", v], v,
                 doc=f"divergence-free {n}-D field: {what}; one octave")
        register("curlnoise", ["uint32", v, "int32", dt, dt], v,
                 doc=f"curlnoise(state, x, octaves, lacunarity, gain): octave i at frequency lacunarity**i with "
                     f"weight gain**i (octaves = 0 gives zero); differentiable in x, lacunarity and gain")
