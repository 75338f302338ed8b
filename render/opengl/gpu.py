"""Thin wrappers around OpenGL buffers, vertex arrays and framebuffers.

``gl`` is the ``pyglet.gl`` module passed in by the viewer (this file does
not import pyglet).  numpy arrays are uploaded through their data pointer.
"""

from __future__ import annotations

import ctypes

import numpy as np

_F32 = 4  # bytes per float32


def _gen(gl, fn) -> int:
    out = gl.GLuint(0)
    fn(1, ctypes.byref(out))
    return out.value


def _delete(gl, fn, ident: int) -> None:
    if ident:
        fn(1, ctypes.byref(gl.GLuint(ident)))


def upload(gl, target: int, buf: int, arr: np.ndarray, usage=None) -> None:
    """Replace the contents of buffer ``buf`` with ``arr`` (re-allocating = orphaning)."""
    arr = np.ascontiguousarray(arr)
    gl.glBindBuffer(target, buf)
    gl.glBufferData(target, arr.nbytes, arr.ctypes.data if arr.nbytes else None,
                    usage if usage is not None else gl.GL_DYNAMIC_DRAW)


class GpuMesh:
    """Vertex buffer (position + normal, float32 (V, 6)) and index buffer (uint32 (M, 3))."""

    def __init__(self, gl, vertices: np.ndarray, indices: np.ndarray, dynamic: bool = False) -> None:
        self.gl = gl
        self.vbo = _gen(gl, gl.glGenBuffers)
        self.ebo = _gen(gl, gl.glGenBuffers)
        self.dynamic = dynamic
        self.index_count = 0
        self.update(vertices, indices)

    def update(self, vertices: np.ndarray, indices: np.ndarray | None) -> None:
        gl = self.gl
        usage = gl.GL_DYNAMIC_DRAW if self.dynamic else gl.GL_STATIC_DRAW
        upload(gl, gl.GL_ARRAY_BUFFER, self.vbo, np.asarray(vertices, np.float32), usage)
        if indices is not None:
            idx = np.asarray(indices, np.uint32)
            # The element buffer binding is VAO state: bind with no VAO to avoid clobbering one.
            gl.glBindVertexArray(0)
            upload(gl, gl.GL_ELEMENT_ARRAY_BUFFER, self.ebo, idx, usage)
            self.index_count = idx.size

    def delete(self) -> None:
        _delete(self.gl, self.gl.glDeleteBuffers, self.vbo)
        _delete(self.gl, self.gl.glDeleteBuffers, self.ebo)
        self.vbo = self.ebo = 0


