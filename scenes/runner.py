"""Run a Scene: substeps per frame, a NaN/Inf check per frame, USD output, an optional
viewer and headless recording (mp4 / gif / png folder).

Everything that can be checked before simulating is checked first (device, output
paths, display), so a bad option fails in a second, not after a long run.  Kernels are
compiled by a first "warm-up" step that is timed separately: the progress bar and the
frame rate measure the simulation only.  Ctrl-C (KeyboardInterrupt) stops the run,
saves the frames simulated so far and raises :class:`SimulationInterrupted`.
"""
from __future__ import annotations

import os
import time

import numpy as np

from .progress import progress_bar
from .render_adapter import ModelRenderer
from .usd_mpm import check_time_step


class SimulationError(RuntimeError):
    """The simulation produced non-finite values; ``frame`` and ``quantity`` say where."""

    def __init__(self, frame, quantity, count, first, saved=None):
        self.frame, self.quantity, self.count, self.first, self.saved = frame, quantity, count, first, saved
        msg = (f"frame {frame}: {quantity} has {count} non-finite value(s) (first at index {first}); "
               f"the time step is probably too large for the stiffness")
        if saved:
            msg += f"; frames 0-{frame - 1} were saved to {saved}"
        super().__init__(msg)


class RunSetupError(ValueError):
    """A run option cannot work here (output path, device, display, recording); nothing was simulated."""


class SimulationInterrupted(KeyboardInterrupt):
    """Ctrl-C during a run; ``frames`` were simulated and ``saved`` lists the files written."""

    def __init__(self, frames, saved):
        self.frames, self.saved = frames, list(saved)
        where = f"; frames 0-{frames} were saved to {', '.join(saved)}" if saved else ""
        super().__init__(f"interrupted after {frames} frame(s){where}")


class RunResult:
    """What run() did: model, final state, frames simulated, output path, wall time of the
    simulation [s] and of the kernel warm-up (compilation on a first run) [s]."""

    def __init__(self, model, state, frames, out, elapsed, compile_seconds=0.0, recorded=None):
        self.model, self.state, self.frames, self.out, self.elapsed = model, state, frames, out, elapsed
        self.compile_seconds = compile_seconds
        self.recorded = recorded or {}


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


def check_device(device):
    """The kernelcore device for ``device`` or RunSetupError with kernelcore's reason."""
    import kernelcore as kc

    try:
        return kc.get_device(device)
    except (RuntimeError, ValueError) as e:
        raise RunSetupError(f"--device {device}: {e}") from None


def open_usd_output(path, fps, up_axis):
    import render

    try:
        return render.UsdRenderer(path, fps=fps, up_axis=up_axis)
    except (OSError, ValueError) as e:
        raise RunSetupError(f"--out {path}: {_oserror_text(e)}") from None


def record_kind(path):
    """"mp4", "gif" or "png" (a folder of PNG frames) for a --record target."""
    ext = os.path.splitext(os.fspath(path))[1].lower()
    if ext in (".mp4", ".gif"):
        return ext[1:]
    if ext and not os.path.isdir(path):
        raise RunSetupError(f"--record {path}: give a .mp4 or .gif file or a folder for PNG frames, "
                            f"not a '{ext}' file")
    return "png"


RECORD_SIZE = (640, 480)


def check_record_memory(path, frames):
    """GIF and MP4 frames are kept in memory until the end: refuse a recording that cannot fit."""
    from .usd_loader import _available_memory, _bytes

    if record_kind(path) == "png":
        return
    need = (frames + 1) * RECORD_SIZE[0] * RECORD_SIZE[1] * 3
    avail = _available_memory()
    if avail is not None and need > 0.5 * avail:
        raise RunSetupError(f"--record {path}: {frames + 1} frames of {RECORD_SIZE[0]}x{RECORD_SIZE[1]} need "
                            f"{_bytes(need)} of memory until the file is written ({_bytes(avail)} available); "
                            f"record into a folder of PNG frames instead")


