// Arrays, atomics, launch bounds, debug bounds checks and printing.
#pragma once
#include "kc_quat.h"
#include "kc_linalg.h"
#if !KC_CUDA
#include <type_traits>
#include <vector>
// The two OpenMP runtime calls used (declared here: clang with -fopenmp=libgomp finds no omp.h)
extern "C" int omp_get_thread_num(void);
extern "C" int omp_get_num_threads(void);
#endif

namespace kc {

// Layout mirrored by kernelcore/launch.py (ctypes): strides in bytes.
template <typename T> struct array_t {
    T* data;
    T* grad;  // null when the array carries no gradient
    int32 shape[4];
    int32 ndim;
    int32 serial;  // 1 when the launch runs on one CPU thread (launch.py): accumulation needs no atomics
    int64 strides[4];
    // 1 when `grad` is a caller's own adjoint buffer (kc.launch(adjoint=True, adj_inputs=...)):
    // a store's adjoint then reads it without consuming it (see adj_store)
    int32 keep_grad;
    int32 reserved;
    // 1-d element access for func_native snippets (arr[i]).
    KC_FUNC T& operator[](int64 i) const { return *(T*)((char*)data + i * strides[0]); }
};

struct launch_bounds_t {
    int32 shape[4];
    int32 ndim;
    int32 nthreads;
    int64 size;
    int32 private_mask;  // CPU: bit k set = accumulate into private copies of target k (accumulation.py)
    int32 _pad;
};

KC_FUNC int64 trip_count(int32 start, int32 stop, int32 step) {
    if (step > 0) return stop > start ? ((int64)stop - start + step - 1) / step : 0;
    if (step < 0) return start > stop ? ((int64)start - stop - step - 1) / (-(int64)step) : 0;
    return 0;
}

KC_FUNC int32 tid_dim(const launch_bounds_t& b, int64 t, int k) {
    // Row-major decomposition of the flat thread index.
    int64 rem = t;
    int32 idx[4] = {0, 0, 0, 0};
    for (int d = b.ndim - 1; d >= 0; --d) { idx[d] = (int32)(rem % b.shape[d]); rem /= b.shape[d]; }
    return idx[k];
}

// ---- element addressing -----------------------------------------------------------------
template <typename T> KC_FUNC T* elem(T* base, const array_t<T>& a, int64 off) { return (T*)((char*)base + off); }
template <typename T> KC_FUNC int64 offset(const array_t<T>& a, int32 i) { return i * a.strides[0]; }
template <typename T> KC_FUNC int64 offset(const array_t<T>& a, int32 i, int32 j) { return i * a.strides[0] + j * a.strides[1]; }
template <typename T> KC_FUNC int64 offset(const array_t<T>& a, int32 i, int32 j, int32 k) { return i * a.strides[0] + j * a.strides[1] + k * a.strides[2]; }
template <typename T> KC_FUNC int64 offset(const array_t<T>& a, int32 i, int32 j, int32 k, int32 l) { return i * a.strides[0] + j * a.strides[1] + k * a.strides[2] + l * a.strides[3]; }
// A negative index counts from the end of dimension d (a[-1] is the last element), as in
// Python and Warp. The frontend applies it only to indices not known to be >= 0; one still
// out of range after it is left as it is (for the debug bounds check to report).
template <typename T> KC_FUNC int32 wrap_array_index(const array_t<T>& a, int32 d, int32 i) {
    return (i < 0 && i >= -a.shape[d]) ? i + a.shape[d] : i;
}
template <typename T> KC_FUNC void adj_wrap_array_index(const array_t<T>&, int32, int32, array_t<T>&, int32&, int32&, int32) {}
// kc.indexedarray (kernelcore/indexedarray.py): dimension d of `data` is read through the int32
// array `idx`, or directly when `idx` is empty (data == null: that dimension is not indexed).
// Its length along d; and the data index of the view's index i along d (negative i counts from
// the end of the view, as for arrays; the data index it gives is wrapped and checked as any).
template <typename T> KC_FUNC int32 indexed_shape(const array_t<int32>& idx, const array_t<T>& data, int32 d) {
    return idx.data ? idx.shape[0] : data.shape[d];
}
template <typename T> KC_FUNC int32 indexed_index(const array_t<int32>& idx, const array_t<T>& data, int32 d, int32 i) {
    if (!idx.data) return i;
    if (i < 0 && i >= -idx.shape[0]) i += idx.shape[0];
    return idx[i];
}
template <typename T> KC_FUNC void adj_indexed_shape(const array_t<int32>&, const array_t<T>&, int32, array_t<int32>&, array_t<T>&, int32&, int32) {}
template <typename T> KC_FUNC void adj_indexed_index(const array_t<int32>&, const array_t<T>&, int32, int32, array_t<int32>&, array_t<T>&, int32&, int32&, int32) {}
// Index into a vector/matrix row of length n (the frontend emits it for non-constant indices).
KC_FUNC int32 wrap_index(int32 i, int32 n) { return i < 0 ? i + n : i; }
KC_FUNC void adj_wrap_index(int32, int32, int32&, int32&, int32) {}

// ---- debug-mode checks: the first failure is recorded for Python to raise ------------------
// Mirrored by launch.py (error_state_ctypes). kind: what failed (KC_ERR_*); thread: the
// flat launch index of the thread that failed.
enum { KC_ERR_BOUNDS = 0, KC_ERR_COMPONENT = 1, KC_ERR_DIV_ZERO = 2, KC_ERR_ASSERT = 3, KC_ERR_INDEXED = 4 };
struct error_state_t {
    int32 flag;
    int32 line;
    int32 ndim;
    int32 nidx;
    int32 index[4];
    int32 shape[4];
    int32 kind;
    int32 _pad;
    int64 thread;
};
#if KC_CUDA
__device__ error_state_t g_error;
// (the first pass of the grid-stride loop: exact unless the grid was capped by max_blocks)
KC_FUNC int64 debug_thread() { return (int64)blockIdx.x * blockDim.x + threadIdx.x; }
KC_FUNC void set_debug_thread(int64) {}
#else
inline error_state_t g_error;
inline int64& debug_thread_ref() { static thread_local int64 t = 0; return t; }
KC_FUNC int64 debug_thread() { return debug_thread_ref(); }
KC_FUNC void set_debug_thread(int64 t) { debug_thread_ref() = t; }
#endif
KC_FUNC bool claim_error() {
#if KC_CUDA
    return atomicCAS(&g_error.flag, 0, 1) == 0;
#else
    int32 expected = 0;
    return __atomic_compare_exchange_n(&g_error.flag, &expected, 1, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
#endif
}
template <typename T> KC_FUNC bool bounds_check(const array_t<T>& a, int32 line, int nidx, int32 i0, int32 i1 = 0, int32 i2 = 0, int32 i3 = 0) {
    int32 idx[4] = {i0, i1, i2, i3};
    bool ok = nidx <= a.ndim;
    for (int d = 0; d < nidx && ok; ++d) ok = idx[d] >= 0 && idx[d] < a.shape[d];
    if (ok) return true;
    if (claim_error()) {
        g_error.line = line; g_error.ndim = a.ndim; g_error.nidx = nidx; g_error.kind = KC_ERR_BOUNDS;
        g_error.thread = debug_thread();
        for (int d = 0; d < 4; ++d) { g_error.index[d] = idx[d]; g_error.shape[d] = a.shape[d]; }
    }
    return false;
}
// A component index of a vector/matrix/quaternion/transform: -n <= i < n.
KC_FUNC bool component_check(int32 i, int32 n, int32 line) {
    if (i >= -n && i < n) return true;
    if (claim_error()) {
        g_error.line = line; g_error.ndim = 1; g_error.nidx = 1; g_error.kind = KC_ERR_COMPONENT;
        g_error.thread = debug_thread(); g_error.index[0] = i; g_error.shape[0] = n;
    }
    return false;
}
// The divisor of an integer /, // or %: zero is an error in debug mode.
template <typename T> KC_FUNC bool divisor_check(T b, int32 line) {
    if (b != T(0)) return true;
    if (claim_error()) { g_error.line = line; g_error.kind = KC_ERR_DIV_ZERO; g_error.thread = debug_thread(); g_error.nidx = 0; g_error.ndim = 0; }
    return false;
}
// The index i of an indexedarray view along dimension d: -n <= i < n for the view's length n
// there (the data index it maps to is bounds-checked by the access that follows).
template <typename T> KC_FUNC bool indexed_check(const array_t<int32>& idx, const array_t<T>& data, int32 d, int32 i, int32 line) {
    if (!idx.data) return true;  // not indexed: the data access's own check covers i
    int32 n = idx.shape[0];
    if (i >= -n && i < n) return true;
    if (claim_error()) {
        g_error.line = line; g_error.kind = KC_ERR_INDEXED; g_error.thread = debug_thread();
        g_error.nidx = 1; g_error.ndim = 2; g_error.index[0] = i; g_error.shape[0] = n; g_error.shape[1] = d;
    }
    return false;
}
// An `assert` statement (debug mode only; release builds emit nothing): index[0] carries the
// statement's id, which Python maps back to its file, line, text and message (errors.py).
KC_FUNC bool assert_check(bool cond, int32 id, int32 line) {
    if (cond) return true;
    if (claim_error()) { g_error.line = line; g_error.kind = KC_ERR_ASSERT; g_error.thread = debug_thread(); g_error.nidx = 1; g_error.ndim = 0; g_error.index[0] = id; }
    return false;
}
KC_FUNC void adj_assert_check(bool, int32, int32, bool&, int32&, int32&) {}
// Release mode's run-time component index: wrapped as wrap_index, and one still out of range is
// recorded (as component_check) and clamped to 0, so the thread reads or writes its own value
// rather than the stack beyond it; the launcher raises the recorded error after the launch.
#if KC_CUDA
KC_FUNC void component_out_of_range(int32 i, int32 n, int32 line) { component_check(i, n, line); }
#define KC_UNLIKELY(c) (c)
#else
// out of line and cold: the check in the hot path stays one compare and a not-taken branch
__attribute__((noinline, cold)) inline void component_out_of_range(int32 i, int32 n, int32 line) { component_check(i, n, line); }
#define KC_UNLIKELY(c) __builtin_expect(!!(c), 0)
#endif
KC_FUNC int32 wrap_component(int32 i, int32 n, int32 line) {
    int32 w = i < 0 ? i + n : i;
    if (KC_UNLIKELY((uint32)w >= (uint32)n)) {
        component_out_of_range(i, n, line);
        return 0;
    }
    return w;
}
KC_FUNC void adj_wrap_component(int32, int32, int32, int32&, int32&, int32&, int32) {}
template <int N, typename T> KC_FUNC bool divisor_check(const vec_t<N, T>& b, int32 line) {
    KC_FOR(i, N) if (!divisor_check(b.c[i], line)) return false;
    return true;
}
template <int R, int C, typename T> KC_FUNC bool divisor_check(const mat_t<R, C, T>& b, int32 line) {
    KC_FOR(i, R) KC_FOR(j, C) if (!divisor_check(b.c[i][j], line)) return false;
    return true;
}

// ---- atomics ------------------------------------------------------------------------------
#if KC_CUDA
template <typename T> KC_FUNC T atomic_add_raw(T* p, T v) { return atomicAdd(p, v); }
KC_FUNC int64 atomic_add_raw(int64* p, int64 v) { return (int64)atomicAdd((unsigned long long*)p, (unsigned long long)v); }
KC_FUNC float64 atomic_add_raw(float64* p, float64 v) { return atomicAdd(p, v); }
template <typename T> KC_FUNC T atomic_min_raw(T* p, T v) { return atomicMin(p, v); }
template <typename T> KC_FUNC T atomic_max_raw(T* p, T v) { return atomicMax(p, v); }
KC_FUNC float32 atomic_min_raw(float32* p, float32 v) {
    int* ip = (int*)p; int old = *ip, assumed;
    do { assumed = old; if (__int_as_float(assumed) <= v) break; old = atomicCAS(ip, assumed, __float_as_int(v)); } while (assumed != old);
    return __int_as_float(old);
}
KC_FUNC float32 atomic_max_raw(float32* p, float32 v) {
    int* ip = (int*)p; int old = *ip, assumed;
    do { assumed = old; if (__int_as_float(assumed) >= v) break; old = atomicCAS(ip, assumed, __float_as_int(v)); } while (assumed != old);
    return __int_as_float(old);
}
KC_FUNC float64 atomic_min_raw(float64* p, float64 v) {
    unsigned long long* ip = (unsigned long long*)p; unsigned long long old = *ip, assumed;
    do { assumed = old; if (__longlong_as_double((long long)assumed) <= v) break; old = atomicCAS(ip, assumed, (unsigned long long)__double_as_longlong(v)); } while (assumed != old);
    return __longlong_as_double((long long)old);
}
KC_FUNC float64 atomic_max_raw(float64* p, float64 v) {
    unsigned long long* ip = (unsigned long long*)p; unsigned long long old = *ip, assumed;
    do { assumed = old; if (__longlong_as_double((long long)assumed) >= v) break; old = atomicCAS(ip, assumed, (unsigned long long)__double_as_longlong(v)); } while (assumed != old);
    return __longlong_as_double((long long)old);
}
template <typename T> KC_FUNC T atomic_cas_raw(T* p, T cmp, T v) { return atomicCAS(p, cmp, v); }
template <typename T> KC_FUNC T atomic_exch_raw(T* p, T v) { return atomicExch(p, v); }
// 64-bit and float compare-and-swap go through the unsigned bit patterns (as on the CPU).
KC_FUNC int64 atomic_cas_raw(int64* p, int64 cmp, int64 v) { return (int64)atomicCAS((unsigned long long*)p, (unsigned long long)cmp, (unsigned long long)v); }
KC_FUNC int64 atomic_exch_raw(int64* p, int64 v) { return (int64)atomicExch((unsigned long long*)p, (unsigned long long)v); }
KC_FUNC float32 atomic_cas_raw(float32* p, float32 cmp, float32 v) { return __int_as_float(atomicCAS((int*)p, __float_as_int(cmp), __float_as_int(v))); }
KC_FUNC float64 atomic_cas_raw(float64* p, float64 cmp, float64 v) {
    return __longlong_as_double((long long)atomicCAS((unsigned long long*)p, (unsigned long long)__double_as_longlong(cmp), (unsigned long long)__double_as_longlong(v)));
}
KC_FUNC float64 atomic_exch_raw(float64* p, float64 v) { return __longlong_as_double((long long)atomicExch((unsigned long long*)p, (unsigned long long)__double_as_longlong(v))); }
// 1- and 2-byte elements (bool, int8/16, uint8/16, half) have no CUDA atomics: update the
// aligned 32-bit word that holds them with compare-and-swap.
template <typename T, typename F> KC_FUNC T atomic_update_narrow(T* p, F f) {
    unsigned int* word = (unsigned int*)((unsigned long long)p & ~3ull);
    const unsigned int shift = (unsigned int)((unsigned long long)p & 3ull) * 8u;
    const unsigned int mask = (sizeof(T) == 1 ? 0xffu : 0xffffu) << shift;
    union { unsigned int u; T v; } cur, next;
    unsigned int old = *word, assumed;
    do {
        assumed = old;
        cur.u = (assumed & mask) >> shift;
        next.u = 0u;
        next.v = f(cur.v);
        old = atomicCAS(word, assumed, (assumed & ~mask) | ((next.u << shift) & mask));
    } while (assumed != old);
    return cur.v;
}
#define KC_NARROW_ATOMICS(T) \
    KC_FUNC T atomic_add_raw(T* p, T v) { return atomic_update_narrow(p, [v](T o) { return T(o + v); }); } \
    KC_FUNC T atomic_min_raw(T* p, T v) { return atomic_update_narrow(p, [v](T o) { return v < o ? v : o; }); } \
    KC_FUNC T atomic_max_raw(T* p, T v) { return atomic_update_narrow(p, [v](T o) { return v > o ? v : o; }); } \
    KC_FUNC T atomic_cas_raw(T* p, T cmp, T v) { return atomic_update_narrow(p, [cmp, v](T o) { return o == cmp ? v : o; }); } \
    KC_FUNC T atomic_exch_raw(T* p, T v) { return atomic_update_narrow(p, [v](T) { return v; }); }
KC_NARROW_ATOMICS(bool) KC_NARROW_ATOMICS(int8) KC_NARROW_ATOMICS(uint8) KC_NARROW_ATOMICS(int16)
KC_NARROW_ATOMICS(uint16) KC_NARROW_ATOMICS(half)
#undef KC_NARROW_ATOMICS
#else
// Generic compare-and-swap loops through GCC's __atomic builtins (any 1/2/4/8-byte type).
template <typename T, typename F> KC_FUNC T atomic_update(T* p, F f) {
    T old;
    __atomic_load(p, &old, __ATOMIC_RELAXED);
    T desired = f(old);
    while (!__atomic_compare_exchange(p, &old, &desired, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) desired = f(old);
    return old;
}
template <typename T> KC_FUNC T atomic_add_raw(T* p, T v) { return atomic_update(p, [v](T o) { return T(o + v); }); }
template <typename T> KC_FUNC T atomic_min_raw(T* p, T v) { return atomic_update(p, [v](T o) { return v < o ? v : o; }); }
template <typename T> KC_FUNC T atomic_max_raw(T* p, T v) { return atomic_update(p, [v](T o) { return v > o ? v : o; }); }
template <typename T> KC_FUNC T atomic_cas_raw(T* p, T cmp, T v) { __atomic_compare_exchange(p, &cmp, &v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); return cmp; }
template <typename T> KC_FUNC T atomic_exch_raw(T* p, T v) { T old; __atomic_exchange(p, &v, &old, __ATOMIC_SEQ_CST); return old; }
#endif
#if !KC_CUDA
KC_FUNC half atomic_add_raw(half* p, half v) {
    // 16-bit CAS through the containing aligned word is overkill here; a plain update is
    // used for half (documented: float16 atomics are not thread-safe on CPU).
    half o = *p; *p = o + v; return o;
}
#endif

template <int N, typename T> KC_FUNC vec_t<N, T> atomic_add_raw(vec_t<N, T>* p, const vec_t<N, T>& v) { vec_t<N, T> r; KC_FOR(i, N) r.c[i] = atomic_add_raw(&p->c[i], v.c[i]); return r; }
template <int N, typename T> KC_FUNC vec_t<N, T> atomic_min_raw(vec_t<N, T>* p, const vec_t<N, T>& v) { vec_t<N, T> r; KC_FOR(i, N) r.c[i] = atomic_min_raw(&p->c[i], v.c[i]); return r; }
template <int N, typename T> KC_FUNC vec_t<N, T> atomic_max_raw(vec_t<N, T>* p, const vec_t<N, T>& v) { vec_t<N, T> r; KC_FOR(i, N) r.c[i] = atomic_max_raw(&p->c[i], v.c[i]); return r; }
template <int R, int C, typename T> KC_FUNC mat_t<R, C, T> atomic_add_raw(mat_t<R, C, T>* p, const mat_t<R, C, T>& v) { mat_t<R, C, T> r; KC_FOR(i, R) KC_FOR(j, C) r.c[i][j] = atomic_add_raw(&p->c[i][j], v.c[i][j]); return r; }
template <typename T> KC_FUNC quat_t<T> atomic_add_raw(quat_t<T>* p, const quat_t<T>& v) { quat_t<T> r; KC_FOR(i, 4) r.c[i] = atomic_add_raw(&p->c[i], v.c[i]); return r; }
template <typename T> KC_FUNC transform_t<T> atomic_add_raw(transform_t<T>* p, const transform_t<T>& v) { transform_t<T> r; r.p = atomic_add_raw(&p->p, v.p); r.q = atomic_add_raw(&p->q, v.q); return r; }
template <typename T> KC_FUNC T neg_value(const T& v) { return neg(v); }

// Adjoint of a read: scatter into the gradient array.  bool and integer elements carry no
// gradient (and CUDA has no atomicAdd for bool or 8/16-bit integers), so they scatter nothing.
template <typename T> KC_FUNC void grad_scatter(T* p, const T& v) { atomic_add_raw(p, v); }
#define KC_NO_GRAD_SCATTER(T) KC_FUNC void grad_scatter(T*, const T&) {}
KC_NO_GRAD_SCATTER(bool) KC_NO_GRAD_SCATTER(int8) KC_NO_GRAD_SCATTER(uint8) KC_NO_GRAD_SCATTER(int16)
KC_NO_GRAD_SCATTER(uint16) KC_NO_GRAD_SCATTER(int32) KC_NO_GRAD_SCATTER(uint32) KC_NO_GRAD_SCATTER(int64)
KC_NO_GRAD_SCATTER(uint64)
#undef KC_NO_GRAD_SCATTER

// Accumulation into array elements (atomic_add/sub, adjoints of reads). A launch that runs on
// one CPU thread (array_t::serial) cannot race, and there a plain update is several times
// cheaper than a compare-and-swap loop (the CPU has no atomic float add).
#if KC_CUDA
template <typename T> KC_FUNC T accumulate(const array_t<T>&, T* p, const T& v) { return atomic_add_raw(p, v); }
template <typename T> KC_FUNC void grad_accumulate(const array_t<T>&, T* p, const T& v) { grad_scatter(p, v); }
#else
template <typename T> KC_FUNC T plain_add(T* p, const T& v) {
    if constexpr (std::is_arithmetic<T>::value) { T o = *p; *p = T(o + v); return o; }
    else return atomic_add_raw(p, v);  // quaternions, transforms, structs: the generic path
}
template <int N, typename T> KC_FUNC vec_t<N, T> plain_add(vec_t<N, T>* p, const vec_t<N, T>& v) { vec_t<N, T> o = *p; KC_FOR(i, N) p->c[i] = T(o.c[i] + v.c[i]); return o; }
template <int R, int C, typename T> KC_FUNC mat_t<R, C, T> plain_add(mat_t<R, C, T>* p, const mat_t<R, C, T>& v) { mat_t<R, C, T> o = *p; KC_FOR(i, R) KC_FOR(j, C) p->c[i][j] = T(o.c[i][j] + v.c[i][j]); return o; }
template <typename T> KC_FUNC T accumulate(const array_t<T>& a, T* p, const T& v) { return a.serial ? plain_add(p, v) : atomic_add_raw(p, v); }
template <typename T> KC_FUNC void grad_accumulate(const array_t<T>& a, T* p, const T& v) {
    if (!a.serial) { grad_scatter(p, v); return; }
    if constexpr (!std::is_integral<T>::value) plain_add(p, v);  // bool/integers carry no gradient (grad_scatter)
}
#endif

// ---- private accumulation copies (CPU launches on several threads, see accumulation.py) ----
#if !KC_CUDA
#define KC_MAX_THREADS 256
// Items per chunk of a dynamically scheduled launch: about 16 chunks per thread.
inline int64 launch_chunk(int64 n, int nthreads) {
    int64 c = n / ((int64)(nthreads > 0 ? nthreads : 1) * 16);
    return c > 0 ? c : 1;
}
// Calls f(t, outer, j) for the flat thread indices t in [begin, end) of a launch of b.ndim > 1
// dimensions, row by row: `outer` holds the indices of the leading dimensions, j the last one.
// The flat index is decomposed once per call and once per row, not with a 64-bit div/mod per
// thread and dimension (kc::tid_dim), which cost more than a small 2-D kernel's own work.
template <typename F> inline void for_each_index(const launch_bounds_t& b, int64 begin, int64 end, F&& f) {
    if (begin >= end) return;
    const int last = b.ndim - 1;
    const int32 width = b.shape[last];
    int32 outer[4] = {0, 0, 0, 0};
    int64 rem = begin / width;
    int32 j = (int32)(begin - rem * width);
    for (int d = last - 1; d >= 0; --d) { outer[d] = (int32)(rem % b.shape[d]); rem /= b.shape[d]; }
    int64 t = begin;
    while (t < end) {
        const int32 stop = (int32)(end - t < (int64)(width - j) ? j + (end - t) : width);
        for (int32 k = j; k < stop; ++k) f(t + (k - j), (const int32*)outer, k);
        t += stop - j;
        j = 0;
        for (int d = last - 1; d >= 0; --d) {  // carry into the leading dimensions
            if (++outer[d] < b.shape[d]) break;
            outer[d] = 0;
        }
    }
}
// libgomp's schedule(static) share of thread `tn` of `team` over n items: [begin, end)
inline void static_share(int64 n, int tn, int team, int64& begin, int64& end) {
    const int64 q = n / team, r = n % team;
    begin = tn * q + (tn < r ? tn : r);
    end = begin + q + (tn < r ? 1 : 0);
}
// Streaming entry points (emit_cpp.py) take arrays in C order only: then they pass copies whose
// last stride is the constant sizeof(T), so the compiler sees unit-stride accesses.
template <typename T> inline bool c_contiguous(const array_t<T>& a) {
    int64 step = sizeof(T);
    for (int d = a.ndim - 1; d >= 0; --d) {
        if (a.shape[d] > 1 && a.strides[d] != step) return false;
        step *= a.shape[d];
    }
    return true;
}
template <int NDIM, typename T> inline array_t<T> c_order(const array_t<T>& a) {
    array_t<T> c = a;
    c.strides[NDIM - 1] = sizeof(T);
    for (int d = NDIM - 2; d >= 0; --d) c.strides[d] = c.strides[d + 1] * c.shape[d + 1];
    return c;
}
// [first, last) bytes of an array's data (empty for a null or empty array)
template <typename T> inline void byte_range(const array_t<T>& a, uintptr_t& first, uintptr_t& last) {
    first = (uintptr_t)a.data;
    int64 n = a.data ? (int64)sizeof(T) : 0;
    for (int d = 0; d < a.ndim; ++d) n *= a.shape[d];
    last = first + (uintptr_t)n;
}
// No two of the n byte ranges overlap (arrays written by a streaming kernel must not alias its reads)
inline bool disjoint(const uintptr_t* first, const uintptr_t* last, int n) {
    for (int i = 0; i < n; ++i)
        for (int k = i + 1; k < n; ++k)
            if (first[i] < last[k] && first[k] < last[i]) return false;
    return true;
}
template <typename T> KC_FUNC int64 element_count(const array_t<T>& a) {
    int64 n = 1;
    for (int d = 0; d < a.ndim; ++d) n *= a.shape[d];
    return n;
}
// A zeroed scratch buffer of this thread for target `slot`; kept between launches (grow-only).
inline void* private_copy(int slot, size_t bytes) {
    static thread_local std::vector<std::vector<char>> buffers;
    if ((int)buffers.size() <= slot) buffers.resize(slot + 1);
    std::vector<char>& b = buffers[slot];
    if (b.size() < bytes) b.resize(bytes);
    memset(b.data(), 0, bytes);
    return b.data();
}
// Inside the parallel region, after the launch loop: copies[0] (the array) += copies[1..team).
// Each thread sums a contiguous share of the elements, in thread order.
template <typename S> inline void private_reduce(S** copies, int team, int64 count) {
    #pragma omp for schedule(static)
    for (int64 i = 0; i < count; ++i) {
        S s = copies[0][i];
        for (int t = 1; t < team; ++t) s += copies[t][i];
        copies[0][i] = s;
    }
}
#endif

// ---- array builtins, one set per index count ----------------------------------------------
// load/store/atomics follow the seeds' semantics: reads scatter their adjoint into
// array.grad, writes gather it from array.grad.  A store's adjoint also consumes (zeroes) the
// gradient of the element it overwrote: what is left there belongs to the overwritten value,
// which has no further influence, so in-place and ping-pong updates whose adjoints need no
// overwritten values come out exact and a second backward() adds the same gradient again.
// atomic_add/sub keep it: the old value still counts in the sum.
#define KC_IDX_PARAMS_1 int32 i
#define KC_IDX_PARAMS_2 int32 i, int32 j
#define KC_IDX_PARAMS_3 int32 i, int32 j, int32 k
#define KC_IDX_PARAMS_4 int32 i, int32 j, int32 k, int32 l
#define KC_IDX_ARGS_1 i
#define KC_IDX_ARGS_2 i, j
#define KC_IDX_ARGS_3 i, j, k
#define KC_IDX_ARGS_4 i, j, k, l
#define KC_ADJ_IDX_1 int32&
#define KC_ADJ_IDX_2 int32&, int32&
#define KC_ADJ_IDX_3 int32&, int32&, int32&
#define KC_ADJ_IDX_4 int32&, int32&, int32&, int32&

// Adjoint of atomic_min/max: the value gets the element's gradient where it won, component by
// component for vectors (a vector min mixes components of several values).
template <typename T> KC_FUNC void adj_extremum_winner(const T& final_value, const T& v, const T& grad, T& adj_v) {
    if (final_value == v) adj_v += grad;
}
template <int N, typename T> KC_FUNC void adj_extremum_winner(const vec_t<N, T>& final_value, const vec_t<N, T>& v, const vec_t<N, T>& grad,
                                                              vec_t<N, T>& adj_v) {
    KC_FOR(k, N) if (final_value.c[k] == v.c[k]) adj_v.c[k] += grad.c[k];
}
#define KC_ARRAY_OPS(n) \
template <typename T> KC_FUNC T* address(const array_t<T>& a, KC_IDX_PARAMS_##n) { return elem(a.data, a, offset(a, KC_IDX_ARGS_##n)); } \
template <typename T> KC_FUNC T load(const array_t<T>& a, KC_IDX_PARAMS_##n) { return *address(a, KC_IDX_ARGS_##n); } \
template <typename T> KC_FUNC void adj_load(const array_t<T>& a, KC_IDX_PARAMS_##n, array_t<T>&, KC_ADJ_IDX_##n, const T& adj_ret) { \
    if (a.grad) grad_accumulate(a, elem(a.grad, a, offset(a, KC_IDX_ARGS_##n)), adj_ret); } \
template <typename T> KC_FUNC void store(const array_t<T>& a, KC_IDX_PARAMS_##n, const T& v) { *address(a, KC_IDX_ARGS_##n) = v; } \
template <typename T> KC_FUNC void adj_store(const array_t<T>& a, KC_IDX_PARAMS_##n, const T& v, array_t<T>&, KC_ADJ_IDX_##n, T& adj_v) { \
    if (a.grad) { T* g = elem(a.grad, a, offset(a, KC_IDX_ARGS_##n)); adj_v += *g; if (!a.keep_grad) *g = T{}; } } \
template <typename T> KC_FUNC T atomic_add(const array_t<T>& a, KC_IDX_PARAMS_##n, const T& v) { return accumulate(a, address(a, KC_IDX_ARGS_##n), v); } \
template <typename T> KC_FUNC void adj_atomic_add(const array_t<T>& a, KC_IDX_PARAMS_##n, const T& v, array_t<T>&, KC_ADJ_IDX_##n, T& adj_v, const T&) { \
    if (a.grad) adj_v += *elem(a.grad, a, offset(a, KC_IDX_ARGS_##n)); } \
template <typename T> KC_FUNC T atomic_sub(const array_t<T>& a, KC_IDX_PARAMS_##n, const T& v) { return accumulate(a, address(a, KC_IDX_ARGS_##n), neg_value(v)); } \
template <typename T> KC_FUNC void adj_atomic_sub(const array_t<T>& a, KC_IDX_PARAMS_##n, const T& v, array_t<T>&, KC_ADJ_IDX_##n, T& adj_v, const T&) { \
    if (a.grad) adj_v -= *elem(a.grad, a, offset(a, KC_IDX_ARGS_##n)); } \
template <typename T> KC_FUNC T atomic_min(const array_t<T>& a, KC_IDX_PARAMS_##n, const T& v) { return atomic_min_raw(address(a, KC_IDX_ARGS_##n), v); } \
template <typename T> KC_FUNC void adj_atomic_min(const array_t<T>& a, KC_IDX_PARAMS_##n, const T& v, array_t<T>&, KC_ADJ_IDX_##n, T& adj_v, const T&) { \
    if (a.grad) adj_extremum_winner(*address(a, KC_IDX_ARGS_##n), v, *elem(a.grad, a, offset(a, KC_IDX_ARGS_##n)), adj_v); } \
template <typename T> KC_FUNC T atomic_max(const array_t<T>& a, KC_IDX_PARAMS_##n, const T& v) { return atomic_max_raw(address(a, KC_IDX_ARGS_##n), v); } \
template <typename T> KC_FUNC void adj_atomic_max(const array_t<T>& a, KC_IDX_PARAMS_##n, const T& v, array_t<T>&, KC_ADJ_IDX_##n, T& adj_v, const T&) { \
    if (a.grad) adj_extremum_winner(*address(a, KC_IDX_ARGS_##n), v, *elem(a.grad, a, offset(a, KC_IDX_ARGS_##n)), adj_v); } \
template <typename T> KC_FUNC T atomic_cas(const array_t<T>& a, KC_IDX_PARAMS_##n, const T& cmp, const T& v) { return atomic_cas_raw(address(a, KC_IDX_ARGS_##n), cmp, v); } \
template <typename T> KC_FUNC T atomic_exch(const array_t<T>& a, KC_IDX_PARAMS_##n, const T& v) { return atomic_exch_raw(address(a, KC_IDX_ARGS_##n), v); }

KC_ARRAY_OPS(1)
KC_ARRAY_OPS(2)
KC_ARRAY_OPS(3)
KC_ARRAY_OPS(4)


// a[i] on a multi-dimensional array is a view of one fewer dimension.
template <typename T> KC_FUNC array_t<T> view(const array_t<T>& a, int32 i) {
    array_t<T> r;
    r.data = elem(a.data, a, i * a.strides[0]);
    r.grad = a.grad ? elem(a.grad, a, i * a.strides[0]) : (T*)0;
    r.ndim = a.ndim - 1; r.serial = a.serial; r.keep_grad = a.keep_grad; r.reserved = 0;
    for (int d = 0; d < 3; ++d) { r.shape[d] = a.shape[d + 1]; r.strides[d] = a.strides[d + 1]; }
    r.shape[3] = 0; r.strides[3] = 0;
    return r;
}
// One field/component of every element (byte offset within the element) as an array of its
// own with the same shape and strides: stores and atomics into p[i].vel or a[i][1] (frontend).
template <typename F, typename T> KC_FUNC array_t<F> field_view(const array_t<T>& a, int32 offset) {
    array_t<F> r;
    r.data = (F*)((char*)a.data + offset);
    r.grad = a.grad ? (F*)((char*)a.grad + offset) : (F*)0;
    r.ndim = a.ndim; r.serial = a.serial; r.keep_grad = a.keep_grad; r.reserved = 0;
    for (int d = 0; d < 4; ++d) { r.shape[d] = a.shape[d]; r.strides[d] = a.strides[d]; }
    return r;
}
// The gradient of an array as an array of its own (adjoint arguments of func_native snippets).
template <typename T> KC_FUNC array_t<T> grad_array(const array_t<T>& a) { array_t<T> r = a; r.data = a.grad; r.grad = (T*)0; return r; }
template <typename T> KC_FUNC int32 array_len(const array_t<T>& a) { return a.shape[0]; }
template <typename T> KC_FUNC int32 array_shape(const array_t<T>& a, int32 d) { return a.shape[d]; }

// ---- printing -------------------------------------------------------------------------------
KC_FUNC void print_value(float32 v) { printf("%g", (double)v); }
KC_FUNC void print_value(float64 v) { printf("%g", v); }
KC_FUNC void print_value(half v) { printf("%g", (double)half_to_float(v)); }
KC_FUNC void print_value(int8 v) { printf("%d", (int)v); }
KC_FUNC void print_value(int16 v) { printf("%d", (int)v); }
KC_FUNC void print_value(int32 v) { printf("%d", v); }
KC_FUNC void print_value(int64 v) { printf("%lld", v); }
KC_FUNC void print_value(uint8 v) { printf("%u", (unsigned)v); }
KC_FUNC void print_value(uint16 v) { printf("%u", (unsigned)v); }
KC_FUNC void print_value(uint32 v) { printf("%u", v); }
KC_FUNC void print_value(uint64 v) { printf("%llu", v); }
KC_FUNC void print_value(bool v) { printf("%s", v ? "True" : "False"); }
KC_FUNC void print_value(const char* s) { printf("%s", s); }
template <int N, typename T> KC_FUNC void print_value(const vec_t<N, T>& v) {
    printf("["); KC_FOR(i, N) { if (i) printf(" "); print_value(v.c[i]); } printf("]");
}
template <int R, int C, typename T> KC_FUNC void print_value(const mat_t<R, C, T>& m) {
    printf("["); KC_FOR(i, R) { if (i) printf("\n "); printf("["); KC_FOR(j, C) { if (j) printf(" "); print_value(m.c[i][j]); } printf("]"); } printf("]");
}
template <typename T> KC_FUNC void print_value(const quat_t<T>& q) {
    printf("["); KC_FOR(i, 4) { if (i) printf(" "); print_value(q.c[i]); } printf("]");
}
template <typename T> KC_FUNC void print_value(const transform_t<T>& t) {
    printf("("); print_value(t.p); printf(", "); print_value(t.q); printf(")");
}
template <typename T> KC_FUNC void print_value(const array_t<T>& a) { printf("array(ndim=%d, shape[0]=%d)", a.ndim, a.shape[0]); }

}  // namespace kc
