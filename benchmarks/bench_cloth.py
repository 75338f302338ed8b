"""Cloth benchmark: an N x N cloth draping a sphere, steps per second, kernelcore vs Newton (warp CPU).

Scene (same numbers in both frameworks): a 1 m square cloth of N x N cells, 1 kg in all,
starts 2 cm above a sphere of radius 0.4 m resting on the ground and drapes over it.
Membrane tri_ke = tri_ka = 10 N/m, tri_kd = 0.01, bending edge_ke = 1e-3, particle
radius 0.01 m, dt = 5e-4 s (semi-implicit, small enough for both), 1/300 s with
``--xpbd-iterations`` sweeps (XPBD).  Cases:

- ``kc_semi``: sim.SolverSemiImplicit (membrane, bending, penalty sphere/ground contacts);
- ``kc_semi_self``: the same plus ClothSelfContact (BVH candidates, step bound);
- ``kc_xpbd``: sim.SolverXPBD;
- ``kc_vbd``: sim.SolverVBD (``--vbd-iterations`` sweeps, 1/300 s, contact ke 1e4 N/m);
- ``newton_semi`` / ``newton_semi_notri`` / ``newton_xpbd``: newton.solvers.SolverSemiImplicit
  with its particle-triangle self-contact (its default) / without it, SolverXPBD, and
  ``newton_vbd``: newton.solvers.SolverVBD (self-contact off, as kc_vbd; same sweeps, step and
  contact stiffness), with its CollisionPipeline, on warp-lang's CPU device, in the same
  process, interleaved.  Pairs compared: kc_semi vs newton_semi_notri, kc_semi_self vs
  newton_semi, kc_xpbd vs newton_xpbd, kc_vbd vs newton_vbd.

Newton's particle-triangle self-contact costs grow with the square of the size (0.4 steps/s
at 64^2 on this machine), so ``newton_semi`` runs only up to ``--newton-tri-contact-max``
cells per side (64); the 128^2 row compares kc_semi_self with nothing.

Warp 1.19 no longer ships warp.sim, so Newton is the peer.  Newton's tri_ke/tri_ka follow
its own membrane law, so the cloths are alike, not identical; the figures compare cost per
step.  Newton's first run compiles its kernels (minutes, cached afterwards).

Run: python benchmarks/bench_cloth.py --sizes 32,64,128 --out benchmarks/results/cloth.json
(the 128^2 row takes tens of minutes on a loaded machine: ``--sizes 128 --settle 40 --steps 5``
times it after a shorter untimed start).
"""
from __future__ import annotations

import argparse
import contextlib
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import environment, interleaved, load_average, ratio, write_json  # noqa: E402

SIDE = 1.0            # m
MASS = 1.0            # kg in all
TRI_KE = TRI_KA = 10.0
TRI_KD = 0.01
EDGE_KE = 1e-3
RADIUS = 0.01         # particle radius, m
SPHERE = ((0.0, 0.4, 0.0), 0.4)
HEIGHT = 0.82         # cloth height, m: touches the sphere within the settle steps
DT_SEMI = 5e-4
CONTACT_KE = 100.0    # N/m
CONTACT_MU = 0.3
DT_XPBD = 1.0 / 300.0
VBD_CONTACT_KE = 1e4  # N/m: VBD's implicit step takes a stiff penalty at the large step


def cloth_args(n):
    s = math.sqrt(0.5)
    return dict(pos=(-SIDE / 2, HEIGHT, SIDE / 2), rot=(-s, 0.0, 0.0, s), vel=(0.0, 0.0, 0.0), dim_x=n, dim_y=n,
                cell_x=SIDE / n, cell_y=SIDE / n, mass=MASS / (n + 1) ** 2, tri_ke=TRI_KE, tri_ka=TRI_KA,
                tri_kd=TRI_KD, edge_ke=EDGE_KE, edge_kd=0.0, particle_radius=RADIUS)