def open_viewer(headless, title, up_axis, size=(1280, 720)):
    import render
    from render.opengl.backend import GLUnavailableError

    try:
        return render.OpenGLViewer(size[0], size[1], headless=headless, title=title, up_axis=up_axis,
                                   show_hud=not headless)
    except GLUnavailableError as e:
        if headless:
            raise RunSetupError(f"--record: {e}") from None
        raise RunSetupError(f"--viewer needs a display ({str(e).split(': use OpenGLViewer')[0]}); record frames "
                            f"without a display with --record out.gif|out.mp4|frames/") from None


def open_recorder(viewer, path, fps):
    import render

    kind = record_kind(path)
    if kind == "mp4" and not render.mp4_available():
        raise RunSetupError(f"--record {path}: MP4 needs the optional package imageio-ffmpeg "
                            f"(pip install imageio-ffmpeg); .gif and PNG folders work without it")
    try:
        if kind == "png":
            return render.FrameRecorder(viewer, path, fps=fps)
        return render.FrameRecorder(viewer, None, fps=fps, **{kind: path})
    except (OSError, ValueError) as e:
        raise RunSetupError(f"--record {path}: {_oserror_text(e)}") from None


def _oserror_text(e):
    if isinstance(e, OSError) and e.filename:
        return f"{e.strerror} ({e.filename})"
    return str(e)


def run(scene, frames=None, substeps=None, device="cpu", out=None, viewer=False, progress=True, renderers=(),
        record=None, status=None):
    """Simulate ``scene`` for ``frames`` frames of ``scene.frame_dt`` seconds.

    Args:
        frames: number of frames (default ``scene.frames``); frame 0 is the initial state,
            so a USD output has ``frames + 1`` time samples.
        substeps: solver steps per frame (default ``scene.substeps``).
        out: path of a USD file to write (.usd/.usda/.usdc), or None.
        viewer: open an OpenGL viewer (True), or pass an OpenGLViewer instance; the run
            stops early when its window is closed.
        renderers: further renderer objects to draw into.
        record: render headless frames to ``x.mp4`` (needs imageio-ffmpeg), ``x.gif`` or
            a folder of PNG files.
        status: callable(str) told about phases ("compiling kernels ..."), or None.
    Raises SimulationError naming the frame and quantity when a state becomes non-finite,
    after saving the frames written so far; RunSetupError for options that cannot work;
    SimulationInterrupted on Ctrl-C, after saving the frames written so far.
    """
    if getattr(scene, "grid_fluid", False):  # smoke scenes: their own loop and USD output
        from .grid_fluid_scene import run_grid_fluid

        # drawn as point sprites (render/grid_fluid.py) into the viewer, the recording and renderers
        views, closers, view, recorder = list(renderers), [], None, None
        fps = 1.0 / scene.frame_dt
        if out:  # the smoke writer is its own: check the path as open_usd_output does, before simulating
            from render.usd_writer import check_writable

            try:
                check_writable(out, "smoke USD output")
            except (OSError, ValueError) as e:
                raise RunSetupError(f"--out {out}: {_oserror_text(e)}") from None
        try:
            if viewer:
                view = open_viewer(False, f"kcsim: {scene.path}", scene.up_axis) if viewer is True else viewer
                if viewer is True:
                    closers.append(view.close)
                views.append(view)
            if record is not None:
                check_record_memory(record, scene.frames if frames is None else int(frames))
                rec_view = view
                if rec_view is None:
                    rec_view = open_viewer(True, "kcsim", scene.up_axis, size=RECORD_SIZE)
                    closers.append(rec_view.close)
                    views.append(rec_view)
                recorder = open_recorder(rec_view, record, fps)
                closers.insert(0, recorder.close)  # write the file before the viewer goes
            result = run_grid_fluid(scene, frames=frames, substeps=substeps, device=device, out=out,
                                    progress=progress, renderers=views, view=view)
            if recorder is not None:
                result.recorded = recorder.close()
            return result
        finally:
            for close in closers:
                close()
    frames = scene.frames if frames is None else int(frames)
    substeps = scene.substeps if substeps is None else int(substeps)
    if frames < 0 or substeps < 1:
        raise ValueError(f"run: frames must be >= 0 and substeps >= 1, got {frames}, {substeps}")
    say = status or (lambda text: None)
    dt = scene.frame_dt / substeps
    check_device(device)
    usd = open_usd_output(out, scene.fps, scene.up_axis) if out else None
    if record is not None:
        check_record_memory(record, frames)  # a bad target fails before the scene is built
    names = dict(particle_groups=scene.particle_groups, shape_names=scene.shape_paths or None,
                 spring_groups=scene.spring_groups or None, colors=scene.group_colors,
                 cloth_groups=getattr(scene, "cloth_groups", None) or None,
                 cloth_uvs=getattr(scene, "cloth_uvs", None) or None)
    view = view_out = None
    closers = []
    try:
        model = scene.finalize(device=device)
        solver = scene.make_solver(model)
        too_large = check_time_step(scene, solver, substeps)  # MPM's CFL guard, before any frame
        if too_large:
            raise RunSetupError(too_large)
        s0, s1 = model.state(), model.state()
        outputs = []
        if usd is not None:
            outputs.append(ModelRenderer(usd, model, **names))
        if viewer:
            if viewer is True:
                view = open_viewer(False, f"kcsim: {scene.path}", scene.up_axis)
                closers.append(view.close)
            else:
                view = viewer
            view_out = ModelRenderer(view, model, **names)
            outputs.append(view_out)
        recorder = None
        if record is not None and view is not None:  # record what the window shows
            recorder = open_recorder(view, record, float(scene.fps))
            closers.insert(0, recorder.close)
        elif record is not None:
            rec_view = open_viewer(True, "kcsim", scene.up_axis, size=RECORD_SIZE)
            closers.append(rec_view.close)
            recorder = open_recorder(rec_view, record, float(scene.fps))
            closers.insert(0, recorder.close)  # write the file before the viewer goes
            outputs.append(ModelRenderer(rec_view, model, **names))
        outputs += [ModelRenderer(r, model, **names) for r in renderers]
        for o in outputs:
            if hasattr(o.renderer, "frame_bounds"):
                o.renderer.frame_bounds(*o.bounds(s0))
        try:
            result = _simulate(scene, model, solver, s0, s1, frames, substeps, dt, outputs, usd, view, view_out,
                               progress, say)
        except SimulationInterrupted as e:
            if recorder is not None:  # the frames drawn so far are kept in the recording too
                out = recorder.close()
                e.saved += [out[k] for k in ("gif", "mp4") if k in out] + ([record] if out.get("png") else [])
                e.args = (SimulationInterrupted(e.frames, e.saved).args[0],)
            raise
        if recorder is not None:
            result.recorded = recorder.close()
        return result
    finally:
        for close in closers:
            close()


