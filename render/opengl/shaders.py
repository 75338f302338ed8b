"""GLSL 330 core sources and a small compile/link helper.

Three programs:

* ``SHADED``: instanced triangles with Blinn-Phong lighting from one
  directional light.  Per-vertex attributes: position (loc 0), normal (1),
  colour (2).  Per-instance attributes: position (3), rotation quaternion
  (x, y, z, w) (4), scale (5), colour (6).  Final colour = vertex colour *
  instance colour, so a mesh feeds per-vertex colours with instance colour
  fixed at white and a primitive does the opposite.  ``u_flat`` = 1 derives
  face normals from screen-space derivatives, which lets user meshes be
  drawn without computing normals on the CPU every frame.
* ``LINES``: unlit lines, position (loc 0) and colour (1).
* ``DEPTH``: the shaded geometry seen from the light, depth only (the shadow map that
  ``SHADED`` reads when ``u_shadows`` = 1).
"""

from __future__ import annotations

import ctypes

SHADED_VS = """
#version 330 core
layout(location = 0) in vec3 a_pos;
layout(location = 1) in vec3 a_normal;
layout(location = 2) in vec3 a_color;
layout(location = 3) in vec3 i_pos;
layout(location = 4) in vec4 i_rot;
layout(location = 5) in vec3 i_scale;
layout(location = 6) in vec3 i_color;

uniform mat4 u_view_proj;

out vec3 v_world;
out vec3 v_normal;
out vec3 v_color;

vec3 quat_rotate(vec4 q, vec3 v) {
    vec3 t = 2.0 * cross(q.xyz, v);
    return v + q.w * t + cross(q.xyz, t);
}

void main() {
    vec3 world = quat_rotate(i_rot, a_pos * i_scale) + i_pos;
    v_world = world;
    // inverse-transpose of a rotation times a diagonal scale
    v_normal = quat_rotate(i_rot, a_normal / max(abs(i_scale), vec3(1e-8)));
    v_color = a_color * i_color;
    gl_Position = u_view_proj * vec4(world, 1.0);
}
"""

SHADED_FS = """
#version 330 core
in vec3 v_world;
in vec3 v_normal;
in vec3 v_color;

uniform vec3 u_eye;
uniform vec3 u_light_dir;   // unit vector pointing towards the light
uniform vec3 u_sky;         // hemisphere ambient colour from above
uniform vec3 u_ground;      // ... and from below
uniform vec3 u_up;
uniform int u_flat;
uniform int u_shadows;      // 1: look up u_shadow_map
uniform mat4 u_light_view_proj;
uniform sampler2DShadow u_shadow_map;
uniform float u_shadow_texel;  // 1 / shadow map size

out vec4 frag_color;

// fraction of the light reaching this point: 3x3 filtered depth comparisons
float light_visibility(vec3 n) {
    if (u_shadows == 0) return 1.0;
    vec4 p = u_light_view_proj * vec4(v_world, 1.0);
    vec3 c = p.xyz / p.w * 0.5 + 0.5;
    if (c.z > 1.0) return 1.0;
    float slope = 1.0 - max(dot(n, u_light_dir), 0.0);
    float bias = 0.0015 + 0.004 * slope;  // avoids self-shadowing stripes ("acne")
    float sum = 0.0;
    for (int i = -1; i <= 1; ++i)
        for (int j = -1; j <= 1; ++j)
            sum += texture(u_shadow_map, vec3(c.xy + vec2(i, j) * u_shadow_texel, c.z - bias));
    return sum / 9.0;
}

void main() {
    vec3 to_eye = normalize(u_eye - v_world);
    vec3 n;
    if (u_flat == 1) {
        n = normalize(cross(dFdx(v_world), dFdy(v_world)));
        if (dot(n, to_eye) < 0.0) n = -n;   // arbitrary winding: face the viewer
    } else {
        n = normalize(v_normal);
        if (!gl_FrontFacing) n = -n;         // inside of open shapes / planes
    }
    float diffuse = max(dot(n, u_light_dir), 0.0);
    vec3 h = normalize(u_light_dir + to_eye);
    float specular = diffuse > 0.0 ? pow(max(dot(n, h), 0.0), 64.0) : 0.0;
    vec3 ambient = mix(u_ground, u_sky, 0.5 + 0.5 * dot(n, u_up));
    float lit = diffuse > 0.0 ? light_visibility(n) : 1.0;
    vec3 color = v_color * (ambient + 0.7 * diffuse * lit) + vec3(0.15 * specular * lit);
    frag_color = vec4(color, 1.0);
}
"""

