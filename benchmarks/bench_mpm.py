"""sim.SolverMPM benchmarks: 3-D step time, 2-D diffmpm-size forward + backward, memory; Taichi and Warp CPU as peers.

Cases (each against the same algorithm written for Taichi in this file when taichi is
installed, and for the 2-D case also with warp-lang on its CPU device when warp imports:
the MLS-MPM kernels of bench_autodiff.py, ``wp_p2g`` / ``wp_g2p``, with this file's grid
update; all measured in the same process, interleaved; ratios > 1 mean kernelcore is faster):

(a) ``step3d``: one MLS-MPM step (neo-Hookean, APIC, separate walls, gravity) of a block of
    ``--particles3d`` particles (default 100K) on a 64^3-cell grid (the step alone: no loss
    launch, as the Taichi step).
(b) ``diffmpm2d``: ``--steps`` substeps of a 6.4K-particle neo-Hookean block on a 128^2 grid,
    forward alone and forward + backward (gradient of the mean final x position w.r.t. the
    initial velocities).  kernelcore keeps one grid per state (tape replay); the Taichi
    version recomputes each step's grid in its backward pass (DiffTaichi's diffmpm scheme);
    the Warp version keeps every step's arrays on its wp.Tape.
(c) ``--memory-steps N`` (default 0 = off): peak resident memory of a taped N-step run of (b)
    plus its backward (1024 = the diffmpm size; must stay under 24 GiB).

Run: python benchmarks/bench_mpm.py --out benchmarks/results/mpm.json --memory-steps 1024
"""

import argparse
import os
import resource
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import kernelcore as kc  # noqa: E402
import sim  # noqa: E402
from common import environment, interleaved, load_average, ratio, write_json  # noqa: E402

E, NU, RHO, GRAVITY = 400.0, 0.2, 1.0, 9.8
DT = 1.5e-4          # s; within the CFL guard at dx = 1/128 (0.5 dx / c = 1.85e-4)


def block(n_side, dim, lower, size, seed=3):
    """Particle positions (n, 3) filling a cube/square of ``size`` at ``lower``, and their volume."""
    g = (np.arange(n_side) + 0.5) / n_side * size
    axes = np.meshgrid(*([g] * dim), indexing="ij")
    x = np.zeros((n_side ** dim, 3))
    for d in range(dim):
        x[:, d] = lower[d] + axes[d].ravel()
    vol = (size / n_side) ** dim
    rng = np.random.default_rng(seed)
    v = rng.normal(0.0, 0.3, x.shape) + np.array([1.0, -0.5, 0.0])
    if dim == 2:
        v[:, 2] = 0.0
    return x.astype(np.float32), v.astype(np.float32), vol


# ----------------------------------------------------------------------------------------------
# kernelcore (the library solver)
# ----------------------------------------------------------------------------------------------
@kc.kernel
def mean_x_loss(q: kc.array(dtype=kc.vec3), scale: float, loss: kc.array(dtype=float)):
    p = kc.tid()
    kc.atomic_add(loss, 0, q[p][0] * scale)


# the loss, too, is part of the 2-D step's fwd+bwd: one thread at the 2-D solver's sizes (its
# backward keeps this grain too, kernelcore/launch.py _prepare_backward)
sim.mpm_transfer.serial_2d(mean_x_loss)


