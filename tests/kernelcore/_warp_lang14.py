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


def warp_decompositions_out_arguments(wp, A0, n):
    """The accumulated singular values / eigenvalues / R diagonal of test_adversarial's
    out-argument program, under Warp (float32)."""
    _init(wp)

    @wp.kernel
    def decompose(A: wp.array(dtype=wp.mat33), n: int, accs: wp.array(dtype=float)):
        i = wp.tid()
        U = wp.mat33()
        sig = wp.vec3()
        V = wp.mat33()
        Q = wp.mat33()
        d = wp.vec3()
        R = wp.mat33()
        acc = float(0.0)
        for k in range(n):
            B = A[i] * (1.0 + 0.1 * float(k))
            wp.svd3(B, U, sig, V)
            wp.eig3(B + wp.transpose(B), Q, d)
            wp.qr3(B, Q, R)
            dmin = wp.min(wp.min(d[0], d[1]), d[2])   # (Warp's eig3 leaves d unsorted)
            acc = acc + sig[0] + 0.5 * sig[2] + 0.25 * dmin + 0.125 * R[1, 1]
            if acc > 40.0:
                break
        accs[i] = acc

    accs = wp.zeros(len(A0), dtype=float, device="cpu")
    wp.launch(decompose, len(A0), inputs=[wp.array(A0.astype(np.float32), dtype=wp.mat33, device="cpu"), n, accs],
              device="cpu")
    return accs.numpy()


def warp_gather_scatter_2d(wp, src, rows, cols, drows, dcols, acc_idx, dst_shape, acc_n):
    """test_indexedarray.gather_scatter_2d under Warp: (dst, acc, sizes) as numpy arrays."""
    _init(wp)

    @wp.kernel
    def gather_scatter_2d(src: wp.indexedarray2d(dtype=float), dst: wp.indexedarray2d(dtype=float),
                          acc: wp.indexedarray(dtype=float), sizes: wp.array(dtype=int)):
        i, j = wp.tid()
        v = src[i, j]
        dst[i, j] = v * 2.0 + 1.0
        dst[i, j] += 0.5
        wp.atomic_add(acc, i, v)
        acc[-1] -= 0.25
        if i == 0 and j == 0:
            sizes[0] = src.shape[0]
            sizes[1] = src.shape[1]
            sizes[2] = acc.shape[0]

    def idx(v):
        return wp.array(np.array(v, dtype=np.int32), dtype=wp.int32, device="cpu")

    dst = wp.zeros(dst_shape, dtype=float, device="cpu")
    acc = wp.zeros(acc_n, dtype=float, device="cpu")
    sizes = wp.zeros(3, dtype=int, device="cpu")
    wp.launch(gather_scatter_2d, (len(rows), len(cols)), inputs=[
        wp.indexedarray(wp.array(src, dtype=float, device="cpu"), [idx(rows), idx(cols)]),
        wp.indexedarray(dst, [idx(drows), idx(dcols)]), wp.indexedarray(acc, [idx(acc_idx)]), sizes], device="cpu")
    return dst.numpy(), acc.numpy(), sizes.numpy()
