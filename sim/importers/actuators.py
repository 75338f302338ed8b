"""MJCF actuators as a kernel: ``ctrl`` (one value per actuator) -> ``Control.joint_f`` and the PD
drive targets, differentiable through the Tape.

MuJoCo's joint actuators with transmission ``gear`` g act on the joint as
motor: tau = g u; position (kp, kv): tau = g^2 kp (u / g - q) - g^2 kv qd; velocity (kv):
tau = g^2 kv (u / g - qd).  The importer gives each driven joint the gains g^2 kp / g^2 kv
(``target_ke`` / ``target_kd``), so here a motor adds g u to ``joint_f`` and a position or
velocity actuator sets the joint's target to u / g.  ``u`` is ``ctrl`` clamped to the
actuator's ``ctrlrange`` when it has one.
"""
from __future__ import annotations

import numpy as np

import kernelcore as kc

MOTOR, POSITION, VELOCITY = 0, 1, 2
KINDS = {"motor": MOTOR, "position": POSITION, "velocity": VELOCITY}
NO_LIMIT = 1.0e10


@kc.kernel
def apply_actuators_kernel(ctrl: kc.array(dtype=float), kind: kc.array(dtype=int), dof: kc.array(dtype=int),
                           gear: kc.array(dtype=float), ctrl_lower: kc.array(dtype=float),
                           ctrl_upper: kc.array(dtype=float), joint_f: kc.array(dtype=float),
                           target_pos: kc.array(dtype=float), target_vel: kc.array(dtype=float)):
    """Actuator i: clamp its control, then add to joint_f (motor) or set the drive target."""
    i = kc.tid()
    u = kc.clamp(ctrl[i], ctrl_lower[i], ctrl_upper[i])
    d = dof[i]
    g = gear[i]
    if kind[i] == 0:
        joint_f[d] += g * u
    elif kind[i] == 1:
        target_pos[d] = u / g
    else:
        target_vel[d] = u / g


class Actuators:
    """The actuators of an MJCF import (``ImportResult.actuators``) on a finalized ``model``.

    ``apply(ctrl, control)`` writes ``control`` from ``ctrl`` (kc.array of float, one per
    actuator in file order): motors add into ``control.joint_f`` (start from a zeroed Control),
    position/velocity actuators set ``control.joint_target_pos`` / ``joint_target_vel``.
    """

    def __init__(self, result, model, dof_offset: int = 0):
        acts = list(result.actuators)
        missing = [a.name for a in acts if a.dof is None]
        if missing:
            raise ValueError(f"Actuators: actuator(s) {missing} drive no imported joint")
        self.names = [a.name for a in acts]
        self.count = len(acts)
        dev = model.device

        def arr(values, dtype):
            return kc.array(np.asarray(values), dtype=dtype, device=dev)

        self.kind = arr(np.array([KINDS[a.kind] for a in acts], np.int32).reshape(-1), kc.int32)
        self.dof = arr(np.array([a.dof + dof_offset for a in acts], np.int32).reshape(-1), kc.int32)
        self.gear = arr(np.array([a.gear for a in acts], np.float32).reshape(-1), float)
        lo = [a.ctrlrange[0] if a.ctrlrange else -NO_LIMIT for a in acts]
        hi = [a.ctrlrange[1] if a.ctrlrange else NO_LIMIT for a in acts]
        self.ctrl_lower = arr(np.array(lo, np.float32).reshape(-1), float)
        self.ctrl_upper = arr(np.array(hi, np.float32).reshape(-1), float)
        if np.any(np.array([a.gear for a in acts]) == 0):
            raise ValueError("Actuators: an actuator has gear 0")

    def apply(self, ctrl, control):
        if ctrl.shape[0] != self.count:
            raise ValueError(f"Actuators.apply: ctrl has {ctrl.shape[0]} values for {self.count} actuators")
        if self.count:
            kc.launch(apply_actuators_kernel, dim=self.count,
                      inputs=[ctrl, self.kind, self.dof, self.gear, self.ctrl_lower, self.ctrl_upper],
                      outputs=[control.joint_f, control.joint_target_pos, control.joint_target_vel])