def _simulate(scene, model, solver, s0, s1, frames, substeps, dt, outputs, usd, view, view_out, progress, say):
    def draw(frame, state):
        for o in outputs:
            o.render(state, frame * scene.frame_dt)

    done = 0
    compile_seconds = 0.0
    bar = None
    try:
        draw(0, s0)
        if frames:
            say("compiling kernels (first run only; later runs load them from the cache) ...")
            t0 = time.perf_counter()
            solver.step(model, s0, s1, None, dt)  # builds every kernel of a step; s0 is not written
            compile_seconds = time.perf_counter() - t0
            say(f"kernels ready in {compile_seconds:.1f} s")
        bar = progress_bar(frames, desc="simulating", enabled=progress)
        start = time.perf_counter()
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
            draw(f, s0)
            done = f
            bar.update(1)
    except KeyboardInterrupt:
        if bar is not None:
            bar.close()
            bar = None
        saved = []
        if usd is not None:
            usd.abort_frame()  # a frame cut short is dropped, the complete ones are kept
            saved.append(usd.save())
            if usd.end_time_code is not None:  # the USD may hold one more frame than the other outputs
                done = int(round(usd.end_time_code))
        raise SimulationInterrupted(done, saved) from None
    finally:
        if bar is not None:
            bar.close()
    elapsed = time.perf_counter() - start
    if usd is not None:
        usd.save()
    return RunResult(model, s0, done, usd.path if usd is not None else None, elapsed, compile_seconds)
