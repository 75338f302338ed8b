"""The oracle programs of test_semantics.py, written for warp-lang (imported only when it is installed)."""
import numpy as np


def warp_divmod(wp, int_a, int_b, flt_a, flt_b):
    """{key: numpy result} of //, % and / under Warp on its CPU device."""

    @wp.kernel
    def int_ops(a: wp.array(dtype=int), b: wp.array(dtype=int), q: wp.array(dtype=int), r: wp.array(dtype=int),
                t: wp.array(dtype=int)):
        i = wp.tid()
        q[i] = a[i] // b[i]
        r[i] = a[i] % b[i]
        t[i] = a[i] / b[i]

    @wp.kernel
    def float_ops(a: wp.array(dtype=float), b: wp.array(dtype=float), q: wp.array(dtype=float), r: wp.array(dtype=float)):
        i = wp.tid()
        q[i] = a[i] // b[i]
        r[i] = a[i] % b[i]

    n, m = len(int_a), len(flt_a)
    iq, ir, it = (wp.zeros(n, dtype=int, device="cpu") for _ in range(3))
    fq, fr = (wp.zeros(m, dtype=float, device="cpu") for _ in range(2))
    wp.launch(int_ops, dim=n, inputs=[wp.array(int_a, dtype=int, device="cpu"), wp.array(int_b, dtype=int, device="cpu"),
                                      iq, ir, it], device="cpu")
    wp.launch(float_ops, dim=m, inputs=[wp.array(flt_a, dtype=float, device="cpu"), wp.array(flt_b, dtype=float, device="cpu"),
                                        fq, fr], device="cpu")
    return {"iq": iq.numpy(), "ir": ir.numpy(), "it": it.numpy(), "fq": fq.numpy(), "fr": fr.numpy()}
