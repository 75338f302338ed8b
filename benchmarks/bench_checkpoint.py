"""Checkpointed vs plain Tape over long mass-spring rollouts: time and peak memory.

System: a chain of 16 particles (one fixed) joined by 15 springs, SolverSemiImplicit with
spring damping 2, gravity and an external force from a Control that requires grad, dt = 1e-3 s; loss = sum of
the final positions' x, gradient w.r.t. the Control force, the initial state and the spring
stiffnesses.  For N = 1K, 10K, 100K steps, each configuration runs in its own process:

  plain:        N+1 states from model.state() recorded on one kc.Tape, tape.backward()
  checkpointed: kc.checkpointed(step, s0, N, make_state=model.state) (segment = ceil(sqrt N))

Reported: forward time (recorded), backward time, and peak RSS growth of the process over
the rollout (ru_maxrss after minus RSS before; it includes the tape's records, not just the
states).  The gradient of the control force from both runs is printed so they can be
compared (bitwise equal on the CPU at a fixed thread count).  Also DiffTaichi's
gradient_explosion figure: d x / d a after 99,999 steps of v' = v + a, x' = x + dt v'
(dt = 1e-3) through kc.checkpointed, expected 4,999,950.

Run: python benchmarks/bench_checkpoint.py [--steps 1000,10000,100000] [--skip-plain-above 100000]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import kernelcore as kc  # noqa: E402
import sim  # noqa: E402


def _rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def run_one(num_steps: int, mode: str) -> dict:
    @kc.kernel
    def sum_x(q: kc.array(dtype=kc.vec3), loss: kc.array(dtype=float)):
        i = kc.tid()
        kc.atomic_add(loss, 0, q[i][0])

    b = sim.ModelBuilder()
    b.add_particle((0.0, 1.0, 0.0), mass=0.0)
    for k in range(1, 16):
        b.add_particle((0.1 * k, 1.0, 0.0), mass=0.1)
        b.add_spring(k - 1, k, 500.0, 2.0)
    m = b.finalize(requires_grad=True)
    solver = sim.SolverSemiImplicit(m)
    ctrl = m.control(requires_grad=True)
    ctrl.particle_f_ext.assign(kc.array(np.tile([0.05, 0.0, 0.0], (m.particle_count, 1)).astype(np.float32),
                                        dtype=kc.vec3))
    dt = 1e-3

    def step(i, a, c):
        solver.step(m, a, c, ctrl, dt)

    # warm up (compile, first-call costs) outside the measurement
    w0, w1 = m.state(), m.state()
    step(0, w0, w1)
    kc.launch(sum_x, m.particle_count, inputs=[w1.particle_q], outputs=[kc.zeros(1, dtype=float)])
    s0 = m.state()
    loss = kc.zeros(1, dtype=float, requires_grad=True)
    base = _rss_bytes()
    t0 = time.perf_counter()
    tape = kc.Tape()
    with tape:
        if mode == "plain":
            cur = s0
            for i in range(num_steps):
                nxt = m.state()
                step(i, cur, nxt)
                cur = nxt
        else:
            cur = kc.checkpointed(step, s0, num_steps, make_state=m.state)
        kc.launch(sum_x, m.particle_count, inputs=[cur.particle_q], outputs=[loss])
    t1 = time.perf_counter()
    tape.backward(loss)
    t2 = time.perf_counter()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    state_bytes = sum(a.size * a.dtype._size_ if hasattr(a.dtype, "_size_") else a.numpy().nbytes
                      for _, a in s0.arrays()) * 2
    return dict(steps=num_steps, mode=mode, forward_s=t1 - t0, backward_s=t2 - t1,
                peak_rss_growth_mb=max(0, peak - base) / 2**20, state_kb=state_bytes / 1024,
                loss=float(loss.numpy()[0]), grad_f_ext=float(np.abs(ctrl.particle_f_ext.grad.numpy()).sum()),
                threads=kc.get_num_threads() if hasattr(kc, "get_num_threads") else None)


@kc.kernel
def _advance32(x: kc.array(dtype=kc.float32), v: kc.array(dtype=kc.float32), a: kc.array(dtype=kc.float32),
               dt: kc.float32, x_out: kc.array(dtype=kc.float32), v_out: kc.array(dtype=kc.float32)):
    vn = v[0] + a[0]
    v_out[0] = vn
    x_out[0] = x[0] + dt * vn


@kc.kernel
def _take32(x: kc.array(dtype=kc.float32), loss: kc.array(dtype=kc.float32)):
    loss[0] = x[0]


@kc.kernel
def _advance64(x: kc.array(dtype=kc.float64), v: kc.array(dtype=kc.float64), a: kc.array(dtype=kc.float64),
               dt: kc.float64, x_out: kc.array(dtype=kc.float64), v_out: kc.array(dtype=kc.float64)):
    vn = v[0] + a[0]
    v_out[0] = vn
    x_out[0] = x[0] + dt * vn


@kc.kernel
def _take64(x: kc.array(dtype=kc.float64), loss: kc.array(dtype=kc.float64)):
    loss[0] = x[0]


def gradient_explosion(num_steps=100_000, dt=1e-3, dtype=kc.float32) -> dict:
    """DiffTaichi's gradient_explosion (no damping): d x / d a after num_steps - 1 advances."""
    advance, take = (_advance64, _take64) if dtype is kc.float64 else (_advance32, _take32)
    a = kc.array(np.array([1.0]), dtype=dtype, requires_grad=True)
    s0 = (kc.zeros(1, dtype=dtype, requires_grad=True), kc.zeros(1, dtype=dtype, requires_grad=True))
    loss = kc.zeros(1, dtype=dtype, requires_grad=True)
    t0 = time.perf_counter()
    tape = kc.Tape()
    with tape:
        out = kc.checkpointed(lambda i, s, t: kc.launch(advance, 1, inputs=[s[0], s[1], a, dt], outputs=[t[0], t[1]]),
                              s0, num_steps - 1)  # DiffTaichi: range(1, num_steps)
        kc.launch(take, 1, inputs=[out[0]], outputs=[loss])
    tape.backward(loss)
    n = num_steps - 1
    return dict(num_steps=num_steps, dtype=str(np.dtype(a.numpy().dtype)), grad=float(a.grad.numpy()[0]),
                expected=dt * n * (n + 1) / 2, seconds=time.perf_counter() - t0)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", default="1000,10000,100000")
    ap.add_argument("--skip-plain-above", type=int, default=10**9,
                    help="do not run the plain tape above this many steps (memory)")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--explosion", action="store_true", help="also run gradient_explosion")
    ap.add_argument("--explosion-steps", type=int, default=100_000, help="its num_steps (DiffTaichi: 1e5)")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    if args.one:
        n, mode = args.one.split(":")
        print(json.dumps(run_one(int(n), mode)))
        return
    rows = []
    for n in [int(s) for s in args.steps.split(",")]:
        for mode in ("plain", "checkpointed"):
            if mode == "plain" and n > args.skip_plain_above:
                print(f"N={n:>7} plain        skipped (--skip-plain-above {args.skip_plain_above})")
                continue
            out = subprocess.run([sys.executable, __file__, "--one", f"{n}:{mode}"], capture_output=True, text=True)
            if out.returncode:
                print(f"N={n:>7} {mode:<12} failed: {out.stderr.strip().splitlines()[-1:]}")
                continue
            r = json.loads(out.stdout.strip().splitlines()[-1])
            rows.append(r)
            print(f"N={n:>7} {mode:<12} forward {r['forward_s']:8.2f} s  backward {r['backward_s']:8.2f} s  "
                  f"peak RSS growth {r['peak_rss_growth_mb']:9.1f} MB  |grad f_ext| {r['grad_f_ext']:.9g}")
    if args.explosion:
        for dtype in (kc.float32, kc.float64):
            r = gradient_explosion(args.explosion_steps, dtype=dtype)
            rows.append(r)
            print(f"gradient_explosion num_steps={r['num_steps']} {r['dtype']}: d x/d a = {r['grad']:.3f} "
                  f"(closed form {r['expected']:.3f}) in {r['seconds']:.1f} s")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
