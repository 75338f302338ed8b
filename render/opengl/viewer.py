"""Interactive / headless OpenGL viewer with the shared renderer interface.

Typical loop (the simulation owns the loop, the viewer never blocks)::

    viewer = OpenGLViewer()
    while viewer.is_running():
        if not viewer.is_paused():
            state = step(state)                 # your simulation
            t += dt
        viewer.begin_frame(t)
        viewer.render_points("particles", state.x, 0.05)
        viewer.end_frame()                      # draws, handles input
    viewer.close()

Controls: left-drag orbit, right/middle-drag (or shift+left) pan, scroll
zoom, W/A/S/D fly (Q/E down/up), space pause, N or "." single step while
paused, P or F2 screenshot, G grid, H HUD, R reset camera, Esc close.

Objects persist by name until re-rendered; :meth:`remove` deletes one.
Lines are always 1 pixel wide (core-profile OpenGL has no wide lines).
"""

from __future__ import annotations

import math
import os
import time as _time
import warnings

import numpy as np

from ..base import RendererBase
from ..mesh_normals import vertex_normals
from . import meshes
from .backend import GLUnavailableError, load_pyglet
from .camera import Camera
from .gpu import Drawable, Framebuffer, GpuMesh, Lines, ShadowMap
from .shaders import DEPTH_FS, DEPTH_VS, LINES_FS, LINES_VS, SHADED_FS, SHADED_VS, Program

# Points are drawn as instanced spheres; fewer triangles per sphere for big
# counts keeps a million particles interactive: (max count, segments, rings).
_POINT_LODS = ((20_000, 16, 10), (300_000, 10, 6), (None, 6, 4))


