"""Per-launch CPU time of one untaped 3-D sim.SolverMPM step (bench_mpm.py's 3-D case: 103,823
particles, 64^3 cells, neo-Hookean), on one thread and on two.

Every launch of one step is recorded (kc.launch spied), then replayed alone in blocks; the table
gives process CPU time per launch [ms] (median of 5 blocks) with KERNELCORE_NUM_THREADS=1 and =2,
on two threads the mean CPU of the calling thread (main2) and of the busiest other thread (other2),
and the wall time on two threads (meaningful on an idle machine only).  max(main2, other2) is what
the launch would take on two idle cores; main2 well above other2 is a serial section or an imbalance.  Two-thread CPU above
one-thread CPU is what the second thread costs (wake-up, sharing, contention); on an idle machine
wall(2) against cpu(1) / 2 shows the imbalance and the serial sections.  The last rows: the whole
step, and the step minus the launches (Python, active_box, zeroing).

Run: python benchmarks/profile_mpm_3d.py [--blocks 5] [--n 20]
"""
import argparse
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import kernelcore as kc  # noqa: E402
import bench_mpm as M  # noqa: E402


def thread_cpu():
    """{thread id: CPU seconds} of this process's threads (Linux per-thread CPU clocks)."""
    out = {}
    for name in os.listdir("/proc/self/task"):
        tid = int(name)
        try:
            out[tid] = time.clock_gettime(((~tid) << 3) | 6)   # CPUCLOCK_SCHED | CPUCLOCK_PERTHREAD
        except OSError:
            pass
    return out


def timed(fn, threads, n, blocks, split=None):
    """(cpu ms, wall ms) per call: medians over ``blocks`` blocks of ``n`` calls.  ``split``: a list
    that gets the CPU ms per call of the calling thread and of the busiest other thread."""
    saved = os.environ.get("KERNELCORE_NUM_THREADS")
    os.environ["KERNELCORE_NUM_THREADS"] = str(threads)
    try:
        fn()
        cpu, wall = [], []
        me = threading.get_native_id()
        t0 = thread_cpu()
        for _ in range(blocks):
            c0, w0 = time.process_time(), time.perf_counter()
            for _ in range(n):
                fn()
            cpu.append((time.process_time() - c0) / n)
            wall.append((time.perf_counter() - w0) / n)
        if split is not None:
            t1 = thread_cpu()
            d = {k: t1[k] - t0.get(k, 0.0) for k in t1}
            split += [d.pop(me, 0.0) * 1e3 / (n * blocks), max(d.values(), default=0.0) * 1e3 / (n * blocks)]
    finally:
        if saved is None:
            os.environ.pop("KERNELCORE_NUM_THREADS", None)
        else:
            os.environ["KERNELCORE_NUM_THREADS"] = saved
    return sorted(cpu)[blocks // 2] * 1e3, sorted(wall)[blocks // 2] * 1e3


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--side", type=int, default=47)
    parser.add_argument("--grid", type=int, default=64)
    parser.add_argument("--blocks", type=int, default=5)
    parser.add_argument("--n", type=int, default=20)
    args = parser.parse_args(argv)
    k = M.KcMpm(3, args.side, args.grid, steps=1, loss=False)
    k.forward()
    launches = []
    real = kc.launch

    def spy(kernel, dim=None, inputs=(), outputs=(), **kw):
        launches.append((kernel, dim, list(inputs), list(outputs), kw))
        return real(kernel, dim=dim, inputs=inputs, outputs=outputs, **kw)

    kc.launch = spy
    try:
        k.forward()
    finally:
        kc.launch = real
    rows = []
    for kernel, dim, ins, outs, kw in launches:
        # the bucket counts accumulate (atomic adds): zero them as the step does, or the sort
        # that follows would place particles past the end of its order array
        counts = [a for a in outs if kernel.key.startswith("slab_keys")][1:]

        def one(kernel=kernel, dim=dim, ins=ins, outs=outs, kw=kw, counts=counts):
            for c in counts:
                c.zero_()
            real(kernel, dim=dim, inputs=ins, outputs=outs, **kw)
        c1, _ = timed(one, 1, args.n, args.blocks)
        split = []
        c2, w2 = timed(one, 2, args.n, args.blocks, split)
        rows.append((kernel.key, str(dim), c1, c2, *split, w2))
    s1, _ = timed(k.forward, 1, args.n, args.blocks)
    split = []
    s2, sw2 = timed(k.forward, 2, args.n, args.blocks, split)
    print(f"{'launch':36s} {'dim':>14s} {'cpu1':>7s} {'cpu2':>7s} {'main2':>7s} {'other2':>7s} {'wall2':>7s}  (ms)")
    for r in rows:
        print(f"{r[0][:36]:36s} {r[1]:>14s}" + "".join(f" {v:7.3f}" for v in r[2:]))
    sums = [sum(r[i] for r in rows) for i in range(2, 7)]
    print(f"{'sum of launches':36s} {'':>14s}" + "".join(f" {v:7.3f}" for v in sums))
    print(f"{'whole step':36s} {'':>14s}" + "".join(f" {v:7.3f}" for v in (s1, s2, *split, sw2)))
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
