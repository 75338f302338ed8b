"""Cheap checks at solver.step entry: states (and controls) must belong to the model.

A state from another model has arrays of other lengths; the kernels would read and write
past their ends (a segfault, or silently wrong numbers).  Comparing a few integers costs
well under a microsecond per array, so it is done on every step.
"""
from __future__ import annotations


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