class KcCloth:
    def __init__(self, n, solver, iterations):
        import sim

        b = sim.ModelBuilder()
        b.set_material(0, ke=CONTACT_KE, restitution=0.0, mu=CONTACT_MU)
        b.set_ground_plane()
        b.add_shape_sphere(SPHERE[0], SPHERE[1])
        b.add_cloth_grid(**cloth_args(n))
        self.model = m = b.finalize()
        if solver == "xpbd":
            self.solver, self.dt = sim.SolverXPBD(m, iterations=iterations), DT_XPBD
        elif solver == "vbd":
            self.solver, self.dt = sim.SolverVBD(m, iterations=iterations, contact_ke=VBD_CONTACT_KE), DT_XPBD
        else:
            contact = sim.ClothSelfContact(m, thickness=RADIUS, ke=100.0, kd=0.01) if solver == "semi_self" else None
            self.solver, self.dt = sim.SolverSemiImplicit(m, self_contact=contact), DT_SEMI
        self.s0, self.s1 = m.state(), m.state()

    def steps(self, k):
        for _ in range(k):
            self.solver.step(self.model, self.s0, self.s1, None, self.dt)
            self.s0, self.s1 = self.s1, self.s0

    def positions(self):
        return self.s0.particle_q.numpy().astype(np.float64)


class NewtonCloth:
    def __init__(self, n, solver, iterations):
        import newton
        import warp as wp

        self.wp = wp
        b = newton.ModelBuilder(up_axis=newton.Axis.Y, gravity=(0.0, -9.81, 0.0))
        b.add_ground_plane()
        b.add_shape_sphere(-1, xform=wp.transform(wp.vec3(*SPHERE[0]), wp.quat_identity()), radius=SPHERE[1])
        a = cloth_args(n)
        a["pos"], a["rot"], a["vel"] = wp.vec3(*a["pos"]), wp.quat(*a["rot"]), wp.vec3(*a["vel"])
        b.add_cloth_grid(**a)
        if solver == "vbd":
            b.color()   # Newton's VBD sweeps over a vertex colouring made by the builder
        self.model = m = b.finalize(device="cpu")
        # the same contact law as kernelcore's material (ke 100 N/m, critically damped for one particle,
        # mu 0.3); Newton's defaults (ke 1e3, kd 10) are unstable for these light particles at this step
        m.soft_contact_ke = CONTACT_KE
        m.soft_contact_kd = 2.0 * math.sqrt(CONTACT_KE * a["mass"])
        m.soft_contact_mu = CONTACT_MU
        if solver == "xpbd":
            self.solver, self.dt = newton.solvers.SolverXPBD(m, iterations=iterations), DT_XPBD
        elif solver == "vbd":
            m.soft_contact_ke = VBD_CONTACT_KE
            self.solver, self.dt = newton.solvers.SolverVBD(m, iterations=iterations), DT_XPBD
        else:   # "semi": with Newton's particle-triangle self-contact (its default); "semi_notri": without
            self.solver = newton.solvers.SolverSemiImplicit(m, enable_tri_contact=solver == "semi")
            self.dt = DT_SEMI
        self.pipeline = newton.CollisionPipeline(m)
        self.contacts = self.pipeline.contacts()
        self.control = m.control()
        self.s0, self.s1 = m.state(), m.state()

    def steps(self, k):
        for _ in range(k):
            self.pipeline.collide(self.s0, self.contacts)
            self.solver.step(self.s0, self.s1, self.control, self.contacts, self.dt)
            self.s0, self.s1 = self.s1, self.s0
        self.wp.synchronize()

    def positions(self):
        return self.s0.particle_q.numpy().astype(np.float64)


def newton_available():
    try:
        import newton
        import warp as wp

        wp.config.quiet = True
        wp.init()
        return True, getattr(newton, "__version__", "?")
    except Exception as e:  # noqa: BLE001 - reported in the JSON, not raised
        return False, f"{type(e).__name__}: {e}"


