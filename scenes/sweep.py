"""Parameter sweeps over a USD scene: every combination of attribute values is one point,
simulated as one Ray task (sim.parallel_map), or serially when Ray is not installed.

A parameter is ``PRIM.ATTR=VALUES`` with VALUES ``lo:hi:n`` (n evenly spaced values, both
ends included), ``a,b,c`` (a list) or ``x`` (one value), e.g.
``/World/grains.kc:material:mu=0.1:0.9:9``.  The points are the Cartesian product of the
parameters' values, the first parameter varying slowest; point ``i`` of the table is
always combination ``i``, whatever order the tasks finish in.

For each point the scene file is opened, the values are authored over it (in memory, then
written as one flattened USD file), loaded with :func:`scenes.load`, simulated with
:func:`scenes.run` and measured by ``metrics(result, scene) -> dict``.  The point's USD
animation comes back to the caller as bytes, so workers on other machines need no shared
file system.  A point that fails (bad value, non-finite state, ...) becomes a row with
``status = "failed"`` and its one-line error; the other points finish.

Batching (``batch=K`` / ``kcsim sweep --batch K``; off by default): K consecutive points
form one task, and when they share topology and every model-wide setting they are packed
into one model (one environment each, ``add_builder``) and simulated together; see
scenes/sweep_batch.py for the exact rule and docs/distributed.md, "When batching happens".
"""
from __future__ import annotations

import csv
import itertools
import json
import math
import os
import tempfile
import time

import numpy as np

__all__ = ["SweepParam", "SweepTable", "parse_param", "sweep", "default_metrics", "run_point", "points_of"]

INT_TYPES = {"int", "uint", "int64", "uint64", "uchar"}
FLOAT_TYPES = {"float", "double", "half"}
#: kc: attributes of integer type (for a swept attribute the scene does not author yet)
KC_INT_ATTRS = {"kc:substeps", "kc:frames", "kc:grid:seed", "kc:fluid:iterations"}


class SweepParam:
    """One swept attribute: ``prim`` path, ``attr`` name and the ``values`` it takes."""

    def __init__(self, prim, attr, values, text=None):
        self.prim, self.attr, self.values = str(prim), str(attr), list(values)
        self.text = text or f"{self.prim}.{self.attr}"
        if not self.values:
            raise ValueError(f"--param {self.text}: no values")

    @property
    def name(self) -> str:
        """Column name: ``PRIM.ATTR``."""
        return f"{self.prim}.{self.attr}"

    def __repr__(self):
        return f"SweepParam({self.name!r}, {self.values!r})"


def _number(text, spec):
    try:
        v = float(text)
    except ValueError:
        raise ValueError(f"--param {spec}: '{text}' is not a number") from None
    if not math.isfinite(v):
        raise ValueError(f"--param {spec}: '{text}' is not a finite number")
    return v


def parse_param(spec) -> SweepParam:
    """``"/World/grains.kc:material:mu=0.1:0.9:9"`` -> SweepParam (ValueError naming what is wrong)."""
    if isinstance(spec, SweepParam):
        return spec
    text = str(spec).strip()
    form = "give PRIM.ATTR=lo:hi:n, PRIM.ATTR=a,b,c or PRIM.ATTR=x (e.g. /World/grains.kc:material:mu=0.1:0.9:9)"
    if "=" not in text:
        raise ValueError(f"--param {text}: no '=': {form}")
    target, values = text.split("=", 1)
    slash = target.rfind("/")
    dot = target.find(".", slash + 1)
    if not target.startswith("/") or dot < 0 or dot == len(target) - 1:
        raise ValueError(f"--param {text}: '{target}' is not PRIM.ATTR (an absolute prim path, a dot, an attribute "
                         f"name): {form}")
    prim, attr = target[:dot], target[dot + 1:]
    values = values.strip()
    if not values:
        raise ValueError(f"--param {text}: no values: {form}")
    if ":" in values:
        parts = values.split(":")
        if len(parts) != 3:
            raise ValueError(f"--param {text}: a range is lo:hi:n, got '{values}'")
        lo, hi = _number(parts[0], text), _number(parts[1], text)
        try:
            n = int(parts[2])
        except ValueError:
            raise ValueError(f"--param {text}: the count n of lo:hi:n must be a whole number, got '{parts[2]}'") from None
        if n < 1:
            raise ValueError(f"--param {text}: the count n of lo:hi:n must be >= 1, got {n}")
        vals = [float(v) for v in np.linspace(lo, hi, n)] if n > 1 else [lo]
    else:
        vals = [_number(v.strip(), text) for v in values.split(",")]
    return SweepParam(prim, attr, vals, text)


