"""Articulation benchmark: batches of cart-poles stepped by SolverFeatherstone, MuJoCo and Newton.

The cart-pole (the same in every engine, Z up, gravity -9.81 m/s^2 along z): a cart of
1 kg (inertia 0.01 kg m^2 about each axis) on a prismatic joint along x, a pole of 0.3 kg
(centre of mass 0.4 m up the pole, inertia diag(0.01, 0.01, 0.001) kg m^2) on a revolute
joint about y, starting at 0.3 rad; no contacts, no damping; semi-implicit Euler with
dt = 1 ms.  A batch of N is N independent copies (``add_builder`` for kernelcore: one model,
one thread per articulation in each launch).

Engines, timed in the same run and interleaved (kc, mujoco, newton, kc, ...):

- kernelcore ``sim.SolverFeatherstone`` on all cores (OpenMP);
- MuJoCo (the ``mujoco`` package): all N copies through ``mujoco.rollout.rollout`` with one
  MjData per core (its C thread pool), integrator "Euler", contacts disabled; a sample is
  ``--steps`` steps of every copy;
- Newton's ``SolverFeatherstone`` on warp-lang's CPU device (one thread), when ``newton``
  imports (``pip install newton``).

Reported (medians): steps per second of the whole batch (batch steps/s) for each engine
and the ratios kc/mujoco and kc/newton (> 1: kernelcore faster), plus the pole angle after
the timed run in each engine as a check that all three simulated the same thing.

Legged robots (``--robots 16,256``): the four-legged robot of examples/robot_batch.py (a
free torso, eight PD-driven hinges, capsule legs, sphere feet, ground contact) walking an
open-loop trot, against MuJoCo on the same robot written as MJCF (position actuators with
kp = 150, kv = 4, armature 0.01, MuJoCo's own soft contacts with friction 0.8, Euler,
dt = 1 ms).  The contact models differ, so the trajectories are similar, not equal; the
figure is the torso height after the run in each engine.

Run: python benchmarks/bench_articulation.py --sizes 1,64,1024 --robots 16,256 \
         --out benchmarks/results/articulation.json

``--one-thread`` pins both engines to one thread (kernelcore through KERNELCORE_NUM_THREADS=1,
MuJoCo's rollout with one MjData): the comparison a shared, loaded machine cannot skew, since
a parallel step there waits for whichever of its threads the scheduler has put aside.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples"))

from common import environment, interleaved, load_average, ratio, write_json  # noqa: E402

DT = 1.0e-3
Q0 = (0.0, 0.3)
CART_MASS, CART_INERTIA = 1.0, 0.01
POLE_MASS, POLE_COM, POLE_INERTIA = 0.3, 0.4, (0.01, 0.01, 0.001)

MJCF = f"""
<mujoco>
  <option timestep="{DT}" integrator="Euler" gravity="0 0 -9.81"><flag contact="disable"/></option>
  <worldbody>
    <body name="cart">
      <joint name="slide" type="slide" axis="1 0 0"/>
      <inertial pos="0 0 0" mass="{CART_MASS}" diaginertia="{CART_INERTIA} {CART_INERTIA} {CART_INERTIA}"/>
      <body name="pole">
        <joint name="hinge" type="hinge" axis="0 1 0"/>
        <inertial pos="0 0 {POLE_COM}" mass="{POLE_MASS}" diaginertia="{' '.join(map(str, POLE_INERTIA))}"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


class KcCartpoles:
    def __init__(self, n):
        import sim

        env = sim.ModelBuilder(gravity=(0.0, 0.0, -9.81))
        cart = env.add_body(mass=CART_MASS, inertia=np.eye(3) * CART_INERTIA)
        pole = env.add_body(mass=POLE_MASS, inertia=np.diag(POLE_INERTIA), com=(0, 0, POLE_COM))
        env.add_joint_prismatic(-1, cart, axis=(1, 0, 0), q0=Q0[0])
        env.add_joint_revolute(cart, pole, axis=(0, 1, 0), q0=Q0[1])
        b = sim.ModelBuilder(gravity=(0.0, 0.0, -9.81))
        for i in range(n):
            b.add_builder(env, xform=(0.0, 2.0 * i, 0.0, 0, 0, 0, 1))
        self.model = b.finalize()
        self.solver = sim.SolverFeatherstone(self.model, contacts=False)
        self.s0, self.s1 = self.model.state(), self.model.state()
        self.control = self.model.control()

    def run(self, steps):
        for _ in range(steps):
            self.solver.step(self.model, self.s0, self.s1, self.control, DT)
            self.s0, self.s1 = self.s1, self.s0

    def pole_angle(self):
        return float(self.s0.joint_q.numpy()[1])


