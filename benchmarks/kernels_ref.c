/* Plain C/OpenMP references for benchmarks/bench_kernels.py: the ceiling a kernel compiler can
 * reach on this machine (static schedule, restrict pointers, one vectorisable loop each).
 * Compiled at run time with kernelcore's own g++ flags (toolchain.COMMON_FLAGS). */
#include <stdint.h>

void ref_saxpy(int64_t n, const float* restrict x, float* restrict y, float a, int nthreads) {
#pragma omp parallel for simd schedule(static) num_threads(nthreads)
    for (int64_t i = 0; i < n; ++i) y[i] = a * x[i] + y[i];
}

/* x, v: n vec3 (3 floats each, interleaved); v += g dt, x += v dt */
void ref_integrate(int64_t n, float* restrict x, float* restrict v, float gx, float gy, float gz, float dt, int nthreads) {
#pragma omp parallel for simd schedule(static) num_threads(nthreads)
    for (int64_t i = 0; i < n; ++i) {
        float vx = v[3 * i] + gx * dt, vy = v[3 * i + 1] + gy * dt, vz = v[3 * i + 2] + gz * dt;
        v[3 * i] = vx; v[3 * i + 1] = vy; v[3 * i + 2] = vz;
        x[3 * i] += vx * dt; x[3 * i + 1] += vy * dt; x[3 * i + 2] += vz * dt;
    }
}

/* 5-point stencil on the interior of an ny x nx grid (row-major) */
void ref_stencil(int ny, int nx, const float* restrict u, float* restrict out, int nthreads) {
#pragma omp parallel for schedule(static) num_threads(nthreads)
    for (int i = 1; i < ny - 1; ++i) {
#pragma omp simd
        for (int j = 1; j < nx - 1; ++j) {
            const float* r = u + (int64_t)i * nx;
            out[(int64_t)i * nx + j] = 0.25f * (r[j - 1] + r[j + 1] + r[j - nx] + r[j + nx]) - r[j];
        }
    }
}