# Depth-only pass from the light: the same instancing as SHADED_VS, no colour output.
DEPTH_VS = """
#version 330 core
layout(location = 0) in vec3 a_pos;
layout(location = 3) in vec3 i_pos;
layout(location = 4) in vec4 i_rot;
layout(location = 5) in vec3 i_scale;
uniform mat4 u_view_proj;

vec3 quat_rotate(vec4 q, vec3 v) {
    vec3 t = 2.0 * cross(q.xyz, v);
    return v + q.w * t + cross(q.xyz, t);
}

void main() {
    gl_Position = u_view_proj * vec4(quat_rotate(i_rot, a_pos * i_scale) + i_pos, 1.0);
}
"""

DEPTH_FS = """
#version 330 core
void main() {}
"""

LINES_VS = """
#version 330 core
layout(location = 0) in vec3 a_pos;
layout(location = 1) in vec3 a_color;
uniform mat4 u_view_proj;
out vec3 v_color;
void main() {
    v_color = a_color;
    gl_Position = u_view_proj * vec4(a_pos, 1.0);
}
"""

LINES_FS = """
#version 330 core
in vec3 v_color;
out vec4 frag_color;
void main() {
    frag_color = vec4(v_color, 1.0);
}
"""


class ShaderError(RuntimeError):
    """GLSL compilation or linking failed; the message holds the driver log."""


def _check(gl, obj: int, is_program: bool, label: str) -> None:
    status = gl.GLint(0)
    if is_program:
        gl.glGetProgramiv(obj, gl.GL_LINK_STATUS, ctypes.byref(status))
    else:
        gl.glGetShaderiv(obj, gl.GL_COMPILE_STATUS, ctypes.byref(status))
    if status.value:
        return
    log = ctypes.create_string_buffer(8192)
    length = gl.GLsizei(0)
    if is_program:
        gl.glGetProgramInfoLog(obj, len(log), ctypes.byref(length), log)
    else:
        gl.glGetShaderInfoLog(obj, len(log), ctypes.byref(length), log)
    raise ShaderError(f"{label}: {log.value.decode(errors='replace')}")


def _compile(gl, source: str, kind: int, label: str) -> int:
    shader = gl.glCreateShader(kind)
    src = ctypes.c_char_p(source.encode())
    arr = ctypes.cast(ctypes.pointer(src), ctypes.POINTER(ctypes.POINTER(ctypes.c_char)))
    gl.glShaderSource(shader, 1, arr, None)
    gl.glCompileShader(shader)
    _check(gl, shader, False, label)
    return shader


class Program:
    """A linked GLSL program with cached uniform locations."""

    def __init__(self, gl, vertex_src: str, fragment_src: str, label: str) -> None:
        self.gl = gl
        vs = _compile(gl, vertex_src, gl.GL_VERTEX_SHADER, label + " vertex shader")
        fs = _compile(gl, fragment_src, gl.GL_FRAGMENT_SHADER, label + " fragment shader")
        self.id = gl.glCreateProgram()
        gl.glAttachShader(self.id, vs)
        gl.glAttachShader(self.id, fs)
        gl.glLinkProgram(self.id)
        _check(gl, self.id, True, label + " program")
        gl.glDeleteShader(vs)
        gl.glDeleteShader(fs)
        self._locs: dict[str, int] = {}

    def _loc(self, name: str) -> int:
        loc = self._locs.get(name)
        if loc is None:
            loc = self._locs[name] = self.gl.glGetUniformLocation(self.id, name.encode())
        return loc

    def use(self) -> None:
        self.gl.glUseProgram(self.id)

    def set_mat4(self, name: str, m) -> None:
        """Upload a row-major (4, 4) matrix (transpose=True tells GL it is row-major)."""
        data = (ctypes.c_float * 16)(*[float(x) for x in m.reshape(-1)])
        self.gl.glUniformMatrix4fv(self._loc(name), 1, True, data)

    def set_vec3(self, name: str, v) -> None:
        self.gl.glUniform3f(self._loc(name), float(v[0]), float(v[1]), float(v[2]))

    def set_float(self, name: str, v: float) -> None:
        self.gl.glUniform1f(self._loc(name), float(v))

    def set_int(self, name: str, v: int) -> None:
        self.gl.glUniform1i(self._loc(name), int(v))

    def delete(self) -> None:
        if self.id:
            self.gl.glDeleteProgram(self.id)
            self.id = 0