def _as_params(params):
    if isinstance(params, (str, SweepParam)):
        params = [params]
    if isinstance(params, dict):
        out = []
        for k, v in params.items():
            p = parse_param(f"{k}=0")
            out.append(SweepParam(p.prim, p.attr, [float(x) for x in np.atleast_1d(v)], k))
        return out
    out = [parse_param(p) for p in params]
    names = [p.name for p in out]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"--param {dup[0]} is given more than once")
    return out


def points_of(params) -> list:
    """The sweep's points: one ``{column name: value}`` dict per combination, first parameter slowest."""
    params = _as_params(params)
    return [dict(zip([p.name for p in params], combo)) for combo in itertools.product(*[p.values for p in params])]


# -- writing a point's scene -------------------------------------------------------------------------

def _open_stage(path):
    from pxr import Usd

    from .usd_loader import SceneError, _first_line, _quiet_stderr

    try:
        with _quiet_stderr():
            stage = Usd.Stage.Open(path)
    except Exception as e:  # noqa: BLE001 - pxr raises its own error type
        raise SceneError(path, f"malformed USD: {_first_line(e)}") from None
    if stage is None:
        raise SceneError(path, "malformed USD: the stage could not be opened")
    return stage


def _attribute_type(stage, path, prim_path, attr):
    """USD type name of the swept attribute (SceneError when the prim or attribute is unknown)."""
    from . import schema
    from .usd_loader import SceneError

    prim = stage.GetPrimAtPath(prim_path)
    if not prim or not prim.IsValid():
        raise SceneError(path, f"--param {prim_path}.{attr}: no prim {prim_path} in the scene")
    a = prim.GetAttribute(attr)
    if a and a.IsValid() and a.GetTypeName():
        name = str(a.GetTypeName())
    elif attr in schema.ALL_KC:
        name = "int" if attr in KC_INT_ATTRS else "float"
    else:
        have = sorted(x.GetName() for x in prim.GetAttributes() if x.IsAuthored())
        raise SceneError(path, f"--param {prim_path}.{attr}: the prim has no attribute '{attr}'"
                               f"{schema.suggest(attr, have + schema.ALL_KC)}", prim_path)
    if name not in INT_TYPES | FLOAT_TYPES:
        raise SceneError(path, f"--param {prim_path}.{attr}: only scalar number attributes can be swept, "
                               f"this one is '{name}'", prim_path)
    return name


def check_params(scene_path, params):
    """Raise SceneError/ValueError (one line) when a parameter cannot be applied to the scene; returns
    ``{column: USD type name}``.  Runs in the caller before any task starts."""
    from .usd_loader import SceneError

    if not scene_path.endswith((".usda", ".usd", ".usdc")):
        raise SceneError(scene_path, "sweeps need a USD scene (.usda/.usd/.usdc); reference a robot file from one "
                                     "with kc:robot")
    if not os.path.isfile(scene_path):
        raise SceneError(scene_path, "file not found")
    stage = _open_stage(scene_path)
    types = {}
    for p in params:
        t = _attribute_type(stage, scene_path, p.prim, p.attr)
        if t in INT_TYPES:
            bad = [v for v in p.values if v != round(v)]
            if bad:
                raise ValueError(f"--param {p.text}: {p.attr} is an integer attribute, got {bad[0]:g}")
        types[p.name] = t
    return types


def write_point_scene(scene_path, assignment, types, out_path):
    """Author ``assignment`` ({PRIM.ATTR: value}) over the scene and write it flattened to ``out_path``."""
    from pxr import Sdf

    stage = _open_stage(scene_path)
    stage.SetEditTarget(stage.GetSessionLayer())  # the scene file itself is never modified
    for name, value in assignment.items():
        prim_path, attr = _split(name)
        t = types[name]
        prim = stage.GetPrimAtPath(prim_path)
        a = prim.GetAttribute(attr)
        if not (a and a.IsValid()):
            a = prim.CreateAttribute(attr, Sdf.ValueTypeNames.Find(t))
        a.Set(int(round(value)) if t in INT_TYPES else float(value))
    stage.Export(out_path)
    return out_path


