"""DiffTaichi's bouncing ball: gradients through a bounce with penalty and time-of-impact contacts.

A ball (radius 0.05 m) starts at height 0.5 m moving at (-1, -2) m/s, without gravity,
towards the ground at y = 0.1 with restitution 0.8; 203 steps of 2 ms (DiffTaichi's
set-up, their section 4.3 and appendix F).  The final height is
``h_T = 0.15 + e (u T - (h0 - 0.15))`` for vertical speed u, so the true gradients are
d h_T / d h0 = -e and d h_T / d vy0 = -e T.  The table compares what the Tape gives for a
particle and for a sphere body, with penalty contacts at several stiffnesses and with
``SolverSemiImplicit(toi=True)``; the PNG plots the final height against the initial
height (the penalty curve wiggles with the step phase) and the gradients.

Run: python examples/sim_rigid_toi.py --out sim_rigid_toi.png
"""
from __future__ import annotations

import argparse

import numpy as np

import kernelcore as kc
import sim

RADIUS, GROUND, H0, V0, E = 0.05, 0.1, 0.5, (-1.0, -2.0, 0.0), 0.8


class Bounce:
    """One ball (``kind`` "particle" or "body") and its solver; one State per step for the Tape."""

    def __init__(self, kind: str, toi: bool, ke: float = 1.0e4, steps: int = 203, dt: float = 0.002):
        self.kind, self.steps, self.dt = kind, steps, dt
        b = sim.ModelBuilder(gravity=(0.0, 0.0, 0.0))
        b.set_material(0, ke=ke, restitution=E, mu=0.0)
        b.set_ground_plane(offset=GROUND)
        if kind == "particle":
            b.add_particle((0.0, H0, 0.0), V0, mass=1.0, radius=RADIUS)
        else:
            body = b.add_body(kc.transform(kc.vec3(0.0, H0, 0.0), kc.quat(0.0, 0.0, 0.0, 1.0)), vel=V0)
            b.add_shape_sphere(radius=RADIUS, body=body)
        self.model = b.finalize(requires_grad=True)
        self.solver = sim.SolverSemiImplicit(self.model, toi=toi)
        self.states = [self.model.state() for _ in range(steps + 1)]

    def _q(self, s):
        return s.particle_q if self.kind == "particle" else s.body_q

    def _qd(self, s):
        return s.particle_qd if self.kind == "particle" else s.body_qd

    def final_height(self, h0: float = H0, vy0: float = V0[1]) -> float:
        self._q(self.states[0]).numpy()[0, 1] = h0
        self._qd(self.states[0]).numpy()[0, 1] = vy0
        for k in range(self.steps):
            self.solver.step(self.model, self.states[k], self.states[k + 1], None, self.dt)
        return float(self._q(self.states[-1]).numpy()[0, 1])

    def gradients(self, h0: float = H0, vy0: float = V0[1]):
        """(final height [m], d/d h0, d/d vy0 [s]) from the Tape."""
        tape = kc.Tape()
        with tape:
            h = self.final_height(h0, vy0)
        last = self._q(self.states[-1])
        seed = np.zeros(last.numpy().shape, np.float32)
        seed[0, 1] = 1.0
        tape.backward(grads={last: seed})
        first = self.states[0]
        out = (h, float(self._q(first).grad.numpy()[0, 1]), float(self._qd(first).grad.numpy()[0, 1]))
        tape.zero()
        return out


def table(kes, steps, dt):
    """Rows (kind, contact, final height, d/dh0, d/dvy0) for every set-up."""
    rows = []
    for kind in ("particle", "body"):
        for ke in kes:
            rows.append((kind, f"penalty ke={ke:g}", *Bounce(kind, False, ke, steps, dt).gradients()))
        rows.append((kind, "toi", *Bounce(kind, True, 1.0e4, steps, dt).gradients()))
    return rows


def plot(path, kes, steps, dt, rows):
    """Final height against initial height (penalty vs TOI) and the gradient table as bars."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    h0s = np.linspace(H0 - 0.01, H0 + 0.01, 41)
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(11, 4))
    ke = kes[len(kes) // 2]
    for label, sim_ in [(f"penalty ke={ke:g}", Bounce("particle", False, ke, steps, dt)),
                        ("toi", Bounce("particle", True, 1.0e4, steps, dt))]:
        ax0.plot(h0s, [sim_.final_height(h) for h in h0s], label=label)
    t = steps * dt
    ax0.plot(h0s, 0.15 + E * (-V0[1] * t - (h0s - 0.15)), "k--", label="analytic")
    ax0.set_xlabel("initial height [m]")
    ax0.set_ylabel("final height [m]")
    ax0.legend()
    labels = [f"{r[0]}\n{r[1]}" for r in rows]
    x = np.arange(len(rows))
    ax1.bar(x - 0.2, [r[3] for r in rows], 0.4, label="d h_T / d h0")
    ax1.bar(x + 0.2, [r[4] for r in rows], 0.4, label="d h_T / d vy0")
    ax1.axhline(-E, color="C0", ls="--")
    ax1.axhline(-E * t, color="C1", ls="--")
    ax1.set_xticks(x)
    ax1.set_xticklabels(labels, fontsize=7, rotation=30)
    ax1.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=203)
    parser.add_argument("--dt", type=float, default=0.002)
    parser.add_argument("--ke", type=float, nargs="+", default=[1.0e3, 1.0e4, 1.0e5],
                        help="penalty stiffnesses [N/m] to compare")
    parser.add_argument("--out", default="sim_rigid_toi.png", help="PNG plot ('' for none)")
    args = parser.parse_args(argv)
    t = args.steps * args.dt
    rows = table(args.ke, args.steps, args.dt)
    print(f"analytic: d h_T/d h0 = {-E:.4f}, d h_T/d vy0 = {-E * t:.4f} s")
    print(f"{'ball':9s} {'contact':18s} {'h_T [m]':>9s} {'d/d h0':>9s} {'d/d vy0':>9s}")
    for kind, contact, h, g_h, g_v in rows:
        print(f"{kind:9s} {contact:18s} {h:9.4f} {g_h:9.4f} {g_v:9.4f}")
    if args.out:
        plot(args.out, args.ke, args.steps, args.dt, rows)
        print(f"plot written to {args.out}")
    return rows


if __name__ == "__main__":
    main()
