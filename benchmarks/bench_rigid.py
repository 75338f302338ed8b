"""Rigid-body benchmark: a pile of mixed spheres, boxes and capsules falling onto the ground.

The scene (the same for both engines, built by :func:`pile`): ``n`` free bodies, a third each
spheres (radius 0.06 m), boxes (half extents 0.05 m) and capsules (radius 0.04 m, half height
0.05 m along the body's y), density 1000 kg/m^3, random orientations, on a square grid of
columns 0.18 m apart in 4 layers 0.18 m apart, the lowest 0.1 m above a ground plane at y = 0
(gravity -9.81 m/s^2 along y).  Contacts: penalty contacts of stiffness ``ke`` = 1e4 N/m and
Coulomb friction mu = 0.5 for body-ground and body-body pairs, semi-implicit Euler with
dt = 1 ms.  The first ``--settle`` steps (default 300: all layers have landed) are not timed;
then both engines are timed over ``--steps`` steps per sample, interleaved (kc, newton, kc,
...), so both measure the same phase of the fall.

Newton (``pip install newton``; it runs on warp-lang's CPU device, one thread) is set up
as near to ours as its API allows: ``newton.solvers.SolverSemiImplicit`` with its own
collision pipeline (SAP broad phase, the pipeline's contacts recomputed every step),
``ShapeConfig(ke=1e4, kd=50, kf=100, mu=0.5)`` (its damping ``kd`` and friction stiffness
``kf`` have no exact counterpart: our contact damping comes from the restitution of the
material, 0.5), angular damping 0 (ours has none).  Newton's capsules run along their
local z: a shape rotation puts them along y like ours.

Reported (medians): steps per second of each engine and of kernelcore with its default
threads and one thread, ``speedup`` = kc steps/s / newton steps/s (> 1: kernelcore faster),
and the mean body height after the run in both (a check that the two simulated the same
pile).  ``--profile`` adds seconds per step of each phase of kernelcore's step.

Run: python benchmarks/bench_rigid.py --sizes 1000,10000 --out benchmarks/results/rigid.json
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

import sim  # noqa: E402
from common import environment, interleaved, load_average, ratio, write_json  # noqa: E402

DT = 1.0e-3
KE = 1.0e4
MU = 0.5
RESTITUTION = 0.5
NEWTON_KD, NEWTON_KF = 50.0, 100.0
DENSITY = 1000.0
SPACING = 0.18
SPHERE_R = 0.06
BOX_HALF = 0.05
CAPSULE_R, CAPSULE_HALF = 0.04, 0.05
LAYERS = 4


def pile(n, seed=0):
    """The bodies of the scene: [(kind 'sphere'|'box'|'capsule', position (3,), quaternion (x, y, z, w))]."""
    rng = np.random.default_rng(seed)
    side = max(1, int(math.ceil(math.sqrt(n / LAYERS))))  # a squat pile: it is in contact after ~0.3 s
    layer = side * side
    bodies = []
    for k in range(n):
        lay, rest = divmod(k, layer)
        i, j = divmod(rest, side)
        pos = np.array([(i - 0.5 * (side - 1)) * SPACING, 0.1 + lay * SPACING, (j - 0.5 * (side - 1)) * SPACING])
        q = rng.normal(size=4)
        q /= np.linalg.norm(q)
        bodies.append((("sphere", "box", "capsule")[k % 3], pos, q))
    return bodies


def set_kc_threads(n):
    if n == "default":
        os.environ.pop("KERNELCORE_NUM_THREADS", None)
    else:
        os.environ["KERNELCORE_NUM_THREADS"] = str(n)


class KcPile:
    """The pile in kernelcore: sim.ModelBuilder + SolverSemiImplicit (penalty contacts)."""

    def __init__(self, n, seed=0):
        b = sim.ModelBuilder()
        mat = b.add_material(ke=KE, restitution=RESTITUTION, mu=MU)
        b.set_ground_plane(material=mat)
        for kind, pos, q in pile(n, seed):
            body = b.add_body(tuple(pos) + tuple(q))
            if kind == "sphere":
                b.add_shape_sphere(radius=SPHERE_R, body=body, density=DENSITY, material=mat)
            elif kind == "box":
                b.add_shape_box(half_extents=(BOX_HALF,) * 3, body=body, density=DENSITY, material=mat)
            else:
                b.add_shape_capsule(radius=CAPSULE_R, half_height=CAPSULE_HALF, body=body, density=DENSITY,
                                    material=mat)
        self.model = b.finalize()
        self.solver = sim.SolverSemiImplicit(self.model)
        self.s0, self.s1 = self.model.state(), self.model.state()
        self.control = self.model.control()

    def steps(self, k):
        for _ in range(k):
            self.solver.step(self.model, self.s0, self.s1, self.control, DT)
            self.s0, self.s1 = self.s1, self.s0

    def heights(self):
        return self.s0.body_q.numpy()[:, 1].astype(np.float64)


class NewtonPile:
    """The same pile in Newton (warp-lang, CPU device): SolverSemiImplicit + CollisionPipeline."""

    def __init__(self, n, seed=0):
        import newton
        import warp as wp

        self.wp = wp
        b = newton.ModelBuilder(up_axis=newton.Axis.Y, gravity=(0.0, -9.81, 0.0))
        cfg = newton.ModelBuilder.ShapeConfig(density=DENSITY, ke=KE, kd=NEWTON_KD, kf=NEWTON_KF, mu=MU)
        b.add_ground_plane(cfg=cfg)
        s = math.sqrt(0.5)
        z_to_y = wp.transform(wp.vec3(0.0, 0.0, 0.0), wp.quat(-s, 0.0, 0.0, s))  # Newton's capsules run along z
        for kind, pos, q in pile(n, seed):
            body = b.add_body(xform=wp.transform(wp.vec3(*pos), wp.quat(*q)))
            if kind == "sphere":
                b.add_shape_sphere(body, radius=SPHERE_R, cfg=cfg)
            elif kind == "box":
                b.add_shape_box(body, hx=BOX_HALF, hy=BOX_HALF, hz=BOX_HALF, cfg=cfg)
            else:
                b.add_shape_capsule(body, xform=z_to_y, radius=CAPSULE_R, half_height=CAPSULE_HALF, cfg=cfg)
        self.model = b.finalize(device="cpu")
        self.solver = newton.solvers.SolverSemiImplicit(self.model, angular_damping=0.0)
        self.pipeline = newton.CollisionPipeline(self.model, broad_phase="sap")
        self.contacts = self.pipeline.contacts()
        self.s0, self.s1 = self.model.state(), self.model.state()
        self.control = self.model.control()

    def steps(self, k):
        for _ in range(k):
            self.pipeline.collide(self.s0, self.contacts)
            self.solver.step(self.s0, self.s1, self.control, self.contacts, DT)
            self.s0, self.s1 = self.s1, self.s0
        self.wp.synchronize()

    def heights(self):
        return self.s0.body_q.numpy()[:, 1].astype(np.float64)


@contextlib.contextmanager
def phase_timer(totals):
    """Time each phase of kernelcore's SolverSemiImplicit.step (kernels run synchronously on the
    CPU, so the wall time of a launcher is that of its kernels) into ``totals`` {name: seconds}."""
    import sim.solvers.semi_implicit as si
    from sim.collide_body_pairs import BodyPairContacts

    names = ["zero_forces", "zero_body_forces", "eval_control_forces", "eval_springs", "eval_particle_shape_contacts",
             "integrate_particles", "eval_body_control_forces", "eval_body_static_contacts", "integrate_bodies"]
    saved = {name: getattr(si, name) for name in names}
    saved_pairs = BodyPairContacts.eval

    def wrap(name, fn):
        def timed(*a, **k):
            t0 = time.perf_counter()
            out = fn(*a, **k)
            totals[name] = totals.get(name, 0.0) + time.perf_counter() - t0
            return out
        return timed

    for name, fn in saved.items():
        setattr(si, name, wrap(name, fn))
    BodyPairContacts.eval = wrap("body_pairs (broad + narrow phase)", saved_pairs)
    try:
        yield totals
    finally:
        for name, fn in saved.items():
            setattr(si, name, fn)
        BodyPairContacts.eval = saved_pairs


def run_size(n, args, newton_ok):
    thread_opts = [t.strip() for t in args.kc_threads.split(",") if t.strip()]
    sims, threads, cases = {}, {}, {}
    for t in thread_opts:
        name = "kc" if t == "default" else f"kc_{t}thread"
        sims[name], threads[name] = KcPile(n), t
    if newton_ok:
        sims["newton"], threads["newton"] = NewtonPile(n), "default"

    def case(name):
        def run():
            set_kc_threads(threads[name])
            sims[name].steps(args.steps)
        return run

    cases = {name: case(name) for name in sims}
    t0 = time.perf_counter()
    for name, s in sims.items():  # compile and land the bottom layers, untimed
        set_kc_threads(threads[name])
        s.steps(args.settle)
    settle_s = time.perf_counter() - t0
    res = interleaved(cases, repeats=args.repeats, warmup=0)
    set_kc_threads("default")
    out = {"bodies": n, "steps_per_sample": args.steps, "settle_steps": args.settle, "settle_seconds": round(settle_s, 2),
           "load_average": load_average()}
    for name, r in res.items():
        h = sims[name].heights()
        out[name] = {"steps_per_second": round(args.steps / r["median"], 2), "median_s": r["median"],
                     "samples": r["samples"], "cpu_median_s": r["cpu_median"],
                     "mean_height_m": round(float(h.mean()), 4), "min_height_m": round(float(h.min()), 4),
                     "max_height_m": round(float(h.max()), 4)}
    if "newton" in out:
        for name in sims:
            if name != "newton":
                out[f"speedup_{name}_vs_newton"] = ratio(res["newton"]["median"], res[name]["median"])
    if args.profile:
        totals = {}
        with phase_timer(totals):
            sims["kc"].steps(args.steps)
        out["kc_profile_s_per_step"] = {k: round(v / args.steps, 6) for k, v in
                                        sorted(totals.items(), key=lambda kv: -kv[1])}
    return out


def newton_available():
    """(True, version) or (False, why) — the reason is reported in the JSON."""
    try:
        import newton
        import warp as wp

        wp.config.quiet = True
        wp.init()
        return True, getattr(newton, "__version__", "?")
    except Exception as e:  # noqa: BLE001 - any import/initialisation failure is reported, not raised
        return False, f"{type(e).__name__}: {e}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000", help="comma list of body counts")
    ap.add_argument("--steps", type=int, default=20, help="steps per timed sample")
    ap.add_argument("--settle", type=int, default=300, help="untimed steps first (compilation, landing)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--kc-threads", default="default,1", help="comma list of kernelcore thread counts")
    ap.add_argument("--no-newton", action="store_true", help="kernelcore figures only")
    ap.add_argument("--profile", action="store_true", help="seconds per step of each phase of kernelcore's step")
    ap.add_argument("--out", default=None, help="also write the JSON here")
    args = ap.parse_args(argv)
    results = {}
    # Warp prints its start-up and module-load messages to stdout: keep stdout for the JSON
    with contextlib.redirect_stdout(sys.stderr):
        newton_ok, newton_info = (False, "not requested (--no-newton)") if args.no_newton else newton_available()
        for n in [int(s) for s in args.sizes.split(",") if s.strip()]:
            results[str(n)] = run_size(n, args, newton_ok)
    import warp

    out = {"benchmark": "rigid", "environment": environment(),
           "newton": newton_info if newton_ok else None, "newton_unavailable": None if newton_ok else newton_info,
           "warp_version": getattr(warp, "__version__", None) if newton_ok else None,
           "settings": {"dt": DT, "ke": KE, "mu": MU, "restitution_kc": RESTITUTION, "newton_kd": NEWTON_KD,
                        "newton_kf": NEWTON_KF, "density": DENSITY, "spacing": SPACING},
           "note": "speedup = newton median / kernelcore median seconds per sample (> 1: kernelcore faster); "
                   "Warp's CPU backend (Newton's) is single-threaded, kc uses its default thread count and 1",
           "results": results}
    write_json(out, args.out)
    return out


if __name__ == "__main__":
    main()