def _split(name):
    slash = name.rfind("/")
    dot = name.find(".", slash + 1)
    return name[:dot], name[dot + 1:]


# -- one point ------------------------------------------------------------------------------------------

def default_metrics(result, scene) -> dict:
    """Summary numbers of a finished run: centre of mass [m], mean speed [m/s] and kinetic
    energy [J] of the particles (``p_``) and of the bodies' linear motion (``b_``, from
    ``State.body_qd``; a reduced-coordinate solver may leave that at its initial value)."""
    out = {"frames": int(result.frames)}
    model, state = getattr(result, "model", None), getattr(result, "state", None)
    if model is None or state is None:
        return out
    if model.particle_count:
        q, qd = state.particle_q.numpy().astype(np.float64), state.particle_qd.numpy().astype(np.float64)
        m = model.particle_mass.numpy().astype(np.float64)
        _motion(out, "p", q, qd, m)
    if model.body_count:
        bq, bqd = state.body_q.numpy().astype(np.float64), state.body_qd.numpy().astype(np.float64)
        m = model.body_mass.numpy().astype(np.float64)
        _motion(out, "b", bq[:, :3], bqd[:, :3], m)  # body_qd: linear velocity [m/s] first
    return out


def _motion(out, prefix, q, v, m):
    total = m.sum()
    com = (q * m[:, None]).sum(0) / total if total > 0 else q.mean(0)
    speed = np.linalg.norm(v, axis=1)
    out.update({f"{prefix}_com_x": float(com[0]), f"{prefix}_com_y": float(com[1]), f"{prefix}_com_z": float(com[2]),
                f"{prefix}_mean_speed": float(speed.mean()),
                f"{prefix}_kinetic_energy": float(0.5 * (m * speed ** 2).sum())})


def run_point(task) -> dict:
    """Simulate one point (runs inside a worker).  ``task`` = dict(scene, index, assignment, types,
    frames, substeps, metrics, write_usd).  Returns the row dict, with the USD file's bytes under
    ``"_usd_bytes"`` when asked for.  Errors propagate (parallel_map turns them into TaskFailure)."""
    from . import load
    from .runner import run

    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="kcsweep_") as tmp:
        variant = os.path.join(tmp, f"point_{task['index']:04d}.usda")
        write_point_scene(task["scene"], task["assignment"], task["types"], variant)
        try:
            scene = load(variant, strict=task.get("strict", False))
        except Exception as e:
            # name the user's scene, not the temporary variant file
            e.args = tuple(str(a).replace(variant, task["scene"]) if isinstance(a, str) else a for a in e.args)
            raise
        scene.path = task["scene"]
        usd = os.path.join(tmp, f"point_{task['index']:04d}.usd") if task.get("write_usd", True) else None
        result = run(scene, frames=task.get("frames"), substeps=task.get("substeps"), out=usd, progress=False)
        metrics = (task.get("metrics") or default_metrics)(result, scene)
        row = {"seconds": time.perf_counter() - start, "_warnings": list(scene.warnings)}
        row.update({str(k): _plain(v) for k, v in dict(metrics).items()})
        if usd is not None:
            with open(usd, "rb") as f:
                row["_usd_bytes"] = f.read()
    return row


def _plain(v):
    if isinstance(v, np.generic):
        return v.item()
    return v


# -- the table ----------------------------------------------------------------------------------------

