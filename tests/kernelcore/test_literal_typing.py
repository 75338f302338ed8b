"""Untyped number literals in kernels: int literals given to float builtins are floats (as in
Python), and an int literal that does not fit its type is a file:line error, not a silent wrap.

Both were holes: ``kc.sqrt(2)`` or ``2 ** -1`` reached g++ as ``sqrt(int32)`` ("call of overloaded
... is ambiguous", a C++ error instead of the user's line), and ``n = 100000000000`` became
1215752192 without a word."""
import math

import numpy as np
import pytest

import kernelcore as kc
from kernelcore.errors import KernelCompileError


@kc.kernel
def int_literals_to_float_builtins(out: kc.array(dtype=float)):
    out[0] = kc.sqrt(2)
    out[1] = 2 ** -1
    out[2] = kc.atan2(1, 1)
    out[3] = kc.pow(2, 3)
    out[4] = kc.exp(0)
    out[5] = kc.floor(3)


def test_int_literals_in_float_builtins_follow_python_math():
    out = kc.zeros(6, dtype=float)
    kc.launch(int_literals_to_float_builtins, dim=1, inputs=[out])
    want = [math.sqrt(2), 2 ** -1, math.atan2(1, 1), math.pow(2, 3), math.exp(0), math.floor(3)]
    np.testing.assert_allclose(out.numpy(), np.array(want, np.float32), rtol=1e-6)


@kc.kernel
def explicit_casts_wrap(out: kc.array(dtype=kc.int64)):
    out[0] = kc.int64(kc.int32(2654435769))
    out[1] = kc.int64(kc.uint32(-1))
    out[2] = kc.int64(kc.int8(200))
    out[3] = 4294967296   # an int64 target holds it
    out[4] = -9223372036854775808


def test_explicit_casts_of_literals_wrap_like_numpy_astype():
    out = kc.zeros(5, dtype=kc.int64)
    kc.launch(explicit_casts_wrap, dim=1, inputs=[out])
    want = [np.array(2654435769).astype(np.int32), np.array(-1).astype(np.uint32), np.array(200).astype(np.int8),
            4294967296, np.iinfo(np.int64).min]
    assert out.numpy().tolist() == [int(w) for w in want]


def test_int_literal_that_does_not_fit_int32_names_the_line():
    @kc.kernel
    def too_big(out: kc.array(dtype=float)):
        n = 100000000000
        out[0] = float(n)

    with pytest.raises(KernelCompileError, match=r"integer literal 100000000000 does not fit int32") as e:
        kc.launch(too_big, dim=1, inputs=[kc.zeros(1, dtype=float)])
    assert "test_literal_typing.py" in str(e.value) and "n = 100000000000" in str(e.value)


def test_int_literal_stored_to_a_uint8_array_out_of_range_is_an_error():
    @kc.kernel
    def store(out: kc.array(dtype=kc.uint8)):
        out[0] = 300

    with pytest.raises(KernelCompileError, match=r"integer literal 300 does not fit uint8 \[0, 255\]"):
        kc.launch(store, dim=1, inputs=[kc.zeros(1, dtype=kc.uint8)])