class Drawable:
    """A VAO drawing a :class:`GpuMesh` ``count`` times with per-instance attributes.

    Attributes (see shaders.SHADED_VS) are either arrays (own VBO; divisor 1
    for instance attributes, 0 for per-vertex ones) or constants; constants
    are generic vertex attribute values, which are context state rather
    than VAO state, so they are re-applied right before each draw.
    """

    def __init__(self, gl, mesh: GpuMesh, owns_mesh: bool = False) -> None:
        self.gl = gl
        self.mesh = mesh
        self.owns_mesh = owns_mesh
        self.vao = _gen(gl, gl.glGenVertexArrays)
        self.count = 1
        self.visible = True
        self._vbos: dict[int, int] = {}
        self._consts: dict[int, tuple] = {}
        self._arrays: dict[int, tuple] = {}  # loc -> (components, per_instance)
        gl.glBindVertexArray(self.vao)
        gl.glBindBuffer(gl.GL_ARRAY_BUFFER, mesh.vbo)
        for loc, offset in ((0, 0), (1, 3 * _F32)):
            gl.glEnableVertexAttribArray(loc)
            gl.glVertexAttribPointer(loc, 3, gl.GL_FLOAT, False, 6 * _F32, offset)
        gl.glBindBuffer(gl.GL_ELEMENT_ARRAY_BUFFER, mesh.ebo)
        gl.glBindVertexArray(0)
        self.set_const(2, (1.0, 1.0, 1.0))
        self.set_const(3, (0.0, 0.0, 0.0))
        self.set_const(4, (0.0, 0.0, 0.0, 1.0))
        self.set_const(5, (1.0, 1.0, 1.0))
        self.set_const(6, (1.0, 1.0, 1.0))

    def set_array(self, loc: int, data: np.ndarray, per_instance: bool = True) -> None:
        """Feed attribute ``loc`` from ``data`` float32 (N, k)."""
        gl = self.gl
        data = np.asarray(data, np.float32)
        buf = self._vbos.get(loc)
        if buf is None:
            buf = self._vbos[loc] = _gen(gl, gl.glGenBuffers)
        upload(gl, gl.GL_ARRAY_BUFFER, buf, data)
        layout = (data.shape[1], per_instance)
        if self._arrays.get(loc) != layout:
            # The attribute pointer is VAO state: set it only when the layout changes.
            gl.glBindVertexArray(self.vao)
            gl.glBindBuffer(gl.GL_ARRAY_BUFFER, buf)
            gl.glEnableVertexAttribArray(loc)
            gl.glVertexAttribPointer(loc, data.shape[1], gl.GL_FLOAT, False, 0, 0)
            gl.glVertexAttribDivisor(loc, 1 if per_instance else 0)
            gl.glBindVertexArray(0)
            self._arrays[loc] = layout
            self._consts.pop(loc, None)

    def set_const(self, loc: int, value: tuple) -> None:
        """Use the same value of attribute ``loc`` for every vertex and instance."""
        gl = self.gl
        if loc in self._arrays:
            gl.glBindVertexArray(self.vao)
            gl.glDisableVertexAttribArray(loc)
            gl.glBindVertexArray(0)
            del self._arrays[loc]
        self._consts[loc] = tuple(float(x) for x in value)

    def draw(self) -> None:
        gl = self.gl
        if not self.visible or self.count <= 0 or self.mesh.index_count == 0:
            return
        gl.glBindVertexArray(self.vao)
        for loc, v in self._consts.items():
            if len(v) == 4:
                gl.glVertexAttrib4f(loc, *v)
            else:
                gl.glVertexAttrib3f(loc, *v)
        gl.glDrawElementsInstanced(gl.GL_TRIANGLES, self.mesh.index_count, gl.GL_UNSIGNED_INT,
                                   None, self.count)

    def delete(self) -> None:
        gl = self.gl
        for buf in self._vbos.values():
            _delete(gl, gl.glDeleteBuffers, buf)
        self._vbos.clear()
        _delete(gl, gl.glDeleteVertexArrays, self.vao)
        self.vao = 0
        if self.owns_mesh:
            self.mesh.delete()


class Lines:
    """Line primitives (GL_LINES or GL_LINE_STRIP) with per-vertex colour."""

    def __init__(self, gl, mode: int) -> None:
        self.gl = gl
        self.mode = mode
        self.vao = _gen(gl, gl.glGenVertexArrays)
        self.vbo_pos = _gen(gl, gl.glGenBuffers)
        self.vbo_col = _gen(gl, gl.glGenBuffers)
        self.count = 0
        self.visible = True
        gl.glBindVertexArray(self.vao)
        for loc, buf in ((0, self.vbo_pos), (1, self.vbo_col)):
            gl.glBindBuffer(gl.GL_ARRAY_BUFFER, buf)
            gl.glEnableVertexAttribArray(loc)
            gl.glVertexAttribPointer(loc, 3, gl.GL_FLOAT, False, 0, 0)
        gl.glBindVertexArray(0)

    def update(self, positions: np.ndarray, colors: np.ndarray) -> None:
        """positions (N, 3); colors (N, 3) or (3,) broadcast to every vertex."""
        gl = self.gl
        pos = np.asarray(positions, np.float32)
        col = np.broadcast_to(np.asarray(colors, np.float32), pos.shape)
        upload(gl, gl.GL_ARRAY_BUFFER, self.vbo_pos, pos)
        upload(gl, gl.GL_ARRAY_BUFFER, self.vbo_col, col)
        self.count = pos.shape[0]

    def draw(self) -> None:
        if self.visible and self.count:
            self.gl.glBindVertexArray(self.vao)
            self.gl.glDrawArrays(self.mode, 0, self.count)

    def delete(self) -> None:
        gl = self.gl
        _delete(gl, gl.glDeleteBuffers, self.vbo_pos)
        _delete(gl, gl.glDeleteBuffers, self.vbo_col)
        _delete(gl, gl.glDeleteVertexArrays, self.vao)
        self.vao = 0


