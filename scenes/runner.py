"""Run a Scene: substeps per frame, a NaN/Inf check per frame, USD output and an optional viewer."""
from __future__ import annotations

import time

import numpy as np

from .progress import progress_bar
from .render_adapter import ModelRenderer


class SimulationError(RuntimeError):
    """The simulation produced non-finite values; ``frame`` and ``quantity`` say where."""

    def __init__(self, frame, quantity, count, first, saved=None):
        self.frame, self.quantity, self.count, self.first, self.saved = frame, quantity, count, first, saved
        msg = (f"frame {frame}: {quantity} has {count} non-finite value(s) (first at index {first}); "
               f"the time step is probably too large for the stiffness")
        if saved:
            msg += f"; frames 0-{frame - 1} were saved to {saved}"
        super().__init__(msg)


class RunResult:
    """What run() did: model, final state, frames simulated, output path, wall time [s]."""

    def __init__(self, model, state, frames, out, elapsed):
        self.model, self.state, self.frames, self.out, self.elapsed = model, state, frames, out, elapsed


def check_finite(state):
    """(quantity name, count, first index) of the first non-finite state array, or None."""
    for name, arr in state.arrays():
        if arr.size == 0:
            continue
        a = arr.numpy()
        bad = ~np.isfinite(a.reshape(a.shape[0], -1)).all(axis=1)
        if bad.any():
            return name, int(bad.sum()), int(np.argmax(bad))
    return None


def run(scene, frames=None, substeps=None, device="cpu", out=None, viewer=False, progress=True, renderers=()):
    """Simulate ``scene`` for ``frames`` frames of ``scene.frame_dt`` seconds.

    Args:
        frames: number of frames (default ``scene.frames``); frame 0 is the initial state,
            so a USD output has ``frames + 1`` time samples.
        substeps: solver steps per frame (default ``scene.substeps``).
        out: path of a USD file to write (.usd/.usda/.usdc), or None.
        viewer: open an OpenGL viewer (True), or pass an OpenGLViewer instance; the run
            stops early when its window is closed.
        renderers: further renderer objects to draw into.
    Raises SimulationError naming the frame and quantity when a state becomes non-finite,
    after saving the frames written so far.
    """
    frames = scene.frames if frames is None else int(frames)
    substeps = scene.substeps if substeps is None else int(substeps)
    if frames < 0 or substeps < 1:
        raise ValueError(f"run: frames must be >= 0 and substeps >= 1, got {frames}, {substeps}")
    dt = scene.frame_dt / substeps
    model = scene.finalize(device=device)
    solver = scene.make_solver(model)
    s0, s1 = model.state(), model.state()
    outputs = []
    usd = None
    if out:
        import render

        usd = render.UsdRenderer(out, fps=1.0 / scene.frame_dt, up_axis=scene.up_axis)
        outputs.append(ModelRenderer(usd, model, scene.particle_groups))
    view = view_out = None
    if viewer:
        if viewer is True:
            import render

            view = render.OpenGLViewer(title=f"kcsim: {scene.path}", up_axis=scene.up_axis)
        else:
            view = viewer
        view_out = ModelRenderer(view, model, scene.particle_groups)
        outputs.append(view_out)
    outputs += [ModelRenderer(r, model, scene.particle_groups) for r in renderers]

    def draw(frame):
        for o in outputs:
            o.render(s0, frame * scene.frame_dt)

    bar = progress_bar(frames, desc="simulating", enabled=progress)
    start = time.perf_counter()
    done = 0
    try:
        draw(0)
        while done < frames:
            if view is not None:
                if not view.is_running():
                    break
                if view.is_paused():  # keep the window responsive without advancing
                    view_out.render(s0, done * scene.frame_dt)
                    continue
            f = done + 1
            for _ in range(substeps):
                solver.step(model, s0, s1, None, dt)
                s0, s1 = s1, s0
            bad = check_finite(s0)
            if bad is not None:
                saved = None
                if usd is not None:
                    usd.save()
                    saved = usd.path
                raise SimulationError(f, bad[0], bad[1], bad[2], saved)
            draw(f)
            done = f
            bar.update(1)
    finally:
        bar.close()
    elapsed = time.perf_counter() - start
    if usd is not None:
        usd.save()
    if view is not None and viewer is True:
        view.close()
    return RunResult(model, s0, done, usd.path if usd is not None else None, elapsed)