class KcMpm:
    def __init__(self, dim, n_side, grid, steps=1, requires_grad=False, loss=True):
        size = 0.4 if dim == 2 else 0.5
        x, v, vol = block(n_side, dim, (0.3, 0.2, 0.25), size)
        b = sim.ModelBuilder(gravity=(0.0, -GRAVITY, 0.0))
        mat = b.add_material(model="neo_hookean", youngs_modulus=E, poisson_ratio=NU)
        b.add_particles(x, v, volume=vol, density=RHO, material=mat)
        self.model = b.finalize(requires_grad=requires_grad)
        self.solver = sim.SolverMPM(self.model, dx=1.0 / grid, bounds=((0.0,) * dim, (1.0,) * dim), dim=dim,
                                    boundary="separate")
        self.steps, self.grad = steps, requires_grad
        # the 3-D step case times the step alone, as its Taichi peer (TiStep3d) computes no loss
        self.with_loss = loss or requires_grad
        self.states = [self.model.state() for _ in range(steps + 1 if requires_grad else 2)]
        self.loss = kc.zeros(1, dtype=float, requires_grad=True)
        self.grad_v0 = None

    def _run(self):
        m, S = self.model, self.states
        for k in range(self.steps):
            if self.grad:
                self.solver.step(m, S[k], S[k + 1], None, DT)
            else:
                self.solver.step(m, S[k % 2], S[(k + 1) % 2], None, DT)
        if not self.with_loss:
            return
        last = S[-1] if self.grad else S[self.steps % 2]
        self.loss.zero_()
        kc.launch(mean_x_loss, dim=m.particle_count, inputs=[last.particle_q, 1.0 / m.particle_count, self.loss])

    def forward(self):
        self._run()
        kc.synchronize()

    def forward_backward(self):
        tape = kc.Tape()
        with tape:
            self._run()
        tape.backward(loss=self.loss)
        self.grad_v0 = self.states[0].particle_qd.grad.numpy()[:, :2].copy()
        tape.zero()


# ----------------------------------------------------------------------------------------------
# Taichi (same algorithm, written here; optional)
# ----------------------------------------------------------------------------------------------
_ti = None


def taichi():
    global _ti
    if _ti is None:
        try:
            import taichi as ti
        except ImportError:
            _ti = False
            return None
        ti.init(arch=ti.cpu, default_fp=ti.f32, log_level=ti.ERROR)
        _ti = ti
    return _ti or None


class TiStep3d:
    """One 3-D MLS-MPM step in Taichi (neo-Hookean, APIC, separate walls)."""

    def __init__(self, n_side, grid):
        ti = taichi()
        x_np, v_np, vol = block(n_side, 3, (0.3, 0.2, 0.25), 0.5)
        n, pad = len(x_np), 3
        G = grid + 2 * pad + 1
        dx, inv_dx = 1.0 / grid, float(grid)
        p_mass, mu, la = vol * RHO, E / (2 * (1 + NU)), E * NU / ((1 + NU) * (1 - 2 * NU))
        x = ti.Vector.field(3, ti.f32, n)
        v = ti.Vector.field(3, ti.f32, n)
        C = ti.Matrix.field(3, 3, ti.f32, n)
        F = ti.Matrix.field(3, 3, ti.f32, n)
        gv = ti.Vector.field(3, ti.f32, (G, G, G))
        gm = ti.field(ti.f32, (G, G, G))
        x.from_numpy(x_np + pad * dx)
        v.from_numpy(v_np)
        F.from_numpy(np.tile(np.eye(3, dtype=np.float32), (n, 1, 1)))

        @ti.kernel
        def substep():
            for I in ti.grouped(gm):
                gv[I] = ti.Vector([0.0, 0.0, 0.0])
                gm[I] = 0.0
            for p in x:
                base = int(x[p] * inv_dx - 0.5)
                fx = x[p] * inv_dx - base
                w = [0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1.0) ** 2, 0.5 * (fx - 0.5) ** 2]
                Fn = (ti.Matrix.identity(ti.f32, 3) + DT * C[p]) @ F[p]
                F[p] = Fn
                J = Fn.determinant()
                tau = mu * (Fn @ Fn.transpose() - ti.Matrix.identity(ti.f32, 3)) \
                    + la * ti.log(J) * ti.Matrix.identity(ti.f32, 3)
                affine = -DT * vol * 4 * inv_dx * inv_dx * tau + p_mass * C[p]
                for i, j, k in ti.static(ti.ndrange(3, 3, 3)):
                    off = ti.Vector([i, j, k])
                    dpos = (off - fx) * dx
                    wt = w[i][0] * w[j][1] * w[k][2]
                    gv[base + off] += wt * (p_mass * v[p] + affine @ dpos)
                    gm[base + off] += wt * p_mass
            for I in ti.grouped(gm):
                if gm[I] > 0:
                    gv[I] = gv[I] / gm[I] + DT * ti.Vector([0.0, -GRAVITY, 0.0])
                for d in ti.static(range(3)):
                    if I[d] <= pad and gv[I][d] < 0:
                        gv[I][d] = 0.0
                    if I[d] >= G - 1 - pad and gv[I][d] > 0:
                        gv[I][d] = 0.0
            for p in x:
                base = int(x[p] * inv_dx - 0.5)
                fx = x[p] * inv_dx - base
                w = [0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1.0) ** 2, 0.5 * (fx - 0.5) ** 2]
                nv = ti.Vector.zero(ti.f32, 3)
                nC = ti.Matrix.zero(ti.f32, 3, 3)
                for i, j, k in ti.static(ti.ndrange(3, 3, 3)):
                    off = ti.Vector([i, j, k])
                    wt = w[i][0] * w[j][1] * w[k][2]
                    g = gv[base + off]
                    nv += wt * g
                    nC += 4 * inv_dx * wt * g.outer_product(off - fx)
                v[p] = nv
                C[p] = nC
                x[p] += DT * nv

        self.substep = substep
        self.ti = ti

    def forward(self):
        self.substep()
        self.ti.sync()