class MujocoCartpoles:
    def __init__(self, n, threads):
        import mujoco
        from mujoco import rollout

        self.mujoco, self.rollout = mujoco, rollout
        self.model = mujoco.MjModel.from_xml_string(MJCF)
        self.datas = [mujoco.MjData(self.model) for _ in range(threads)]
        d = mujoco.MjData(self.model)
        d.qpos[:] = Q0
        spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
        self.spec = spec
        size = mujoco.mj_stateSize(self.model, spec)
        state = np.zeros(size)
        mujoco.mj_getState(self.model, d, state, spec)
        self.state = np.tile(state, (n, 1))
        self.n = n
        self.last = None

    def run(self, steps):
        out, _ = self.rollout.rollout(self.model, self.datas, self.state, nstep=steps, persistent_pool=True)
        self.state = out[:, -1, :].copy()  # continue from where the batch got to
        self.last = out

    def pole_angle(self):
        # full-physics state: time, qpos, qvel, ...
        return float(self.state[0, 2])


class NewtonCartpoles:
    def __init__(self, n):
        import newton
        import warp as wp

        self.wp = wp
        env = newton.ModelBuilder(up_axis=newton.Axis.Z, gravity=(0.0, 0.0, -9.81))
        cart = env.add_link(mass=CART_MASS, inertia=wp.mat33(np.eye(3) * CART_INERTIA))
        pole = env.add_link(mass=POLE_MASS, inertia=wp.mat33(np.diag(POLE_INERTIA)), com=wp.vec3(0, 0, POLE_COM))
        j0 = env.add_joint_prismatic(-1, cart, axis=(1, 0, 0))
        j1 = env.add_joint_revolute(cart, pole, axis=(0, 1, 0))
        env.add_articulation([j0, j1])
        env.joint_q[:] = list(Q0)
        b = newton.ModelBuilder(up_axis=newton.Axis.Z, gravity=(0.0, 0.0, -9.81))
        b.replicate(env, n, spacing=(0.0, 2.0, 0.0))
        with wp.ScopedDevice("cpu"):
            self.model = b.finalize(device="cpu")
            self.solver = newton.solvers.SolverFeatherstone(self.model, angular_damping=0.0)
            self.s0, self.s1 = self.model.state(), self.model.state()
            self.control = self.model.control()
            newton.eval_fk(self.model, self.model.joint_q, self.model.joint_qd, self.s0)

    def run(self, steps):
        with self.wp.ScopedDevice("cpu"):
            for _ in range(steps):
                self.solver.step(self.s0, self.s1, self.control, None, DT)
                self.s0, self.s1 = self.s1, self.s0
            self.wp.synchronize()

    def pole_angle(self):
        return float(self.s0.joint_q.numpy()[1])


def walker_mjcf():
    """The robot of examples/robot_batch.py as MJCF (Y up, like ours)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples"))
    import robot_batch as rb

    legs = []
    for leg, (x, z) in enumerate(rb.LEGS):
        h = 2 * rb.SEG_H
        legs.append(f"""
      <body name="thigh{leg}" pos="{x} {rb.HIP_Y} {z}">
        <joint name="hip{leg}" type="hinge" axis="0 0 1" range="-1.2 1.2" armature="{rb.ARMATURE}"/>
        <geom type="capsule" fromto="0 0 0 0 {-h} 0" size="{rb.SEG_R}" density="500"/>
        <body name="shin{leg}" pos="0 {-h} 0">
          <joint name="knee{leg}" type="hinge" axis="0 0 1" range="-2 0" armature="{rb.ARMATURE}"/>
          <geom type="capsule" fromto="0 0 0 0 {-h} 0" size="{rb.SEG_R}" density="500"/>
          <geom type="sphere" pos="0 {-h} 0" size="{rb.FOOT_R}" density="500"/>
        </body>
      </body>""")
    acts = "".join(f'<position joint="{j}{leg}" kp="{rb.KE}" kv="{rb.KD}"/>'
                   for leg in range(4) for j in ("hip", "knee"))
    return f"""
<mujoco>
  <option timestep="{DT}" integrator="Euler" gravity="0 -9.81 0"/>
  <default><geom friction="0.8 0.005 0.0001"/></default>
  <worldbody>
    <geom type="plane" size="0 0 1" zaxis="0 1 0"/>
    <body name="torso" pos="0 0.42 0">
      <freejoint/>
      <geom type="box" size="0.15 0.05 0.1" density="500"/>{''.join(legs)}
    </body>
  </worldbody>
  <actuator>{acts}</actuator>