class OpenGLViewer(RendererBase):
    """OpenGL 3.3 core viewer; see the module docstring for controls.

    Args:
        width, height: window / offscreen image size in pixels.
        headless: render into an offscreen framebuffer with no window (EGL);
            must be the same for every viewer of a process.
        title: window caption.
        up_axis: ``"Y"`` or ``"Z"``; orients the camera and the ground grid.
        samples: MSAA samples of the offscreen framebuffer (0 = off).
        vsync: sync window flips to the display (windowed mode only).
        show_grid, show_hud: initial state of the ground grid and the text HUD.
        background: clear colour, RGB in [0, 1].
        screenshot_dir: where the screenshot key writes PNG files.

    Attributes:
        camera: the :class:`Camera` (target, distance, yaw, pitch, position).
        keys, mouse_buttons: pyglet's ``key`` / ``mouse`` constant modules, for
            feeding events to ``on_key_press`` / ``on_mouse_drag`` in tests.
    """

    _needs_frame = False  # static objects may be added before the first frame

    def __init__(self, width: int = 1280, height: int = 720, headless: bool = False,
                 title: str = "kernelcore viewer", up_axis: str = "Y", samples: int = 4,
                 vsync: bool = False, show_grid: bool = True, show_hud: bool = True,
                 background=(0.11, 0.12, 0.14), screenshot_dir: str = ".") -> None:
        super().__init__()
        if up_axis not in ("Y", "Z"):
            raise ValueError(f"OpenGLViewer: up_axis must be 'Y' or 'Z', got {up_axis!r}")
        self.headless = bool(headless)
        self.up_axis = up_axis
        self._pg = pg = load_pyglet(self.headless)
        self.gl = gl = pg.gl
        self.keys = pg.key
        self.mouse_buttons = pg.mouse
        config = gl.Config(major_version=3, minor_version=3, forward_compatible=True,
                           depth_size=24, double_buffer=True)
        kwargs = dict(width=int(width), height=int(height), caption=title, config=config,
                      visible=not self.headless)
        if not self.headless:
            kwargs.update(resizable=True, vsync=vsync)
        try:
            self.window = pg.window.Window(**kwargs)
        except Exception as exc:  # noqa: BLE001 - no GL 3.3 core context of any kind
            raise GLUnavailableError(
                f"OpenGLViewer: cannot create an OpenGL 3.3 core context ({type(exc).__name__}: {exc}); "
                "headless mode needs the packages in render/SYSTEM_DEPS.txt") from exc
        self.window.push_handlers(self)
        self.camera = Camera(up_axis)
        self._home = (self.camera.target.copy(), self.camera.distance, self.camera.yaw, self.camera.pitch)
        self.show_grid = show_grid
        self.show_hud = show_hud
        self.background = tuple(float(c) for c in background)
        self.screenshot_dir = screenshot_dir
        self.fly_speed = 0.75  # fraction of the camera distance per second
        self.samples = int(samples)

        self._shaded = Program(gl, SHADED_VS, SHADED_FS, "shaded")
        self._lines_prog = Program(gl, LINES_VS, LINES_FS, "lines")
        self._depth_prog = Program(gl, DEPTH_VS, DEPTH_FS, "shadow depth")
        self._shadow_map = ShadowMap(gl, 1024)
        self.light_shadows = True  # objects cast shadows (a shadow map from the directional light)
        self._protos = {
            "sphere": GpuMesh(gl, *meshes.sphere(32, 20)),
            "box": GpuMesh(gl, *meshes.box()),
            "cylinder": GpuMesh(gl, *meshes.cylinder(32)),
            "plane": GpuMesh(gl, *meshes.plane()),
            "capsule": GpuMesh(gl, *meshes.capsule(1.0, 1.0)),
        }
        self._point_meshes = [GpuMesh(gl, *meshes.sphere(s, r)) for _, s, r in _POINT_LODS]
        self._capsules: dict[tuple, GpuMesh] = {}  # (radius, half_height) -> mesh
        self._grid = Lines(gl, gl.GL_LINES)
        self._grid.update(*meshes.grid_lines(up_axis))
        fb_w, fb_h = self.window.get_framebuffer_size()
        self._fb = Framebuffer(gl, fb_w, fb_h, self.samples)
        self._hud = None
        try:  # text needs fontconfig/freetype and a font; the viewer works without them
            self._hud = pg.text.Label("", x=10, y=self.window.height - 10, anchor_x="left",
                                      anchor_y="top", font_size=12, color=(235, 235, 235, 255))
        except Exception as exc:  # noqa: BLE001
            warnings.warn(f"OpenGLViewer: HUD disabled, cannot create text: {exc}", RuntimeWarning, stacklevel=2)

        # Scene, by object name.
        self._shapes: dict[str, tuple] = {}  # name -> (proto key, instance row (13,))
        self._batches: dict[tuple, Drawable] = {}  # proto key -> instanced drawable
        self._batches_dirty = False
        self._points: dict[str, Drawable] = {}
        self._meshes: dict[str, Drawable] = {}
        self._smooth: set[str] = set()   # meshes drawn with their per-vertex normals (cloth)
        self._lines: dict[str, Lines] = {}
        self._instances: dict[str, Drawable] = {}

        self._running = True
        self._paused = False
        self._step_requested = False
        self._held: set[int] = set()
        self._frame_callbacks: list = []
        self._rendered = False
        self._last_end = None
        self.fps = 0.0  # smoothed frames per second of end_frame calls
        self._hud_update = 0.0
        self._hud_frame = None
        self._screenshot_count = 0

    # ------------------------------------------------------------ state
    def is_running(self) -> bool:
        """False once the window was closed (Esc / close button) or close() was called."""
        return self._running

    def is_paused(self) -> bool:
        """True while paused, except once after the single-step key was pressed."""
        if self._step_requested:
            self._step_requested = False
            return False
        return self._paused

    @property
    def paused(self) -> bool:
        return self._paused

    @paused.setter
    def paused(self, value: bool) -> None:
        self._paused = bool(value)

    @property
    def width(self) -> int:
        return self._fb.width

    @property
    def height(self) -> int:
        return self._fb.height

    def add_frame_callback(self, fn) -> None:
        """Call ``fn(viewer)`` after every frame is drawn (used by FrameRecorder)."""
        self._frame_callbacks.append(fn)

    def remove_frame_callback(self, fn) -> None:
        if fn in self._frame_callbacks:
            self._frame_callbacks.remove(fn)

    def frame_bounds(self, lower, upper, margin: float = 1.15) -> None:
        """Aim the camera at the box [lower, upper] (world, (3,) each) so that all of it is in view,
        keeping the current viewing direction; R (reset) returns to this view."""
        lo, hi = np.asarray(lower, np.float64), np.asarray(upper, np.float64)
        if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
            raise ValueError(f"OpenGLViewer.frame_bounds: bounds must be finite, got {lo}, {hi}")
        cam = self.camera
        radius = max(0.5 * float(np.linalg.norm(hi - lo)), 1e-3)
        half_fov = math.radians(cam.fov) / 2.0
        aspect = self._fb.width / max(self._fb.height, 1)
        half_fov = min(half_fov, math.atan(math.tan(half_fov) * aspect))  # the narrower of the two
        cam.target = 0.5 * (lo + hi)
        cam.distance = margin * radius / math.sin(half_fov)
        cam.near = max(1e-4, 0.01 * radius)
        cam.far = max(1000.0, 100.0 * cam.distance)
        self._home = (cam.target.copy(), cam.distance, cam.yaw, cam.pitch)

    def reset_camera(self) -> None:
        target, dist, yaw, pitch = self._home
        self.camera.target, self.camera.distance = target.copy(), dist
        self.camera.yaw, self.camera.pitch = yaw, pitch

    def _ctx(self) -> None:
        if self.window is None:
            raise RuntimeError("OpenGLViewer is closed")
        # Several viewers may share a process: make ours current before GL calls.
        if self.gl.current_context is not self.window.context:
            self.window.switch_to()

    # ------------------------------------------------------------ frames
    def _end_frame(self) -> None:
        if self.window is None:
            raise RuntimeError("OpenGLViewer is closed")
        now = _time.perf_counter()
        dt = 0.0 if self._last_end is None else now - self._last_end
        self._last_end = now
        if dt > 0:
            self.fps = 1.0 / dt if self.fps == 0 else 0.9 * self.fps + 0.1 / dt
        if not self.headless:
            self.window.dispatch_events()
        if not self._running:
            return
        self.update_camera(min(dt, 0.1))
        self.redraw()
        for fn in list(self._frame_callbacks):
            fn(self)
        if not self.headless:
            self._fb.blit(self._fb.resolve_id, 0, *self.window.get_framebuffer_size())
            self.window.flip()

    def update_camera(self, dt: float) -> None:
        """Apply held fly keys (W/A/S/D/Q/E) for ``dt`` seconds."""
        k = self.keys
        held = self._held
        fwd = (k.W in held) - (k.S in held)
        right = (k.D in held) - (k.A in held)
        up = (k.E in held) - (k.Q in held)
        if fwd or right or up:
            step = self.fly_speed * self.camera.distance * dt
            self.camera.fly(fwd * step, right * step, up * step)

    def _shaded_groups(self):
        return (self._batches, self._points, self._instances, self._meshes)

    def light_view_proj(self) -> np.ndarray:
        """World -> light clip space (row-major (4, 4)): an orthographic box around what the camera
        looks at, seen from ``light_direction``, deep enough to hold the casters in front of it."""
        cam = self.camera
        aspect = self._fb.width / max(self._fb.height, 1)
        r = 1.3 * cam.distance * math.tan(math.radians(cam.fov) / 2.0) * max(aspect, 1.0)
        d = self.light_direction
        eye = cam.target + 2.0 * r * d
        f = -d
        helper = cam.up if abs(float(f @ cam.up)) < 0.95 else cam._h2
        side = np.cross(f, helper)
        side /= np.linalg.norm(side)
        up = np.cross(side, f)
        view = np.eye(4)
        view[0, :3], view[1, :3], view[2, :3] = side, up, -f
        view[:3, 3] = -view[:3, :3] @ eye
        near, far = 0.0, 4.0 * r
        proj = np.diag([1.0 / r, 1.0 / r, -2.0 / (far - near), 1.0])
        proj[2, 3] = -(far + near) / (far - near)
        return (proj @ view).astype(np.float32)

    def _draw_shadow_map(self, light_vp) -> None:
        gl = self.gl
        self._shadow_map.bind()
        gl.glEnable(gl.GL_POLYGON_OFFSET_FILL)
        gl.glPolygonOffset(2.0, 4.0)
        dp = self._depth_prog
        dp.use()
        dp.set_mat4("u_view_proj", light_vp)
        for group in self._shaded_groups():
            for d in group.values():
                d.draw()
        gl.glDisable(gl.GL_POLYGON_OFFSET_FILL)

    def redraw(self) -> None:
        """Draw the current scene into the offscreen framebuffer."""
        gl = self.gl
        self._ctx()
        if self._batches_dirty:
            self._rebuild_batches()
        gl.glEnable(gl.GL_DEPTH_TEST)
        gl.glDepthFunc(gl.GL_LESS)
        light_vp = self.light_view_proj()
        if self.light_shadows:
            self._draw_shadow_map(light_vp)
        self._fb.bind()
        gl.glClearColor(*self.background, 1.0)
        gl.glClear(gl.GL_COLOR_BUFFER_BIT | gl.GL_DEPTH_BUFFER_BIT)
        gl.glEnable(gl.GL_DEPTH_TEST)
        gl.glDepthFunc(gl.GL_LESS)
        gl.glDisable(gl.GL_CULL_FACE)  # user meshes have arbitrary winding
        gl.glDisable(gl.GL_BLEND)
        cam = self.camera
        view_proj = cam.projection_matrix(self._fb.width / max(self._fb.height, 1)) @ cam.view_matrix()

        lp = self._lines_prog
        lp.use()
        lp.set_mat4("u_view_proj", view_proj)
        if self.show_grid:
            self._grid.draw()
        for line in self._lines.values():
            line.draw()

        sp = self._shaded
        sp.use()
        sp.set_mat4("u_view_proj", view_proj)
        sp.set_vec3("u_eye", cam.position)
        sp.set_vec3("u_light_dir", self.light_direction)
        sp.set_vec3("u_up", cam.up)
        sp.set_vec3("u_sky", (0.42, 0.42, 0.45))
        sp.set_vec3("u_ground", (0.20, 0.19, 0.18))
        sp.set_int("u_shadows", 1 if self.light_shadows else 0)
        sp.set_mat4("u_light_view_proj", light_vp)
        sp.set_int("u_shadow_map", 1)
        sp.set_float("u_shadow_texel", 1.0 / self._shadow_map.size)
        gl.glActiveTexture(gl.GL_TEXTURE1)
        gl.glBindTexture(gl.GL_TEXTURE_2D, self._shadow_map.texture)
        # Surfaces are pushed back a little in depth so that grid lines and edges drawn at the
        # same depth (the grid on a ground plane at height 0) always win instead of z-fighting.
        gl.glEnable(gl.GL_POLYGON_OFFSET_FILL)
        gl.glPolygonOffset(1.0, 1.0)
        sp.set_int("u_flat", 0)
        for group in (self._batches, self._points, self._instances):
            for d in group.values():
                d.draw()
        sp.set_int("u_flat", 1)
        for name, d in self._meshes.items():
            if name not in self._smooth:
                d.draw()
        sp.set_int("u_flat", 0)
        for name in self._smooth:
            self._meshes[name].draw()
        gl.glDisable(gl.GL_POLYGON_OFFSET_FILL)
        gl.glBindTexture(gl.GL_TEXTURE_2D, 0)
        gl.glActiveTexture(gl.GL_TEXTURE0)
        gl.glBindVertexArray(0)
        gl.glUseProgram(0)
        if self.show_hud:
            self._draw_hud()
        self._fb.resolve()
        self._rendered = True

    @property
    def light_direction(self) -> np.ndarray:
        """Unit vector towards the directional light (world space): high, front-left."""
        c = self.camera
        d = -0.45 * c._h1 + 1.0 * c.up + 0.6 * c._h2
        return d / np.linalg.norm(d)

    def _draw_hud(self) -> None:
        if self._hud is None:
            return
        now = _time.perf_counter()
        # Re-layout the text only when the frame changes (recorded frames must show their
        # own time) or, for the FPS figure, every 0.25 s while paused.
        if self._hud_frame != self.frame or now - self._hud_update > 0.25 or not self._hud.text:
            self._hud_update, self._hud_frame = now, self.frame
            state = "   [PAUSED]" if self._paused else ""
            self._hud.text = f"FPS {self.fps:6.1f}   t = {self.time:.3f} s   frame {max(self.frame, 0)}{state}"
        self._hud.y = self.window.height - 10
        self.gl.glDisable(self.gl.GL_DEPTH_TEST)
        try:
            self._hud.draw()
        except Exception as exc:  # noqa: BLE001 - e.g. no usable font: keep rendering the scene
            warnings.warn(f"OpenGLViewer: HUD disabled, cannot draw text: {exc}", RuntimeWarning, stacklevel=2)
            self._hud = None
        self.gl.glEnable(self.gl.GL_DEPTH_TEST)

    # ------------------------------------------------------------ output
    def get_pixels(self) -> np.ndarray:
        """The last drawn frame as uint8 (H, W, 3), top row first (draws one if needed)."""
        self._ctx()
        if not self._rendered:
            self.redraw()
        return self._fb.read_rgb()

    def screenshot(self, path: str | None = None) -> str:
        """Write the last frame as PNG to ``path`` (default: a new file in screenshot_dir)."""
        import imageio.v3 as iio  # lazy: only needed when writing images

        if path is None:
            self._screenshot_count += 1
            stamp = _time.strftime("%Y%m%d_%H%M%S")
            path = os.path.join(self.screenshot_dir, f"screenshot_{stamp}_{self._screenshot_count:03d}.png")
        path = os.fspath(path)
        parent = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(parent):
            raise FileNotFoundError(2, "OpenGLViewer.screenshot: directory does not exist", parent)
        iio.imwrite(path, self.get_pixels(), extension=".png")
        return path

    # ------------------------------------------------------------ input
    def on_mouse_drag(self, x, y, dx, dy, buttons, modifiers):
        """Left: orbit; right/middle or shift+left: pan.  dx, dy in pixels (y up)."""
        m, k = self.mouse_buttons, self.keys
        if buttons & m.LEFT and not modifiers & k.MOD_SHIFT:
            self.camera.orbit(-0.3 * dx, -0.3 * dy)
        elif buttons & (m.RIGHT | m.MIDDLE | m.LEFT):
            # Scale so that the point at the target follows the mouse.
            per_pixel = 2.0 * math.tan(math.radians(self.camera.fov) / 2.0) / max(self.window.height, 1)
            self.camera.pan(-dx * per_pixel, -dy * per_pixel)
        return True

    def on_mouse_scroll(self, x, y, scroll_x, scroll_y):
        """Scroll up moves closer (10 % per notch)."""
        self.camera.zoom(0.9 ** scroll_y)
        return True

    def on_key_press(self, symbol, modifiers):
        k = self.keys
        if symbol == k.SPACE:
            self._paused = not self._paused
        elif symbol in (k.N, k.PERIOD):
            self._paused = True
            self._step_requested = True
        elif symbol in (k.P, k.F2):
            self.screenshot()
        elif symbol == k.G:
            self.show_grid = not self.show_grid
        elif symbol == k.H:
            self.show_hud = not self.show_hud
        elif symbol == k.R:
            self.reset_camera()
        elif symbol in (k.W, k.A, k.S, k.D, k.Q, k.E):
            self._held.add(symbol)
        else:
            return None  # let pyglet handle it (Esc closes the window)
        return True

    def on_key_release(self, symbol, modifiers):
        self._held.discard(symbol)

    def on_close(self):
        self._running = False
        return True  # keep the GL objects alive until close() frees them

    def on_resize(self, width, height):
        fb_w, fb_h = self.window.get_framebuffer_size()
        if fb_w > 0 and fb_h > 0 and (fb_w, fb_h) != (self._fb.width, self._fb.height):
            self._ctx()
            self._fb.delete()
            self._fb = Framebuffer(self.gl, fb_w, fb_h, self.samples)
            self._rendered = False
        # returning None lets pyglet update its own projection (used by the HUD)

    # ------------------------------------------------------------ scene
    def _hide(self, name: str) -> None:
        if self._shapes.pop(name, None) is not None:
            self._batches_dirty = True
        for group in (self._points, self._meshes, self._lines, self._instances):
            if name in group:
                group[name].visible = False

    def remove(self, name: str) -> None:
        """Delete object ``name`` from the scene (no-op if unknown)."""
        self._ctx()
        self._hide(name)
        self._kinds.pop(name, None)
        self._smooth.discard(name)
        for group in (self._points, self._meshes, self._lines, self._instances):
            obj = group.pop(name, None)
            if obj is not None:
                obj.delete()

    def _draw_points(self, name, points, radius, colors, velocities=None) -> None:
        self._ctx()
        n = points.shape[0]
        lod = next(i for i, (limit, _, _) in enumerate(_POINT_LODS) if limit is None or n <= limit)
        d = self._points.get(name)
        if d is None or d.mesh is not self._point_meshes[lod]:
            if d is not None:
                d.delete()
            d = self._points[name] = Drawable(self.gl, self._point_meshes[lod])
        d.set_array(3, points)
        if isinstance(radius, np.ndarray):
            d.set_array(5, np.repeat(radius[:, None], 3, axis=1))
        else:
            d.set_const(5, (radius, radius, radius))
        if colors.ndim == 2:
            d.set_array(6, colors)
        else:
            d.set_const(6, colors)
        d.count = n
        d.visible = True

    def _draw_mesh(self, name, points, tris, colors, normals=None) -> None:
        self._ctx()
        verts = np.zeros((points.shape[0], 6), np.float32)
        verts[:, :3] = points
        if normals is None:
            self._smooth.discard(name)   # flat shading from screen-space derivatives
        else:
            verts[:, 3:] = normals
            self._smooth.add(name)
        d = self._meshes.get(name)
        if d is None:
            d = self._meshes[name] = Drawable(self.gl, GpuMesh(self.gl, verts, tris, dynamic=True),
                                              owns_mesh=True)
        else:
            d.mesh.update(verts, tris)
        if colors.ndim == 2:
            d.set_array(2, colors, per_instance=False)
        else:
            d.set_const(2, colors)
        d.visible = True

    def _draw_cloth(self, name, points, tris, uvs, colors) -> None:
        """Cloth: smooth shading with area-weighted vertex normals (no texture path here: ``uvs`` unused)."""
        self._draw_mesh(name, points, tris, colors, normals=vertex_normals(points, tris))

    def _draw_shape(self, name, kind, pos, rot, scale, color) -> None:
        if kind == "capsule":
            key = ("capsule", round(float(scale[0]), 5), round(float(scale[1]), 5))
            scale = np.ones(3)
        else:
            key = (kind,)
        row = np.concatenate([pos, rot, scale, color]).astype(np.float32)
        self._shapes[name] = (key, row)
        self._batches_dirty = True

    def _proto_mesh(self, key: tuple) -> GpuMesh:
        if key[0] != "capsule":
            return self._protos[key[0]]
        mesh = self._capsules.get(key)
        if mesh is None:
            mesh = self._capsules[key] = GpuMesh(self.gl, *meshes.capsule(key[1], key[2]))
        return mesh

    def _rebuild_batches(self) -> None:
        """Group all primitive shapes by prototype: one instanced draw per prototype."""
        groups: dict[tuple, list] = {}
        for key, row in self._shapes.values():
            groups.setdefault(key, []).append(row)
        for key in list(self._batches):
            if key not in groups:
                self._batches.pop(key).delete()
        for key, rows in groups.items():
            d = self._batches.get(key)
            if d is None:
                d = self._batches[key] = Drawable(self.gl, self._proto_mesh(key))
            data = np.stack(rows)
            d.set_array(3, data[:, 0:3])
            d.set_array(4, data[:, 3:7])
            d.set_array(5, data[:, 7:10])
            d.set_array(6, data[:, 10:13])
            d.count = len(rows)
        if len(self._capsules) > 64:  # sizes keep changing: drop meshes nobody uses now
            for key in [k for k in self._capsules if k not in groups]:
                self._capsules.pop(key).delete()
        self._batches_dirty = False

    def _draw_line_strip(self, name, vertices, color) -> None:
        self._ctx()
        line = self._lines.get(name)
        if line is None:
            line = self._lines[name] = Lines(self.gl, self.gl.GL_LINE_STRIP)
        line.update(vertices, color)
        line.visible = True

    def _draw_line_list(self, name, vertices, indices, color) -> None:
        self._ctx()
        line = self._lines.get(name)
        if line is None or line.mode != self.gl.GL_LINES:
            if line is not None:
                line.delete()
            line = self._lines[name] = Lines(self.gl, self.gl.GL_LINES)
        line.update(vertices[indices.reshape(-1)], color)
        line.visible = True

    def _draw_instances(self, name, prototype, positions, rotations, scales, colors) -> None:
        self._ctx()
        d = self._instances.get(name)
        if d is None:
            d = self._instances[name] = Drawable(self.gl, self._protos[prototype])
        d.set_array(3, positions)
        d.set_array(4, rotations)
        d.set_array(5, scales)
        if colors.ndim == 2:
            d.set_array(6, colors)
        else:
            d.set_const(6, colors)
        d.count = positions.shape[0]
        d.visible = True

    # ------------------------------------------------------------ teardown
    def close(self) -> None:
        """Free GL resources and close the window; safe to call twice."""
        if getattr(self, "window", None) is None:
            return
        self._running = False
        self._ctx()
        for group in (self._points, self._meshes, self._lines, self._instances, self._batches):
            for obj in group.values():
                obj.delete()
            group.clear()
        for mesh in list(self._protos.values()) + self._point_meshes + list(self._capsules.values()):
            mesh.delete()
        self._grid.delete()
        self._fb.delete()
        self._shadow_map.delete()
        self._shaded.delete()
        self._lines_prog.delete()
        self._depth_prog.delete()
        if self._hud is not None:
            self._hud.delete()
        self.window.close()
        self.window = None