class Framebuffer:
    """Offscreen colour (RGBA8) + depth target, optionally multisampled.

    With ``samples`` > 0 the scene is drawn into a multisampled FBO and
    resolved into a plain one (``resolve_id``), which is what is read back
    and blitted to the window.
    """

    def __init__(self, gl, width: int, height: int, samples: int = 0) -> None:
        self.gl = gl
        self.width, self.height, self.samples = int(width), int(height), int(samples)
        self._rbs: list[int] = []
        self.draw_id = self._make(self.samples, depth=True)
        self.resolve_id = self._make(0, depth=False) if self.samples else self.draw_id

    def _make(self, samples: int, depth: bool) -> int:
        gl = self.gl
        fbo = _gen(gl, gl.glGenFramebuffers)
        gl.glBindFramebuffer(gl.GL_FRAMEBUFFER, fbo)
        attachments = [(gl.GL_RGBA8, gl.GL_COLOR_ATTACHMENT0)]
        if depth:
            attachments.append((gl.GL_DEPTH_COMPONENT24, gl.GL_DEPTH_ATTACHMENT))
        for fmt, attach in attachments:
            rb = _gen(gl, gl.glGenRenderbuffers)
            self._rbs.append(rb)
            gl.glBindRenderbuffer(gl.GL_RENDERBUFFER, rb)
            if samples:
                gl.glRenderbufferStorageMultisample(gl.GL_RENDERBUFFER, samples, fmt, self.width, self.height)
            else:
                gl.glRenderbufferStorage(gl.GL_RENDERBUFFER, fmt, self.width, self.height)
            gl.glFramebufferRenderbuffer(gl.GL_FRAMEBUFFER, attach, gl.GL_RENDERBUFFER, rb)
        status = gl.glCheckFramebufferStatus(gl.GL_FRAMEBUFFER)
        gl.glBindFramebuffer(gl.GL_FRAMEBUFFER, 0)
        if status != gl.GL_FRAMEBUFFER_COMPLETE:
            raise RuntimeError(f"offscreen framebuffer incomplete (status 0x{status:x}, samples={samples})")
        return fbo

    def bind(self) -> None:
        self.gl.glBindFramebuffer(self.gl.GL_FRAMEBUFFER, self.draw_id)
        self.gl.glViewport(0, 0, self.width, self.height)

    def resolve(self) -> None:
        """Copy the multisampled image into the readable one (no-op without MSAA)."""
        if self.resolve_id == self.draw_id:
            return
        self.blit(self.draw_id, self.resolve_id, self.width, self.height)

    def blit(self, src: int, dst: int, dst_w: int, dst_h: int) -> None:
        gl = self.gl
        gl.glBindFramebuffer(gl.GL_READ_FRAMEBUFFER, src)
        gl.glBindFramebuffer(gl.GL_DRAW_FRAMEBUFFER, dst)
        gl.glBlitFramebuffer(0, 0, self.width, self.height, 0, 0, dst_w, dst_h,
                             gl.GL_COLOR_BUFFER_BIT, gl.GL_NEAREST)
        gl.glBindFramebuffer(gl.GL_FRAMEBUFFER, 0)

    def read_rgb(self) -> np.ndarray:
        """The resolved image as uint8 (H, W, 3), top row first."""
        gl = self.gl
        out = np.empty((self.height, self.width, 4), np.uint8)
        gl.glBindFramebuffer(gl.GL_READ_FRAMEBUFFER, self.resolve_id)
        gl.glPixelStorei(gl.GL_PACK_ALIGNMENT, 1)
        gl.glReadPixels(0, 0, self.width, self.height, gl.GL_RGBA, gl.GL_UNSIGNED_BYTE, out.ctypes.data)
        gl.glBindFramebuffer(gl.GL_READ_FRAMEBUFFER, 0)
        return np.ascontiguousarray(out[::-1, :, :3])  # GL rows start at the bottom

    def delete(self) -> None:
        gl = self.gl
        for rb in self._rbs:
            _delete(gl, gl.glDeleteRenderbuffers, rb)
        ids = {self.draw_id, self.resolve_id}
        for fbo in ids:
            _delete(gl, gl.glDeleteFramebuffers, fbo)
        self._rbs.clear()
        self.draw_id = self.resolve_id = 0


