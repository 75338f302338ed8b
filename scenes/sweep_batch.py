"""Batched sweep points: several variants of a scene packed into ONE model (one environment
each, ``ModelBuilder.add_builder``), simulated together, then split back into one USD file
and one metrics row per point.  A task then pays its start-up (imports, kernel loading,
solver set-up, launch overhead per step) once for the whole batch.

When a batch is packed (the rule is explicit and checked on the loaded scenes, not
guessed from parameter names; :func:`why_not_batched` says which part failed):

* every point's scene loads; the points that fail to load are reported alone;
* the solver honours environments: ``dem`` or ``semi_implicit`` (their particle-particle,
  particle-shape and particle-mesh contacts skip other environments), without time of
  impact and without cloth self-contact, and the scene has no rigid bodies;
* the variants have the same topology: equal counts of particles, springs, bodies,
  shapes and materials;
* everything that is one value per MODEL is equal: solver, time step, substeps, frames,
  up axis, gravity, particle damping, the ground plane and its material, the largest
  particle radius and the largest cohesion distance (these two size the contact search).

So material coefficients (``kc:material:*`` of particles and colliders: one material per
variant, per particle/shape), positions and velocities (``kc:grid:lower``, ``kc:velocity``,
jitter/seed), densities (per-particle mass) and collider placement batch; time step,
substeps, gravity and particle radius do not (the batch then runs point by point, with a
one-line notice in ``SweepTable.notices``).  A batch whose packed run fails (a non-finite
state, ...) is re-run point by point, so that only the bad point is reported.

Results: world ``k`` of the packed model is point ``k`` of the batch; its particles are
the ``k``-th block of ``particle_count / K``.  They equal the unbatched run to float32
round-off (the contact sums may visit neighbours in another order), not bitwise.
"""
from __future__ import annotations

import os
import tempfile
import time

import numpy as np

__all__ = ["run_batch", "why_not_batched", "BATCH_SOLVERS"]

#: scene solvers whose contact kernels honour Model.particle_world / shape_world
BATCH_SOLVERS = ("dem", "semi_implicit")


def _model_wide(scene, frames, substeps):
    """The settings that are one value for the whole packed model (must agree across a batch)."""
    b = scene.builder
    gm = b.ground_material if b.ground else None
    ground_mat = tuple(float(getattr(b, "material_" + k)[gm]) for k in ("ke", "restitution", "mu", "cohesion",
                                                                         "cohesion_distance")) if b.ground else None
    return {
        "solver": scene.solver, "frame dt": scene.frame_dt,
        "substeps": scene.substeps if substeps is None else int(substeps),
        "frames": scene.frames if frames is None else int(frames), "up axis": scene.up_axis,
        "gravity": tuple(b.gravity), "particle damping": b.particle_damping,
        "ground": (bool(b.ground), tuple(b.ground_normal), float(b.ground_offset), ground_mat) if b.ground else False,
        "largest particle radius": max(b.particle_radius) if b.particle_count else 0.0,
        "largest cohesion distance": max(b.material_cohesion_distance) if b.material_count else 0.0,
    }


def _counts(scene):
    b = scene.builder
    return {"particles": b.particle_count, "springs": b.spring_count, "bodies": b.body_count,
            "shapes": b.shape_count, "materials": b.material_count}


def why_not_batched(scenes, frames=None, substeps=None):
    """None when the loaded ``scenes`` can share one model, else a short reason (see the module docstring)."""
    first = scenes[0]
    if getattr(first, "grid_fluid", False) or first.builder is None:
        return "grid-fluid scenes have no particle model to pack"
    if first.solver not in BATCH_SOLVERS:
        return f"solver '{first.solver}' does not separate environments (batching needs {' or '.join(BATCH_SOLVERS)})"
    if first.toi:
        return "time of impact (kc:toi) does not separate environments"
    if getattr(first, "cloth_self_contact", 0.0) > 0:
        return "cloth self-contact does not separate environments"
    if first.builder.body_count:
        return "scenes with rigid bodies are not batched"
    c0, w0 = _counts(first), _model_wide(first, frames, substeps)
    for s in scenes[1:]:
        c = _counts(s)
        for k in c0:
            if c[k] != c0[k]:
                return f"the points differ in topology ({k}: {c0[k]} vs {c[k]})"
        w = _model_wide(s, frames, substeps)
        for k in w0:
            if w[k] != w0[k]:
                return f"the points differ in a model-wide setting ({k})"
    return None


def _pack(scenes):
    b0 = scenes[0].builder
    import sim

    packed = sim.ModelBuilder(gravity=b0.gravity, particle_damping=b0.particle_damping)
    for k, s in enumerate(scenes):
        packed.add_builder(s.builder, world=k)
    return packed