class TiDiffMpm2d:
    """The 2-D case in Taichi with autodiff: per-step particle fields, grid recomputed in backward."""

    def __init__(self, n_side, grid, steps):
        ti = taichi()
        x_np, v_np, vol = block(n_side, 2, (0.3, 0.2), 0.4)
        n, pad, S = len(x_np), 3, steps
        G = grid + 2 * pad + 1
        dx, inv_dx = 1.0 / grid, float(grid)
        p_mass, mu, la = vol * RHO, E / (2 * (1 + NU)), E * NU / ((1 + NU) * (1 - 2 * NU))
        min_mass = 1.0e-9 * p_mass
        x = ti.Vector.field(2, ti.f32, (S + 1, n), needs_grad=True)
        v = ti.Vector.field(2, ti.f32, (S + 1, n), needs_grad=True)
        C = ti.Matrix.field(2, 2, ti.f32, (S + 1, n), needs_grad=True)
        F = ti.Matrix.field(2, 2, ti.f32, (S + 1, n), needs_grad=True)
        gv_in = ti.Vector.field(2, ti.f32, (G, G), needs_grad=True)
        gm = ti.field(ti.f32, (G, G), needs_grad=True)
        gv_out = ti.Vector.field(2, ti.f32, (G, G), needs_grad=True)
        loss = ti.field(ti.f32, (), needs_grad=True)
        x0 = x_np[:, :2] + pad * dx
        v0 = v_np[:, :2]

        @ti.kernel
        def init(xi: ti.types.ndarray(), vi: ti.types.ndarray()):
            for p in range(n):
                x[0, p] = ti.Vector([xi[p, 0], xi[p, 1]])
                v[0, p] = ti.Vector([vi[p, 0], vi[p, 1]])
                F[0, p] = ti.Matrix.identity(ti.f32, 2)
                C[0, p] = ti.Matrix.zero(ti.f32, 2, 2)

        @ti.kernel
        def clear_grid():
            for i, j in gm:
                gv_in[i, j] = ti.Vector([0.0, 0.0])
                gm[i, j] = 0.0
                gv_in.grad[i, j] = ti.Vector([0.0, 0.0])
                gm.grad[i, j] = 0.0
                gv_out.grad[i, j] = ti.Vector([0.0, 0.0])

        @ti.kernel
        def p2g(s: ti.i32):
            for p in range(n):
                base = ti.cast(x[s, p] * inv_dx - 0.5, ti.i32)
                fx = x[s, p] * inv_dx - ti.cast(base, ti.f32)
                w = [0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1.0) ** 2, 0.5 * (fx - 0.5) ** 2]
                Fn = (ti.Matrix.identity(ti.f32, 2) + DT * C[s, p]) @ F[s, p]
                F[s + 1, p] = Fn
                J = Fn.determinant()
                tau = mu * (Fn @ Fn.transpose() - ti.Matrix.identity(ti.f32, 2)) \
                    + la * ti.log(J) * ti.Matrix.identity(ti.f32, 2)
                affine = -DT * vol * 4 * inv_dx * inv_dx * tau + p_mass * C[s, p]
                for i in ti.static(range(3)):
                    for j in ti.static(range(3)):
                        off = ti.Vector([i, j])
                        dpos = (ti.cast(off, ti.f32) - fx) * dx
                        wt = w[i][0] * w[j][1]
                        gv_in[base + off] += wt * (p_mass * v[s, p] + affine @ dpos)
                        gm[base + off] += wt * p_mass

        @ti.kernel
        def grid_op():
            for i, j in gm:
                m = gm[i, j]
                vo = ti.Vector([0.0, 0.0])
                if m > min_mass:   # as SolverMPM: the adjoint of v / m squares m (float32 underflow)
                    vo = gv_in[i, j] / m + DT * ti.Vector([0.0, -GRAVITY])
                if i <= pad and vo[0] < 0:
                    vo[0] = 0.0
                if i >= G - 1 - pad and vo[0] > 0:
                    vo[0] = 0.0
                if j <= pad and vo[1] < 0:
                    vo[1] = 0.0
                if j >= G - 1 - pad and vo[1] > 0:
                    vo[1] = 0.0
                gv_out[i, j] = vo

        @ti.kernel
        def g2p(s: ti.i32):
            for p in range(n):
                base = ti.cast(x[s, p] * inv_dx - 0.5, ti.i32)
                fx = x[s, p] * inv_dx - ti.cast(base, ti.f32)
                w = [0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1.0) ** 2, 0.5 * (fx - 0.5) ** 2]
                nv = ti.Vector([0.0, 0.0])
                nC = ti.Matrix([[0.0, 0.0], [0.0, 0.0]])
                for i in ti.static(range(3)):
                    for j in ti.static(range(3)):
                        off = ti.Vector([i, j])
                        wt = w[i][0] * w[j][1]
                        g = gv_out[base + off]
                        nv += wt * g
                        nC += 4 * inv_dx * wt * g.outer_product(ti.cast(off, ti.f32) - fx)
                v[s + 1, p] = nv
                C[s + 1, p] = nC
                x[s + 1, p] = x[s, p] + DT * nv

        @ti.kernel
        def compute_loss():
            for p in range(n):
                loss[None] += x[S, p][0] / n

        self.ti, self.S = ti, S
        self.k = dict(init=init, clear_grid=clear_grid, p2g=p2g, grid_op=grid_op, g2p=g2p, loss=compute_loss)
        self.fields = (x, v, C, F, loss)
        self.x0, self.v0 = x0.astype(np.float32), v0.astype(np.float32)

    def _forward(self):
        k = self.k
        k["init"](self.x0, self.v0)
        for s in range(self.S):
            k["clear_grid"]()
            k["p2g"](s)
            k["grid_op"]()
            k["g2p"](s)
        self.fields[4][None] = 0.0
        k["loss"]()

    def forward(self):
        self._forward()
        self.ti.sync()

    def forward_backward(self):
        x, v, C, F, loss = self.fields
        k = self.k
        self._forward()
        for f in (x, v, C, F):
            f.grad.fill(0)
        loss.grad[None] = 1.0
        k["loss"].grad()
        for s in reversed(range(self.S)):   # recompute the step's grid, then its adjoints
            k["clear_grid"]()
            k["p2g"](s)
            k["grid_op"]()
            k["g2p"].grad(s)
            k["grid_op"].grad()
            k["p2g"].grad(s)
        self.grad_v0 = v.grad.to_numpy()[0].copy()
        self.ti.sync()


