// Quaternions (x, y, z, w) and rigid transforms (p, q), with adjoints side by side.
//
// Rotation formulas (quat_rotate, quat_to_matrix) assume a unit quaternion; for other
// quaternions they still evaluate one fixed polynomial, so forward and adjoint agree:
//     rotate(q, v) = (2 w^2 - 1) v + 2 w (u x v) + 2 u (u . v),   u = (x, y, z)
// which equals q v q* for |q| = 1.  quat_inverse is the conjugate (the inverse of a
// unit quaternion), as in the seeds.
#pragma once
#include "kc_vec.h"

namespace kc {

template <typename T> struct quat_t {
    T c[4];
};
template <typename T> struct transform_t {
    vec_t<3, T> p;
    quat_t<T> q;
};

template <typename T> KC_FUNC quat_t<T>& operator+=(quat_t<T>& a, const quat_t<T>& b) { KC_FOR(i, 4) a.c[i] += b.c[i]; return a; }
template <typename T> KC_FUNC quat_t<T>& operator-=(quat_t<T>& a, const quat_t<T>& b) { KC_FOR(i, 4) a.c[i] -= b.c[i]; return a; }
template <typename T> KC_FUNC transform_t<T>& operator+=(transform_t<T>& a, const transform_t<T>& b) { a.p += b.p; a.q += b.q; return a; }
template <typename T> KC_FUNC transform_t<T>& operator-=(transform_t<T>& a, const transform_t<T>& b) { a.p -= b.p; a.q -= b.q; return a; }

// small helpers (not builtins)
template <typename T> KC_FUNC quat_t<T> make_quat(T x, T y, T z, T w) { return quat_t<T>{{x, y, z, w}}; }
template <typename T> KC_FUNC quat_t<T> make_quat(const vec_t<3, T>& u, T w) { return quat_t<T>{{u.c[0], u.c[1], u.c[2], w}}; }
template <typename T> KC_FUNC vec_t<3, T> quat_imag(const quat_t<T>& q) { return vec_t<3, T>{{q.c[0], q.c[1], q.c[2]}}; }
template <typename T> KC_FUNC vec_t<4, T> quat_as_vec(const quat_t<T>& q) { return vec_t<4, T>{{q.c[0], q.c[1], q.c[2], q.c[3]}}; }
template <typename T> KC_FUNC quat_t<T> vec_as_quat(const vec_t<4, T>& v) { return quat_t<T>{{v.c[0], v.c[1], v.c[2], v.c[3]}}; }

// ---- element access ---------------------------------------------------------------------
template <typename T> KC_FUNC T extract(const quat_t<T>& q, int32 i) { return q.c[i]; }
template <typename T> KC_FUNC void adj_extract(const quat_t<T>& q, int32 i, quat_t<T>& adj_q, int32&, T adj_ret) { adj_q.c[i] += adj_ret; }
template <typename T> KC_FUNC quat_t<T> assign_copy(const quat_t<T>& q, int32 i, T x) { quat_t<T> r = q; r.c[i] = x; return r; }
template <typename T> KC_FUNC void adj_assign_copy(const quat_t<T>& q, int32 i, T x, quat_t<T>& adj_q, int32&, T& adj_x, const quat_t<T>& adj_ret) {
    KC_FOR(k, 4) if (k != i) adj_q.c[k] += adj_ret.c[k];
    adj_x += adj_ret.c[i];
}
// a transform indexes as its 7 components p.x p.y p.z q.x q.y q.z q.w
template <typename T> KC_FUNC T extract(const transform_t<T>& t, int32 i) { return i < 3 ? t.p.c[i] : t.q.c[i - 3]; }
template <typename T> KC_FUNC void adj_extract(const transform_t<T>& t, int32 i, transform_t<T>& adj_t, int32&, T adj_ret) {
    if (i < 3) adj_t.p.c[i] += adj_ret; else adj_t.q.c[i - 3] += adj_ret;
}

// ---- arithmetic --------------------------------------------------------------------------
template <typename T> KC_FUNC quat_t<T> add(const quat_t<T>& a, const quat_t<T>& b) { quat_t<T> r; KC_FOR(i, 4) r.c[i] = a.c[i] + b.c[i]; return r; }
template <typename T> KC_FUNC void adj_add(const quat_t<T>&, const quat_t<T>&, quat_t<T>& adj_a, quat_t<T>& adj_b, const quat_t<T>& adj_ret) { adj_a += adj_ret; adj_b += adj_ret; }
template <typename T> KC_FUNC quat_t<T> sub(const quat_t<T>& a, const quat_t<T>& b) { quat_t<T> r; KC_FOR(i, 4) r.c[i] = a.c[i] - b.c[i]; return r; }
template <typename T> KC_FUNC void adj_sub(const quat_t<T>&, const quat_t<T>&, quat_t<T>& adj_a, quat_t<T>& adj_b, const quat_t<T>& adj_ret) { adj_a += adj_ret; adj_b -= adj_ret; }
template <typename T> KC_FUNC quat_t<T> neg(const quat_t<T>& a) { quat_t<T> r; KC_FOR(i, 4) r.c[i] = -a.c[i]; return r; }
template <typename T> KC_FUNC void adj_neg(const quat_t<T>&, quat_t<T>& adj_a, const quat_t<T>& adj_ret) { adj_a -= adj_ret; }
template <typename T> KC_FUNC quat_t<T> pos(const quat_t<T>& a) { return a; }
template <typename T> KC_FUNC void adj_pos(const quat_t<T>&, quat_t<T>& adj_a, const quat_t<T>& adj_ret) { adj_a += adj_ret; }
template <typename T> KC_FUNC quat_t<T> mul(const quat_t<T>& a, T s) { quat_t<T> r; KC_FOR(i, 4) r.c[i] = a.c[i] * s; return r; }
template <typename T> KC_FUNC void adj_mul(const quat_t<T>& a, T s, quat_t<T>& adj_a, T& adj_s, const quat_t<T>& adj_ret) {
    KC_FOR(i, 4) { adj_a.c[i] += s * adj_ret.c[i]; adj_s += a.c[i] * adj_ret.c[i]; }
}
template <typename T> KC_FUNC quat_t<T> mul(T s, const quat_t<T>& a) { return mul(a, s); }
template <typename T> KC_FUNC void adj_mul(T s, const quat_t<T>& a, T& adj_s, quat_t<T>& adj_a, const quat_t<T>& adj_ret) { adj_mul(a, s, adj_a, adj_s, adj_ret); }
template <typename T> KC_FUNC quat_t<T> div(const quat_t<T>& a, T s) { quat_t<T> r; KC_FOR(i, 4) r.c[i] = a.c[i] / s; return r; }
template <typename T> KC_FUNC void adj_div(const quat_t<T>& a, T s, quat_t<T>& adj_a, T& adj_s, const quat_t<T>& adj_ret) {
    KC_FOR(i, 4) { adj_a.c[i] += adj_ret.c[i] / s; adj_s -= adj_ret.c[i] * a.c[i] / (s * s); }
}
template <typename T> KC_FUNC bool eq(const quat_t<T>& a, const quat_t<T>& b) { KC_FOR(i, 4) if (!(a.c[i] == b.c[i])) return false; return true; }
template <typename T> KC_FUNC bool ne(const quat_t<T>& a, const quat_t<T>& b) { return !eq(a, b); }

// Hamilton product: (u1, w1)(u2, w2) = (w1 u2 + w2 u1 + u1 x u2, w1 w2 - u1 . u2)
template <typename T> KC_FUNC quat_t<T> mul(const quat_t<T>& a, const quat_t<T>& b) {
    const T* p = a.c; const T* q = b.c;
    return quat_t<T>{{p[3] * q[0] + q[3] * p[0] + p[1] * q[2] - p[2] * q[1],
                      p[3] * q[1] + q[3] * p[1] + p[2] * q[0] - p[0] * q[2],
                      p[3] * q[2] + q[3] * p[2] + p[0] * q[1] - p[1] * q[0],
                      p[3] * q[3] - p[0] * q[0] - p[1] * q[1] - p[2] * q[2]}};
}
template <typename T> KC_FUNC quat_t<T> quat_inverse(const quat_t<T>& q) { return quat_t<T>{{-q.c[0], -q.c[1], -q.c[2], q.c[3]}}; }
template <typename T> KC_FUNC void adj_quat_inverse(const quat_t<T>& q, quat_t<T>& adj_q, const quat_t<T>& adj_ret) {
    adj_q.c[0] -= adj_ret.c[0]; adj_q.c[1] -= adj_ret.c[1]; adj_q.c[2] -= adj_ret.c[2]; adj_q.c[3] += adj_ret.c[3];
}
// <a b, g> = <a, g b*> = <b, a* g>: right/left multiplication transpose to the conjugate.
template <typename T> KC_FUNC void adj_mul(const quat_t<T>& a, const quat_t<T>& b, quat_t<T>& adj_a, quat_t<T>& adj_b, const quat_t<T>& adj_ret) {
    adj_a += mul(adj_ret, quat_inverse(b));
    adj_b += mul(quat_inverse(a), adj_ret);
}

// ---- 4-vector algebra on quaternions --------------------------------------------------------
template <typename T> KC_FUNC T dot(const quat_t<T>& a, const quat_t<T>& b) { return a.c[0] * b.c[0] + a.c[1] * b.c[1] + a.c[2] * b.c[2] + a.c[3] * b.c[3]; }
template <typename T> KC_FUNC void adj_dot(const quat_t<T>& a, const quat_t<T>& b, quat_t<T>& adj_a, quat_t<T>& adj_b, T adj_ret) {
    KC_FOR(i, 4) { adj_a.c[i] += b.c[i] * adj_ret; adj_b.c[i] += a.c[i] * adj_ret; }
}
template <typename T> KC_FUNC T length_sq(const quat_t<T>& q) { return dot(q, q); }
template <typename T> KC_FUNC void adj_length_sq(const quat_t<T>& q, quat_t<T>& adj_q, T adj_ret) { KC_FOR(i, 4) adj_q.c[i] += T(2) * q.c[i] * adj_ret; }
template <typename T> KC_FUNC T length(const quat_t<T>& q) { return length(quat_as_vec(q)); }
template <typename T> KC_FUNC void adj_length(const quat_t<T>& q, quat_t<T>& adj_q, T adj_ret) {
    vec_t<4, T> g = {}; adj_length(quat_as_vec(q), g, adj_ret); adj_q += vec_as_quat(g);
}
template <typename T> KC_FUNC quat_t<T> normalize(const quat_t<T>& q) { return vec_as_quat(normalize(quat_as_vec(q))); }
template <typename T> KC_FUNC void adj_normalize(const quat_t<T>& q, quat_t<T>& adj_q, const quat_t<T>& adj_ret) {
    vec_t<4, T> g = {}; adj_normalize(quat_as_vec(q), g, quat_as_vec(adj_ret)); adj_q += vec_as_quat(g);
}
template <typename T> KC_FUNC quat_t<T> lerp(const quat_t<T>& a, const quat_t<T>& b, T t) { return vec_as_quat(lerp(quat_as_vec(a), quat_as_vec(b), t)); }
template <typename T> KC_FUNC void adj_lerp(const quat_t<T>& a, const quat_t<T>& b, T t, quat_t<T>& adj_a, quat_t<T>& adj_b, T& adj_t, const quat_t<T>& adj_ret) {
    vec_t<4, T> ga = {}, gb = {}; adj_lerp(quat_as_vec(a), quat_as_vec(b), t, ga, gb, adj_t, quat_as_vec(adj_ret));
    adj_a += vec_as_quat(ga); adj_b += vec_as_quat(gb);
}

// ---- constructors ---------------------------------------------------------------------------
template <typename T> KC_FUNC quat_t<T> quat_identity_t() { return quat_t<T>{{T(0), T(0), T(0), T(1)}}; }
KC_FUNC quat_t<float32> quat_identity() { return quat_identity_t<float32>(); }

// rotation of `angle` radians about `axis` (normalised here)
template <typename T> KC_FUNC quat_t<T> quat_from_axis_angle(const vec_t<3, T>& axis, T angle) {
    vec_t<3, T> n = normalize(axis); T h = angle * T(0.5);
    return make_quat(mul(n, sin(h)), cos(h));
}
template <typename T> KC_FUNC void adj_quat_from_axis_angle(const vec_t<3, T>& axis, T angle, vec_t<3, T>& adj_axis, T& adj_angle, const quat_t<T>& adj_ret) {
    vec_t<3, T> n = normalize(axis); T h = angle * T(0.5), s = sin(h), c = cos(h);
    vec_t<3, T> gu = quat_imag(adj_ret);
    adj_angle += T(0.5) * (dot(gu, n) * c - adj_ret.c[3] * s);
    adj_normalize(axis, adj_axis, mul(gu, s));
}

// axis (unit; x when the rotation is the identity) and angle in [0, 2 pi) of q, written in place
template <typename T> KC_FUNC void quat_to_axis_angle(const quat_t<T>& q, vec_t<3, T>& axis, T& angle) {
    vec_t<3, T> u = quat_imag(q); T s = length(u);
    angle = T(2) * atan2(s, q.c[3]);
    axis = s > T(0) ? div(u, s) : vec_t<3, T>{{T(1), T(0), T(0)}};
}
// Adjoint of the tuple form `axis, angle = quat_to_axis_angle(q)` (the out-argument form has none).
// angle = 2 atan2(s, w), s = |imag q|: d/ds = 2 w / (s^2 + w^2), d/dw = -2 s / (s^2 + w^2);
// axis = imag q / s.  At s = 0 (no rotation) both depend on the direction of approach: adjoint 0.
template <typename T> KC_FUNC void adj_quat_to_axis_angle(const quat_t<T>& q, const vec_t<3, T>& axis, const T& angle, quat_t<T>& adj_q,
                                                          const vec_t<3, T>& adj_axis, const T& adj_angle) {
    vec_t<3, T> u = quat_imag(q); T s = length(u), w = q.c[3];
    if (!(s > T(0))) return;
    T r2 = s * s + w * w;
    vec_t<3, T> gu = {}; adj_normalize(u, gu, adj_axis);
    T ds = T(2) * w / r2 * adj_angle;
    KC_FOR(i, 3) adj_q.c[i] += gu.c[i] + ds * u.c[i] / s;
    adj_q.c[3] -= T(2) * s / r2 * adj_angle;
}

// roll about x, then pitch about y, then yaw about z: q = q_z(yaw) q_y(pitch) q_x(roll)
template <typename T> KC_FUNC quat_t<T> quat_rpy_eval(T cr, T sr, T cp, T sp, T cy, T sy) {
    return quat_t<T>{{sr * cp * cy - cr * sp * sy, cr * sp * cy + sr * cp * sy, cr * cp * sy - sr * sp * cy, cr * cp * cy + sr * sp * sy}};
}
template <typename T> KC_FUNC quat_t<T> quat_rpy(T roll, T pitch, T yaw) {
    T h = T(0.5);
    return quat_rpy_eval(cos(roll * h), sin(roll * h), cos(pitch * h), sin(pitch * h), cos(yaw * h), sin(yaw * h));
}
template <typename T> KC_FUNC void adj_quat_rpy(T roll, T pitch, T yaw, T& adj_roll, T& adj_pitch, T& adj_yaw, const quat_t<T>& adj_ret) {
    // the formula is linear in each (cos, sin) pair; d/dangle swaps in (-sin/2, cos/2)
    T h = T(0.5);
    T cr = cos(roll * h), sr = sin(roll * h), cp = cos(pitch * h), sp = sin(pitch * h), cy = cos(yaw * h), sy = sin(yaw * h);
    adj_roll += dot(adj_ret, quat_rpy_eval(-h * sr, h * cr, cp, sp, cy, sy));
    adj_pitch += dot(adj_ret, quat_rpy_eval(cr, sr, -h * sp, h * cp, cy, sy));
    adj_yaw += dot(adj_ret, quat_rpy_eval(cr, sr, cp, sp, -h * sy, h * cy));
}

// ---- rotation -------------------------------------------------------------------------------
template <typename T> KC_FUNC vec_t<3, T> quat_rotate_signed(const quat_t<T>& q, const vec_t<3, T>& v, T sgn) {
    vec_t<3, T> u = quat_imag(q); T w = q.c[3];
    vec_t<3, T> r = mul(v, T(2) * w * w - T(1));
    r = add(r, mul(cross(u, v), T(2) * w * sgn));
    return add(r, mul(u, T(2) * dot(u, v)));
}
template <typename T> KC_FUNC void adj_quat_rotate_signed(const quat_t<T>& q, const vec_t<3, T>& v, T sgn, quat_t<T>& adj_q, vec_t<3, T>& adj_v, const vec_t<3, T>& g) {
    vec_t<3, T> u = quat_imag(q); T w = q.c[3];
    T a = T(2) * w * w - T(1), ug = dot(u, g), uv = dot(u, v);
    // <g, u x v> = <v, g x u> = <u, v x g>
    adj_v += add(add(mul(g, a), mul(cross(g, u), T(2) * w * sgn)), mul(u, T(2) * ug));
    vec_t<3, T> gu = add(mul(cross(v, g), T(2) * w * sgn), add(mul(g, T(2) * uv), mul(v, T(2) * ug)));
    adj_q.c[0] += gu.c[0]; adj_q.c[1] += gu.c[1]; adj_q.c[2] += gu.c[2];
    adj_q.c[3] += T(4) * w * dot(g, v) + T(2) * sgn * dot(g, cross(u, v));
}
template <typename T> KC_FUNC vec_t<3, T> quat_rotate(const quat_t<T>& q, const vec_t<3, T>& v) { return quat_rotate_signed(q, v, T(1)); }
template <typename T> KC_FUNC void adj_quat_rotate(const quat_t<T>& q, const vec_t<3, T>& v, quat_t<T>& adj_q, vec_t<3, T>& adj_v, const vec_t<3, T>& adj_ret) {
    adj_quat_rotate_signed(q, v, T(1), adj_q, adj_v, adj_ret);
}
template <typename T> KC_FUNC vec_t<3, T> quat_rotate_inv(const quat_t<T>& q, const vec_t<3, T>& v) { return quat_rotate_signed(q, v, T(-1)); }
template <typename T> KC_FUNC void adj_quat_rotate_inv(const quat_t<T>& q, const vec_t<3, T>& v, quat_t<T>& adj_q, vec_t<3, T>& adj_v, const vec_t<3, T>& adj_ret) {
    adj_quat_rotate_signed(q, v, T(-1), adj_q, adj_v, adj_ret);
}

// R = (2 w^2 - 1) I + 2 w skew(u) + 2 u u^T, so quat_to_matrix(q) v == quat_rotate(q, v)
template <typename T> KC_FUNC mat_t<3, 3, T> quat_to_matrix(const quat_t<T>& q) {
    vec_t<3, T> u = quat_imag(q); T w = q.c[3];
    mat_t<3, 3, T> r = add(mul(skew(u), T(2) * w), mul(outer(u, u), T(2)));
    KC_FOR(i, 3) r.c[i][i] += T(2) * w * w - T(1);
    return r;
}
template <typename T> KC_FUNC void adj_quat_to_matrix(const quat_t<T>& q, quat_t<T>& adj_q, const mat_t<3, 3, T>& g) {
    vec_t<3, T> u = quat_imag(q); T w = q.c[3];
    vec_t<3, T> sk = {}; adj_skew(u, sk, g);          // <g, skew(u)> = <u, sk>
    vec_t<3, T> gu = add(mul(sk, T(2) * w), mul(add(mul(g, u), mul(transpose(g), u)), T(2)));
    adj_q.c[0] += gu.c[0]; adj_q.c[1] += gu.c[1]; adj_q.c[2] += gu.c[2];
    adj_q.c[3] += T(4) * w * trace(g) + T(2) * dot(u, sk);
}

// Rotation matrix -> unit quaternion (Shepperd: pivot on the largest of w, x, y, z).
// Each branch: s = 2 sqrt(1 + sum_i d_i m_ii); q[big] = s / 4; the other three are
// (m[a] + sign * m[b]) / s.  The result is normalised.
template <typename T> struct quat_from_matrix_branch {
    int big; T d[3]; int a[4][2]; int b[4][2]; T sg[4];
};
template <typename T> KC_FUNC quat_from_matrix_branch<T> quat_from_matrix_pick(const mat_t<3, 3, T>& m) {
    const T (*c)[3] = m.c;
    T tr = c[0][0] + c[1][1] + c[2][2];
    quat_from_matrix_branch<T> br;
    // entries for the three non-pivot components (x, y, z, w order); unused rows point at [0][0]
    if (tr > T(0)) {
        br = quat_from_matrix_branch<T>{3, {T(1), T(1), T(1)}, {{2, 1}, {0, 2}, {1, 0}, {0, 0}}, {{1, 2}, {2, 0}, {0, 1}, {0, 0}}, {T(-1), T(-1), T(-1), T(0)}};
    } else if (c[0][0] > c[1][1] && c[0][0] > c[2][2]) {
        br = quat_from_matrix_branch<T>{0, {T(1), T(-1), T(-1)}, {{0, 0}, {0, 1}, {0, 2}, {2, 1}}, {{0, 0}, {1, 0}, {2, 0}, {1, 2}}, {T(0), T(1), T(1), T(-1)}};
    } else if (c[1][1] > c[2][2]) {
        br = quat_from_matrix_branch<T>{1, {T(-1), T(1), T(-1)}, {{0, 1}, {0, 0}, {1, 2}, {0, 2}}, {{1, 0}, {0, 0}, {2, 1}, {2, 0}}, {T(1), T(0), T(1), T(-1)}};
    } else {
        br = quat_from_matrix_branch<T>{2, {T(-1), T(-1), T(1)}, {{0, 2}, {1, 2}, {0, 0}, {1, 0}}, {{2, 0}, {2, 1}, {0, 0}, {0, 1}}, {T(1), T(1), T(0), T(-1)}};
    }
    return br;
}
template <typename T> KC_FUNC quat_t<T> quat_from_matrix_raw(const mat_t<3, 3, T>& m, const quat_from_matrix_branch<T>& br, T& s) {
    s = T(2) * sqrt(T(1) + br.d[0] * m.c[0][0] + br.d[1] * m.c[1][1] + br.d[2] * m.c[2][2]);
    quat_t<T> r;
    KC_FOR(k, 4) r.c[k] = (k == br.big) ? s * T(0.25) : (m.c[br.a[k][0]][br.a[k][1]] + br.sg[k] * m.c[br.b[k][0]][br.b[k][1]]) / s;
    return r;
}
template <typename T> KC_FUNC quat_t<T> quat_from_matrix(const mat_t<3, 3, T>& m) {
    T s; return normalize(quat_from_matrix_raw(m, quat_from_matrix_pick(m), s));
}
template <typename T> KC_FUNC void adj_quat_from_matrix(const mat_t<3, 3, T>& m, mat_t<3, 3, T>& adj_m, const quat_t<T>& adj_ret) {
    quat_from_matrix_branch<T> br = quat_from_matrix_pick(m);
    T s; quat_t<T> raw = quat_from_matrix_raw(m, br, s);
    quat_t<T> g = {}; adj_normalize(raw, g, adj_ret);
    T adj_s = T(0);
    KC_FOR(k, 4) {
        if (k == br.big) { adj_s += T(0.25) * g.c[k]; continue; }
        T gk = g.c[k] / s;
        adj_m.c[br.a[k][0]][br.a[k][1]] += gk;
        adj_m.c[br.b[k][0]][br.b[k][1]] += br.sg[k] * gk;
        adj_s -= g.c[k] * raw.c[k] / s;
    }
    // ds/dm_ii = d_i * 2 / s
    KC_FOR(i, 3) adj_m.c[i][i] += br.d[i] * T(2) / s * adj_s;
}

// Spherical interpolation along the shorter arc (b is negated when dot(a, b) < 0);
// nearly parallel inputs fall back to a normalised lerp.
template <typename T> KC_FUNC quat_t<T> quat_slerp(const quat_t<T>& a, const quat_t<T>& b_in, T t) {
    T d = dot(a, b_in);
    quat_t<T> b = d < T(0) ? neg(b_in) : b_in;
    d = abs(d);
    if (d > T(0.9995)) return normalize(lerp(a, b, t));
    T th = acos(d), s = sin(th);
    return add(mul(a, sin((T(1) - t) * th) / s), mul(b, sin(t * th) / s));
}
template <typename T> KC_FUNC void adj_quat_slerp(const quat_t<T>& a, const quat_t<T>& b_in, T t, quat_t<T>& adj_a, quat_t<T>& adj_b_in, T& adj_t, const quat_t<T>& g) {
    T d = dot(a, b_in);
    T sgn = d < T(0) ? T(-1) : T(1);
    quat_t<T> b = mul(b_in, sgn);
    d = abs(d);
    quat_t<T> adj_b = {};
    if (d > T(0.9995)) {
        quat_t<T> l = lerp(a, b, t), gl = {};
        adj_normalize(l, gl, g);
        adj_lerp(a, b, t, adj_a, adj_b, adj_t, gl);
    } else {
        T th = acos(d), s = sin(th), c = d;
        T sa = sin((T(1) - t) * th), sb = sin(t * th), ca = cos((T(1) - t) * th), cb = cos(t * th);
        T wa = sa / s, wb = sb / s, ga = dot(g, a), gb = dot(g, b);
        adj_a += mul(g, wa);
        adj_b += mul(g, wb);
        T dwa_dth = ((T(1) - t) * ca * s - sa * c) / (s * s), dwb_dth = (t * cb * s - sb * c) / (s * s);
        adj_t += (ga * (-th * ca) + gb * (th * cb)) / s;
        T adj_d = -(ga * dwa_dth + gb * dwb_dth) / s;   // d theta / d d = -1 / sin(theta)
        adj_a += mul(b, adj_d);
        adj_b += mul(a, adj_d);
    }
    adj_b_in += mul(adj_b, sgn);
}

// ---- transforms -----------------------------------------------------------------------------
template <typename T> KC_FUNC transform_t<T> make_transform(const vec_t<3, T>& p, const quat_t<T>& q) { transform_t<T> r; r.p = p; r.q = q; return r; }
template <typename T> KC_FUNC transform_t<T> transform_identity_t() { return make_transform(vec_t<3, T>{}, quat_identity_t<T>()); }
KC_FUNC transform_t<float32> transform_identity() { return transform_identity_t<float32>(); }

template <typename T> KC_FUNC vec_t<3, T> transform_get_translation(const transform_t<T>& t) { return t.p; }
template <typename T> KC_FUNC void adj_transform_get_translation(const transform_t<T>& t, transform_t<T>& adj_t, const vec_t<3, T>& adj_ret) { adj_t.p += adj_ret; }
template <typename T> KC_FUNC quat_t<T> transform_get_rotation(const transform_t<T>& t) { return t.q; }
template <typename T> KC_FUNC void adj_transform_get_rotation(const transform_t<T>& t, transform_t<T>& adj_t, const quat_t<T>& adj_ret) { adj_t.q += adj_ret; }

template <typename T> KC_FUNC transform_t<T> add(const transform_t<T>& a, const transform_t<T>& b) { return make_transform(add(a.p, b.p), add(a.q, b.q)); }
template <typename T> KC_FUNC void adj_add(const transform_t<T>&, const transform_t<T>&, transform_t<T>& adj_a, transform_t<T>& adj_b, const transform_t<T>& adj_ret) { adj_a += adj_ret; adj_b += adj_ret; }
template <typename T> KC_FUNC transform_t<T> sub(const transform_t<T>& a, const transform_t<T>& b) { return make_transform(sub(a.p, b.p), sub(a.q, b.q)); }
template <typename T> KC_FUNC void adj_sub(const transform_t<T>&, const transform_t<T>&, transform_t<T>& adj_a, transform_t<T>& adj_b, const transform_t<T>& adj_ret) { adj_a += adj_ret; adj_b -= adj_ret; }
template <typename T> KC_FUNC transform_t<T> neg(const transform_t<T>& a) { return make_transform(neg(a.p), neg(a.q)); }
template <typename T> KC_FUNC void adj_neg(const transform_t<T>&, transform_t<T>& adj_a, const transform_t<T>& adj_ret) { adj_a -= adj_ret; }
template <typename T> KC_FUNC transform_t<T> mul(const transform_t<T>& a, T s) { return make_transform(mul(a.p, s), mul(a.q, s)); }
template <typename T> KC_FUNC void adj_mul(const transform_t<T>& a, T s, transform_t<T>& adj_a, T& adj_s, const transform_t<T>& adj_ret) {
    adj_mul(a.p, s, adj_a.p, adj_s, adj_ret.p); adj_mul(a.q, s, adj_a.q, adj_s, adj_ret.q);
}
template <typename T> KC_FUNC transform_t<T> mul(T s, const transform_t<T>& a) { return mul(a, s); }
template <typename T> KC_FUNC void adj_mul(T s, const transform_t<T>& a, T& adj_s, transform_t<T>& adj_a, const transform_t<T>& adj_ret) { adj_mul(a, s, adj_a, adj_s, adj_ret); }
template <typename T> KC_FUNC bool eq(const transform_t<T>& a, const transform_t<T>& b) { return eq(a.p, b.p) && eq(a.q, b.q); }
template <typename T> KC_FUNC bool ne(const transform_t<T>& a, const transform_t<T>& b) { return !eq(a, b); }

// composition a * b: first b, then a
template <typename T> KC_FUNC transform_t<T> mul(const transform_t<T>& a, const transform_t<T>& b) {
    return make_transform(add(a.p, quat_rotate(a.q, b.p)), mul(a.q, b.q));
}
template <typename T> KC_FUNC void adj_mul(const transform_t<T>& a, const transform_t<T>& b, transform_t<T>& adj_a, transform_t<T>& adj_b, const transform_t<T>& adj_ret) {
    adj_a.p += adj_ret.p;
    adj_quat_rotate(a.q, b.p, adj_a.q, adj_b.p, adj_ret.p);
    adj_mul(a.q, b.q, adj_a.q, adj_b.q, adj_ret.q);
}
template <typename T> KC_FUNC transform_t<T> transform_multiply(const transform_t<T>& a, const transform_t<T>& b) { return mul(a, b); }
template <typename T> KC_FUNC void adj_transform_multiply(const transform_t<T>& a, const transform_t<T>& b, transform_t<T>& adj_a, transform_t<T>& adj_b, const transform_t<T>& adj_ret) {
    adj_mul(a, b, adj_a, adj_b, adj_ret);
}
// inverse: (p, q)^-1 = (-rotate_inv(q, p), q*)
template <typename T> KC_FUNC transform_t<T> transform_inverse(const transform_t<T>& t) {
    return make_transform(neg(quat_rotate_inv(t.q, t.p)), quat_inverse(t.q));
}
template <typename T> KC_FUNC void adj_transform_inverse(const transform_t<T>& t, transform_t<T>& adj_t, const transform_t<T>& adj_ret) {
    adj_quat_rotate_inv(t.q, t.p, adj_t.q, adj_t.p, neg(adj_ret.p));
    adj_quat_inverse(t.q, adj_t.q, adj_ret.q);
}
template <typename T> KC_FUNC vec_t<3, T> transform_point(const transform_t<T>& t, const vec_t<3, T>& x) { return add(t.p, quat_rotate(t.q, x)); }
template <typename T> KC_FUNC void adj_transform_point(const transform_t<T>& t, const vec_t<3, T>& x, transform_t<T>& adj_t, vec_t<3, T>& adj_x, const vec_t<3, T>& adj_ret) {
    adj_t.p += adj_ret;
    adj_quat_rotate(t.q, x, adj_t.q, adj_x, adj_ret);
}
template <typename T> KC_FUNC vec_t<3, T> transform_vector(const transform_t<T>& t, const vec_t<3, T>& x) { return quat_rotate(t.q, x); }
template <typename T> KC_FUNC void adj_transform_vector(const transform_t<T>& t, const vec_t<3, T>& x, transform_t<T>& adj_t, vec_t<3, T>& adj_x, const vec_t<3, T>& adj_ret) {
    adj_quat_rotate(t.q, x, adj_t.q, adj_x, adj_ret);
}
// homogeneous 4x4 matrices (row-major, translation in the last column)
template <typename T> KC_FUNC vec_t<3, T> transform_point(const mat_t<4, 4, T>& m, const vec_t<3, T>& x) {
    vec_t<3, T> r; KC_FOR(i, 3) r.c[i] = m.c[i][0] * x.c[0] + m.c[i][1] * x.c[1] + m.c[i][2] * x.c[2] + m.c[i][3]; return r;
}
template <typename T> KC_FUNC void adj_transform_point(const mat_t<4, 4, T>& m, const vec_t<3, T>& x, mat_t<4, 4, T>& adj_m, vec_t<3, T>& adj_x, const vec_t<3, T>& g) {
    KC_FOR(i, 3) { KC_FOR(j, 3) { adj_m.c[i][j] += g.c[i] * x.c[j]; adj_x.c[j] += m.c[i][j] * g.c[i]; } adj_m.c[i][3] += g.c[i]; }
}
template <typename T> KC_FUNC vec_t<3, T> transform_vector(const mat_t<4, 4, T>& m, const vec_t<3, T>& x) {
    vec_t<3, T> r; KC_FOR(i, 3) r.c[i] = m.c[i][0] * x.c[0] + m.c[i][1] * x.c[1] + m.c[i][2] * x.c[2]; return r;
}
template <typename T> KC_FUNC void adj_transform_vector(const mat_t<4, 4, T>& m, const vec_t<3, T>& x, mat_t<4, 4, T>& adj_m, vec_t<3, T>& adj_x, const vec_t<3, T>& g) {
    KC_FOR(i, 3) KC_FOR(j, 3) { adj_m.c[i][j] += g.c[i] * x.c[j]; adj_x.c[j] += m.c[i][j] * g.c[i]; }
}
// transform -> homogeneous 4x4 matrix
template <typename T> KC_FUNC mat_t<4, 4, T> transform_to_matrix(const transform_t<T>& t) {
    mat_t<3, 3, T> r = quat_to_matrix(t.q); mat_t<4, 4, T> m = {};
    KC_FOR(i, 3) { KC_FOR(j, 3) m.c[i][j] = r.c[i][j]; m.c[i][3] = t.p.c[i]; }
    m.c[3][3] = T(1);
    return m;
}
template <typename T> KC_FUNC void adj_transform_to_matrix(const transform_t<T>& t, transform_t<T>& adj_t, const mat_t<4, 4, T>& g) {
    mat_t<3, 3, T> gr; KC_FOR(i, 3) { KC_FOR(j, 3) gr.c[i][j] = g.c[i][j]; adj_t.p.c[i] += g.c[i][3]; }
    adj_quat_to_matrix(t.q, adj_t.q, gr);
}

// ---- spatial (6D) vectors: (top, bottom) = (angular, linear) --------------------------------
template <typename T> KC_FUNC vec_t<3, T> spatial_top(const vec_t<6, T>& a) { return vec_t<3, T>{{a.c[0], a.c[1], a.c[2]}}; }
template <typename T> KC_FUNC void adj_spatial_top(const vec_t<6, T>& a, vec_t<6, T>& adj_a, const vec_t<3, T>& g) { KC_FOR(i, 3) adj_a.c[i] += g.c[i]; }
template <typename T> KC_FUNC vec_t<3, T> spatial_bottom(const vec_t<6, T>& a) { return vec_t<3, T>{{a.c[3], a.c[4], a.c[5]}}; }
template <typename T> KC_FUNC void adj_spatial_bottom(const vec_t<6, T>& a, vec_t<6, T>& adj_a, const vec_t<3, T>& g) { KC_FOR(i, 3) adj_a.c[i + 3] += g.c[i]; }
template <typename T> KC_FUNC vec_t<6, T> spatial_join(const vec_t<3, T>& w, const vec_t<3, T>& v) { return vec_t<6, T>{{w.c[0], w.c[1], w.c[2], v.c[0], v.c[1], v.c[2]}}; }
template <typename T> KC_FUNC T spatial_dot(const vec_t<6, T>& a, const vec_t<6, T>& b) { return dot(a, b); }
template <typename T> KC_FUNC void adj_spatial_dot(const vec_t<6, T>& a, const vec_t<6, T>& b, vec_t<6, T>& adj_a, vec_t<6, T>& adj_b, T adj_ret) { adj_dot(a, b, adj_a, adj_b, adj_ret); }
// motion cross product: (w1, v1) x (w2, v2) = (w1 x w2, w1 x v2 + v1 x w2)
template <typename T> KC_FUNC vec_t<6, T> spatial_cross(const vec_t<6, T>& a, const vec_t<6, T>& b) {
    vec_t<3, T> wa = spatial_top(a), va = spatial_bottom(a), wb = spatial_top(b), vb = spatial_bottom(b);
    return spatial_join(cross(wa, wb), add(cross(wa, vb), cross(va, wb)));
}
template <typename T> KC_FUNC void adj_spatial_cross(const vec_t<6, T>& a, const vec_t<6, T>& b, vec_t<6, T>& adj_a, vec_t<6, T>& adj_b, const vec_t<6, T>& g) {
    vec_t<3, T> wa = spatial_top(a), va = spatial_bottom(a), wb = spatial_top(b), vb = spatial_bottom(b);
    vec_t<3, T> gw = spatial_top(g), gv = spatial_bottom(g);
    vec_t<3, T> awa = {}, ava = {}, awb = {}, avb = {};
    adj_cross(wa, wb, awa, awb, gw);
    adj_cross(wa, vb, awa, avb, gv);
    adj_cross(va, wb, ava, awb, gv);
    adj_a += spatial_join(awa, ava); adj_b += spatial_join(awb, avb);
}
// force cross product: (w1, v1) x* (f2, t2) = (w1 x f2 + v1 x t2, w1 x t2)
template <typename T> KC_FUNC vec_t<6, T> spatial_cross_dual(const vec_t<6, T>& a, const vec_t<6, T>& b) {
    vec_t<3, T> wa = spatial_top(a), va = spatial_bottom(a), wb = spatial_top(b), vb = spatial_bottom(b);
    return spatial_join(add(cross(wa, wb), cross(va, vb)), cross(wa, vb));
}
template <typename T> KC_FUNC void adj_spatial_cross_dual(const vec_t<6, T>& a, const vec_t<6, T>& b, vec_t<6, T>& adj_a, vec_t<6, T>& adj_b, const vec_t<6, T>& g) {
    vec_t<3, T> wa = spatial_top(a), va = spatial_bottom(a), wb = spatial_top(b), vb = spatial_bottom(b);
    vec_t<3, T> gw = spatial_top(g), gv = spatial_bottom(g);
    vec_t<3, T> awa = {}, ava = {}, awb = {}, avb = {};
    adj_cross(wa, wb, awa, awb, gw);
    adj_cross(va, vb, ava, avb, gw);
    adj_cross(wa, vb, awa, avb, gv);
    adj_a += spatial_join(awa, ava); adj_b += spatial_join(awb, avb);
}

template <typename T> struct adj_zero_t<quat_t<T>> {
    KC_FUNC static quat_t<T> get() { quat_t<T> r; KC_FOR(i, 4) r.c[i] = adj_zero_t<T>::get(); return r; }
};
template <typename T> struct adj_zero_t<transform_t<T>> {
    KC_FUNC static transform_t<T> get() { return transform_t<T>{adj_zero_t<vec_t<3, T>>::get(), adj_zero_t<quat_t<T>>::get()}; }
};

}  // namespace kc
