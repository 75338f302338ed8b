// Vectors and matrices (row-major) with their adjoints side by side.
// Both are aggregates so they stay trivially copyable for launch argument packing.
#pragma once
#include "kc_scalar.h"

namespace kc {

template <int N, typename T> struct vec_t {
    T c[N];
    KC_FUNC T& operator[](int i) { return c[i]; }
    KC_FUNC const T& operator[](int i) const { return c[i]; }
};

template <int R, int C, typename T> struct mat_t {
    T c[R][C];
};

#define KC_FOR(i, n) for (int i = 0; i < (n); ++i)

// ---- element access -------------------------------------------------------------------
template <int N, typename T> KC_FUNC T extract(const vec_t<N, T>& v, int32 i) { return v.c[i]; }
template <int N, typename T> KC_FUNC void adj_extract(const vec_t<N, T>& v, int32 i, vec_t<N, T>& adj_v, int32& adj_i, T adj_ret) { adj_v.c[i] += adj_ret; }
template <int R, int C, typename T> KC_FUNC vec_t<C, T> extract(const mat_t<R, C, T>& m, int32 i) {
    vec_t<C, T> r; KC_FOR(j, C) r.c[j] = m.c[i][j]; return r;
}
template <int R, int C, typename T> KC_FUNC void adj_extract(const mat_t<R, C, T>& m, int32 i, mat_t<R, C, T>& adj_m, int32& adj_i, const vec_t<C, T>& adj_ret) {
    KC_FOR(j, C) adj_m.c[i][j] += adj_ret.c[j];
}
template <int R, int C, typename T> KC_FUNC T extract(const mat_t<R, C, T>& m, int32 i, int32 j) { return m.c[i][j]; }
template <int R, int C, typename T> KC_FUNC void adj_extract(const mat_t<R, C, T>& m, int32 i, int32 j, mat_t<R, C, T>& adj_m, int32& adj_i, int32& adj_j, T adj_ret) {
    adj_m.c[i][j] += adj_ret;
}
// assign_copy returns a copy with one element replaced (SSA form of `v[i] = x`).
template <int N, typename T> KC_FUNC vec_t<N, T> assign_copy(const vec_t<N, T>& v, int32 i, T x) { vec_t<N, T> r = v; r.c[i] = x; return r; }
template <int N, typename T> KC_FUNC void adj_assign_copy(const vec_t<N, T>& v, int32 i, T x, vec_t<N, T>& adj_v, int32& adj_i, T& adj_x, const vec_t<N, T>& adj_ret) {
    KC_FOR(k, N) if (k != i) adj_v.c[k] += adj_ret.c[k];
    adj_x += adj_ret.c[i];
}
template <int R, int C, typename T> KC_FUNC mat_t<R, C, T> assign_copy(const mat_t<R, C, T>& m, int32 i, int32 j, T x) { mat_t<R, C, T> r = m; r.c[i][j] = x; return r; }
template <int R, int C, typename T> KC_FUNC void adj_assign_copy(const mat_t<R, C, T>& m, int32 i, int32 j, T x, mat_t<R, C, T>& adj_m, int32&, int32&, T& adj_x, const mat_t<R, C, T>& adj_ret) {
    KC_FOR(a, R) KC_FOR(b, C) if (a != i || b != j) adj_m.c[a][b] += adj_ret.c[a][b];
    adj_x += adj_ret.c[i][j];
}
template <int R, int C, typename T> KC_FUNC mat_t<R, C, T> assign_copy(const mat_t<R, C, T>& m, int32 i, const vec_t<C, T>& row) { mat_t<R, C, T> r = m; KC_FOR(j, C) r.c[i][j] = row.c[j]; return r; }
template <int R, int C, typename T> KC_FUNC void adj_assign_copy(const mat_t<R, C, T>& m, int32 i, const vec_t<C, T>& row, mat_t<R, C, T>& adj_m, int32&, vec_t<C, T>& adj_row, const mat_t<R, C, T>& adj_ret) {
    KC_FOR(a, R) KC_FOR(b, C) { if (a != i) adj_m.c[a][b] += adj_ret.c[a][b]; else adj_row.c[b] += adj_ret.c[a][b]; }
}

// ---- elementwise arithmetic -----------------------------------------------------------
#define KC_VEC_BINOP(name, expr) \
    template <int N, typename T> KC_FUNC vec_t<N, T> name(const vec_t<N, T>& a, const vec_t<N, T>& b) { vec_t<N, T> r; KC_FOR(i, N) { T x = a.c[i], y = b.c[i]; r.c[i] = (expr); } return r; } \
    template <int R, int C, typename T> KC_FUNC mat_t<R, C, T> name(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b) { mat_t<R, C, T> r; KC_FOR(i, R) KC_FOR(j, C) { T x = a.c[i][j], y = b.c[i][j]; r.c[i][j] = (expr); } return r; }
KC_VEC_BINOP(add, x + y)
KC_VEC_BINOP(sub, x - y)
KC_VEC_BINOP(cw_mul, x * y)
KC_VEC_BINOP(cw_div, div(x, y))  // kc::div: integer vectors get the defined x / 0 (kc_scalar.h)

template <int N, typename T> KC_FUNC void adj_add(const vec_t<N, T>&, const vec_t<N, T>&, vec_t<N, T>& adj_a, vec_t<N, T>& adj_b, const vec_t<N, T>& adj_ret) { KC_FOR(i, N) { adj_a.c[i] += adj_ret.c[i]; adj_b.c[i] += adj_ret.c[i]; } }
template <int N, typename T> KC_FUNC void adj_sub(const vec_t<N, T>&, const vec_t<N, T>&, vec_t<N, T>& adj_a, vec_t<N, T>& adj_b, const vec_t<N, T>& adj_ret) { KC_FOR(i, N) { adj_a.c[i] += adj_ret.c[i]; adj_b.c[i] -= adj_ret.c[i]; } }
template <int N, typename T> KC_FUNC void adj_cw_mul(const vec_t<N, T>& a, const vec_t<N, T>& b, vec_t<N, T>& adj_a, vec_t<N, T>& adj_b, const vec_t<N, T>& adj_ret) { KC_FOR(i, N) { adj_a.c[i] += b.c[i] * adj_ret.c[i]; adj_b.c[i] += a.c[i] * adj_ret.c[i]; } }
template <int N, typename T> KC_FUNC void adj_cw_div(const vec_t<N, T>& a, const vec_t<N, T>& b, vec_t<N, T>& adj_a, vec_t<N, T>& adj_b, const vec_t<N, T>& adj_ret) { KC_FOR(i, N) { adj_a.c[i] += adj_ret.c[i] / b.c[i]; adj_b.c[i] -= adj_ret.c[i] * a.c[i] / (b.c[i] * b.c[i]); } }
template <int R, int C, typename T> KC_FUNC void adj_add(const mat_t<R, C, T>&, const mat_t<R, C, T>&, mat_t<R, C, T>& adj_a, mat_t<R, C, T>& adj_b, const mat_t<R, C, T>& adj_ret) { KC_FOR(i, R) KC_FOR(j, C) { adj_a.c[i][j] += adj_ret.c[i][j]; adj_b.c[i][j] += adj_ret.c[i][j]; } }
template <int R, int C, typename T> KC_FUNC void adj_sub(const mat_t<R, C, T>&, const mat_t<R, C, T>&, mat_t<R, C, T>& adj_a, mat_t<R, C, T>& adj_b, const mat_t<R, C, T>& adj_ret) { KC_FOR(i, R) KC_FOR(j, C) { adj_a.c[i][j] += adj_ret.c[i][j]; adj_b.c[i][j] -= adj_ret.c[i][j]; } }
template <int R, int C, typename T> KC_FUNC void adj_cw_mul(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b, mat_t<R, C, T>& adj_a, mat_t<R, C, T>& adj_b, const mat_t<R, C, T>& adj_ret) { KC_FOR(i, R) KC_FOR(j, C) { adj_a.c[i][j] += b.c[i][j] * adj_ret.c[i][j]; adj_b.c[i][j] += a.c[i][j] * adj_ret.c[i][j]; } }
template <int R, int C, typename T> KC_FUNC void adj_cw_div(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b, mat_t<R, C, T>& adj_a, mat_t<R, C, T>& adj_b, const mat_t<R, C, T>& adj_ret) { KC_FOR(i, R) KC_FOR(j, C) { adj_a.c[i][j] += adj_ret.c[i][j] / b.c[i][j]; adj_b.c[i][j] -= adj_ret.c[i][j] * a.c[i][j] / (b.c[i][j] * b.c[i][j]); } }

template <int N, typename T> KC_FUNC vec_t<N, T> neg(const vec_t<N, T>& a) { vec_t<N, T> r; KC_FOR(i, N) r.c[i] = -a.c[i]; return r; }
template <int N, typename T> KC_FUNC void adj_neg(const vec_t<N, T>&, vec_t<N, T>& adj_a, const vec_t<N, T>& adj_ret) { KC_FOR(i, N) adj_a.c[i] -= adj_ret.c[i]; }
template <int R, int C, typename T> KC_FUNC mat_t<R, C, T> neg(const mat_t<R, C, T>& a) { mat_t<R, C, T> r; KC_FOR(i, R) KC_FOR(j, C) r.c[i][j] = -a.c[i][j]; return r; }
template <int R, int C, typename T> KC_FUNC void adj_neg(const mat_t<R, C, T>&, mat_t<R, C, T>& adj_a, const mat_t<R, C, T>& adj_ret) { KC_FOR(i, R) KC_FOR(j, C) adj_a.c[i][j] -= adj_ret.c[i][j]; }
template <int N, typename T> KC_FUNC vec_t<N, T> pos(const vec_t<N, T>& a) { return a; }
template <int N, typename T> KC_FUNC void adj_pos(const vec_t<N, T>&, vec_t<N, T>& adj_a, const vec_t<N, T>& adj_ret) { adj_a = add(adj_a, adj_ret); }

// scalar * vector, vector * scalar, vector / scalar (and the same for matrices)
template <int N, typename T> KC_FUNC vec_t<N, T> mul(const vec_t<N, T>& a, T s) { vec_t<N, T> r; KC_FOR(i, N) r.c[i] = a.c[i] * s; return r; }
template <int N, typename T> KC_FUNC void adj_mul(const vec_t<N, T>& a, T s, vec_t<N, T>& adj_a, T& adj_s, const vec_t<N, T>& adj_ret) { KC_FOR(i, N) { adj_a.c[i] += s * adj_ret.c[i]; adj_s += a.c[i] * adj_ret.c[i]; } }
template <int N, typename T> KC_FUNC vec_t<N, T> mul(T s, const vec_t<N, T>& a) { return mul(a, s); }
template <int N, typename T> KC_FUNC void adj_mul(T s, const vec_t<N, T>& a, T& adj_s, vec_t<N, T>& adj_a, const vec_t<N, T>& adj_ret) { adj_mul(a, s, adj_a, adj_s, adj_ret); }
template <int N, typename T> KC_FUNC vec_t<N, T> div(const vec_t<N, T>& a, T s) { vec_t<N, T> r; KC_FOR(i, N) r.c[i] = div(a.c[i], s); return r; }
template <int N, typename T> KC_FUNC void adj_div(const vec_t<N, T>& a, T s, vec_t<N, T>& adj_a, T& adj_s, const vec_t<N, T>& adj_ret) { KC_FOR(i, N) { adj_a.c[i] += adj_ret.c[i] / s; adj_s -= adj_ret.c[i] * a.c[i] / (s * s); } }
template <int N, typename T> KC_FUNC vec_t<N, T> div(T s, const vec_t<N, T>& a) { vec_t<N, T> r; KC_FOR(i, N) r.c[i] = div(s, a.c[i]); return r; }
template <int N, typename T> KC_FUNC void adj_div(T s, const vec_t<N, T>& a, T& adj_s, vec_t<N, T>& adj_a, const vec_t<N, T>& adj_ret) { KC_FOR(i, N) { adj_s += adj_ret.c[i] / a.c[i]; adj_a.c[i] -= adj_ret.c[i] * s / (a.c[i] * a.c[i]); } }
template <int R, int C, typename T> KC_FUNC mat_t<R, C, T> mul(const mat_t<R, C, T>& a, T s) { mat_t<R, C, T> r; KC_FOR(i, R) KC_FOR(j, C) r.c[i][j] = a.c[i][j] * s; return r; }
template <int R, int C, typename T> KC_FUNC void adj_mul(const mat_t<R, C, T>& a, T s, mat_t<R, C, T>& adj_a, T& adj_s, const mat_t<R, C, T>& adj_ret) { KC_FOR(i, R) KC_FOR(j, C) { adj_a.c[i][j] += s * adj_ret.c[i][j]; adj_s += a.c[i][j] * adj_ret.c[i][j]; } }
template <int R, int C, typename T> KC_FUNC mat_t<R, C, T> mul(T s, const mat_t<R, C, T>& a) { return mul(a, s); }
template <int R, int C, typename T> KC_FUNC void adj_mul(T s, const mat_t<R, C, T>& a, T& adj_s, mat_t<R, C, T>& adj_a, const mat_t<R, C, T>& adj_ret) { adj_mul(a, s, adj_a, adj_s, adj_ret); }
template <int R, int C, typename T> KC_FUNC mat_t<R, C, T> div(const mat_t<R, C, T>& a, T s) { mat_t<R, C, T> r; KC_FOR(i, R) KC_FOR(j, C) r.c[i][j] = div(a.c[i][j], s); return r; }
template <int R, int C, typename T> KC_FUNC void adj_div(const mat_t<R, C, T>& a, T s, mat_t<R, C, T>& adj_a, T& adj_s, const mat_t<R, C, T>& adj_ret) { KC_FOR(i, R) KC_FOR(j, C) { adj_a.c[i][j] += adj_ret.c[i][j] / s; adj_s -= adj_ret.c[i][j] * a.c[i][j] / (s * s); } }

// matrix * vector, vector * matrix (row vector), matrix * matrix.  Sums here start from their
// first term, not from zero: 0 + x is not x when x is -0.0, so the compiler keeps that add.
template <int R, int C, typename T> KC_FUNC vec_t<R, T> mul(const mat_t<R, C, T>& m, const vec_t<C, T>& v) {
    vec_t<R, T> r; KC_FOR(i, R) { r.c[i] = m.c[i][0] * v.c[0]; for (int j = 1; j < C; ++j) r.c[i] += m.c[i][j] * v.c[j]; } return r;
}
template <int R, int C, typename T> KC_FUNC void adj_mul(const mat_t<R, C, T>& m, const vec_t<C, T>& v, mat_t<R, C, T>& adj_m, vec_t<C, T>& adj_v, const vec_t<R, T>& adj_ret) {
    KC_FOR(i, R) KC_FOR(j, C) { adj_m.c[i][j] += adj_ret.c[i] * v.c[j]; adj_v.c[j] += m.c[i][j] * adj_ret.c[i]; }
}
template <int R, int C, typename T> KC_FUNC vec_t<C, T> mul(const vec_t<R, T>& v, const mat_t<R, C, T>& m) {
    vec_t<C, T> r; KC_FOR(j, C) { r.c[j] = v.c[0] * m.c[0][j]; for (int i = 1; i < R; ++i) r.c[j] += v.c[i] * m.c[i][j]; } return r;
}
template <int R, int C, typename T> KC_FUNC void adj_mul(const vec_t<R, T>& v, const mat_t<R, C, T>& m, vec_t<R, T>& adj_v, mat_t<R, C, T>& adj_m, const vec_t<C, T>& adj_ret) {
    KC_FOR(i, R) KC_FOR(j, C) { adj_m.c[i][j] += v.c[i] * adj_ret.c[j]; adj_v.c[i] += m.c[i][j] * adj_ret.c[j]; }
}
template <int R, int K, int C, typename T> KC_FUNC mat_t<R, C, T> mul(const mat_t<R, K, T>& a, const mat_t<K, C, T>& b) {
    mat_t<R, C, T> r; KC_FOR(i, R) KC_FOR(j, C) { r.c[i][j] = a.c[i][0] * b.c[0][j]; for (int k = 1; k < K; ++k) r.c[i][j] += a.c[i][k] * b.c[k][j]; } return r;
}
template <int R, int K, int C, typename T> KC_FUNC void adj_mul(const mat_t<R, K, T>& a, const mat_t<K, C, T>& b, mat_t<R, K, T>& adj_a, mat_t<K, C, T>& adj_b, const mat_t<R, C, T>& adj_ret) {
    KC_FOR(i, R) KC_FOR(k, K) KC_FOR(j, C) { adj_a.c[i][k] += adj_ret.c[i][j] * b.c[k][j]; adj_b.c[k][j] += a.c[i][k] * adj_ret.c[i][j]; }
}
// Square matrices: more specialised than both mul(T, T) and the general product above,
// which are otherwise equally good (ambiguous) for mat_t<N, N> * mat_t<N, N>.
template <int N, typename T> KC_FUNC mat_t<N, N, T> mul(const mat_t<N, N, T>& a, const mat_t<N, N, T>& b) { return mul<N, N, N, T>(a, b); }
template <int N, typename T> KC_FUNC void adj_mul(const mat_t<N, N, T>& a, const mat_t<N, N, T>& b, mat_t<N, N, T>& adj_a, mat_t<N, N, T>& adj_b, const mat_t<N, N, T>& adj_ret) {
    adj_mul<N, N, N, T>(a, b, adj_a, adj_b, adj_ret);
}

// ---- vector algebra -------------------------------------------------------------------
template <int N, typename T> KC_FUNC T dot(const vec_t<N, T>& a, const vec_t<N, T>& b) { T r = a.c[0] * b.c[0]; for (int i = 1; i < N; ++i) r += a.c[i] * b.c[i]; return r; }
template <int N, typename T> KC_FUNC void adj_dot(const vec_t<N, T>& a, const vec_t<N, T>& b, vec_t<N, T>& adj_a, vec_t<N, T>& adj_b, T adj_ret) { KC_FOR(i, N) { adj_a.c[i] += b.c[i] * adj_ret; adj_b.c[i] += a.c[i] * adj_ret; } }
template <typename T> KC_FUNC vec_t<3, T> cross(const vec_t<3, T>& a, const vec_t<3, T>& b) {
    return vec_t<3, T>{{a.c[1] * b.c[2] - a.c[2] * b.c[1], a.c[2] * b.c[0] - a.c[0] * b.c[2], a.c[0] * b.c[1] - a.c[1] * b.c[0]}};
}
template <typename T> KC_FUNC void adj_cross(const vec_t<3, T>& a, const vec_t<3, T>& b, vec_t<3, T>& adj_a, vec_t<3, T>& adj_b, const vec_t<3, T>& adj_ret) {
    adj_a = add(adj_a, cross(b, adj_ret));
    adj_b = add(adj_b, cross(adj_ret, a));
}
template <int N, typename T> KC_FUNC T length_sq(const vec_t<N, T>& a) { return dot(a, a); }
template <int N, typename T> KC_FUNC void adj_length_sq(const vec_t<N, T>& a, vec_t<N, T>& adj_a, T adj_ret) { KC_FOR(i, N) adj_a.c[i] += T(2) * a.c[i] * adj_ret; }
template <int N, typename T> KC_FUNC T length(const vec_t<N, T>& a) { return sqrt(dot(a, a)); }
template <int N, typename T> KC_FUNC void adj_length(const vec_t<N, T>& a, vec_t<N, T>& adj_a, T adj_ret) {
    T l = length(a); if (l > T(0)) KC_FOR(i, N) adj_a.c[i] += a.c[i] / l * adj_ret;
}
template <int N, typename T> KC_FUNC vec_t<N, T> normalize(const vec_t<N, T>& a) {
    T l = length(a); if (l > T(0)) return div(a, l); return vec_t<N, T>{};
}
template <int N, typename T> KC_FUNC void adj_normalize(const vec_t<N, T>& a, vec_t<N, T>& adj_a, const vec_t<N, T>& adj_ret) {
    T l = length(a); if (l <= T(0)) return;
    vec_t<N, T> n = div(a, l); T d = dot(n, adj_ret);
    KC_FOR(i, N) adj_a.c[i] += (adj_ret.c[i] - n.c[i] * d) / l;
}
template <int R, int C, typename T> KC_FUNC mat_t<R, C, T> outer(const vec_t<R, T>& a, const vec_t<C, T>& b) { mat_t<R, C, T> r; KC_FOR(i, R) KC_FOR(j, C) r.c[i][j] = a.c[i] * b.c[j]; return r; }
template <int R, int C, typename T> KC_FUNC void adj_outer(const vec_t<R, T>& a, const vec_t<C, T>& b, vec_t<R, T>& adj_a, vec_t<C, T>& adj_b, const mat_t<R, C, T>& adj_ret) {
    KC_FOR(i, R) KC_FOR(j, C) { adj_a.c[i] += adj_ret.c[i][j] * b.c[j]; adj_b.c[j] += a.c[i] * adj_ret.c[i][j]; }
}
// outer(a, b) * s, fused by the compiler (passes.fuse_scaled_outer).  The forward rounds exactly
// as the two-step product; the adjoint shares u = adj_ret b between adj_a and adj_s instead of
// forming adj_ret * s and replaying outer(a, b) for ddot (14 instead of 20 multiply-adds for 2x2).
template <int R, int C, typename T> KC_FUNC mat_t<R, C, T> outer_scaled(const vec_t<R, T>& a, const vec_t<C, T>& b, T s) {
    mat_t<R, C, T> r; KC_FOR(i, R) KC_FOR(j, C) r.c[i][j] = (a.c[i] * b.c[j]) * s; return r;
}
template <int R, int C, typename T> KC_FUNC void adj_outer_scaled(const vec_t<R, T>& a, const vec_t<C, T>& b, T s, vec_t<R, T>& adj_a,
                                                                 vec_t<C, T>& adj_b, T& adj_s, const mat_t<R, C, T>& adj_ret) {
    KC_FOR(i, R) {
        T u = adj_ret.c[i][0] * b.c[0]; for (int j = 1; j < C; ++j) u += adj_ret.c[i][j] * b.c[j];
        adj_a.c[i] += u * s; adj_s += a.c[i] * u;
    }
    KC_FOR(j, C) {
        T w = adj_ret.c[0][j] * a.c[0]; for (int i = 1; i < R; ++i) w += adj_ret.c[i][j] * a.c[i];
        adj_b.c[j] += w * s;
    }
}
template <int R, int C, typename T> KC_FUNC mat_t<C, R, T> transpose(const mat_t<R, C, T>& m) { mat_t<C, R, T> r; KC_FOR(i, R) KC_FOR(j, C) r.c[j][i] = m.c[i][j]; return r; }
template <int R, int C, typename T> KC_FUNC void adj_transpose(const mat_t<R, C, T>& m, mat_t<R, C, T>& adj_m, const mat_t<C, R, T>& adj_ret) { KC_FOR(i, R) KC_FOR(j, C) adj_m.c[i][j] += adj_ret.c[j][i]; }
template <int N, typename T> KC_FUNC T trace(const mat_t<N, N, T>& m) { T r = m.c[0][0]; for (int i = 1; i < N; ++i) r += m.c[i][i]; return r; }
template <int N, typename T> KC_FUNC void adj_trace(const mat_t<N, N, T>& m, mat_t<N, N, T>& adj_m, T adj_ret) { KC_FOR(i, N) adj_m.c[i][i] += adj_ret; }
template <int N, typename T> KC_FUNC mat_t<N, N, T> diag(const vec_t<N, T>& d) { mat_t<N, N, T> r = {}; KC_FOR(i, N) r.c[i][i] = d.c[i]; return r; }
template <int N, typename T> KC_FUNC void adj_diag(const vec_t<N, T>& d, vec_t<N, T>& adj_d, const mat_t<N, N, T>& adj_ret) { KC_FOR(i, N) adj_d.c[i] += adj_ret.c[i][i]; }
template <int N, typename T> KC_FUNC vec_t<N, T> get_diag(const mat_t<N, N, T>& m) { vec_t<N, T> r; KC_FOR(i, N) r.c[i] = m.c[i][i]; return r; }
template <int N, typename T> KC_FUNC void adj_get_diag(const mat_t<N, N, T>& m, mat_t<N, N, T>& adj_m, const vec_t<N, T>& adj_ret) { KC_FOR(i, N) adj_m.c[i][i] += adj_ret.c[i]; }
// double contraction sum_ij a_ij b_ij
template <int R, int C, typename T> KC_FUNC T ddot(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b) { T r = a.c[0][0] * b.c[0][0]; KC_FOR(i, R) KC_FOR(j, C) if (i || j) r += a.c[i][j] * b.c[i][j]; return r; }
template <int R, int C, typename T> KC_FUNC void adj_ddot(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b, mat_t<R, C, T>& adj_a, mat_t<R, C, T>& adj_b, T adj_ret) {
    KC_FOR(i, R) KC_FOR(j, C) { adj_a.c[i][j] += b.c[i][j] * adj_ret; adj_b.c[i][j] += a.c[i][j] * adj_ret; }
}
template <int N, typename T> KC_FUNC mat_t<N, N, T> identity_mat() { mat_t<N, N, T> r = {}; KC_FOR(i, N) r.c[i][i] = T(1); return r; }
template <typename T> KC_FUNC mat_t<3, 3, T> skew(const vec_t<3, T>& a) {
    return mat_t<3, 3, T>{{{T(0), -a.c[2], a.c[1]}, {a.c[2], T(0), -a.c[0]}, {-a.c[1], a.c[0], T(0)}}};
}
template <typename T> KC_FUNC void adj_skew(const vec_t<3, T>& a, vec_t<3, T>& adj_a, const mat_t<3, 3, T>& g) {
    adj_a.c[0] += g.c[2][1] - g.c[1][2]; adj_a.c[1] += g.c[0][2] - g.c[2][0]; adj_a.c[2] += g.c[1][0] - g.c[0][1];
}

// determinant and inverse for 2x2, 3x3, 4x4 (cofactor expansion)
template <typename T> KC_FUNC T determinant(const mat_t<2, 2, T>& m) { return m.c[0][0] * m.c[1][1] - m.c[0][1] * m.c[1][0]; }
template <typename T> KC_FUNC T determinant(const mat_t<3, 3, T>& m) {
    return m.c[0][0] * (m.c[1][1] * m.c[2][2] - m.c[1][2] * m.c[2][1]) - m.c[0][1] * (m.c[1][0] * m.c[2][2] - m.c[1][2] * m.c[2][0]) + m.c[0][2] * (m.c[1][0] * m.c[2][1] - m.c[1][1] * m.c[2][0]);
}
template <typename T> KC_FUNC T minor3(const mat_t<4, 4, T>& m, int r, int c) {
    mat_t<3, 3, T> s; int ii = 0;
    KC_FOR(i, 4) { if (i == r) continue; int jj = 0; KC_FOR(j, 4) { if (j == c) continue; s.c[ii][jj++] = m.c[i][j]; } ++ii; }
    return determinant(s);
}
template <typename T> KC_FUNC T determinant(const mat_t<4, 4, T>& m) {
    T d = T(0); KC_FOR(j, 4) d += ((j & 1) ? T(-1) : T(1)) * m.c[0][j] * minor3(m, 0, j); return d;
}
template <int N, typename T> KC_FUNC mat_t<N, N, T> adjugate(const mat_t<N, N, T>& m);
template <typename T> KC_FUNC mat_t<2, 2, T> adjugate(const mat_t<2, 2, T>& m) { return mat_t<2, 2, T>{{{m.c[1][1], -m.c[0][1]}, {-m.c[1][0], m.c[0][0]}}}; }
template <typename T> KC_FUNC mat_t<3, 3, T> adjugate(const mat_t<3, 3, T>& m) {
    mat_t<3, 3, T> r;
    KC_FOR(i, 3) KC_FOR(j, 3) {
        int i1 = (j + 1) % 3, i2 = (j + 2) % 3, j1 = (i + 1) % 3, j2 = (i + 2) % 3;
        r.c[i][j] = m.c[i1][j1] * m.c[i2][j2] - m.c[i1][j2] * m.c[i2][j1];
    }
    return r;
}
template <typename T> KC_FUNC mat_t<4, 4, T> adjugate(const mat_t<4, 4, T>& m) {
    mat_t<4, 4, T> r; KC_FOR(i, 4) KC_FOR(j, 4) r.c[j][i] = (((i + j) & 1) ? T(-1) : T(1)) * minor3(m, i, j); return r;
}
template <int N, typename T> KC_FUNC void adj_determinant(const mat_t<N, N, T>& m, mat_t<N, N, T>& adj_m, T adj_ret) {
    // d det / dM = adjugate(M)^T
    mat_t<N, N, T> a = adjugate(m); KC_FOR(i, N) KC_FOR(j, N) adj_m.c[i][j] += a.c[j][i] * adj_ret;
}
template <int N, typename T> KC_FUNC mat_t<N, N, T> inverse(const mat_t<N, N, T>& m) {
    T d = determinant(m); if (d == T(0)) return mat_t<N, N, T>{}; return mul(adjugate(m), T(1) / d);
}
template <int N, typename T> KC_FUNC void adj_inverse(const mat_t<N, N, T>& m, mat_t<N, N, T>& adj_m, const mat_t<N, N, T>& adj_ret) {
    // d(M^-1) = -M^-1 dM M^-1  =>  adj_M -= M^-T adj_ret M^-T
    mat_t<N, N, T> inv = inverse(m); mat_t<N, N, T> invT = transpose(inv);
    adj_m = sub(adj_m, mul(mul(invT, adj_ret), invT));
}

// Reductions over components.
template <int N, typename T> KC_FUNC T min(const vec_t<N, T>& a) { T r = a.c[0]; KC_FOR(i, N) r = min(r, a.c[i]); return r; }
template <int N, typename T> KC_FUNC void adj_min(const vec_t<N, T>& a, vec_t<N, T>& adj_a, T adj_ret) { int k = 0; KC_FOR(i, N) if (a.c[i] < a.c[k]) k = i; adj_a.c[k] += adj_ret; }
template <int N, typename T> KC_FUNC T max(const vec_t<N, T>& a) { T r = a.c[0]; KC_FOR(i, N) r = max(r, a.c[i]); return r; }
template <int N, typename T> KC_FUNC void adj_max(const vec_t<N, T>& a, vec_t<N, T>& adj_a, T adj_ret) { int k = 0; KC_FOR(i, N) if (a.c[i] > a.c[k]) k = i; adj_a.c[k] += adj_ret; }
template <int N, typename T> KC_FUNC vec_t<N, T> min(const vec_t<N, T>& a, const vec_t<N, T>& b) { vec_t<N, T> r; KC_FOR(i, N) r.c[i] = min(a.c[i], b.c[i]); return r; }
template <int N, typename T> KC_FUNC void adj_min(const vec_t<N, T>& a, const vec_t<N, T>& b, vec_t<N, T>& adj_a, vec_t<N, T>& adj_b, const vec_t<N, T>& adj_ret) { KC_FOR(i, N) adj_min(a.c[i], b.c[i], adj_a.c[i], adj_b.c[i], adj_ret.c[i]); }
template <int N, typename T> KC_FUNC vec_t<N, T> max(const vec_t<N, T>& a, const vec_t<N, T>& b) { vec_t<N, T> r; KC_FOR(i, N) r.c[i] = max(a.c[i], b.c[i]); return r; }
template <int N, typename T> KC_FUNC void adj_max(const vec_t<N, T>& a, const vec_t<N, T>& b, vec_t<N, T>& adj_a, vec_t<N, T>& adj_b, const vec_t<N, T>& adj_ret) { KC_FOR(i, N) adj_max(a.c[i], b.c[i], adj_a.c[i], adj_b.c[i], adj_ret.c[i]); }
template <int N, typename T> KC_FUNC vec_t<N, T> abs(const vec_t<N, T>& a) { vec_t<N, T> r; KC_FOR(i, N) r.c[i] = abs(a.c[i]); return r; }
template <int N, typename T> KC_FUNC void adj_abs(const vec_t<N, T>& a, vec_t<N, T>& adj_a, const vec_t<N, T>& adj_ret) { KC_FOR(i, N) adj_abs(a.c[i], adj_a.c[i], adj_ret.c[i]); }
template <int N, typename T> KC_FUNC vec_t<N, T> lerp(const vec_t<N, T>& a, const vec_t<N, T>& b, T t) { return add(a, mul(sub(b, a), t)); }
template <int N, typename T> KC_FUNC void adj_lerp(const vec_t<N, T>& a, const vec_t<N, T>& b, T t, vec_t<N, T>& adj_a, vec_t<N, T>& adj_b, T& adj_t, const vec_t<N, T>& adj_ret) {
    KC_FOR(i, N) { adj_a.c[i] += (T(1) - t) * adj_ret.c[i]; adj_b.c[i] += t * adj_ret.c[i]; adj_t += (b.c[i] - a.c[i]) * adj_ret.c[i]; }
}

// Equality of whole vectors/matrices (not differentiable).
template <int N, typename T> KC_FUNC bool eq(const vec_t<N, T>& a, const vec_t<N, T>& b) { KC_FOR(i, N) if (!(a.c[i] == b.c[i])) return false; return true; }
template <int N, typename T> KC_FUNC bool ne(const vec_t<N, T>& a, const vec_t<N, T>& b) { return !eq(a, b); }
template <int R, int C, typename T> KC_FUNC bool eq(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b) { KC_FOR(i, R) KC_FOR(j, C) if (!(a.c[i][j] == b.c[i][j])) return false; return true; }
template <int R, int C, typename T> KC_FUNC bool ne(const mat_t<R, C, T>& a, const mat_t<R, C, T>& b) { return !eq(a, b); }

// Compound adjoint accumulation helpers used by generated code (adj_x += ...).
template <int N, typename T> KC_FUNC vec_t<N, T>& operator+=(vec_t<N, T>& a, const vec_t<N, T>& b) { KC_FOR(i, N) a.c[i] += b.c[i]; return a; }
template <int N, typename T> KC_FUNC vec_t<N, T>& operator-=(vec_t<N, T>& a, const vec_t<N, T>& b) { KC_FOR(i, N) a.c[i] -= b.c[i]; return a; }
template <int R, int C, typename T> KC_FUNC mat_t<R, C, T>& operator+=(mat_t<R, C, T>& a, const mat_t<R, C, T>& b) { KC_FOR(i, R) KC_FOR(j, C) a.c[i][j] += b.c[i][j]; return a; }
template <int R, int C, typename T> KC_FUNC mat_t<R, C, T>& operator-=(mat_t<R, C, T>& a, const mat_t<R, C, T>& b) { KC_FOR(i, R) KC_FOR(j, C) a.c[i][j] -= b.c[i][j]; return a; }

// ---- adjoint accumulators --------------------------------------------------------------
// Generated adjoints start at -0.0 rather than +0.0: -0.0 + x is exactly x for every x, so
// the compiler drops the first add of each accumulation; +0.0 + x is not x when x is -0.0,
// and those adds made up about a third of the float work of the MPM adjoint kernels.
template <typename T> struct adj_zero_t { KC_FUNC static T get() { return T{}; } };
template <> struct adj_zero_t<float32> { KC_FUNC static float32 get() { return -0.0f; } };
template <> struct adj_zero_t<float64> { KC_FUNC static float64 get() { return -0.0; } };
template <int N, typename T> struct adj_zero_t<vec_t<N, T>> {
    KC_FUNC static vec_t<N, T> get() { vec_t<N, T> r; KC_FOR(i, N) r.c[i] = adj_zero_t<T>::get(); return r; }
};
template <int R, int C, typename T> struct adj_zero_t<mat_t<R, C, T>> {
    KC_FUNC static mat_t<R, C, T> get() { mat_t<R, C, T> r; KC_FOR(i, R) KC_FOR(j, C) r.c[i][j] = adj_zero_t<T>::get(); return r; }
};
template <typename T> KC_FUNC T adj_zero() { return adj_zero_t<T>::get(); }

}  // namespace kc