# ----------------------------------------------------------------------------------------------
# Warp (bench_autodiff.py's MLS-MPM kernels on warp's CPU device; optional)
# ----------------------------------------------------------------------------------------------
try:
    import warp as wp
    import bench_autodiff as _ba  # noqa: E402  (wp_p2g, wp_g2p)
except ImportError:
    wp = None

if wp is not None:
    wp.config.quiet = True

    @wp.kernel
    def wp_grid_update_walls(grid_v: wp.array(dtype=wp.vec2, ndim=2), grid_m: wp.array(dtype=float, ndim=2),
                             min_mass: float, gravity: float, dt: float, n: int, pad: int,
                             grid_v_out: wp.array(dtype=wp.vec2, ndim=2)):
        """SolverMPM's 2-D grid update for this case: v = mv / m + dt g where m > min_mass, separate walls."""
        i, j = wp.tid()
        m = grid_m[i, j]
        vx = float(0.0)
        vy = float(0.0)
        if m > min_mass:
            vg = grid_v[i, j] / m
            vx = vg[0]
            vy = vg[1] - gravity * dt
        if i <= pad and vx < 0.0:
            vx = 0.0
        if i >= n - 1 - pad and vx > 0.0:
            vx = 0.0
        if j <= pad and vy < 0.0:
            vy = 0.0
        if j >= n - 1 - pad and vy > 0.0:
            vy = 0.0
        grid_v_out[i, j] = wp.vec2(vx, vy)


