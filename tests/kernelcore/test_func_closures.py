"""@kc.func defined in a factory: each captured value is its own function (issue found by the
MPM work: two specialisations of one nested kc.func used to overwrite each other, silently)."""
import numpy as np

import kernelcore as kc


def _run(kernel, n=4):
    a = kc.array(np.arange(1, n + 1, dtype=np.float32))
    out = kc.zeros(n, dtype=float)
    kc.launch(kernel, n, inputs=[a, out])
    return out.numpy()


def make_scaler(scale):
    @kc.func
    def scaled(x: float) -> float:
        return x * scale

    @kc.kernel
    def apply(a: kc.array(dtype=float), out: kc.array(dtype=float)):
        i = kc.tid()
        out[i] = scaled(a[i])

    return scaled, apply


def test_two_closures_of_one_func_keep_their_own_constants():
    _, k2 = make_scaler(2.0)
    _, k3 = make_scaler(3.0)
    x = np.arange(1, 5, dtype=np.float32)
    np.testing.assert_array_equal(_run(k2), 2 * x)
    np.testing.assert_array_equal(_run(k3), 3 * x)
    np.testing.assert_array_equal(_run(k2), 2 * x)   # the second closure did not replace the first


def test_both_closures_in_one_kernel_and_their_gradients():
    f2, _ = make_scaler(2.0)
    f5, _ = make_scaler(5.0)

    @kc.kernel
    def both(a: kc.array(dtype=float), out: kc.array(dtype=float)):
        i = kc.tid()
        out[i] = f2(a[i]) + f5(a[i]) * a[i]

    a = kc.array(np.arange(1, 5, dtype=np.float32), requires_grad=True)
    out = kc.zeros(4, dtype=float, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(both, 4, inputs=[a, out])
    x = np.arange(1, 5, dtype=np.float32)
    np.testing.assert_allclose(out.numpy(), 2 * x + 5 * x * x)
    tape.backward(grads={out: kc.array(np.ones(4, np.float32))})
    np.testing.assert_allclose(a.grad.numpy(), 2 + 10 * x)


def test_same_captured_value_twice_is_one_function():
    f_a, k_a = make_scaler(4.0)
    f_b, k_b = make_scaler(4.0)
    assert f_a is f_b
    np.testing.assert_array_equal(_run(k_a), _run(k_b))


def test_overloads_defined_in_a_function_still_accumulate():
    offset = 10.0

    @kc.func
    def shift(x: float) -> float:
        return x + offset

    @kc.func
    def shift(x: kc.vec3) -> kc.vec3:   # noqa: F811  (an overload, as at module level)
        return x + kc.vec3(offset, offset, offset)

    @kc.kernel
    def use(a: kc.array(dtype=float), out: kc.array(dtype=float)):
        i = kc.tid()
        v = shift(kc.vec3(a[i], 0.0, 0.0))
        out[i] = shift(a[i]) + v[1]

    x = np.arange(1, 5, dtype=np.float32)
    np.testing.assert_array_equal(_run(use), x + 20.0)


def test_closure_over_a_closure_function():
    def outer(k):
        inner, _ = make_scaler(k)

        @kc.func
        def twice(x: float) -> float:
            return inner(inner(x))

        @kc.kernel
        def apply(a: kc.array(dtype=float), out: kc.array(dtype=float)):
            i = kc.tid()
            out[i] = twice(a[i])

        return apply

    x = np.arange(1, 5, dtype=np.float32)
    np.testing.assert_array_equal(_run(outer(2.0)), 4 * x)
    np.testing.assert_array_equal(_run(outer(3.0)), 9 * x)


def test_kernels_of_two_identical_closures_build_in_one_module():
    """A factory called twice with one value gives two instances of the same code; the module's
    translation unit (all its kernels together, as the CUDA build does) defines it once."""
    from kernelcore.module import _ordered_functions

    _, k_a = make_scaler(6.0)
    first = _run(k_a)            # k_a's IR holds the first instance
    _, k_b = make_scaler(6.0)    # a second instance of the same code
    np.testing.assert_array_equal(_run(k_b), first)
    names = [f.cname for f in _ordered_functions([k_a.ir(), k_b.ir()])]
    assert len(names) == len(set(names))
    k_a.module._build_cpu_chunk([k_a, k_b])   # one translation unit with both kernels compiles