class ShadowMap:
    """Depth texture (``size`` x ``size``) rendered from the light, sampled with hardware
    depth comparison (``sampler2DShadow``) so that the shaded pass can do filtered lookups."""

    def __init__(self, gl, size: int = 2048) -> None:
        self.gl = gl
        self.size = int(size)
        self.texture = _gen(gl, gl.glGenTextures)
        gl.glBindTexture(gl.GL_TEXTURE_2D, self.texture)
        gl.glTexImage2D(gl.GL_TEXTURE_2D, 0, gl.GL_DEPTH_COMPONENT24, self.size, self.size, 0,
                        gl.GL_DEPTH_COMPONENT, gl.GL_FLOAT, None)
        for pname, value in ((gl.GL_TEXTURE_MIN_FILTER, gl.GL_LINEAR), (gl.GL_TEXTURE_MAG_FILTER, gl.GL_LINEAR),
                             (gl.GL_TEXTURE_WRAP_S, gl.GL_CLAMP_TO_BORDER),
                             (gl.GL_TEXTURE_WRAP_T, gl.GL_CLAMP_TO_BORDER),
                             (gl.GL_TEXTURE_COMPARE_MODE, gl.GL_COMPARE_REF_TO_TEXTURE),
                             (gl.GL_TEXTURE_COMPARE_FUNC, gl.GL_LEQUAL)):
            gl.glTexParameteri(gl.GL_TEXTURE_2D, pname, value)
        border = (gl.GLfloat * 4)(1.0, 1.0, 1.0, 1.0)  # outside the map: lit
        gl.glTexParameterfv(gl.GL_TEXTURE_2D, gl.GL_TEXTURE_BORDER_COLOR, border)
        gl.glBindTexture(gl.GL_TEXTURE_2D, 0)
        self.fbo = _gen(gl, gl.glGenFramebuffers)
        gl.glBindFramebuffer(gl.GL_FRAMEBUFFER, self.fbo)
        gl.glFramebufferTexture2D(gl.GL_FRAMEBUFFER, gl.GL_DEPTH_ATTACHMENT, gl.GL_TEXTURE_2D, self.texture, 0)
        gl.glDrawBuffer(gl.GL_NONE)
        gl.glReadBuffer(gl.GL_NONE)
        status = gl.glCheckFramebufferStatus(gl.GL_FRAMEBUFFER)
        gl.glBindFramebuffer(gl.GL_FRAMEBUFFER, 0)
        if status != gl.GL_FRAMEBUFFER_COMPLETE:
            raise RuntimeError(f"shadow map framebuffer incomplete (status 0x{status:x})")

    def bind(self) -> None:
        gl = self.gl
        gl.glBindFramebuffer(gl.GL_FRAMEBUFFER, self.fbo)
        gl.glViewport(0, 0, self.size, self.size)
        gl.glClear(gl.GL_DEPTH_BUFFER_BIT)

    def delete(self) -> None:
        gl = self.gl
        _delete(gl, gl.glDeleteFramebuffers, self.fbo)
        _delete(gl, gl.glDeleteTextures, self.texture)
        self.fbo = self.texture = 0