def _simulate_packed(scenes, frames, substeps, usd_paths):
    """Run the packed model; returns one RunResult per scene (its own model, its slice of the state)."""
    from .render_adapter import ModelRenderer
    from .runner import RunResult, SimulationError, check_finite, open_usd_output

    first = scenes[0]
    frames = first.frames if frames is None else int(frames)
    substeps = first.substeps if substeps is None else int(substeps)
    dt = first.frame_dt / substeps
    model = _pack(scenes).finalize()
    solver = first.make_solver(model)  # solver options are scene-wide settings (checked equal)
    s0, s1 = model.state(), model.state()
    n = first.builder.particle_count
    own = [s.finalize() for s in scenes]  # each point's own model: masses for metrics, layout for USD
    states = [m.state() for m in own]
    outputs = []
    for s, m, path in zip(scenes, own, usd_paths):
        if path is None:
            outputs.append(None)
            continue
        usd = open_usd_output(path, s.fps, s.up_axis)
        names = dict(particle_groups=s.particle_groups, shape_names=s.shape_paths or None,
                     spring_groups=s.spring_groups or None, colors=s.group_colors,
                     cloth_groups=getattr(s, "cloth_groups", None) or None)
        outputs.append((usd, ModelRenderer(usd, m, **names)))

    def split(frame):
        q, qd = s0.particle_q.numpy(), s0.particle_qd.numpy()
        for k, (st, out) in enumerate(zip(states, outputs)):
            if n:
                st.particle_q.assign(q[k * n:(k + 1) * n])
                st.particle_qd.assign(qd[k * n:(k + 1) * n])
            if out is not None:
                out[1].render(st, frame * first.frame_dt)

    split(0)
    start = time.perf_counter()
    for f in range(1, frames + 1):
        for _ in range(substeps):
            solver.step(model, s0, s1, None, dt)
            s0, s1 = s1, s0
        bad = check_finite(s0)
        if bad is not None:
            raise SimulationError(f, bad[0], bad[1], bad[2])
        split(f)
    elapsed = time.perf_counter() - start
    for out in outputs:
        if out is not None:
            out[0].save()
    return [RunResult(m, st, frames, path, elapsed) for m, st, path in zip(own, states, usd_paths)]


def run_batch(tasks) -> list:
    """Simulate a batch of sweep points (``tasks``: run_point's dicts) in one model when they can share
    one, else one by one.  Returns, per point, its row dict or ``{"_error": "Type: message"}``; rows carry
    ``"_notice"`` when the batch could not be packed and ``batch_size`` (points simulated together)."""
    from sim.parallel import _one_line

    from . import load
    from .sweep import run_point, write_point_scene

    start = time.perf_counter()
    first = tasks[0]
    results = [None] * len(tasks)
    with tempfile.TemporaryDirectory(prefix="kcsweep_") as tmp:
        scenes, members = [], []
        for i, task in enumerate(tasks):
            variant = os.path.join(tmp, f"point_{task['index']:04d}.usda")
            try:
                write_point_scene(task["scene"], task["assignment"], task["types"], variant)
                scene = load(variant, strict=task.get("strict", False))
            except Exception as e:  # noqa: BLE001 - reported as this point's failure
                e.args = tuple(str(a).replace(variant, task["scene"]) if isinstance(a, str) else a for a in e.args)
                results[i] = {"_error": _one_line(e)}
                continue
            scene.path = task["scene"]
            scenes.append(scene)
            members.append(i)
        reason = why_not_batched(scenes, first.get("frames"), first.get("substeps")) if scenes else "no point loaded"
        if reason is None and len(scenes) > 1:
            usd = [os.path.join(tmp, f"point_{tasks[i]['index']:04d}.usd") if tasks[i].get("write_usd", True) else None
                   for i in members]
            try:
                runs = _simulate_packed(scenes, first.get("frames"), first.get("substeps"), usd)
            except Exception as e:  # noqa: BLE001 - find the bad point by running them one by one
                reason = f"the packed run failed ({str(e).splitlines()[0] if str(e) else type(e).__name__})"
            else:
                seconds = (time.perf_counter() - start) / len(members)
                for i, scene, result in zip(members, scenes, runs):
                    metrics = (tasks[i].get("metrics") or _default_metrics())(result, scene)
                    row = {"seconds": seconds, "batch_size": len(members), "_warnings": list(scene.warnings)}
                    row.update({str(k): _plain(v) for k, v in dict(metrics).items()})
                    if result.out is not None:
                        with open(result.out, "rb") as f:
                            row["_usd_bytes"] = f.read()
                    results[i] = row
                return results
        for i in members:  # one by one
            try:
                row = run_point(tasks[i])
                row["batch_size"] = 1
                if reason is not None and len(scenes) > 1:
                    row["_notice"] = (f"points {tasks[members[0]]['index']}-{tasks[members[-1]]['index']} ran "
                                      f"unbatched: {reason}")
                results[i] = row
            except Exception as e:  # noqa: BLE001 - reported as this point's failure
                results[i] = {"_error": _one_line(e)}
    return results


def _default_metrics():
    from .sweep import default_metrics

    return default_metrics


def _plain(v):
    return v.item() if isinstance(v, np.generic) else v