class WpDiffMpm2d:
    """The 2-D case with warp on its CPU device; every step's particles and grid stay on the wp.Tape."""

    def __init__(self, n_side, grid, steps):
        x_np, v_np, vol = block(n_side, 2, (0.3, 0.2), 0.4)
        self.pad, self.G, self.S, self.P = 3, grid + 2 * 3 + 1, steps, len(x_np)
        self.inv_dx, self.vol, self.mass = float(grid), vol, vol * RHO
        self.min_mass = 1.0e-9 * self.mass
        self.mu, self.la = E / (2 * (1 + NU)), E * NU / ((1 + NU) * (1 - 2 * NU))
        self.x0 = wp.array(x_np[:, :2] + self.pad / grid, dtype=wp.vec2, device="cpu")
        self.v0 = wp.array(v_np[:, :2], dtype=wp.vec2, device="cpu", requires_grad=True)
        self.F0 = np.tile(np.eye(2, dtype=np.float32), (self.P, 1, 1))
        self.grad_v0 = None

    def _run(self, grad):
        P, G, d = self.P, self.G, "cpu"
        x, v = self.x0, self.v0
        C = wp.zeros(P, dtype=wp.mat22, device=d, requires_grad=grad)
        F = wp.array(self.F0, dtype=wp.mat22, device=d, requires_grad=grad)
        for _ in range(self.S):
            F1 = wp.empty(P, dtype=wp.mat22, device=d, requires_grad=grad)
            gv = wp.zeros((G, G), dtype=wp.vec2, device=d, requires_grad=grad)
            gm = wp.zeros((G, G), dtype=float, device=d, requires_grad=grad)
            wp.launch(_ba.wp_p2g, dim=P, inputs=[x, v, C, F, DT, self.inv_dx, self.mass, self.vol, self.mu, self.la,
                                                 F1, gv, gm], device=d)
            gv1 = wp.empty((G, G), dtype=wp.vec2, device=d, requires_grad=grad)
            wp.launch(wp_grid_update_walls, dim=(G, G), inputs=[gv, gm, self.min_mass, GRAVITY, DT, G, self.pad, gv1],
                      device=d)
            x1 = wp.empty(P, dtype=wp.vec2, device=d, requires_grad=grad)
            v1 = wp.empty(P, dtype=wp.vec2, device=d, requires_grad=grad)
            C1 = wp.empty(P, dtype=wp.mat22, device=d, requires_grad=grad)
            wp.launch(_ba.wp_g2p, dim=P, inputs=[x, gv1, DT, self.inv_dx, x1, v1, C1], device=d)
            x, v, C, F = x1, v1, C1, F1
        loss = wp.zeros(1, dtype=float, device=d, requires_grad=grad)
        wp.launch(_ba.wp_mpm_loss, dim=P, inputs=[x, 1.0 / P, loss], device=d)
        return loss

    def forward(self):
        self._run(False)
        wp.synchronize()

    def forward_backward(self):
        tape = wp.Tape()
        with tape:
            loss = self._run(True)
        tape.backward(loss=loss)
        self.grad_v0 = self.v0.grad.numpy().copy()
        tape.zero()


