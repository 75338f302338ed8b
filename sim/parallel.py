"""``parallel_map``: evaluate a function over many items on a Ray cluster, or serially.

Parameter sweeps and population-based optimisation (N candidate controllers, each
simulated with its own Tape) are embarrassingly parallel: every item is one Ray task.
We do not run our own cluster: ``address=None`` starts (or reuses) a local Ray cluster on
this machine, ``address="auto"`` joins the cluster this machine belongs to, and
``address="ray://head:10001"`` connects a client to a remote one (docs/distributed.md).

Ray is optional (``pip install kernelcore[distributed]``).  Without it the items run one
after another in this process, with the same results, and ``serial_reason`` says why.

Each task's worker limits kernelcore to the CPUs Ray gave the task
(``KERNELCORE_NUM_THREADS``, unless the user set it), so that tasks sharing a machine do
not oversubscribe its cores.  Workers share the kernel cache directory of their machine
(safe across processes, see kernelcore/cache.py).
"""
from __future__ import annotations

import os
import re
import traceback

__all__ = ["parallel_map", "TaskFailure", "ParallelMapError", "ray_available", "serial_reason"]


class TaskFailure:
    """An item whose function raised: ``index``, ``item``, ``error`` ("Type: message", one line)
    and ``traceback`` (text, for a log)."""

    def __init__(self, index, item, error, tb=""):
        self.index, self.item, self.error, self.traceback = index, item, error, tb

    def __repr__(self):
        return f"TaskFailure(index={self.index}, item={self.item!r}, error={self.error!r})"


class ParallelMapError(RuntimeError):
    """parallel_map(return_exceptions=False): an item failed; ``failure`` is its TaskFailure."""

    def __init__(self, failure):
        self.failure = failure
        super().__init__(f"parallel_map: item {failure.index} ({_short(failure.item)}) failed: {failure.error}")


def _short(item, n=120):
    text = repr(item)
    return text if len(text) <= n else text[:n - 3] + "..."


def _one_line(e) -> str:
    return f"{type(e).__name__}: {' '.join(str(e).split())}"[:1000]


def _ray_error_text(e) -> str:
    """The root cause of a Ray error in one line (Ray's own text spans lines, with colour codes)."""
    cause = getattr(e, "cause", None)
    while getattr(cause, "cause", None) is not None and cause.cause is not cause:
        cause = cause.cause
    if isinstance(cause, BaseException):
        e = cause
    lines = [ln.strip() for ln in re.sub(r"\x1b\[[0-9;]*m", "", str(e)).splitlines() if ln.strip()]
    last = lines[-1] if lines else ""
    return f"{type(e).__name__}: {last}"[:1000] if last and ":" not in last[:60] else (last or type(e).__name__)[:1000]


def ray_available() -> bool:
    """Can ``import ray`` succeed here?"""
    return serial_reason() is None


def serial_reason():
    """Why parallel_map would run serially here (a sentence), or None when Ray is importable."""
    try:
        import ray  # noqa: F401
    except ImportError:
        return "Ray is not installed (pip install 'kernelcore[distributed]' or pip install ray)"
    return None


def _call(fn, index, item, cpus):
    """Run one item in a worker; failures come back as TaskFailure (never as a Ray error)."""
    os.environ.setdefault("KERNELCORE_NUM_THREADS", str(max(1, int(cpus))))
    try:
        return fn(item)
    except Exception as e:  # noqa: BLE001 - reported to the caller with its item
        return TaskFailure(index, item, _one_line(e), traceback.format_exc())


def ensure_ray(address=None, **init_kwargs):
    """Import ray and connect: reuse a running ray session, else ``ray.init(address=address)``.

    ``address=None`` starts a local cluster (Ray's default); ``"auto"`` or ``"ray://host:port"``
    joins an existing one.  Raises RuntimeError (one line) when Ray is missing or the cluster
    cannot be reached."""
    reason = serial_reason()
    if reason is not None:
        raise RuntimeError(reason)
    import ray

    if ray.is_initialized():
        return ray
    import logging

    kwargs = dict(ignore_reinit_error=True, log_to_driver=False, include_dashboard=False,
                  logging_level=logging.WARNING)
    kwargs.update(init_kwargs)
    try:
        ray.init(address=address, **kwargs)
    except Exception as e:  # noqa: BLE001 - Ray raises many types for an unreachable cluster
        where = f"at {address}" if address else "on this machine"
        raise RuntimeError(f"could not start or join a Ray cluster {where}: {_one_line(e)}") from None
    return ray


def parallel_map(fn, items, address=None, num_cpus: float = 1, serial: bool | None = None,
                 return_exceptions: bool = False, progress=None):
    """``[fn(item) for item in items]``, each call a Ray task; results in the order of ``items``.

    Args:
        fn: a picklable callable of one argument (functions, closures and lambdas are fine:
            Ray pickles them with cloudpickle).  Its result must be picklable (numpy arrays,
            numbers, dicts; not kernelcore arrays: return ``a.numpy()``).
        items: a sequence of arguments.
        address: Ray cluster address (None: a local cluster, or the one ``ray.init`` already
            connected to; ``"auto"``; ``"ray://head:10001"``).
        num_cpus: CPUs reserved per task (also kernelcore's thread count in the task).
        serial: True runs in this process without Ray; None (default) uses Ray when it is
            installed, else runs serially; False requires Ray.
        return_exceptions: False raises ParallelMapError for the first failed item (by
            order) after every task has finished; True puts a TaskFailure in its place.
        progress: None, or a callable(done, total) told after each finished item.
    Returns:
        a list with one result (or TaskFailure) per item.
    """
    items = list(items)
    if num_cpus <= 0:
        raise ValueError(f"parallel_map: num_cpus must be > 0, got {num_cpus}")
    if serial is None:
        serial = serial_reason() is not None
    if serial:
        results = []
        for i, item in enumerate(items):
            try:
                results.append(fn(item))
            except Exception as e:  # noqa: BLE001
                results.append(TaskFailure(i, item, _one_line(e), traceback.format_exc()))
            if progress is not None:
                progress(i + 1, len(items))
    else:
        results = _ray_map(fn, items, address, num_cpus, progress)
    if not return_exceptions:
        for r in results:
            if isinstance(r, TaskFailure):
                raise ParallelMapError(r)
    return results


def _ray_map(fn, items, address, num_cpus, progress):
    ray = ensure_ray(address)
    task = ray.remote(num_cpus=num_cpus, max_retries=0)(_call)
    fn_ref = ray.put(fn)  # shipped once, not once per item
    refs = [task.remote(fn_ref, i, item, num_cpus) for i, item in enumerate(items)]
    index = {r: i for i, r in enumerate(refs)}
    results = [None] * len(items)
    pending = list(refs)
    done = 0
    while pending:
        ready, pending = ray.wait(pending, num_returns=1)
        for r in ready:
            i = index[r]
            try:
                results[i] = ray.get(r)
            except Exception as e:  # noqa: BLE001 - the worker died, or fn/item could not be unpickled there
                results[i] = TaskFailure(i, items[i], f"the Ray task failed: {_ray_error_text(e)}")
            done += 1
            if progress is not None:
                progress(done, len(items))
    return results