class SweepTable:
    """The sweep's result: one row (a dict) per point, in point order.

    Columns: ``point``, one per parameter (``PRIM.ATTR``), ``status`` ("ok"/"failed"),
    ``error`` (one line, empty when ok), ``seconds`` (wall time of the point, compile
    included), the metrics' columns, and ``usd`` (the point's USD file when written).
    """

    def __init__(self, rows, param_names, warnings=()):
        self.rows, self.param_names = list(rows), list(param_names)
        self.warnings = list(warnings)  # the scene's unsupported features (Scene.warnings), once each
        self.notices = []  # batches that could not be packed into one model, and why (one line each)

    def __len__(self):
        return len(self.rows)

    def __iter__(self):
        return iter(self.rows)

    def __getitem__(self, i):
        return self.rows[i]

    @property
    def columns(self) -> list:
        cols = ["point", *self.param_names, "status", "error", "seconds"]
        for r in self.rows:
            for k in r:
                if k not in cols and k != "usd":
                    cols.append(k)
        if any("usd" in r for r in self.rows):
            cols.append("usd")
        return cols

    @property
    def failed(self) -> list:
        """Rows of the points that failed."""
        return [r for r in self.rows if r["status"] != "ok"]

    def column(self, name) -> np.ndarray:
        """One column as an array (NaN / None where a row has no value)."""
        vals = [r.get(name) for r in self.rows]
        if all(v is None or isinstance(v, (int, float, bool)) for v in vals):
            return np.array([np.nan if v is None else v for v in vals], dtype=np.float64)
        return np.array(vals, dtype=object)

    def to_csv(self, path):
        cols = self.columns
        with open(path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
            w.writeheader()
            for r in self.rows:
                w.writerow({c: ("" if r.get(c) is None else repr(r[c]) if isinstance(r.get(c), float) else r[c])
                            for c in cols})
        return path

    def to_parquet(self, path):
        """Write Parquet (needs pyarrow; None when it is not installed)."""
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            return None
        pq.write_table(pa.table({c: [r.get(c) for r in self.rows] for c in self.columns}), path)
        return path

    def to_pandas(self):
        import pandas as pd

        return pd.DataFrame([{c: r.get(c) for c in self.columns} for r in self.rows])

    def plot(self, path):
        """One panel per numeric metric against the first parameter (a line per value of the others)."""
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt

        skip = {"point", "seconds", "frames", *self.param_names}
        metrics = [c for c in self.columns if c not in skip and c not in ("status", "error", "usd")
                   and np.issubdtype(self.column(c).dtype, np.number)][:6]
        if not metrics or not self.param_names:
            return None
        x_name, others = self.param_names[0], self.param_names[1:]
        groups = {}
        for r in self.rows:
            groups.setdefault(tuple(r[o] for o in others), []).append(r)
        fig, axes = plt.subplots(1, len(metrics), figsize=(4 * len(metrics), 3.2), squeeze=False)
        for ax, m in zip(axes[0], metrics):
            for key, rows in groups.items():
                xs = [r[x_name] for r in rows]
                ys = [r.get(m) if r["status"] == "ok" and r.get(m) is not None else np.nan for r in rows]
                label = ", ".join(f"{o.rsplit('.', 1)[-1]}={v:g}" for o, v in zip(others, key)) or None
                ax.plot(xs, ys, "o-", label=label)
            ax.set_xlabel(x_name.rsplit(".", 1)[-1])
            ax.set_title(m)
            if others and len(groups) <= 8:
                ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(path, dpi=100)
        plt.close(fig)
        return path


# -- the sweep ----------------------------------------------------------------------------------------

def sweep(scene, params, frames=None, metrics=None, address=None, out=None, substeps=None, serial=None,
          progress=None, num_cpus=1, strict=False, batch=1) -> SweepTable:
    """Simulate every combination of ``params`` over ``scene`` and return a :class:`SweepTable`.

    Args:
        scene: a USD scene file or library scene name (a :class:`Scene` is accepted: its file).
        params: ``["/World/grains.kc:material:mu=0.1:0.9:9", ...]`` (see the module docstring),
            SweepParam objects, or ``{"PRIM.ATTR": values}``.
        frames, substeps: as for :func:`scenes.run` (None: the scene's).
        metrics: ``fn(result, scene) -> {name: number}`` evaluated after each point (picklable;
            default :func:`default_metrics`).
        address: Ray cluster (None: a local one, or the one already connected); ignored when
            the points run serially.
        out: a directory: writes ``points/point_NNNN.usd`` per point, ``summary.csv`` (and
            ``summary.parquet`` with pyarrow) and ``summary.png``.  None writes nothing.
        serial: True runs in this process; None uses Ray when installed (sim.parallel_map).
        progress: None, or callable(done, total) after each finished point.
        strict: unsupported scene features fail the points (else they are ``table.warnings``).
        batch: points per task (1: off).  K > 1 packs K consecutive points into one model when
            they can share one (scenes/sweep_batch.py; else they run one by one in the task and
            ``table.notices`` says why); results equal the unbatched ones to float32 round-off.
            ``seconds`` is then the batch's time divided by its points; ``batch_size`` says how
            many points shared a model.
    """
    from sim.parallel import TaskFailure, parallel_map

    from . import resolve

    path = os.path.abspath(resolve(getattr(scene, "path", scene)))
    params = _as_params(params)
    if not params:
        raise ValueError("sweep: give at least one parameter (PRIM.ATTR=lo:hi:n)")
    if frames is not None and int(frames) < 0:
        raise ValueError(f"--frames must be >= 0, got {frames}")
    batch = _check_batch(batch)
    types = check_params(path, params)
    points = points_of(params)
    if out is not None:
        os.makedirs(os.path.join(out, "points"), exist_ok=True)
    tasks = [dict(scene=path, index=i, assignment=a, types=types, frames=frames, substeps=substeps, metrics=metrics,
                  write_usd=out is not None, strict=bool(strict)) for i, a in enumerate(points)]
    if batch > 1:
        results = _run_batched(tasks, batch, address, serial, progress, num_cpus)
    else:
        results = parallel_map(run_point, tasks, address=address, serial=serial, return_exceptions=True,
                               progress=progress, num_cpus=num_cpus)
    rows, warnings, notices = [], [], []
    for i, (a, res) in enumerate(zip(points, results)):
        row = {"point": i, **a}
        if isinstance(res, TaskFailure):
            row.update(status="failed", error=res.error)
        elif "_error" in res:
            row.update(status="failed", error=res["_error"])
        else:
            row.update(status="ok", error="")
            notice = res.pop("_notice", None)
            if notice and notice not in notices:
                notices.append(notice)
            usd_bytes = res.pop("_usd_bytes", None)
            warnings += [w for w in res.pop("_warnings", ()) if w not in warnings]
            row.update(res)
            if usd_bytes is not None and out is not None:
                row["usd"] = os.path.join(out, "points", f"point_{i:04d}.usd")
                with open(row["usd"], "wb") as f:
                    f.write(usd_bytes)
        rows.append(row)
    table = SweepTable(rows, [p.name for p in params], warnings)
    table.notices = notices
    if out is not None:
        table.to_csv(os.path.join(out, "summary.csv"))
        table.to_parquet(os.path.join(out, "summary.parquet"))
        with open(os.path.join(out, "sweep.json"), "w") as f:
            json.dump({"scene": path, "params": {p.name: p.values for p in params}, "frames": frames,
                       "substeps": substeps, "points": len(points), "failed": len(table.failed)}, f, indent=1)
        table.plot(os.path.join(out, "summary.png"))
    return table


def _check_batch(batch) -> int:
    try:
        k = int(batch)
    except (TypeError, ValueError):
        raise ValueError(f"--batch must be a whole number >= 1, got {batch!r}") from None
    if k < 1 or k != batch:
        raise ValueError(f"--batch must be a whole number >= 1, got {batch!r}")
    return k


def _run_batched(tasks, batch, address, serial, progress, num_cpus):
    """Chunks of ``batch`` consecutive points, one task each (scenes/sweep_batch.run_batch); returns one
    result per point (a row dict, ``{"_error": ...}`` or the chunk's TaskFailure)."""
    from sim.parallel import TaskFailure, parallel_map

    from .sweep_batch import run_batch

    chunks = [tasks[i:i + batch] for i in range(0, len(tasks), batch)]
    done = [0]

    def chunk_progress(finished, total):  # the caller counts points, not chunks
        if progress is not None:
            done[0] = sum(len(c) for c in chunks[:finished]) if finished < total else len(tasks)
            progress(done[0], len(tasks))

    out = parallel_map(run_batch, chunks, address=address, serial=serial, return_exceptions=True,
                       progress=chunk_progress, num_cpus=num_cpus)
    results = []
    for chunk, res in zip(chunks, out):
        if isinstance(res, TaskFailure):
            results += [res] * len(chunk)
        else:
            results += res
    return results
