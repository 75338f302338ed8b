// Scalar builtins (float16/32/64 and integers) with their adjoints side by side.
#pragma once
#include "kc_base.h"

namespace kc {

#if KC_CUDA
// CUDA's math functions live in the global namespace; qualify them, or kc::sin(double)
// would call itself.
#define KC_MATH1(name, f32, f64) \
    KC_FUNC float32 name(float32 x) { return ::f32(x); } \
    KC_FUNC float64 name(float64 x) { return ::f64(x); }
#define KC_MATH2(name, f32, f64) \
    KC_FUNC float32 name(float32 x, float32 y) { return ::f32(x, y); } \
    KC_FUNC float64 name(float64 x, float64 y) { return ::f64(x, y); }
#else
#define KC_MATH1(name, f32, f64) \
    KC_FUNC float32 name(float32 x) { return std::f64(x); } \
    KC_FUNC float64 name(float64 x) { return std::f64(x); }
#define KC_MATH2(name, f32, f64) \
    KC_FUNC float32 name(float32 x, float32 y) { return std::f64(x, y); } \
    KC_FUNC float64 name(float64 x, float64 y) { return std::f64(x, y); }
#endif

KC_MATH1(sin, sinf, sin) KC_MATH1(cos, cosf, cos) KC_MATH1(tan, tanf, tan)
KC_MATH1(asin_raw, asinf, asin) KC_MATH1(acos_raw, acosf, acos) KC_MATH1(atan, atanf, atan)
KC_MATH1(sinh, sinhf, sinh) KC_MATH1(cosh, coshf, cosh) KC_MATH1(tanh, tanhf, tanh)
KC_MATH1(exp, expf, exp) KC_MATH1(log, logf, log) KC_MATH1(log2, log2f, log2)
KC_MATH1(log10, log10f, log10) KC_MATH1(sqrt, sqrtf, sqrt) KC_MATH1(cbrt, cbrtf, cbrt)
KC_MATH1(floor, floorf, floor) KC_MATH1(ceil, ceilf, ceil) KC_MATH1(trunc, truncf, trunc)
KC_MATH1(round, roundf, round) KC_MATH1(rint, rintf, rint) KC_MATH1(fabs_raw, fabsf, fabs)
KC_MATH2(atan2, atan2f, atan2) KC_MATH2(pow, powf, pow) KC_MATH2(fmod_raw, fmodf, fmod)

// half-precision overloads go through float32
#define KC_HALF1(name) KC_FUNC half name(half x) { return float_to_half(name(half_to_float(x))); }
#define KC_HALF2(name) KC_FUNC half name(half x, half y) { return float_to_half(name(half_to_float(x), half_to_float(y))); }
KC_HALF1(sin) KC_HALF1(cos) KC_HALF1(tan) KC_HALF1(asin_raw) KC_HALF1(acos_raw) KC_HALF1(atan)
KC_HALF1(sinh) KC_HALF1(cosh) KC_HALF1(tanh) KC_HALF1(exp) KC_HALF1(log) KC_HALF1(log2)
KC_HALF1(log10) KC_HALF1(sqrt) KC_HALF1(cbrt) KC_HALF1(floor) KC_HALF1(ceil) KC_HALF1(trunc)
KC_HALF1(round) KC_HALF1(rint) KC_HALF1(fabs_raw) KC_HALF2(atan2) KC_HALF2(pow) KC_HALF2(fmod_raw)

// asin/acos clamp their argument so rounding noise just outside [-1, 1] gives no NaN.
template <typename T> KC_FUNC T clamp_unit(T x) { return x < T(-1) ? T(-1) : (x > T(1) ? T(1) : x); }
KC_FUNC half clamp_unit(half x) { return float_to_half(clamp_unit(half_to_float(x))); }
template <typename T> KC_FUNC T asin(T x) { return asin_raw(clamp_unit(x)); }
template <typename T> KC_FUNC T acos(T x) { return acos_raw(clamp_unit(x)); }

// ---- arithmetic operators --------------------------------------------------------
template <typename T> KC_FUNC T add(T a, T b) { return a + b; }
template <typename T> KC_FUNC void adj_add(T a, T b, T& adj_a, T& adj_b, T adj_ret) { adj_a += adj_ret; adj_b += adj_ret; }
template <typename T> KC_FUNC T sub(T a, T b) { return a - b; }
template <typename T> KC_FUNC void adj_sub(T a, T b, T& adj_a, T& adj_b, T adj_ret) { adj_a += adj_ret; adj_b -= adj_ret; }
template <typename T> KC_FUNC T mul(T a, T b) { return a * b; }
template <typename T> KC_FUNC void adj_mul(T a, T b, T& adj_a, T& adj_b, T adj_ret) { adj_a += b * adj_ret; adj_b += a * adj_ret; }
template <typename T> KC_FUNC T div(T a, T b) { return a / b; }
template <typename T> KC_FUNC void adj_div(T a, T b, T& adj_a, T& adj_b, T adj_ret) {
    adj_a += adj_ret / b; adj_b -= adj_ret * a / (b * b);
}
template <typename T> KC_FUNC T neg(T a) { return -a; }
template <typename T> KC_FUNC void adj_neg(T a, T& adj_a, T adj_ret) { adj_a -= adj_ret; }
template <typename T> KC_FUNC T pos(T a) { return a; }
template <typename T> KC_FUNC void adj_pos(T a, T& adj_a, T adj_ret) { adj_a += adj_ret; }

// % and // follow Warp (docs/warp_compat.md): % truncates like C (the result takes the sign
// of the dividend: -7.5 % 2.0 == -1.5), // rounds down (-7.5 // 2.0 == -4.0).
template <typename T> KC_FUNC T mod(T a, T b) { return fmod_raw(a, b); }
template <typename T> KC_FUNC void adj_mod(T a, T b, T& adj_a, T& adj_b, T adj_ret) {
    adj_a += adj_ret; adj_b -= adj_ret * trunc(a / b);
}
template <typename T> KC_FUNC T floordiv(T a, T b) { return floor(a / b); }
template <typename T> KC_FUNC void adj_floordiv(T a, T b, T& adj_a, T& adj_b, T adj_ret) {}
// Integers: / and % truncate (C), // rounds down (-7 // 2 == -4, -7 % 2 == -1, as in Warp).
// A zero divisor would raise SIGFPE, and so would INT_MIN / -1: the results are defined
// instead (x / 0 == x // 0 == x % 0 == 0; INT_MIN / -1 wraps to INT_MIN, as in two's
// complement); debug mode reports a zero divisor as an error (emit_cpp, divisor_check).
#define KC_INT_DIVMOD(T, U) \
    KC_FUNC T div(T a, T b) { return b == T(0) ? T(0) : b == T(-1) ? T(U(0) - U(a)) : T(a / b); } \
    KC_FUNC T mod(T a, T b) { return (b == T(0) || b == T(-1)) ? T(0) : T(a % b); } \
    KC_FUNC T floordiv(T a, T b) { \
        if (b == T(0)) return T(0); \
        if (b == T(-1)) return T(U(0) - U(a)); \
        T q = T(a / b); if ((a % b != 0) && ((a < 0) != (b < 0))) --q; return q; } \
    KC_FUNC void adj_div(T, T, T&, T&, T) {} \
    KC_FUNC void adj_mod(T, T, T&, T&, T) {} \
    KC_FUNC void adj_floordiv(T, T, T&, T&, T) {}
KC_INT_DIVMOD(int8, uint8) KC_INT_DIVMOD(int16, uint16) KC_INT_DIVMOD(int32, uint32) KC_INT_DIVMOD(int64, uint64)
#define KC_UINT_DIVMOD(T) \
    KC_FUNC T div(T a, T b) { return b == T(0) ? T(0) : T(a / b); } \
    KC_FUNC T mod(T a, T b) { return b == T(0) ? T(0) : T(a % b); } \
    KC_FUNC T floordiv(T a, T b) { return b == T(0) ? T(0) : T(a / b); } \
    KC_FUNC void adj_div(T, T, T&, T&, T) {} \
    KC_FUNC void adj_mod(T, T, T&, T&, T) {} \
    KC_FUNC void adj_floordiv(T, T, T&, T&, T) {}
KC_UINT_DIVMOD(uint8) KC_UINT_DIVMOD(uint16) KC_UINT_DIVMOD(uint32) KC_UINT_DIVMOD(uint64)

// Bitwise operators on integers (not differentiable).
template <typename T> KC_FUNC T bit_and(T a, T b) { return a & b; }
template <typename T> KC_FUNC T bit_or(T a, T b) { return a | b; }
template <typename T> KC_FUNC T bit_xor(T a, T b) { return a ^ b; }
template <typename T> KC_FUNC T lshift(T a, T b) { return a << b; }
template <typename T> KC_FUNC T rshift(T a, T b) { return a >> b; }
template <typename T> KC_FUNC T invert(T a) { return ~a; }

// Comparisons and logic (not differentiable).
template <typename T> KC_FUNC bool lt(T a, T b) { return a < b; }
template <typename T> KC_FUNC bool le(T a, T b) { return a <= b; }
template <typename T> KC_FUNC bool gt(T a, T b) { return a > b; }
template <typename T> KC_FUNC bool ge(T a, T b) { return a >= b; }
template <typename T> KC_FUNC bool eq(T a, T b) { return a == b; }
template <typename T> KC_FUNC bool ne(T a, T b) { return a != b; }
KC_FUNC bool logical_and(bool a, bool b) { return a && b; }
KC_FUNC bool logical_or(bool a, bool b) { return a || b; }
KC_FUNC bool logical_not(bool a) { return !a; }
template <typename T> KC_FUNC bool truth(T a) { return a != T(0); }
KC_FUNC bool truth(half a) { return half_to_float(a) != 0.0f; }

// select(cond, a, b): the phi of a branch; the adjoint flows to the taken side only.
template <typename T> KC_FUNC T select(bool c, T a, T b) { return c ? a : b; }
#if !KC_CUDA
// On the CPU, g++ often compiles `c ? a : b` into a branch, which mispredicts badly when
// c is data dependent (e.g. "is this neighbour inside the radius?"). A bitwise blend is
// branch-free by construction. (GPUs predicate short selects on their own.)
template <typename T, typename U> KC_FUNC T blend_bits(bool c, T a, T b) {
    U ua, ub;
    std::memcpy(&ua, &a, sizeof(T));
    std::memcpy(&ub, &b, sizeof(T));
    U mask = (U)0 - (U)c;
    U r = (ua & mask) | (ub & ~mask);
    T out;
    std::memcpy(&out, &r, sizeof(T));
    return out;
}
#if defined(__SSE4_1__)
// Floats stay in vector registers: an integer-domain blend would put two register-file
// crossings on loop-carried chains such as `if d < r: s += r - d`.
KC_FUNC float32 select(bool c, float32 a, float32 b) {
    __m128 m = _mm_castsi128_ps(_mm_cvtsi32_si128(-(int)c));
    return _mm_cvtss_f32(_mm_blendv_ps(_mm_set_ss(b), _mm_set_ss(a), m));
}
KC_FUNC float64 select(bool c, float64 a, float64 b) {
    __m128d m = _mm_castsi128_pd(_mm_cvtsi64_si128(-(long long)c));
    return _mm_cvtsd_f64(_mm_blendv_pd(_mm_set_sd(b), _mm_set_sd(a), m));
}
#else
KC_FUNC float32 select(bool c, float32 a, float32 b) { return blend_bits<float32, uint32>(c, a, b); }
KC_FUNC float64 select(bool c, float64 a, float64 b) { return blend_bits<float64, uint64>(c, a, b); }
#endif
KC_FUNC int32 select(bool c, int32 a, int32 b) { return blend_bits<int32, uint32>(c, a, b); }
KC_FUNC int64 select(bool c, int64 a, int64 b) { return blend_bits<int64, uint64>(c, a, b); }
KC_FUNC uint32 select(bool c, uint32 a, uint32 b) { return blend_bits<uint32, uint32>(c, a, b); }
#endif
template <typename T> KC_FUNC void adj_select(bool c, T a, T b, bool& adj_c, T& adj_a, T& adj_b, T adj_ret) {
    if (c) adj_a += adj_ret; else adj_b += adj_ret;
}
// Ternary `a if c else b` uses where(c, a, b), the same thing with Warp's name.
template <typename T> KC_FUNC T where(bool c, T a, T b) { return c ? a : b; }
template <typename T> KC_FUNC void adj_where(bool c, T a, T b, bool& adj_c, T& adj_a, T& adj_b, T adj_ret) {
    if (c) adj_a += adj_ret; else adj_b += adj_ret;
}

// ---- scalar math -----------------------------------------------------------------
template <typename T> KC_FUNC void adj_sin(T x, T& adj_x, T adj_ret) { adj_x += cos(x) * adj_ret; }
template <typename T> KC_FUNC void adj_cos(T x, T& adj_x, T adj_ret) { adj_x -= sin(x) * adj_ret; }
template <typename T> KC_FUNC void adj_tan(T x, T& adj_x, T adj_ret) { T c = cos(x); adj_x += adj_ret / (c * c); }
// Edges (issue #23): where the forward is finite but the derivative is not, the adjoint is the
// subgradient 0, documented per builtin in the table (docs/builtins.md) and checked by the
// "edges" of tests/kernelcore/test_builtin_gradients.py.
// asin/acos clamp x to [-1, 1]: at |x| >= 1 (the angle between parallel unit vectors) the
// derivative is infinite or that of the clamp, and the adjoint is 0.
template <typename T> KC_FUNC void adj_asin(T x, T& adj_x, T adj_ret) { T d = T(1) - x * x; if (d > T(0)) adj_x += adj_ret / sqrt(d); }
template <typename T> KC_FUNC void adj_acos(T x, T& adj_x, T adj_ret) { T d = T(1) - x * x; if (d > T(0)) adj_x -= adj_ret / sqrt(d); }
template <typename T> KC_FUNC void adj_atan(T x, T& adj_x, T adj_ret) { adj_x += adj_ret / (T(1) + x * x); }
template <typename T> KC_FUNC void adj_atan2(T y, T x, T& adj_y, T& adj_x, T adj_ret) {
    T d = x * x + y * y; if (!(d > T(0))) return;   // atan2(0, 0): adjoint 0
    adj_y += x / d * adj_ret; adj_x -= y / d * adj_ret;
}
template <typename T> KC_FUNC void adj_sinh(T x, T& adj_x, T adj_ret) { adj_x += cosh(x) * adj_ret; }
template <typename T> KC_FUNC void adj_cosh(T x, T& adj_x, T adj_ret) { adj_x += sinh(x) * adj_ret; }
template <typename T> KC_FUNC void adj_tanh(T x, T& adj_x, T adj_ret) { T t = tanh(x); adj_x += (T(1) - t * t) * adj_ret; }
template <typename T> KC_FUNC void adj_exp(T x, T& adj_x, T adj_ret) { adj_x += exp(x) * adj_ret; }
template <typename T> KC_FUNC void adj_log(T x, T& adj_x, T adj_ret) { adj_x += adj_ret / x; }
template <typename T> KC_FUNC void adj_log2(T x, T& adj_x, T adj_ret) { adj_x += adj_ret / (x * T(0.6931471805599453)); }
template <typename T> KC_FUNC void adj_log10(T x, T& adj_x, T adj_ret) { adj_x += adj_ret / (x * T(2.302585092994046)); }
// sqrt, cbrt at 0: +inf, the one-sided limit (the seeds' safe_sqrt example shows it and catches it
// with a custom grad)
template <typename T> KC_FUNC void adj_sqrt(T x, T& adj_x, T adj_ret) { adj_x += adj_ret / (T(2) * sqrt(x)); }
template <typename T> KC_FUNC void adj_cbrt(T x, T& adj_x, T adj_ret) { T c = cbrt(x); adj_x += adj_ret / (T(3) * c * c); }
template <typename T> KC_FUNC void adj_pow(T x, T y, T& adj_x, T& adj_y, T adj_ret) {
    // d/dx = y x^(y-1): 0 when y = 0 (x^0 = 1, where 0 * inf would give NaN at x = 0); at x = 0
    // and 0 < y < 1 it is +inf, the one-sided limit, as for sqrt
    if (y != T(0)) adj_x += y * pow(x, y - T(1)) * adj_ret;
    if (x > T(0)) adj_y += pow(x, y) * log(x) * adj_ret;   // d/dy = x^y log x; 0 for x <= 0 (limit at x -> 0+)
}
// Rounding functions have zero derivative almost everywhere.
template <typename T> KC_FUNC void adj_floor(T x, T& adj_x, T adj_ret) {}
template <typename T> KC_FUNC void adj_ceil(T x, T& adj_x, T adj_ret) {}
template <typename T> KC_FUNC void adj_trunc(T x, T& adj_x, T adj_ret) {}
template <typename T> KC_FUNC void adj_round(T x, T& adj_x, T adj_ret) {}
template <typename T> KC_FUNC void adj_rint(T x, T& adj_x, T adj_ret) {}

template <typename T> KC_FUNC T abs(T x) { return x < T(0) ? -x : x; }
template <typename T> KC_FUNC void adj_abs(T x, T& adj_x, T adj_ret) { if (x < T(0)) adj_x -= adj_ret; else adj_x += adj_ret; }
template <typename T> KC_FUNC T sign(T x) { return x < T(0) ? T(-1) : T(1); }
template <typename T> KC_FUNC void adj_sign(T x, T& adj_x, T adj_ret) {}
template <typename T> KC_FUNC T min(T a, T b) { return a < b ? a : b; }
template <typename T> KC_FUNC void adj_min(T a, T b, T& adj_a, T& adj_b, T adj_ret) { if (a < b) adj_a += adj_ret; else adj_b += adj_ret; }
template <typename T> KC_FUNC T max(T a, T b) { return a > b ? a : b; }
template <typename T> KC_FUNC void adj_max(T a, T b, T& adj_a, T& adj_b, T adj_ret) { if (a > b) adj_a += adj_ret; else adj_b += adj_ret; }
template <typename T> KC_FUNC T clamp(T x, T lo, T hi) { return x < lo ? lo : (x > hi ? hi : x); }
template <typename T> KC_FUNC void adj_clamp(T x, T lo, T hi, T& adj_x, T& adj_lo, T& adj_hi, T adj_ret) {
    if (x < lo) adj_lo += adj_ret; else if (x > hi) adj_hi += adj_ret; else adj_x += adj_ret;
}
template <typename T> KC_FUNC T lerp(T a, T b, T t) { return a + (b - a) * t; }
template <typename T> KC_FUNC void adj_lerp(T a, T b, T t, T& adj_a, T& adj_b, T& adj_t, T adj_ret) {
    adj_a += (T(1) - t) * adj_ret; adj_b += t * adj_ret; adj_t += (b - a) * adj_ret;
}
template <typename T> KC_FUNC T smoothstep(T e0, T e1, T x) {
    T t = clamp((x - e0) / (e1 - e0), T(0), T(1)); return t * t * (T(3) - T(2) * t);
}
template <typename T> KC_FUNC void adj_smoothstep(T e0, T e1, T x, T& adj_e0, T& adj_e1, T& adj_x, T adj_ret) {
    T u = (x - e0) / (e1 - e0);
    if (u <= T(0) || u >= T(1)) return;
    T du = T(6) * u * (T(1) - u) * adj_ret;  // d(smooth)/du
    T inv = T(1) / (e1 - e0);
    adj_x += du * inv;
    adj_e0 += du * (x - e1) * inv * inv;
    adj_e1 -= du * (x - e0) * inv * inv;
}
template <typename T> KC_FUNC T step(T x) { return x < T(0) ? T(1) : T(0); }
template <typename T> KC_FUNC void adj_step(T x, T& adj_x, T adj_ret) {}
template <typename T> KC_FUNC T degrees(T x) { return x * T(57.29577951308232); }
template <typename T> KC_FUNC void adj_degrees(T x, T& adj_x, T adj_ret) { adj_x += T(57.29577951308232) * adj_ret; }
template <typename T> KC_FUNC T radians(T x) { return x * T(0.017453292519943295); }
template <typename T> KC_FUNC void adj_radians(T x, T& adj_x, T adj_ret) { adj_x += T(0.017453292519943295) * adj_ret; }
template <typename T> KC_FUNC bool isnan(T x) { return x != x; }
template <typename T> KC_FUNC bool isinf(T x) { return !(x != x) && (x - x != x - x); }
template <typename T> KC_FUNC bool isfinite(T x) { return x - x == x - x; }
KC_FUNC bool isnan(half x) { return isnan(half_to_float(x)); }
KC_FUNC bool isinf(half x) { return isinf(half_to_float(x)); }
KC_FUNC bool isfinite(half x) { return isfinite(half_to_float(x)); }
// Integer abs/sign/min/max/clamp reuse the templates above.

// Adjoint accumulation for half goes through float32 for each builtin above as well.
KC_FUNC half operator*(half a, float b) { return float_to_half(half_to_float(a) * b); }

}  // namespace kc
