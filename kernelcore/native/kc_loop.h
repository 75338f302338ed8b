// Checkpoints of a dynamic loop's carried state for the adjoint (see kernelcore/adjoint.py).
//
// The replay before the reverse sweep records the carried state at the start of every
// `stride`-th iteration into a fixed buffer of C slots (C = kc.config.loop_checkpoints);
// when the buffer fills, every other slot is dropped and the stride doubles. While the
// stride is 1 all C slots take records (a loop of at most C iterations is reversed without
// recomputation); past that the records keep to C/2 slots, so that the reverse sweep always
// has at least C/2 free slots for the segment it is working on.
//
// The reverse sweep (reverse_loop) takes the segments between records from the last to the
// first. Inside a segment it runs Griewank's binomial checkpointing schedule ("revolve") on
// the free slots: with s free slots a segment of L iterations is reversed with every
// iteration recomputed at most r times, where r is the least value with
// C(s + r + 1, r) >= L. Each split point is chosen optimally (fewest recomputed iterations
// for the segment). With C = 64 every iteration is recomputed at most 3 times up to 131,072
// iterations (64K: segments of 2048 iterations, >= 32 free slots), 4 times up to 1M, 5 up to
// 10M, 6 up to 100M: time O(N r) with r growing like log N over any practical range (strictly
// like N^(1/32) with the memory fixed), where restarting every iteration from the nearest
// record cost O(N^2 / C).
#pragma once

#include "kc_base.h"

namespace kc {

template <typename State, int C>
struct loop_tape {
    static_assert(C >= 2, "kc.config.loop_checkpoints must be at least 2");
    State slot[C];
    int32 n;        // slots recorded by the replay
    int64 stride;   // iterations between recorded slots
    int64 next;     // iteration whose entry state is recorded next
    int64 count;    // iterations the loop ran

    // at the loop's entry: a loop nested in another one is entered once per outer iteration
    KC_FUNC void reset() { n = 0; stride = 1; next = 0; count = 0; }

    // records allowed at the current stride: all C slots while every iteration is recorded,
    // C/2 after that (the reverse sweep keeps the other half for its own snapshots)
    KC_FUNC int32 capacity() const { return stride == 1 ? C : (C / 2 > 2 ? C / 2 : 2); }

    // called with the entry state of iteration `next`
    KC_FUNC void record(const State& s) {
        const int64 it = next;
        while (n >= capacity()) {   // slots hold iterations 0, stride, 2 stride, ...: keep the even ones
            int32 m = 0;
            for (int32 k = 0; k < n; k += 2) slot[m++] = slot[k];
            n = m;
            stride *= 2;
        }
        if (it == n * stride) slot[n++] = s;   // else this iteration fell off the coarser grid
        next = n * stride;
    }
};

// Most iterations a segment of a loop can have when `s` free slots (besides the one holding
// the segment's entry state) are available and every iteration may be recomputed at most
// `r` times: C(s + r + 1, r) (Griewank's beta(s + 1, r)); 0 for r < 0. Saturates.
KC_FUNC int64 revolve_span(int32 s, int32 r) {
    if (r < 0) return 0;
    int64 b = 1;
    for (int32 j = 1; j <= r; ++j) {
        if (b > ((int64)1 << 62) / (s + 1 + j)) return (int64)1 << 62;
        b = b * (s + 1 + j) / j;
    }
    return b;
}

// Iterations to advance before the next snapshot when `len` (>= 2) iterations remain to be
// reversed from the snapshot on top of the stack with `s` (>= 1) free slots: the split that
// recomputes fewest iterations in all (the left part is reversed later with s free slots
// and one recomputation less, the right part now with s - 1 free slots).
KC_FUNC int64 revolve_split(int64 len, int32 s) {
    int32 r = 1;
    while (revolve_span(s, r) < len) ++r;
    int64 m = len - revolve_span(s - 1, r);
    const int64 low = revolve_span(s, r - 2);
    if (m < low) m = low;
    if (m < 1) m = 1;
    return m < len ? m : len - 1;
}

// The reverse sweep of a loop recorded in `t`. load(state) sets the carried values,
// save() returns them, advance(it) runs iteration `it` forward (carried values updated),
// reverse(it) replays iteration `it` from the carried values and runs its adjoint.
// Iterations are reversed from the last to the first, each exactly once.
template <typename State, int C, typename Load, typename Save, typename Advance, typename Reverse>
KC_FUNC void reverse_loop(loop_tape<State, C>& t, Load load, Save save, Advance advance, Reverse reverse) {
    int64 pos[C];                       // iteration whose entry state each slot on the stack holds
    int64 hi = t.count;                 // iterations [hi, count) are reversed
    for (int32 k = t.n - 1; k >= 0; --k) {
        // segment [k * stride, hi): its entry state is in slot k, slots above k are free
        const int64 lo = (int64)k * t.stride;
        int32 d = k;
        pos[k] = lo;
        bool loaded = false;            // the carried values already equal slot d (just saved)
        while (hi > lo) {
            const int64 top = pos[d], len = hi - top;
            if (!loaded) load(t.slot[d]);
            loaded = false;
            if (len == 1) {
                reverse(top);
                hi = top;
                if (d > k) --d;
            } else if (d == C - 1) {     // no free slot: recompute from the snapshot
                for (int64 it = top; it < hi - 1; ++it) advance(it);
                reverse(hi - 1);
                --hi;
            } else {
                const int64 mid = top + revolve_split(len, C - 1 - d);
                for (int64 it = top; it < mid; ++it) advance(it);
                t.slot[++d] = save();
                pos[d] = mid;
                loaded = true;
            }
        }
    }
}

}  // namespace kc
