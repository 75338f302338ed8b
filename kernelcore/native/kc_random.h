// Counter-based random numbers: a state is a uint32 advanced by a PCG-style hash, so each
// thread seeds its own stream with rand_init(seed, offset). Not differentiable.
#pragma once
#include "kc_array.h"

namespace kc {

KC_FUNC uint32 rand_pcg(uint32 state) {
    uint32 b = state * 747796405u + 2891336453u;
    uint32 c = ((b >> ((b >> 28u) + 4u)) ^ b) * 277803737u;
    return (c >> 22u) ^ c;
}
KC_FUNC uint32 rand_init(int32 seed) { return rand_pcg((uint32)seed); }
KC_FUNC uint32 rand_init(int32 seed, int32 offset) { return rand_pcg((uint32)seed + rand_pcg((uint32)offset)); }
KC_FUNC int32 randi(uint32& state) { state = rand_pcg(state); return (int32)state; }
KC_FUNC int32 randi(uint32& state, int32 lo, int32 hi) { state = rand_pcg(state); return lo + (int32)(state % (uint32)(hi - lo)); }
KC_FUNC float32 randf(uint32& state) { state = rand_pcg(state); return (float32)(state >> 8) * (1.0f / 16777216.0f); }
template <typename T> KC_FUNC T randf(uint32& state, T lo, T hi) { return lo + (hi - lo) * T(randf(state)); }
KC_FUNC float32 randn(uint32& state) {
    // Box-Muller; 1 - u keeps the log argument in (0, 1].
    float32 u1 = 1.0f - randf(state), u2 = randf(state);
    return sqrt(-2.0f * log(u1)) * cos(6.283185307179586f * u2);
}
KC_FUNC vec_t<2, float32> sample_unit_square(uint32& state) { float32 x = randf(state) - 0.5f; float32 y = randf(state) - 0.5f; return vec_t<2, float32>{{x, y}}; }
KC_FUNC vec_t<3, float32> sample_unit_cube(uint32& state) { float32 x = randf(state) - 0.5f; float32 y = randf(state) - 0.5f; float32 z = randf(state) - 0.5f; return vec_t<3, float32>{{x, y, z}}; }
KC_FUNC vec_t<2, float32> sample_unit_disk(uint32& state) {
    float32 r = sqrt(randf(state)), t = 6.283185307179586f * randf(state); return vec_t<2, float32>{{r * cos(t), r * sin(t)}};
}
KC_FUNC vec_t<2, float32> sample_unit_ring(uint32& state) {
    float32 t = 6.283185307179586f * randf(state); return vec_t<2, float32>{{cos(t), sin(t)}};
}
KC_FUNC vec_t<3, float32> sample_unit_sphere_surface(uint32& state) {
    float32 z = 1.0f - 2.0f * randf(state), t = 6.283185307179586f * randf(state), r = sqrt(max(0.0f, 1.0f - z * z));
    return vec_t<3, float32>{{r * cos(t), r * sin(t), z}};
}
KC_FUNC vec_t<3, float32> sample_unit_sphere(uint32& state) {
    vec_t<3, float32> d = sample_unit_sphere_surface(state); float32 r = cbrt(randf(state)); return mul(d, r);
}
KC_FUNC vec_t<3, float32> sample_unit_hemisphere_surface(uint32& state) {
    vec_t<3, float32> d = sample_unit_sphere_surface(state); if (d.c[2] < 0.0f) d.c[2] = -d.c[2]; return d;
}
KC_FUNC vec_t<3, float32> sample_unit_hemisphere(uint32& state) {
    vec_t<3, float32> d = sample_unit_sphere(state); if (d.c[2] < 0.0f) d.c[2] = -d.c[2]; return d;
}
KC_FUNC vec_t<2, float32> sample_triangle(uint32& state) {
    // uniform barycentric (u, v) over a triangle
    float32 a = sqrt(randf(state)), b = randf(state); return vec_t<2, float32>{{1.0f - a, a * (1.0f - b)}};
}
// Poisson sampling by inversion (small lambda) — used by particle emitters.
KC_FUNC uint32 poisson(uint32& state, float32 lam) {
    float32 l = exp(-lam), p = 1.0f; uint32 k = 0;
    do { ++k; p *= randf(state); } while (p > l && k < 1000u);
    return k - 1;
}

}  // namespace kc

#include "kc_noise.h"
