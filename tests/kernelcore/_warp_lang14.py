"""Oracle programs for the #14 leftovers (indexedarray, out-argument decompositions, a reused
unrolled counter), written for warp-lang; imported only when it is installed."""
import numpy as np


def _init(wp):
    wp.config.quiet = True
    wp.init()


def warp_reuse_carried_counter(wp, x0, n, threads):
    """Same program as test_adversarial.reuse_carried_counter_with_break, under Warp (CPU)."""
    _init(wp)

    @wp.kernel
    def reuse(x: wp.array(dtype=wp.float64), n: int, out: wp.array(dtype=wp.float64)):
        i = wp.tid()
        j = int(0)
        s = wp.float64(0.0)
        for k in range(n):
            for j in range(3):
                s = s + x[(i + j + k) % 8] * x[(i + k) % 8]
                if x[(i + j + k) % 8] < wp.float64(-0.5):
                    break
        out[i] = s + wp.float64(j)

    out = wp.zeros(threads, dtype=wp.float64, device="cpu")
    wp.launch(reuse, threads, inputs=[wp.array(x0, dtype=wp.float64, device="cpu"), n, out], device="cpu")
    return out.numpy()
