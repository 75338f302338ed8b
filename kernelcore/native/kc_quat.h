// Quaternions (x, y, z, w) and rigid transforms (p, q), with adjoints side by side.
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

template <typename T> KC_FUNC T extract(const quat_t<T>& q, int32 i) { return q.c[i]; }
template <typename T> KC_FUNC void adj_extract(const quat_t<T>& q, int32 i, quat_t<T>& adj_q, int32&, T adj_ret) { adj_q.c[i] += adj_ret; }
template <typename T> KC_FUNC quat_t<T> assign_copy(const quat_t<T>& q, int32 i, T x) { quat_t<T> r = q; r.c[i] = x; return r; }
template <typename T> KC_FUNC void adj_assign_copy(const quat_t<T>& q, int32 i, T x, quat_t<T>& adj_q, int32&, T& adj_x, const quat_t<T>& adj_ret) {
    KC_FOR(k, 4) if (k != i) adj_q.c[k] += adj_ret.c[k];
    adj_x += adj_ret.c[i];
}

}  // namespace kc
