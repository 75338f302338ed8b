// Perlin-style gradient noise in 1-4 dimensions (noise, periodic pnoise) and divergence-free
// curl noise in 2-D and 3-D, each beside its adjoint.
//
// One lattice cell per unit.  The corner p of the cell holding x gets a pseudo-random gradient
// g_p (components uniform in [-1, 1) / sqrt(N), from a hash of the field `state` and p); the
// value is the blend of g_p . (x - p) over the 2^N corners with the quintic fade
// 6t^5 - 15t^4 + 10t^3, so the field is C2: its gradient and Hessian (needed by the curl and by
// the curl's adjoint) are continuous.  It is 0 at every lattice point and |noise| <= sqrt(N)/2.
// pnoise wraps the lattice index per axis (Python-style modulo, so negative x works too).
#pragma once
#include "kc_vec.h"

namespace kc {

// integer finaliser (xor-shift / multiply, good avalanche): lattice hashes and gradients
KC_FUNC uint32 noise_mix(uint32 x) {
    x ^= x >> 16; x *= 0x7feb352du; x ^= x >> 15; x *= 0x846ca68bu; x ^= x >> 16; return x;
}
template <int N> KC_FUNC uint32 noise_hash(uint32 state, const int32 (&p)[N]) {
    uint32 h = noise_mix(state ^ 0x9e3779b9u);
    KC_FOR(i, N) h = noise_mix(h ^ ((uint32)p[i] * 0x85ebca6bu + (uint32)i * 0xc2b2ae35u));
    return h;
}
template <typename T> KC_FUNC T noise_inv_sqrt_dim(int n) {
    return n == 1 ? T(1) : (n == 2 ? T(0.7071067811865476) : (n == 3 ? T(0.5773502691896258) : T(0.5)));
}

// Value (D >= 0), gradient (D >= 1) and Hessian (D >= 2) of the field at x.
// period[i] > 0 wraps axis i; 0 leaves it unbounded.
template <int N, typename T, int D>
KC_FUNC void perlin_eval(uint32 state, const T (&x)[N], const int32 (&period)[N], T& value, T (&grad)[N], T (&hess)[N][N]) {
    int32 cell[N];
    T f[N], w[N], dw[N], ddw[N];
    KC_FOR(i, N) {
        T fl = floor(x[i]);
        cell[i] = (int32)fl;
        T t = x[i] - fl;
        f[i] = t;
        w[i] = t * t * t * (t * (t * T(6) - T(15)) + T(10));
        dw[i] = T(30) * t * t * (t - T(1)) * (t - T(1));
        ddw[i] = T(60) * t * (t - T(1)) * (T(2) * t - T(1));
    }
    value = T(0);
    KC_FOR(i, N) { grad[i] = T(0); KC_FOR(j, N) hess[i][j] = T(0); }
    const T gscale = noise_inv_sqrt_dim<T>(N);
    for (int c = 0; c < (1 << N); ++c) {
        int32 p[N];
        T d[N], W[N], dW[N], ddW[N];
        KC_FOR(i, N) {
            int b = (c >> i) & 1;
            int32 q = cell[i] + b;
            if (period[i] > 0) { q %= period[i]; if (q < 0) q += period[i]; }
            p[i] = q;
            d[i] = f[i] - T(b);
            W[i] = b ? w[i] : T(1) - w[i];
            dW[i] = b ? dw[i] : -dw[i];
            ddW[i] = b ? ddw[i] : -ddw[i];
        }
        uint32 h = noise_hash<N>(state, p);
        T g[N], lin = T(0);
        KC_FOR(i, N) {
            uint32 r = noise_mix(h + (uint32)(i + 1) * 0x27d4eb2fu);
            g[i] = (T((float64)(r >> 8)) * T(1.0 / 8388608.0) - T(1)) * gscale;
            lin += g[i] * d[i];
        }
        T Wall = T(1);
        KC_FOR(i, N) Wall *= W[i];
        value += Wall * lin;
        if (D >= 1) {
            T Wj[N];   // d(prod W) / dx_j
            KC_FOR(j, N) {
                Wj[j] = dW[j];
                KC_FOR(i, N) if (i != j) Wj[j] *= W[i];
                grad[j] += Wj[j] * lin + Wall * g[j];
            }
            if (D >= 2) {
                KC_FOR(j, N) KC_FOR(k, N) {
                    T Wjk;
                    if (j == k) { Wjk = ddW[j]; KC_FOR(i, N) if (i != j) Wjk *= W[i]; }
                    else { Wjk = dW[j] * dW[k]; KC_FOR(i, N) if (i != j && i != k) Wjk *= W[i]; }
                    hess[j][k] += Wjk * lin + Wj[j] * g[k] + Wj[k] * g[j];
                }
            }
        }
    }
}

template <int N, typename T> KC_FUNC void noise_unpack(const vec_t<N, T>& v, T (&x)[N]) { KC_FOR(i, N) x[i] = v.c[i]; }

// ---- noise / pnoise --------------------------------------------------------------------------------
template <typename T> KC_FUNC T noise(uint32 state, T x) {
    T xs[1] = {x}, g[1], h[1][1], v; const int32 per[1] = {0};
    perlin_eval<1, T, 0>(state, xs, per, v, g, h); return v;
}
template <typename T> KC_FUNC void adj_noise(uint32 state, T x, uint32&, T& adj_x, T adj_ret) {
    T xs[1] = {x}, g[1], h[1][1], v; const int32 per[1] = {0};
    perlin_eval<1, T, 1>(state, xs, per, v, g, h); adj_x += g[0] * adj_ret;
}
template <int N, typename T> KC_FUNC T noise(uint32 state, const vec_t<N, T>& x) {
    T xs[N], g[N], h[N][N], v; int32 per[N]; KC_FOR(i, N) per[i] = 0; noise_unpack(x, xs);
    perlin_eval<N, T, 0>(state, xs, per, v, g, h); return v;
}
template <int N, typename T> KC_FUNC void adj_noise(uint32 state, const vec_t<N, T>& x, uint32&, vec_t<N, T>& adj_x, T adj_ret) {
    T xs[N], g[N], h[N][N], v; int32 per[N]; KC_FOR(i, N) per[i] = 0; noise_unpack(x, xs);
    perlin_eval<N, T, 1>(state, xs, per, v, g, h);
    KC_FOR(i, N) adj_x.c[i] += g[i] * adj_ret;
}

template <int N, typename T> KC_FUNC T pnoise_n(uint32 state, const T (&xs)[N], const int32 (&per)[N]) {
    T g[N], h[N][N], v; perlin_eval<N, T, 0>(state, xs, per, v, g, h); return v;
}
template <int N, typename T> KC_FUNC void adj_pnoise_n(uint32 state, const T (&xs)[N], const int32 (&per)[N], T (&adj)[N], T adj_ret) {
    T g[N], h[N][N], v; perlin_eval<N, T, 1>(state, xs, per, v, g, h); KC_FOR(i, N) adj[i] = g[i] * adj_ret;
}
template <typename T> KC_FUNC T pnoise(uint32 state, T x, int32 px) { T xs[1] = {x}; const int32 per[1] = {px}; return pnoise_n<1, T>(state, xs, per); }
template <typename T> KC_FUNC void adj_pnoise(uint32 state, T x, int32 px, uint32&, T& adj_x, int32&, T adj_ret) {
    T xs[1] = {x}, a[1]; const int32 per[1] = {px}; adj_pnoise_n<1, T>(state, xs, per, a, adj_ret); adj_x += a[0];
}
template <typename T> KC_FUNC T pnoise(uint32 state, const vec_t<2, T>& x, int32 px, int32 py) {
    T xs[2]; noise_unpack(x, xs); const int32 per[2] = {px, py}; return pnoise_n<2, T>(state, xs, per);
}
template <typename T> KC_FUNC void adj_pnoise(uint32 state, const vec_t<2, T>& x, int32 px, int32 py, uint32&, vec_t<2, T>& adj_x, int32&, int32&, T adj_ret) {
    T xs[2], a[2]; noise_unpack(x, xs); const int32 per[2] = {px, py}; adj_pnoise_n<2, T>(state, xs, per, a, adj_ret);
    KC_FOR(i, 2) adj_x.c[i] += a[i];
}
template <typename T> KC_FUNC T pnoise(uint32 state, const vec_t<3, T>& x, int32 px, int32 py, int32 pz) {
    T xs[3]; noise_unpack(x, xs); const int32 per[3] = {px, py, pz}; return pnoise_n<3, T>(state, xs, per);
}
template <typename T> KC_FUNC void adj_pnoise(uint32 state, const vec_t<3, T>& x, int32 px, int32 py, int32 pz, uint32&, vec_t<3, T>& adj_x,
                                              int32&, int32&, int32&, T adj_ret) {
    T xs[3], a[3]; noise_unpack(x, xs); const int32 per[3] = {px, py, pz}; adj_pnoise_n<3, T>(state, xs, per, a, adj_ret);
    KC_FOR(i, 3) adj_x.c[i] += a[i];
}
template <typename T> KC_FUNC T pnoise(uint32 state, const vec_t<4, T>& x, int32 px, int32 py, int32 pz, int32 pt) {
    T xs[4]; noise_unpack(x, xs); const int32 per[4] = {px, py, pz, pt}; return pnoise_n<4, T>(state, xs, per);
}
template <typename T> KC_FUNC void adj_pnoise(uint32 state, const vec_t<4, T>& x, int32 px, int32 py, int32 pz, int32 pt, uint32&,
                                              vec_t<4, T>& adj_x, int32&, int32&, int32&, int32&, T adj_ret) {
    T xs[4], a[4]; noise_unpack(x, xs); const int32 per[4] = {px, py, pz, pt}; adj_pnoise_n<4, T>(state, xs, per, a, adj_ret);
    KC_FOR(i, 4) adj_x.c[i] += a[i];
}

// ---- curl noise ------------------------------------------------------------------------------------
// Octave i samples the potential(s) of field noise_mix(state + i) at lacunarity^i x with weight
// gain^i.  2-D: v = rot90(grad psi) = (d psi/dy, -d psi/dx); 3-D: v = curl(psi1, psi2, psi3).
// Both are divergence-free exactly (up to rounding).  c(y): the octave's curl at y, J its
// Jacobian dc/dy (from the potentials' Hessians).
template <typename T> KC_FUNC void curl_octave(uint32 state, const T (&y)[2], vec_t<2, T>& c, T (&J)[2][2]) {
    const int32 per[2] = {0, 0};
    T v, g[2], h[2][2];
    perlin_eval<2, T, 2>(state, y, per, v, g, h);
    c.c[0] = g[1]; c.c[1] = -g[0];
    KC_FOR(k, 2) { J[0][k] = h[1][k]; J[1][k] = -h[0][k]; }
}
template <typename T> KC_FUNC void curl_octave(uint32 state, const T (&y)[3], vec_t<3, T>& c, T (&J)[3][3]) {
    const int32 per[3] = {0, 0, 0};
    T v[3], g[3][3], h[3][3][3];
    KC_FOR(m, 3) perlin_eval<3, T, 2>(noise_mix(state ^ (0x51ed27u * (uint32)(m + 1))), y, per, v[m], g[m], h[m]);
    // curl: (d3/dy - d2/dz, d1/dz - d3/dx, d2/dx - d1/dy) with dm = gradient of potential m
    c.c[0] = g[2][1] - g[1][2]; c.c[1] = g[0][2] - g[2][0]; c.c[2] = g[1][0] - g[0][1];
    KC_FOR(k, 3) {
        J[0][k] = h[2][1][k] - h[1][2][k];
        J[1][k] = h[0][2][k] - h[2][0][k];
        J[2][k] = h[1][0][k] - h[0][1][k];
    }
}
template <int N, typename T> KC_FUNC vec_t<N, T> curlnoise(uint32 state, const vec_t<N, T>& x, int32 octaves, T lacunarity, T gain) {
    vec_t<N, T> r = {};
    T s = T(1), a = T(1);
    for (int32 i = 0; i < octaves; ++i) {
        T y[N], J[N][N]; vec_t<N, T> c;
        KC_FOR(k, N) y[k] = x.c[k] * s;
        curl_octave(noise_mix(state + (uint32)i), y, c, J);
        KC_FOR(k, N) r.c[k] += a * s * c.c[k];
        s *= lacunarity; a *= gain;
    }
    return r;
}
template <int N, typename T> KC_FUNC void adj_curlnoise(uint32 state, const vec_t<N, T>& x, int32 octaves, T lacunarity, T gain, uint32&,
                                                        vec_t<N, T>& adj_x, int32&, T& adj_lacunarity, T& adj_gain, const vec_t<N, T>& adj_ret) {
    // term i = a_i s_i c(s_i x), a_i = gain^i, s_i = lacunarity^i:
    //   d/dx = a s^2 J;  d/ds = a (c + s J x);  d/dgain = i gain^(i-1) s c;  d/dlacunarity = i lacunarity^(i-1) d/ds
    T s = T(1), a = T(1), ds = T(0), da = T(0);   // ds, da: derivatives of s_i, a_i
    for (int32 i = 0; i < octaves; ++i) {
        T y[N], J[N][N]; vec_t<N, T> c;
        KC_FOR(k, N) y[k] = x.c[k] * s;
        curl_octave(noise_mix(state + (uint32)i), y, c, J);
        KC_FOR(m, N) {
            T Jx = T(0);
            KC_FOR(k, N) { adj_x.c[k] += a * s * s * J[m][k] * adj_ret.c[m]; Jx += J[m][k] * x.c[k]; }
            adj_lacunarity += ds * a * (c.c[m] + s * Jx) * adj_ret.c[m];
            adj_gain += da * s * c.c[m] * adj_ret.c[m];
        }
        ds = ds * lacunarity + s; da = da * gain + a;   // d(lac^(i+1)) = lac d(lac^i) + lac^i
        s *= lacunarity; a *= gain;
    }
}
template <int N, typename T> KC_FUNC vec_t<N, T> curlnoise(uint32 state, const vec_t<N, T>& x) { return curlnoise(state, x, 1, T(2), T(0.5)); }
template <int N, typename T> KC_FUNC void adj_curlnoise(uint32 state, const vec_t<N, T>& x, uint32& adj_state, vec_t<N, T>& adj_x, const vec_t<N, T>& adj_ret) {
    int32 o = 0; T l = T(0), g = T(0);
    adj_curlnoise(state, x, 1, T(2), T(0.5), adj_state, adj_x, o, l, g, adj_ret);
}

}  // namespace kc
