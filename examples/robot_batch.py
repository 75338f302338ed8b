"""Many copies of a legged robot stepping in one model with sim.SolverFeatherstone.

The robot (built by :func:`robot_builder`, Y up): a box torso (half extents 0.15 x 0.05 x
0.1 m, density 500 kg/m^3) on a free joint, and four legs, each a
hip (revolute about z) and a knee (revolute about z) with capsule segments (radius 0.03 m,
half height 0.08 m) and a sphere foot (radius 0.035 m).  The joints are PD-driven (ke = 150
N m/rad, kd = 4 N m s/rad, armature 0.01 kg m^2) towards a trotting pattern: hip targets
``0.2 sin(2 pi f t + phase)`` with diagonal legs in phase, knees ``-0.6 + 0.1 cos(...)``.
The feet and torso collide with the ground (penalty contacts, ke = 2e4 N/m, mu = 0.8).

``--count`` copies are made with ``ModelBuilder.add_builder`` on a grid 1 m apart, each in
its own environment (environments do not collide); every step of every copy is one thread
of the same kernel launches.  Each copy gets a slightly different gait frequency, so the
batch is not ``count`` times the same numbers.

Prints steps per second of the batch and robot-steps per second, and the distance each
copy's torso travelled; with ``--out`` writes the torsos' trajectories as a .npz file.

Run: python examples/robot_batch.py --count 256 --steps 1000
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np

import kernelcore as kc
import sim

HIP_Y = 0.0
LEGS = ((0.15, 0.1), (0.15, -0.1), (-0.15, 0.1), (-0.15, -0.1))   # hip positions (x, z) on the torso [m]
PHASES = (0.0, math.pi, math.pi, 0.0)                                # diagonal legs together
SEG_R, SEG_H, FOOT_R = 0.03, 0.08, 0.035
KE, KD, ARMATURE = 150.0, 4.0, 0.01


def robot_builder():
    """A ModelBuilder holding one robot (torso on a free joint, four two-joint legs)."""
    b = sim.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    mat = b.add_material(ke=2.0e4, restitution=0.2, mu=0.8)
    torso = b.add_body(xform=(0.0, 0.42, 0.0, 0.0, 0.0, 0.0, 1.0), name="torso")
    b.add_shape_box(half_extents=(0.15, 0.05, 0.1), body=torso, density=500.0, material=mat)
    b.add_joint_free(torso, name="root")
    for leg, (x, z) in enumerate(LEGS):
        thigh = b.add_body(name=f"thigh_{leg}")
        b.add_shape_capsule(pos=(0.0, -SEG_H, 0.0), radius=SEG_R, half_height=SEG_H, body=thigh, density=500.0,
                            material=mat)
        b.add_joint_revolute(torso, thigh, parent_xform=(x, HIP_Y, z, 0, 0, 0, 1), axis=(0, 0, 1), target_ke=KE,
                             target_kd=KD, armature=ARMATURE, limit_lower=-1.2, limit_upper=1.2, name=f"hip_{leg}")
        shin = b.add_body(name=f"shin_{leg}")
        b.add_shape_capsule(pos=(0.0, -SEG_H, 0.0), radius=SEG_R, half_height=SEG_H, body=shin, density=500.0,
                            material=mat)
        b.add_shape_sphere(pos=(0.0, -2 * SEG_H, 0.0), radius=FOOT_R, body=shin, density=500.0, material=mat)
        b.add_joint_revolute(thigh, shin, parent_xform=(0.0, -2 * SEG_H, 0.0, 0, 0, 0, 1), axis=(0, 0, 1),
                             target_ke=KE, target_kd=KD, armature=ARMATURE, limit_lower=-2.0, limit_upper=0.0,
                             q0=-0.6, target_pos=-0.6, name=f"knee_{leg}")
    return b


def build_batch(count: int, device: str = "cpu"):
    """(model, grid side): ``count`` robots on a grid 1 m apart, each in its own environment."""
    robot = robot_builder()
    b = sim.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    b.set_ground_plane(material=0)
    side = int(math.ceil(math.sqrt(count)))
    for k in range(count):
        i, j = divmod(k, side)
        b.add_builder(robot, xform=(float(i), 0.0, float(j), 0, 0, 0, 1))
    return b.finalize(device=device), side


@kc.kernel
def gait_targets_kernel(t: float, base_frequency: float, dofs_per_robot: int, targets: kc.array(dtype=float)):
    """PD targets of robot r at time t [s]: dof 6 + 2 leg + {0: hip, 1: knee} (after the free joint's 6)."""
    r, leg = kc.tid()
    f = base_frequency * (1.0 + 0.002 * float(r))
    phase = 0.0
    if leg == 1 or leg == 2:
        phase = 3.14159265
    s = 2.0 * 3.14159265 * f * t + phase
    d = r * dofs_per_robot + 6 + 2 * leg
    targets[d] = 0.2 * kc.sin(s)
    targets[d + 1] = -0.6 + 0.1 * kc.cos(s)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, default=256)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--dt", type=float, default=1e-3)
    ap.add_argument("--frequency", type=float, default=2.0, help="gait frequency [Hz]")
    ap.add_argument("--out", default=None, help="write torso trajectories (.npz)")
    args = ap.parse_args(argv)
    model, _ = build_batch(args.count)
    solver = sim.SolverFeatherstone(model)
    s0, s1 = model.state(), model.state()
    control = model.control()
    dofs = model.joint_dof_count // args.count
    bodies = model.body_count // args.count
    start = s0.body_q.numpy()[::bodies, :3].copy()
    frames = []
    t0 = time.perf_counter()
    for k in range(args.steps):
        kc.launch(gait_targets_kernel, dim=(args.count, 4),
                  inputs=[k * args.dt, args.frequency, dofs], outputs=[control.joint_target_pos])
        solver.step(model, s0, s1, control, args.dt)
        s0, s1 = s1, s0
        if args.out and k % 20 == 0:
            frames.append(s0.body_q.numpy()[::bodies].copy())
    seconds = time.perf_counter() - t0
    torso = s0.body_q.numpy()[::bodies]
    if not np.all(np.isfinite(torso)):
        raise FloatingPointError("the simulation produced non-finite body positions")
    travelled = np.linalg.norm(torso[:, [0, 2]] - start[:, [0, 2]], axis=1)
    result = {"count": args.count, "steps": args.steps, "seconds": seconds,
              "batch_steps_per_s": args.steps / seconds, "robot_steps_per_s": args.count * args.steps / seconds,
              "mean_torso_height": float(torso[:, 1].mean()), "mean_distance": float(travelled.mean()),
              "max_distance": float(travelled.max())}
    print(f"{args.count} robots x {args.steps} steps in {seconds:.2f} s: {result['batch_steps_per_s']:.1f} batch "
          f"steps/s, {result['robot_steps_per_s']:.0f} robot-steps/s; torso height {result['mean_torso_height']:.3f} m,"
          f" moved {result['mean_distance']:.3f} m on average (max {result['max_distance']:.3f} m)")
    if args.out:
        np.savez(args.out, torso=np.asarray(frames), dt=args.dt * 20)
    return result


if __name__ == "__main__":
    main()