</mujoco>
"""


def gait(t, n, frequency=2.0):
    """Targets (n, 8) of examples/robot_batch.py's trot at time t [s] for robots 0..n-1."""
    f = frequency * (1.0 + 0.002 * np.arange(n))[:, None]
    phase = np.array([0.0, np.pi, np.pi, 0.0])[None, :]
    s = 2.0 * np.pi * f * t + phase
    out = np.empty((n, 8))
    out[:, 0::2] = 0.2 * np.sin(s)
    out[:, 1::2] = -0.6 + 0.1 * np.cos(s)
    return out


class KcWalkers:
    def __init__(self, n):
        import kernelcore as kc
        import robot_batch as rb

        self.kc, self.rb, self.n = kc, rb, n
        self.model, _ = rb.build_batch(n)
        self.solver = sim_solver(self.model)
        self.s0, self.s1 = self.model.state(), self.model.state()
        self.control = self.model.control()
        self.dofs = self.model.joint_dof_count // n
        self.t = 0

    def run(self, steps):
        for _ in range(steps):
            self.kc.launch(self.rb.gait_targets_kernel, dim=(self.n, 4), inputs=[self.t * DT, 2.0, self.dofs],
                           outputs=[self.control.joint_target_pos])
            self.solver.step(self.model, self.s0, self.s1, self.control, DT)
            self.s0, self.s1 = self.s1, self.s0
            self.t += 1

    def torso_height(self):
        return float(self.s0.body_q.numpy()[::self.model.body_count // self.n, 1].mean())


def sim_solver(model):
    import sim

    return sim.SolverFeatherstone(model)


class MujocoWalkers:
    def __init__(self, n, threads):
        import mujoco
        from mujoco import rollout

        self.mujoco, self.rollout, self.n = mujoco, rollout, n
        self.model = mujoco.MjModel.from_xml_string(walker_mjcf())
        self.datas = [mujoco.MjData(self.model) for _ in range(threads)]
        d = mujoco.MjData(self.model)
        d.qpos[7 + 1::2] = -0.6  # knees
        d.ctrl[1::2] = -0.6
        spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
        state = np.zeros(mujoco.mj_stateSize(self.model, spec))
        mujoco.mj_getState(self.model, d, state, spec)
        self.state = np.tile(state, (n, 1))
        self.t = 0

    def run(self, steps):
        ctrl = np.stack([gait((self.t + k) * DT, self.n) for k in range(steps)], axis=1)  # (n, steps, 8)
        out, _ = self.rollout.rollout(self.model, self.datas, self.state, ctrl, nstep=steps, persistent_pool=True)
        self.state = out[:, -1, :].copy()
        self.t += steps

    def torso_height(self):
        return float(self.state[:, 1 + 1].mean())  # time, then qpos: torso x, y, z, ...


class NewtonWalkers:
    """The same walker in Newton: its MJCF importer (position actuators become PD targets, kp/kv as
    joint_target_ke/kd), ``SolverFeatherstone`` on warp-lang's CPU device, ground contacts from a
    ``CollisionPipeline`` each step, the gait written to ``Control.joint_target_q``."""

    def __init__(self, n):
        import newton
        import warp as wp

        self.wp, self.n = wp, n
        env = newton.ModelBuilder(up_axis=newton.Axis.Y, gravity=(0.0, -9.81, 0.0))
        env.add_mjcf(walker_mjcf(), up_axis=newton.Axis.Y)  # the file is Y up, like ours
        env.joint_q[7 + 1::2] = [-0.6] * 4  # knees, as the other engines start
        b = newton.ModelBuilder(up_axis=newton.Axis.Y, gravity=(0.0, -9.81, 0.0))
        b.replicate(env, n, spacing=(0.0, 0.0, 2.0))
        with wp.ScopedDevice("cpu"):
            self.model = b.finalize(device="cpu")
            self.solver = newton.solvers.SolverFeatherstone(self.model)
            self.s0, self.s1 = self.model.state(), self.model.state()
            self.control = self.model.control()
            newton.eval_fk(self.model, self.model.joint_q, self.model.joint_qd, self.s0)
            self.pipeline = newton.CollisionPipeline(self.model)
            self.contacts = self.pipeline.contacts()
        self.targets = np.zeros((n, self.model.joint_dof_count // n), np.float32)
        self.t = 0

    def run(self, steps):
        with self.wp.ScopedDevice("cpu"):
            for _ in range(steps):
                self.targets[:, 6:] = gait(self.t * DT, self.n)  # after the free joint's 6 dofs
                self.control.joint_target_q.assign(self.targets.ravel())
                self.pipeline.collide(self.s0, self.contacts)
                self.solver.step(self.s0, self.s1, self.control, self.contacts, DT)
                self.s0, self.s1 = self.s1, self.s0
                self.t += 1
            self.wp.synchronize()

    def torso_height(self):
        return float(self.s0.body_q.numpy()[::self.model.body_count // self.n, 1].mean())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1,64,1024")
    ap.add_argument("--steps", type=int, default=100, help="steps per sample")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=os.cpu_count(), help="MuJoCo rollout threads")
    ap.add_argument("--no-newton", action="store_true")
    ap.add_argument("--robots", default="", help="batch sizes of legged robots, e.g. 16,256 (empty: none)")
    ap.add_argument("--one-thread", action="store_true", help="kernelcore and MuJoCo on one thread each")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    if args.one_thread:
        os.environ["KERNELCORE_NUM_THREADS"] = "1"  # read by every launch (kernelcore.device.num_threads)
        args.threads = 1
    results = {"environment": environment(), "load_average_start": load_average(), "steps": args.steps,
               "dt": DT, "mujoco_threads": args.threads,
               "kc_threads": os.environ.get("KERNELCORE_NUM_THREADS", "all"), "cases": {}}
    for n in [int(s) for s in args.sizes.split(",")]:
        engines = {"kc": KcCartpoles(n)}
        try:
            engines["mujoco"] = MujocoCartpoles(n, args.threads)
        except ImportError:
            print("mujoco not installed: skipped")
        if not args.no_newton:
            try:
                engines["newton"] = NewtonCartpoles(n)
            except ImportError:
                print("newton not installed: skipped")
        timing = interleaved({k: (lambda e=e: e.run(args.steps)) for k, e in engines.items()},
                             repeats=args.repeats, warmup=1)
        case = {"batch": n}
        for k, e in engines.items():
            case[k] = {"batch_steps_per_s": args.steps / timing[k]["median"],
                       "env_steps_per_s": n * args.steps / timing[k]["median"],
                       "pole_angle": e.pole_angle()}
        for other in ("mujoco", "newton"):
            if other in engines:
                case[f"kc_over_{other}"] = ratio(timing[other]["median"], timing["kc"]["median"])
        results["cases"][str(n)] = case
        line = f"N={n:5d}  " + "  ".join(f"{k}: {case[k]['batch_steps_per_s']:9.1f} steps/s "
                                          f"(q={case[k]['pole_angle']:+.4f})" for k in engines)
        line += "  " + "  ".join(f"kc/{o}={case['kc_over_' + o]:.2f}" for o in ("mujoco", "newton")
                                 if "kc_over_" + o in case)
        print(line, flush=True)
    for n in [int(s) for s in args.robots.split(",") if s]:
        engines = {"kc": KcWalkers(n)}
        try:
            engines["mujoco"] = MujocoWalkers(n, args.threads)
        except ImportError:
            print("mujoco not installed: skipped")
        if not args.no_newton:
            try:
                engines["newton"] = NewtonWalkers(n)
            except ImportError:
                print("newton not installed: skipped")
        timing = interleaved({k: (lambda e=e: e.run(args.steps)) for k, e in engines.items()},
                             repeats=args.repeats, warmup=1)
        case = {"batch": n}
        for k, e in engines.items():
            case[k] = {"batch_steps_per_s": args.steps / timing[k]["median"],
                       "env_steps_per_s": n * args.steps / timing[k]["median"],
                       "torso_height": e.torso_height()}
        for other in ("mujoco", "newton"):
            if other in engines:
                case[f"kc_over_{other}"] = ratio(timing[other]["median"], timing["kc"]["median"])
        results["cases"][f"walker_{n}"] = case
        print(f"walkers N={n:4d}  " + "  ".join(f"{k}: {case[k]['batch_steps_per_s']:9.1f} steps/s "
                                                 f"(torso y={case[k]['torso_height']:.3f})" for k in engines)
              + "".join(f"  kc/{o}={case['kc_over_' + o]:.2f}" for o in ("mujoco", "newton")
                        if "kc_over_" + o in case), flush=True)
    results["load_average_end"] = load_average()
    if args.out:
        write_json(results, args.out)
    return results


if __name__ == "__main__":
    main()
