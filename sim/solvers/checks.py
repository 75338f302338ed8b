"""Cheap checks at solver.step entry: states (and controls) must belong to the model.

A state from another model has arrays of other lengths; the kernels would read and write
past their ends (a segfault, or silently wrong numbers).  Comparing a few integers costs
well under a microsecond per array, so it is done on every step.

``reports_non_finite`` wraps a solver's step to name the step and State quantity of a NaN/Inf.
"""
from __future__ import annotations

import functools
import math


def check_step_arguments(model, state_in, state_out, control=None):
    """Raise ValueError naming the argument and both sizes when a state does not fit ``model``."""
    counts = {"particle": model.particle_count, "body": getattr(model, "body_count", 0)}
    sizes = {"joint_q": getattr(model, "joint_coord_count", 0), "joint_qd": getattr(model, "joint_dof_count", 0)}
    for arg, obj in (("state_in", state_in), ("state_out", state_out)):
        for name, arr in obj.arrays():
            entity = name.split("_", 1)[0]   # <entity>_<quantity>: the entity fixes the length
            n = sizes.get(name, counts.get(entity, 0))
            if arr.shape[0] != n:
                what = {"joint_q": "joint coordinates", "joint_qd": "joint dofs"}.get(name, entity + "s")
                raise ValueError(f"solver.step: {arg}.{name} has {arr.shape[0]} entries but the model has "
                                 f"{n} {what} (a State of another model? use model.state())")
    if control is not None:
        counts["joint"] = getattr(model, "joint_dof_count", 0)
        for name in ("particle_f_ext", "body_f", "joint_f", "joint_target_pos", "joint_target_vel"):
            f = getattr(control, name, None)
            entity = name.split("_", 1)[0]
            if f is not None and f.shape[0] != counts[entity]:
                raise ValueError(f"solver.step: control.{name} has {f.shape[0]} entries but the model has "
                                 f"{counts[entity]} {entity}{' dof' if entity == 'joint' else ''}s")


def check_dt(dt, who):
    """Raise ValueError unless the step ``dt`` [s] is a finite number > 0 (a NaN dt fills the state
    with NaN, a negative one integrates backwards through the contacts)."""
    try:  # a string or a bool would pass float() ("0.01", True = 1 s)
        ok = not isinstance(dt, (str, bytes, bool)) and math.isfinite(float(dt)) and float(dt) > 0
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ValueError(f"{who}.step: dt must be finite and > 0 [s], got {dt!r}")


# --- NaN/Inf reports of a solver step (kc.config.verify_nan or ``solver.verify_nan = True``) -------------------

_CONTROL_INPUTS = ("particle_f_ext", "body_f", "particle_actuation", "joint_f", "joint_target_pos",
                   "joint_target_vel")
_inside_checked_step = []  # a subclass's step calling its parent's checks once, at the outermost level


def _non_finite(prefix, pairs):
    """'prefix.name (nan at index i)' for each array of ``pairs`` that holds a NaN/Inf."""
    from kernelcore.verify_nan import _describe, _first_bad

    out = []
    for name, arr in pairs:
        hit = _first_bad(arr) if arr is not None else None
        if hit is not None:
            out.append(f"{prefix}.{name} ({_describe(*hit)})")
    return out


def reports_non_finite(step):
    """Decorator for ``Solver.step(self, model, state_in, state_out, control, dt)``.

    When ``kc.config.verify_nan`` is on, or the solver's ``verify_nan`` attribute is True, the
    step is checked as a whole: afterwards every quantity of ``state_out`` is scanned, and a NaN
    or an infinity raises ``kernelcore.verify_nan.NonFiniteError`` naming the solver, its step
    counter (``solver.step_count``, the number of steps taken before this one), each non-finite
    State quantity with its first bad index, the inputs that were already non-finite
    (``state_in``, ``control``), and, with kc.config.verify_nan, the first kernel launch of the
    step that wrote one.  Inside ``kc.checkpointed`` the loop's step index is appended.  The
    per-launch trap would stop at an internal buffer; collecting its first hit instead lets the
    step finish, so the report names the quantity a user knows (``body_q``, ``joint_q``, ...).
    Costs one host copy of each state array per step; nothing when both switches are off.
    """
    @functools.wraps(step)
    def checked(self, model, state_in, state_out, control, dt):
        index = getattr(self, "step_count", 0)
        self.step_count = index + 1
        import kernelcore as kc
        from kernelcore.verify_nan import NonFiniteError, collecting

        if _inside_checked_step or not (kc.config.verify_nan or getattr(self, "verify_nan", False)):
            return step(self, model, state_in, state_out, control, dt)
        _inside_checked_step.append(True)
        try:
            with collecting() as hits:
                result = step(self, model, state_in, state_out, control, dt)
        finally:
            _inside_checked_step.pop()
        bad_out = _non_finite("state_out", state_out.arrays())
        if not bad_out and not hits:
            return result
        bad_in = _non_finite("state_in", state_in.arrays())
        if control is not None:
            bad_in += _non_finite("control", [(n, getattr(control, n, None)) for n in _CONTROL_INPUTS])
        name = type(self).__name__
        msg = f"{name}.step: step {index} (dt={dt!r}) produced a NaN/Inf: "
        msg += ", ".join(bad_out) if bad_out else "in an internal buffer (state_out is finite)"
        if bad_in:
            msg += "; already non-finite on entry: " + ", ".join(bad_in)
        msg += f"; first launch: {hits[0]}" if hits else " (set kc.config.verify_nan = True to name the kernel)"
        raise NonFiniteError(msg)

    return checked
