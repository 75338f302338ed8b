// kernelcore native runtime: scalar types, qualifiers and helpers shared by CPU and CUDA.
// Every builtin lives beside its adjoint `adj_<name>` (same arguments, then one adjoint
// reference per argument, then the adjoint of the result).
#pragma once

#if defined(__CUDACC__)
#define KC_CUDA 1
#define KC_FUNC inline __device__
#define KC_EXPORT
#else
#define KC_EXPORT __attribute__((visibility("default")))
#define KC_CUDA 0
#define KC_FUNC inline
#endif

// Generated adjoint functions. GCC's SLP vectorizer packs the scalar chains of a reverse
// sweep into 2-wide vectors and then spends more on shuffles than it saves: the MLS-MPM P2G
// adjoint ran 459 us with it and 322 us without (one thread, 6400 particles), while the
// forward kernels gain from it, so it is turned off for adjoints alone.
#if !defined(__CUDACC__) && defined(__GNUC__) && !defined(__clang__)
#define KC_ADJOINT_FUNC __attribute__((optimize("no-tree-slp-vectorize"))) KC_FUNC
#else
#define KC_ADJOINT_FUNC KC_FUNC
#endif

#if !defined(__CUDACC__)
#include <cmath>
#include <cstdio>
#include <cstring>
#include <cstdint>
#if defined(__SSE4_1__)
#include <immintrin.h>
#endif
#endif

namespace kc {

typedef signed char int8;
typedef unsigned char uint8;
typedef short int16;
typedef unsigned short uint16;
typedef int int32;
typedef unsigned int uint32;
typedef long long int64;
typedef unsigned long long uint64;
typedef float float32;
typedef double float64;

// Half precision is stored as bits; arithmetic goes through float32 (portable on CPU and
// NVRTC without cuda_fp16.h).  The defaulted default constructor keeps it trivial (a POD
// that launch packing copies as bytes; `half()` and `= {}` are zero); the explicit
// converting constructor lets generic code write `T(0)`, `T(0.5)` for T = half as well.
struct half {
    uint16 bits;
    half() = default;
    template <typename U> KC_FUNC explicit half(U v);
};

KC_FUNC float half_to_float(half h) {
    uint32 sign = (uint32)(h.bits & 0x8000u) << 16;
    uint32 exp = (h.bits >> 10) & 0x1fu;
    uint32 mant = h.bits & 0x3ffu;
    uint32 out;
    if (exp == 0) {
        if (mant == 0) { out = sign; }
        else {  // subnormal: normalise
            exp = 127 - 15 + 1;
            while ((mant & 0x400u) == 0) { mant <<= 1; --exp; }
            mant &= 0x3ffu;
            out = sign | (exp << 23) | (mant << 13);
        }
    } else if (exp == 31) {
        out = sign | 0x7f800000u | (mant << 13);
    } else {
        out = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
    float f;
#if KC_CUDA
    f = __int_as_float((int)out);
#else
    std::memcpy(&f, &out, 4);
#endif
    return f;
}

KC_FUNC half float_to_half(float f) {
    uint32 x;
#if KC_CUDA
    x = (uint32)__float_as_int(f);
#else
    std::memcpy(&x, &f, 4);
#endif
    uint32 sign = (x >> 16) & 0x8000u;
    int32 exp = (int32)((x >> 23) & 0xffu) - 127 + 15;
    uint32 mant = x & 0x7fffffu;
    half h;
    if (((x >> 23) & 0xffu) == 0xffu) {  // inf / nan
        h.bits = (uint16)(sign | 0x7c00u | (mant ? 0x200u : 0u));
    } else if (exp >= 31) {
        h.bits = (uint16)(sign | 0x7c00u);
    } else if (exp <= 0) {
        if (exp < -10) { h.bits = (uint16)sign; }
        else {
            mant |= 0x800000u;
            uint32 shift = (uint32)(14 - exp);
            uint32 m = mant >> shift;
            uint32 rem = mant & ((1u << shift) - 1u);
            uint32 halfway = 1u << (shift - 1);
            if (rem > halfway || (rem == halfway && (m & 1u))) ++m;
            h.bits = (uint16)(sign | m);
        }
    } else {
        uint32 m = mant >> 13;
        uint32 rem = mant & 0x1fffu;
        uint32 e = (uint32)exp;
        if (rem > 0x1000u || (rem == 0x1000u && (m & 1u))) {
            ++m;
            if (m == 0x400u) { m = 0; ++e; }
        }
        h.bits = (e >= 31) ? (uint16)(sign | 0x7c00u) : (uint16)(sign | (e << 10) | m);
    }
    return h;
}

template <typename U> KC_FUNC half::half(U v) : bits(float_to_half((float)v).bits) {}

// Conversions used by casts in kernels (`float(x)`, `kc.float16(x)`, ...).
template <typename To, typename From> struct caster {
    static KC_FUNC To cast(From v) { return (To)v; }
};
template <typename From> struct caster<half, From> {
    static KC_FUNC half cast(From v) { return float_to_half((float)v); }
};
template <typename To> struct caster<To, half> {
    static KC_FUNC To cast(half v) { return (To)half_to_float(v); }
};
template <> struct caster<half, half> {
    static KC_FUNC half cast(half v) { return v; }
};
template <typename To, typename From> KC_FUNC To cast(From v) { return caster<To, From>::cast(v); }
template <typename To, typename From> KC_FUNC void adj_cast(From v, From& adj_v, To adj_ret) {
    adj_v += caster<From, To>::cast(adj_ret);
}

KC_FUNC half operator+(half a, half b) { return float_to_half(half_to_float(a) + half_to_float(b)); }
KC_FUNC half operator-(half a, half b) { return float_to_half(half_to_float(a) - half_to_float(b)); }
KC_FUNC half operator*(half a, half b) { return float_to_half(half_to_float(a) * half_to_float(b)); }
KC_FUNC half operator/(half a, half b) { return float_to_half(half_to_float(a) / half_to_float(b)); }
KC_FUNC half operator-(half a) { half r = a; r.bits ^= 0x8000u; return r; }
KC_FUNC half& operator+=(half& a, half b) { a = a + b; return a; }
KC_FUNC half& operator-=(half& a, half b) { a = a - b; return a; }
KC_FUNC bool operator<(half a, half b) { return half_to_float(a) < half_to_float(b); }
KC_FUNC bool operator>(half a, half b) { return half_to_float(a) > half_to_float(b); }
KC_FUNC bool operator<=(half a, half b) { return half_to_float(a) <= half_to_float(b); }
KC_FUNC bool operator>=(half a, half b) { return half_to_float(a) >= half_to_float(b); }
KC_FUNC bool operator==(half a, half b) { return half_to_float(a) == half_to_float(b); }
KC_FUNC bool operator!=(half a, half b) { return half_to_float(a) != half_to_float(b); }

// Zero of any type: every kernelcore type is a POD whose all-bits-zero value is zero.
template <typename T> KC_FUNC T zero() { return T(); }

}  // namespace kc
