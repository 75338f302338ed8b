// geometry: small vector helpers and primitive tests shared by the spatial structures.
// Plain structs and loops only (no C++ standard library) so the header stays NVRTC-friendly.
#pragma once
#include "kc_array.h"

namespace geo {

typedef kc::float32 f32;
typedef kc::int32 i32;
typedef kc::vec_t<3, kc::float32> vec3;

#define GEO_INF 3.402823466e+38f
#define GEO_STACK 64

KC_FUNC vec3 v3(f32 x, f32 y, f32 z) { vec3 r; r.c[0] = x; r.c[1] = y; r.c[2] = z; return r; }
KC_FUNC vec3 v_add(const vec3& a, const vec3& b) { return v3(a.c[0] + b.c[0], a.c[1] + b.c[1], a.c[2] + b.c[2]); }
KC_FUNC vec3 v_sub(const vec3& a, const vec3& b) { return v3(a.c[0] - b.c[0], a.c[1] - b.c[1], a.c[2] - b.c[2]); }
KC_FUNC vec3 v_mul(const vec3& a, f32 s) { return v3(a.c[0] * s, a.c[1] * s, a.c[2] * s); }
KC_FUNC f32 v_dot(const vec3& a, const vec3& b) { return a.c[0] * b.c[0] + a.c[1] * b.c[1] + a.c[2] * b.c[2]; }
KC_FUNC vec3 v_cross(const vec3& a, const vec3& b) {
    return v3(a.c[1] * b.c[2] - a.c[2] * b.c[1], a.c[2] * b.c[0] - a.c[0] * b.c[2], a.c[0] * b.c[1] - a.c[1] * b.c[0]);
}
KC_FUNC f32 v_len2(const vec3& a) { return v_dot(a, a); }
KC_FUNC f32 v_len(const vec3& a) { return kc::sqrt(v_dot(a, a)); }
KC_FUNC vec3 v_normalize(const vec3& a) { f32 l = v_len(a); return l > 0.0f ? v_mul(a, 1.0f / l) : v3(0.0f, 0.0f, 0.0f); }
KC_FUNC vec3 v_min(const vec3& a, const vec3& b) { return v3(kc::min(a.c[0], b.c[0]), kc::min(a.c[1], b.c[1]), kc::min(a.c[2], b.c[2])); }
KC_FUNC vec3 v_max(const vec3& a, const vec3& b) { return v3(kc::max(a.c[0], b.c[0]), kc::max(a.c[1], b.c[1]), kc::max(a.c[2], b.c[2])); }
KC_FUNC vec3 v_lerp3(const vec3& a, const vec3& b, const vec3& c, f32 wa, f32 wb) {
    // wa * a + wb * b + (1 - wa - wb) * c  (the barycentric convention of the mesh builtins)
    f32 wc = 1.0f - wa - wb;
    return v3(a.c[0] * wa + b.c[0] * wb + c.c[0] * wc, a.c[1] * wa + b.c[1] * wb + c.c[1] * wc, a.c[2] * wa + b.c[2] * wb + c.c[2] * wc);
}

// Element k of a strided vec3 buffer (kc arrays may be strided views).
KC_FUNC const vec3& v_at(const void* base, kc::int64 stride, i32 k) { return *(const vec3*)((const char*)base + (kc::int64)k * stride); }

// Squared distance from p to the box [lo, hi] (0 inside).
KC_FUNC f32 box_dist2(const f32* lo, const f32* hi, const vec3& p) {
    // branch-free: which side of a box a point lies on is a coin toss in a traversal
    f32 d2 = 0.0f;
    for (int k = 0; k < 3; ++k) {
        f32 d = kc::max(kc::max(lo[k] - p.c[k], p.c[k] - hi[k]), 0.0f);
        d2 += d * d;
    }
    return d2;
}

KC_FUNC bool box_overlap(const f32* lo, const f32* hi, const vec3& qlo, const vec3& qhi) {
    return !(lo[0] > qhi.c[0] || lo[1] > qhi.c[1] || lo[2] > qhi.c[2] || hi[0] < qlo.c[0] || hi[1] < qlo.c[1] || hi[2] < qlo.c[2]);
}

// Slab test of a ray (origin o, reciprocal direction inv) against [lo, hi]; returns the entry
// parameter (>= 0) or GEO_INF when the ray misses the box before tmax.
KC_FUNC f32 box_ray(const f32* lo, const f32* hi, const vec3& o, const vec3& inv, f32 tmax) {
    f32 t0 = 0.0f, t1 = tmax;
    for (int k = 0; k < 3; ++k) {
        f32 a = (lo[k] - o.c[k]) * inv.c[k];
        f32 b = (hi[k] - o.c[k]) * inv.c[k];
        // NaN (0 * inf on a slab plane) compares false and leaves the interval unchanged.
        f32 near = a < b ? a : b, far = a < b ? b : a;
        if (near > t0) t0 = near;
        if (far < t1) t1 = far;
    }
    return t0 <= t1 ? t0 : GEO_INF;
}

KC_FUNC vec3 safe_inverse(const vec3& d) {
    vec3 r;
    for (int k = 0; k < 3; ++k) {
        f32 x = d.c[k];
        if (x == 0.0f) r.c[k] = GEO_INF;   // treated as +/-inf along that axis
        else r.c[k] = 1.0f / x;
    }
    return r;
}

// Closest-point regions on a triangle (a, b, c).
enum { REG_FACE = 0, REG_VA = 1, REG_VB = 2, REG_VC = 3, REG_EAB = 4, REG_EBC = 5, REG_ECA = 6 };

// Closest point on triangle abc to p by Voronoi-region classification. Writes the weights
// of a and b (the weight of c is 1 - wa - wb) and the feature the point lies on.
KC_FUNC void closest_on_triangle(const vec3& a, const vec3& b, const vec3& c, const vec3& p, f32& wa, f32& wb, int& region) {
    vec3 ab = v_sub(b, a), ac = v_sub(c, a), ap = v_sub(p, a);
    f32 d1 = v_dot(ab, ap), d2 = v_dot(ac, ap);
    if (d1 <= 0.0f && d2 <= 0.0f) { wa = 1.0f; wb = 0.0f; region = REG_VA; return; }
    vec3 bp = v_sub(p, b);
    f32 d3 = v_dot(ab, bp), d4 = v_dot(ac, bp);
    if (d3 >= 0.0f && d4 <= d3) { wa = 0.0f; wb = 1.0f; region = REG_VB; return; }
    f32 vc = d1 * d4 - d3 * d2;
    if (vc <= 0.0f && d1 >= 0.0f && d3 <= 0.0f) {
        f32 t = d1 / (d1 - d3);
        wa = 1.0f - t; wb = t; region = REG_EAB; return;
    }
    vec3 cp = v_sub(p, c);
    f32 d5 = v_dot(ab, cp), d6 = v_dot(ac, cp);
    if (d6 >= 0.0f && d5 <= d6) { wa = 0.0f; wb = 0.0f; region = REG_VC; return; }
    f32 vb = d5 * d2 - d1 * d6;
    if (vb <= 0.0f && d2 >= 0.0f && d6 <= 0.0f) {
        f32 t = d2 / (d2 - d6);
        wa = 1.0f - t; wb = 0.0f; region = REG_ECA; return;
    }
    f32 va = d3 * d6 - d5 * d4;
    if (va <= 0.0f && (d4 - d3) >= 0.0f && (d5 - d6) >= 0.0f) {
        f32 t = (d4 - d3) / ((d4 - d3) + (d5 - d6));
        wa = 0.0f; wb = 1.0f - t; region = REG_EBC; return;
    }
    f32 inv = 1.0f / (va + vb + vc);
    f32 v = vb * inv, w = vc * inv;
    wa = 1.0f - v - w; wb = v; region = REG_FACE;
}

// Derivative of the closest-point weights (wa, wb) with respect to p, applied to an incoming
// adjoint (g_wa, g_wb): returns d(g_wa * wa + g_wb * wb)/dp for the region the point is in.
KC_FUNC vec3 closest_weights_vjp(const vec3& a, const vec3& b, const vec3& c, int region, f32 g_wa, f32 g_wb) {
    if (region == REG_FACE) {
        // p - c ~ wa (a - c) + wb (b - c) in the plane: the weights are linear in p through the
        // dual basis of (a - c, b - c).
        vec3 e0 = v_sub(a, c), e1 = v_sub(b, c);
        f32 g00 = v_dot(e0, e0), g01 = v_dot(e0, e1), g11 = v_dot(e1, e1);
        f32 det = g00 * g11 - g01 * g01;
        if (!(det > 0.0f)) return v3(0.0f, 0.0f, 0.0f);
        f32 i00 = g11 / det, i01 = -g01 / det, i11 = g00 / det;
        vec3 du = v_add(v_mul(e0, i00), v_mul(e1, i01));
        vec3 dv = v_add(v_mul(e0, i01), v_mul(e1, i11));
        return v_add(v_mul(du, g_wa), v_mul(dv, g_wb));
    }
    // Edge from x to y: s = (p - x).(y - x) / |y - x|^2 is the weight moved onto y.
    vec3 x, y; f32 gs;
    if (region == REG_EAB) { x = a; y = b; gs = g_wb - g_wa; }          // wa = 1 - s, wb = s
    else if (region == REG_ECA) { x = a; y = c; gs = -g_wa; }           // wa = 1 - s, wb = 0
    else if (region == REG_EBC) { x = b; y = c; gs = -g_wb; }           // wb = 1 - s
    else return v3(0.0f, 0.0f, 0.0f);                                    // vertex: constant
    vec3 e = v_sub(y, x);
    f32 l2 = v_len2(e);
    if (!(l2 > 0.0f)) return v3(0.0f, 0.0f, 0.0f);
    return v_mul(e, gs / l2);
}

// Ray / triangle intersection (edge-function form). On a hit with 0 <= t < tmax returns true
// and writes t and the weights (wa, wb) of a and b at the hit point.
KC_FUNC bool ray_triangle(const vec3& o, const vec3& d, const vec3& a, const vec3& b, const vec3& c, f32 tmax,
                          f32& t, f32& wa, f32& wb) {
    vec3 e1 = v_sub(b, a), e2 = v_sub(c, a);
    vec3 pv = v_cross(d, e2);
    f32 det = v_dot(e1, pv);
    if (det == 0.0f || !(det == det)) return false;
    f32 inv = 1.0f / det;
    vec3 tv = v_sub(o, a);
    f32 s1 = v_dot(tv, pv) * inv;
    if (s1 < 0.0f || s1 > 1.0f) return false;
    vec3 qv = v_cross(tv, e1);
    f32 s2 = v_dot(d, qv) * inv;
    if (s2 < 0.0f || s1 + s2 > 1.0f) return false;
    f32 tt = v_dot(e2, qv) * inv;
    if (!(tt >= 0.0f) || !(tt < tmax)) return false;
    t = tt; wa = 1.0f - s1 - s2; wb = s1;
    return true;
}

}  // namespace geo
