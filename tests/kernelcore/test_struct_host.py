"""Struct values on the host: struct arrays as numpy structured arrays, field checks."""
import numpy as np
import pytest

import kernelcore as kc


@kc.struct
class Inner:
    a: kc.int32
    b: kc.vec2


@kc.struct
class Particle:
    pos: kc.vec3
    mass: float
    inner: Inner
    nbrs: kc.array(dtype=kc.vec3)
    weight: kc.float64
    rot: kc.mat22


@kc.kernel
def read_particles(ps: kc.array(dtype=Particle), out: kc.array(dtype=float)):
    i = kc.tid()
    p = ps[i]
    out[i] = p.pos[1] + p.mass + float(p.inner.a) + p.inner.b[1] + float(p.weight) + p.rot[1, 0]


@kc.kernel
def write_particles(ps: kc.array(dtype=Particle)):
    i = kc.tid()
    p = ps[i]
    p.mass = float(i) * 2.0
    p.pos = kc.vec3(float(i), 0.0, -1.0)
    ps[i] = p


def _expected(h):
    return (h["pos"][:, 1] + h["mass"] + h["inner"]["a"] + h["inner"]["b"][:, 1] + h["weight"] + h["rot"][:, 1, 0]).astype(np.float32)


def test_numpy_of_a_struct_array_has_named_assignable_fields():
    a = kc.zeros(3, dtype=Particle)
    h = a.numpy()
    assert h.dtype.names == ("pos", "mass", "inner", "nbrs", "weight", "rot")
    assert h["pos"].shape == (3, 3) and h["rot"].shape == (3, 2, 2) and h["inner"]["b"].shape == (3, 2)
    assert h.dtype.itemsize == Particle._size
    h["pos"][:, 1] = [1.0, 2.0, 3.0]
    h["mass"] = 10.0
    h["inner"]["a"] = [100, 200, 300]
    h["inner"]["b"][:, 1] = 0.5
    h["weight"] = 1000.0
    h["rot"][:, 1, 0] = [0.25, 0.5, 0.75]
    out = kc.zeros(3, dtype=float)
    kc.launch(read_particles, dim=3, inputs=[a, out])   # the kernel sees what numpy wrote
    np.testing.assert_allclose(out.numpy(), _expected(h))
    kc.launch(write_particles, dim=3, inputs=[a])       # and numpy sees what the kernel wrote
    assert a.numpy()["mass"].tolist() == [0.0, 2.0, 4.0]
    assert a.numpy()["pos"][:, 0].tolist() == [0.0, 1.0, 2.0]


def test_structured_array_round_trips_through_kc_array():
    a = kc.zeros(4, dtype=Particle)
    h = a.numpy()
    h["mass"] = np.arange(4)
    h["inner"]["a"] = 7
    b = kc.array(h, dtype=Particle)                # same layout: a copy
    for name in ("pos", "mass", "inner", "weight", "rot"):
        assert b.numpy()[name].tobytes() == h[name].tobytes(), name
    h["mass"] = -1.0                                # b does not alias a
    assert b.numpy()["mass"].tolist() == [0.0, 1.0, 2.0, 3.0]
    # the same field names in another layout (packed, other order) convert by name
    packed = np.zeros(2, dtype=[("weight", "<f8"), ("mass", "<f4"), ("pos", "<f4", (3,)), ("inner", [("b", "<f4", (2,)), ("a", "<i4")]),
                                ("nbrs", "V72"), ("rot", "<f4", (2, 2))])
    packed["mass"] = [1.5, 2.5]
    packed["inner"]["a"] = [3, 4]
    c = kc.array(packed, dtype=Particle)
    assert c.numpy()["mass"].tolist() == [1.5, 2.5] and c.numpy()["inner"]["a"].tolist() == [3, 4]
    out = kc.zeros(2, dtype=float)
    kc.launch(read_particles, dim=2, inputs=[c, out])
    np.testing.assert_allclose(out.numpy(), [4.5, 6.5])


def test_structured_array_with_other_fields_is_rejected():
    bad = np.zeros(2, dtype=[("pos", "<f4", (3,)), ("masss", "<f4")])
    with pytest.raises(ValueError, match="missing mass.*unknown masss"):
        kc.array(bad, dtype=Particle)


def test_misspelled_field_raises_attribute_error():
    p = Particle()
    p.mass = 2.0
    with pytest.raises(AttributeError, match="struct Particle has no field 'mas'"):
        p.mas = 1.0
    assert p.mass == 2.0


def test_wrong_typed_array_field_names_field_and_both_types():
    p = Particle()
    with pytest.raises(TypeError) as info:
        p.nbrs = kc.zeros(3, dtype=float)
    msg = str(info.value)
    assert "field 'nbrs'" in msg and "vec3" in msg and "float32" in msg
    p.nbrs = kc.zeros(3, dtype=kc.vec3)   # the right type is accepted
    # the launch checks too (a value set behind the struct's back)
    object.__setattr__(p, "nbrs", kc.zeros((2, 2), dtype=kc.vec3))
    with pytest.raises(TypeError, match="field 'nbrs'.*2 dimension"):
        kc.launch(read_particles, dim=1, inputs=[kc.array([p], dtype=Particle), kc.zeros(1, dtype=float)])