def run_size(n, args, newton_ok):
    want = set(args.solvers.split(","))
    sims = {}
    for kind in ("semi", "semi_self", "xpbd", "vbd"):
        if kind in want:
            sims[f"kc_{kind}"] = KcCloth(n, kind, args.vbd_iterations if kind == "vbd" else args.xpbd_iterations)
    if newton_ok:
        if "semi_self" in want and n <= args.newton_tri_contact_max:
            sims["newton_semi"] = NewtonCloth(n, "semi", args.xpbd_iterations)
        if "semi" in want:
            sims["newton_semi_notri"] = NewtonCloth(n, "semi_notri", args.xpbd_iterations)
        if "xpbd" in want:
            sims["newton_xpbd"] = NewtonCloth(n, "xpbd", args.xpbd_iterations)
        if "vbd" in want:
            try:
                sims["newton_vbd"] = NewtonCloth(n, "vbd", args.vbd_iterations)
            except Exception as e:  # noqa: BLE001 - reported in the JSON, the other pairs still run
                print(f"newton_vbd unavailable: {type(e).__name__}: {e}", file=sys.stderr)
    t0 = time.perf_counter()
    for s in sims.values():   # compile, untimed
        s.steps(args.settle)
    settle = time.perf_counter() - t0
    res = interleaved({name: (lambda s=s: s.steps(args.steps)) for name, s in sims.items()}, repeats=args.repeats,
                      warmup=0)
    out = {"cells": n, "particles": (n + 1) ** 2, "steps_per_sample": args.steps, "settle_steps": args.settle,
           "settle_seconds": round(settle, 2),
           "load_average": load_average()}
    c, r = np.asarray(SPHERE[0]), SPHERE[1]
    for name, rr in res.items():
        q = sims[name].positions()
        out[name] = {"steps_per_second": round(args.steps / rr["median"], 2), "median_s": rr["median"],
                     "samples": rr["samples"], "finite": bool(np.isfinite(q).all()),
                     "deepest_into_sphere_m": round(float(-(np.linalg.norm(q - c, axis=1) - r).min()), 5)}
    if newton_ok:
        for kc_name, nt_name in (("kc_semi", "newton_semi_notri"), ("kc_semi_self", "newton_semi"),
                                 ("kc_xpbd", "newton_xpbd"), ("kc_vbd", "newton_vbd")):
            if nt_name not in res or kc_name not in res:
                continue
            out[f"speedup_{kc_name}_vs_{nt_name}"] = ratio(res[nt_name]["median"], res[kc_name]["median"])
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="32,64,128", help="comma list of cells per side")
    ap.add_argument("--steps", type=int, default=20, help="steps per timed sample")
    ap.add_argument("--settle", type=int, default=150, help="untimed steps first (compilation, touch-down)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--xpbd-iterations", type=int, default=10)
    ap.add_argument("--vbd-iterations", type=int, default=10)
    ap.add_argument("--solvers", default="semi,semi_self,xpbd,vbd", help="comma list of the cases to run "
                    "(each with its Newton peer)")
    ap.add_argument("--no-newton", action="store_true")
    ap.add_argument("--newton-tri-contact-max", type=int, default=64,
                    help="largest size (cells per side) for newton_semi (its self-contact cost grows as N^4)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    unknown = set(args.solvers.split(",")) - {"semi", "semi_self", "xpbd", "vbd"}
    if unknown:
        ap.error(f"--solvers: unknown case(s) {sorted(unknown)}; choose from semi, semi_self, xpbd, vbd")
    with contextlib.redirect_stdout(sys.stderr):
        newton_ok, info = (False, "not requested (--no-newton)") if args.no_newton else newton_available()
        results = {str(n): run_size(int(n), args, newton_ok) for n in args.sizes.split(",") if n.strip()}
    out = {"benchmark": "cloth", "environment": environment(), "newton": info if newton_ok else None,
           "newton_unavailable": None if newton_ok else info,
           "settings": {"dt_semi": DT_SEMI, "dt_xpbd": DT_XPBD, "tri_ke": TRI_KE, "tri_ka": TRI_KA, "tri_kd": TRI_KD,
                        "edge_ke": EDGE_KE, "particle_radius": RADIUS, "xpbd_iterations": args.xpbd_iterations,
                        "vbd_iterations": args.vbd_iterations, "vbd_contact_ke": VBD_CONTACT_KE},
           "note": "speedup = newton median / kernelcore median seconds per sample (> 1: kernelcore faster); "
                   "Warp's CPU backend is single-threaded, kernelcore uses its default thread count",
           "results": results}
    write_json(out, args.out)
    return out


if __name__ == "__main__":
    main()