# ----------------------------------------------------------------------------------------------
def with_threads(fn, threads):
    """fn run with KERNELCORE_NUM_THREADS = threads (None: all cores).

    On a loaded 2-vCPU VM the OpenMP barriers of multi-threaded launches can cost far more
    than the work (measured here: a 2-D step 1.5 ms on one thread, ~14 ms on two), so both
    are reported.
    """
    def run():
        saved = os.environ.get("KERNELCORE_NUM_THREADS")
        if threads is not None:
            os.environ["KERNELCORE_NUM_THREADS"] = str(threads)
        try:
            return fn()
        finally:
            if saved is None:
                os.environ.pop("KERNELCORE_NUM_THREADS", None)
            else:
                os.environ["KERNELCORE_NUM_THREADS"] = saved
    return run


def peak_rss_gib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--particles3d-side", type=int, default=47, help="3-D block side (47^3 = 103,823 particles)")
    parser.add_argument("--grid3d", type=int, default=64, help="3-D cells per axis")
    parser.add_argument("--side2d", type=int, default=80, help="2-D block side (80^2 = 6,400 particles)")
    parser.add_argument("--grid2d", type=int, default=128, help="2-D cells per axis")
    parser.add_argument("--steps", type=int, default=64, help="2-D substeps per forward(+backward) run")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--memory-steps", type=int, default=0, help="also measure peak memory of an N-step taped run")
    parser.add_argument("--no-taichi", action="store_true")
    parser.add_argument("--no-warp", action="store_true")
    parser.add_argument("--skip-3d", action="store_true", help="only the 2-D case (and memory)")
    parser.add_argument("--skip-2d", action="store_true", help="no 2-D diffmpm case (b)")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    ti = None if args.no_taichi else taichi()
    use_wp = wp is not None and not args.no_warp
    res = {"benchmark": "mpm", "environment": environment(), "taichi_version": None,
           "warp_version": wp.config.version if use_wp else None,
           "settings": vars(args), "cases": {}, "load_average_1min": [load_average()]}
    if ti:
        res["taichi_version"] = ".".join(map(str, ti.__version__))

    # (a) 3-D step
    if not args.skip_3d:
        step3d(args, ti, res)

    # (b) 2-D diffmpm size, forward and forward + backward
    if not args.skip_2d:
        diffmpm2d(args, ti, use_wp, res)

    # (c) memory of the diffmpm-size taped run
    if args.memory_steps:
        before = peak_rss_gib()
        km = KcMpm(2, args.side2d, args.grid2d, steps=args.memory_steps, requires_grad=True)
        t0 = time.perf_counter()
        with_threads(km.forward_backward, 1)()
        res["cases"]["memory"] = {"steps": args.memory_steps, "particles": km.model.particle_count,
                                  "grid_nodes": list(km.solver.grid_shape),
                                  "peak_rss_gib_before": round(before, 3), "peak_rss_gib": round(peak_rss_gib(), 3),
                                  "forward_backward_s": round(time.perf_counter() - t0, 2),
                                  "gradient_finite": bool(np.all(np.isfinite(km.grad_v0)))}
    write_json(res, args.out)
    return res


def step3d(args, ti, res):
    kc3 = KcMpm(3, args.particles3d_side, args.grid3d, steps=1, loss=False)
    cases = {"kernelcore": with_threads(kc3.forward, None), "kernelcore_1thread": with_threads(kc3.forward, 1)}
    if ti:
        ti3 = TiStep3d(args.particles3d_side, args.grid3d)
        cases["taichi"] = ti3.forward
    t = interleaved(cases, repeats=args.repeats, warmup=1)
    out = {"particles": kc3.model.particle_count, "grid_nodes": list(kc3.solver.grid_shape),
           "kernelcore_step_s": t["kernelcore"]["median"],
           "kernelcore_1thread_step_s": t["kernelcore_1thread"]["median"],
           # process CPU time per step: steadier than wall time on a shared machine
           "kernelcore_cpu_s": t["kernelcore"]["cpu_median"],
           "kernelcore_1thread_cpu_s": t["kernelcore_1thread"]["cpu_median"]}
    if ti:
        out["taichi_step_s"] = t["taichi"]["median"]
        out["taichi_cpu_s"] = t["taichi"]["cpu_median"]
        out["taichi_over_kernelcore"] = ratio(t["taichi"]["median"], t["kernelcore"]["median"])
        out["taichi_over_kernelcore_1thread"] = ratio(t["taichi"]["median"], t["kernelcore_1thread"]["median"])
    res["cases"]["step3d"] = out
    res["load_average_1min"].append(load_average())


def diffmpm2d(args, ti, use_wp, res):
    """Case (b): 2-D forward and forward + backward against Taichi and Warp."""
    kf = KcMpm(2, args.side2d, args.grid2d, steps=args.steps)
    kb = KcMpm(2, args.side2d, args.grid2d, steps=args.steps, requires_grad=True)
    cases = {"kc_fwd": with_threads(kf.forward, None), "kc_fwd_bwd": with_threads(kb.forward_backward, None),
             "kc_fwd_1t": with_threads(kf.forward, 1), "kc_fwd_bwd_1t": with_threads(kb.forward_backward, 1)}
    if ti:
        t2 = TiDiffMpm2d(args.side2d, args.grid2d, args.steps)
        cases["ti_fwd"] = t2.forward
        cases["ti_fwd_bwd"] = t2.forward_backward
    if use_wp:
        w2 = WpDiffMpm2d(args.side2d, args.grid2d, args.steps)
        cases["wp_fwd"] = w2.forward
        cases["wp_fwd_bwd"] = w2.forward_backward
    t = interleaved(cases, repeats=args.repeats, warmup=1)
    out = {"particles": kf.model.particle_count, "grid_nodes": list(kf.solver.grid_shape), "steps": args.steps,
           "kernelcore_forward_s": t["kc_fwd"]["median"], "kernelcore_forward_backward_s": t["kc_fwd_bwd"]["median"],
           "kernelcore_1thread_forward_s": t["kc_fwd_1t"]["median"],
           "kernelcore_1thread_forward_backward_s": t["kc_fwd_bwd_1t"]["median"]}
    # process CPU time (all threads): steadier than wall time on a shared machine, and it shows what
    # a second thread costs (fork/join, private scatter copies) next to what it saves
    out["cpu_s"] = {name: t[name]["cpu_median"] for name in cases}
    if ti:
        out["taichi_forward_s"] = t["ti_fwd"]["median"]
        out["taichi_forward_backward_s"] = t["ti_fwd_bwd"]["median"]
        out["taichi_over_kernelcore_forward"] = ratio(t["ti_fwd"]["median"], t["kc_fwd"]["median"])
        out["taichi_over_kernelcore_forward_backward"] = ratio(t["ti_fwd_bwd"]["median"], t["kc_fwd_bwd"]["median"])
        out["taichi_over_kernelcore_1thread_forward"] = ratio(t["ti_fwd"]["median"], t["kc_fwd_1t"]["median"])
        out["taichi_over_kernelcore_1thread_forward_backward"] = ratio(t["ti_fwd_bwd"]["median"],
                                                                      t["kc_fwd_bwd_1t"]["median"])
        a, b = kb.grad_v0.astype(np.float64), t2.grad_v0.astype(np.float64)
        out["gradient_rel_diff_vs_taichi"] = float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))
    if use_wp:
        out["warp_forward_s"] = t["wp_fwd"]["median"]
        out["warp_forward_backward_s"] = t["wp_fwd_bwd"]["median"]
        out["warp_over_kernelcore_forward"] = ratio(t["wp_fwd"]["median"], t["kc_fwd"]["median"])
        out["warp_over_kernelcore_forward_backward"] = ratio(t["wp_fwd_bwd"]["median"], t["kc_fwd_bwd"]["median"])
        out["warp_over_kernelcore_1thread_forward"] = ratio(t["wp_fwd"]["median"], t["kc_fwd_1t"]["median"])
        out["warp_over_kernelcore_1thread_forward_backward"] = ratio(t["wp_fwd_bwd"]["median"],
                                                                    t["kc_fwd_bwd_1t"]["median"])
        a, b = kb.grad_v0.astype(np.float64), w2.grad_v0.astype(np.float64)
        out["gradient_rel_diff_vs_warp"] = float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))
    res["cases"]["diffmpm2d"] = out
    res["load_average_1min"].append(load_average())


if __name__ == "__main__":
    main()
