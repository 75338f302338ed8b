// geometry: bounding volume hierarchy over axis-aligned boxes.
//
// Nodes are 32 bytes: bounds plus two ints. An internal node has children a and b (always
// allocated as a pair after their parent, so a reverse sweep refits bottom-up); a leaf has
// b < 0 and covers items[a .. a - b). The build is a binned SAH split (16 bins per axis),
// falling back to an object-median split past depth 32 so no path is deeper than 63.
#pragma once
#include "geo_common.h"

namespace geo {

struct bvh_node_t {
    f32 lo[3];
    i32 a;
    f32 hi[3];
    i32 b;
};

// Layout mirrored by geometry/bvh.py (ctypes).
struct bvh_t {
    i32 num_items, num_nodes, leaf_size, max_depth;
    i32 num_threads, _pad;            // host threads the build may use
    kc::int64 lower_stride, upper_stride;
    const char* lowers;      // item lower bounds (vec3, strided)
    const char* uppers;      // item upper bounds
    bvh_node_t* nodes;       // capacity 2 * num_items
    i32* items;              // item index per leaf slot
    f32* centers;            // 13 * num_items build scratch (item boxes in build order, and a copy)
    i32* stack;              // build scratch: two stacks of 96 entries (4 ints + 6 floats each)
};

KC_FUNC bool bvh_is_leaf(const bvh_node_t& n) { return n.b < 0; }
KC_FUNC f32 half_area(const f32* lo, const f32* hi) {
    f32 dx = hi[0] - lo[0], dy = hi[1] - lo[1], dz = hi[2] - lo[2];
    if (!(dx >= 0.0f) || !(dy >= 0.0f) || !(dz >= 0.0f)) return 0.0f;
    return dx * dy + dy * dz + dz * dx;
}

#if !KC_CUDA
// Build scratch: boxes holds (lo, hi) of each item, permuted together with items so that the
// passes over a node's range read memory in order.
KC_FUNC void bvh_range_bounds(const f32* boxes, i32 s, i32 e, f32* lo, f32* hi, f32* clo, f32* chi) {
    for (int k = 0; k < 3; ++k) { lo[k] = clo[k] = GEO_INF; hi[k] = chi[k] = -GEO_INF; }
    for (i32 i = s; i < e; ++i) {
        const f32* bx = boxes + 6 * i;
        for (int k = 0; k < 3; ++k) {
            f32 c = 0.5f * (bx[k] + bx[3 + k]);
            lo[k] = kc::min(lo[k], bx[k]); hi[k] = kc::max(hi[k], bx[3 + k]);
            clo[k] = kc::min(clo[k], c); chi[k] = kc::max(chi[k], c);
        }
    }
}

KC_FUNC void bvh_swap(bvh_t* t, f32* boxes, i32 i, i32 j) {
    i32 tmp = t->items[i]; t->items[i] = t->items[j]; t->items[j] = tmp;
    for (int k = 0; k < 6; ++k) { f32 x = boxes[6 * i + k]; boxes[6 * i + k] = boxes[6 * j + k]; boxes[6 * j + k] = x; }
}

// Partition [s, e) around the median centroid along axis (quickselect); returns mid.
KC_FUNC i32 bvh_median_split(bvh_t* t, f32* boxes, i32 s, i32 e, int axis) {
    i32 mid = (s + e) / 2, lo = s, hi = e - 1;
    while (lo < hi) {
        i32 m = (lo + hi) / 2;
        f32 pivot = boxes[6 * m + axis] + boxes[6 * m + 3 + axis];
        i32 i = lo, j = hi;
        while (i <= j) {
            while (boxes[6 * i + axis] + boxes[6 * i + 3 + axis] < pivot) ++i;
            while (boxes[6 * j + axis] + boxes[6 * j + 3 + axis] > pivot) --j;
            if (i <= j) { bvh_swap(t, boxes, i, j); ++i; --j; }
        }
        if (mid <= j) hi = j;
        else if (mid >= i) lo = i;
        else break;
    }
    return mid;
}

#define GEO_BINS 16
// Binned SAH along the axis of largest centroid extent (a third of the work of all three axes,
// for a tree of nearly the same quality); partitions [s, e) and returns the split point (or -1
// when no split separates the centroids). A range of fewer than GEO_BINS items gets one bin per
// item: the bin sweep, not the items, is the cost of the many small nodes near the leaves
// (one-thread mesh build 9 -> 6 ms for 19,800 faces; a median split there instead cost 20% in
// query time).
KC_FUNC i32 bvh_sah_split(bvh_t* t, f32* boxes, i32 s, i32 e, const f32* clo, const f32* chi, f32* out) {
    // out (24 floats): left lo, hi, centroid lo, hi; then the same for the right side.
    int a = 0;
    for (int k = 1; k < 3; ++k) if (chi[k] - clo[k] > chi[a] - clo[a]) a = k;
    const f32 ext = chi[a] - clo[a];
    if (!(ext > 0.0f)) return -1;
    const int nb = e - s < GEO_BINS ? (e - s < 2 ? 2 : e - s) : GEO_BINS;
    const f32 base = clo[a], sc = (f32)nb * 0.99999f / ext;
    // two interleaved sets of bins: neighbouring items often share a bin, and one set would
    // chain every update through the previous one
    i32 c2[2][GEO_BINS];
    f32 lo2[2][GEO_BINS][3], hi2[2][GEO_BINS][3];
    for (int h = 0; h < 2; ++h)
        for (int b = 0; b < nb; ++b) {
            c2[h][b] = 0;
            for (int k = 0; k < 3; ++k) { lo2[h][b][k] = GEO_INF; hi2[h][b][k] = -GEO_INF; }
        }
    for (i32 i = s; i < e; ++i) {
        const f32* bx = boxes + 6 * i;
        const int h = i & 1;
        int b = (int)((0.5f * (bx[a] + bx[3 + a]) - base) * sc);
        b = b < 0 ? 0 : (b >= nb ? nb - 1 : b);
        c2[h][b]++;
        for (int k = 0; k < 3; ++k) {
            lo2[h][b][k] = kc::min(lo2[h][b][k], bx[k]);
            hi2[h][b][k] = kc::max(hi2[h][b][k], bx[3 + k]);
        }
    }
    i32 cnt[GEO_BINS];
    f32 blo[GEO_BINS][3], bhi[GEO_BINS][3];
    for (int b = 0; b < nb; ++b) {
        cnt[b] = c2[0][b] + c2[1][b];
        for (int k = 0; k < 3; ++k) { blo[b][k] = kc::min(lo2[0][b][k], lo2[1][b][k]); bhi[b][k] = kc::max(hi2[0][b][k], hi2[1][b][k]); }
    }
    int best_bin = -1;
    f32 best_cost = GEO_INF;
    f32 right_area[GEO_BINS];
    i32 right_cnt[GEO_BINS];
    f32 rlo[3] = {GEO_INF, GEO_INF, GEO_INF}, rhi[3] = {-GEO_INF, -GEO_INF, -GEO_INF};
    i32 rc = 0;
    for (int b = nb - 1; b > 0; --b) {
        for (int k = 0; k < 3; ++k) { rlo[k] = kc::min(rlo[k], blo[b][k]); rhi[k] = kc::max(rhi[k], bhi[b][k]); }
        rc += cnt[b];
        right_area[b] = half_area(rlo, rhi);
        right_cnt[b] = rc;
    }
    f32 llo[3] = {GEO_INF, GEO_INF, GEO_INF}, lhi[3] = {-GEO_INF, -GEO_INF, -GEO_INF};
    i32 lc = 0;
    for (int b = 0; b < nb - 1; ++b) {
        for (int k = 0; k < 3; ++k) { llo[k] = kc::min(llo[k], blo[b][k]); lhi[k] = kc::max(lhi[k], bhi[b][k]); }
        lc += cnt[b];
        if (lc == 0 || right_cnt[b + 1] == 0) continue;
        f32 cost = half_area(llo, lhi) * lc + right_area[b + 1] * right_cnt[b + 1];
        if (cost < best_cost) { best_cost = cost; best_bin = b; }
    }
    if (best_bin < 0) return -1;
    for (int k = 0; k < 24; ++k) out[k] = ((k / 3) & 1) ? -GEO_INF : GEO_INF;
    i32 nl = 0;
    for (int b = 0; b < nb; ++b) {
        f32* o = out + (b <= best_bin ? 0 : 12);
        for (int k = 0; k < 3; ++k) { o[k] = kc::min(o[k], blo[b][k]); o[3 + k] = kc::max(o[3 + k], bhi[b][k]); }
        if (b <= best_bin) nl += cnt[b];
    }
    // stable out-of-place partition through the scratch half of the buffer (no unpredictable
    // branches: each item's destination is picked arithmetically), then copied back
    f32* tmp_boxes = boxes + 6 * (kc::int64)t->num_items;
    i32* tmp_items = (i32*)(tmp_boxes + 6 * (kc::int64)t->num_items);
    f32 lc0[3] = {GEO_INF, GEO_INF, GEO_INF}, lc1[3] = {-GEO_INF, -GEO_INF, -GEO_INF};
    f32 rc0[3] = {GEO_INF, GEO_INF, GEO_INF}, rc1[3] = {-GEO_INF, -GEO_INF, -GEO_INF};
    i32 li = s, ri = s + nl;
    for (i32 i = s; i < e; ++i) {
        const f32* bx = boxes + 6 * i;
        int b = (int)((0.5f * (bx[a] + bx[3 + a]) - base) * sc);
        b = b < 0 ? 0 : (b >= nb ? nb - 1 : b);
        const bool right = b > best_bin;
        const i32 dst = right ? ri : li;
        ri += right; li += !right;
        tmp_items[dst] = t->items[i];
        for (int k = 0; k < 6; ++k) tmp_boxes[6 * dst + k] = bx[k];
        for (int k = 0; k < 3; ++k) {
            f32 c = 0.5f * (bx[k] + bx[3 + k]);
            f32 cl = right ? GEO_INF : c, cr = right ? c : GEO_INF;
            lc0[k] = kc::min(lc0[k], cl); rc0[k] = kc::min(rc0[k], cr);
            cl = right ? -GEO_INF : c; cr = right ? c : -GEO_INF;
            lc1[k] = kc::max(lc1[k], cl); rc1[k] = kc::max(rc1[k], cr);
        }
    }
    for (i32 i = s; i < e; ++i) {
        t->items[i] = tmp_items[i];
        for (int k = 0; k < 6; ++k) boxes[6 * i + k] = tmp_boxes[6 * i + k];
    }
    for (int k = 0; k < 3; ++k) { out[6 + k] = lc0[k]; out[9 + k] = lc1[k]; out[18 + k] = rc0[k]; out[21 + k] = rc1[k]; }
    return s + nl;
}

// Splits node `node` (bounds already set) holding [s, e); writes the children's ids to
// kids (or -1 for a leaf) and their ranges / centroid bounds.
KC_FUNC bool bvh_split_node(bvh_t* t, f32* boxes, i32 node, i32 s, i32 e, i32 depth, const f32* clo, const f32* chi,
                            i32& left, i32& mid, f32* split) {
    bvh_node_t& nd = t->nodes[node];
    i32 leaf = t->leaf_size < 1 ? 1 : t->leaf_size;
    if (e - s <= leaf) { nd.a = s; nd.b = -(e - s); return false; }
    mid = -1;
    if (depth < 32) mid = bvh_sah_split(t, boxes, s, e, clo, chi, split);
    if (mid <= s || mid >= e) {
        int axis = 0;
        for (int k = 1; k < 3; ++k) if (chi[k] - clo[k] > chi[axis] - clo[axis]) axis = k;
        mid = bvh_median_split(t, boxes, s, e, axis);
        bvh_range_bounds(boxes, s, mid, split, split + 3, split + 6, split + 9);
        bvh_range_bounds(boxes, mid, e, split + 12, split + 15, split + 18, split + 21);
    }
    left = __atomic_fetch_add(&t->num_nodes, 2, __ATOMIC_RELAXED);
    nd.a = left; nd.b = left + 1;
    for (int k = 0; k < 3; ++k) {
        t->nodes[left].lo[k] = split[k]; t->nodes[left].hi[k] = split[3 + k];
        t->nodes[left + 1].lo[k] = split[12 + k]; t->nodes[left + 1].hi[k] = split[15 + k];
    }
    return true;
}

// Builds the subtree under `root` (bounds set) over [s, e) with its own stack (4 ints and 6
// floats per entry, 96 entries); returns the deepest level reached.
KC_FUNC i32 bvh_build_subtree(bvh_t* t, f32* boxes, i32* st, i32 root, i32 s0, i32 e0, i32 depth0, const f32* c0) {
    f32* sc = (f32*)(st + 4 * 96);
    int top = 1;
    st[0] = root; st[1] = s0; st[2] = e0; st[3] = depth0;
    for (int k = 0; k < 6; ++k) sc[k] = c0[k];
    i32 max_depth = depth0;
    while (top > 0) {
        --top;
        i32 node = st[4 * top], s = st[4 * top + 1], e = st[4 * top + 2], depth = st[4 * top + 3];
        f32 clo[3] = {sc[6 * top], sc[6 * top + 1], sc[6 * top + 2]}, chi[3] = {sc[6 * top + 3], sc[6 * top + 4], sc[6 * top + 5]};
        if (depth > max_depth) max_depth = depth;
        i32 left, mid;
        f32 split[24];
        if (!bvh_split_node(t, boxes, node, s, e, depth, clo, chi, left, mid, split)) continue;
        // right first so the left child is processed next (depth-first keeps the stack short)
        st[4 * top] = left + 1; st[4 * top + 1] = mid; st[4 * top + 2] = e; st[4 * top + 3] = depth + 1;
        for (int k = 0; k < 6; ++k) sc[6 * top + k] = split[18 + k];
        ++top;
        st[4 * top] = left; st[4 * top + 1] = s; st[4 * top + 2] = mid; st[4 * top + 3] = depth + 1;
        for (int k = 0; k < 6; ++k) sc[6 * top + k] = split[6 + k];
        ++top;
    }
    return max_depth;
}

KC_FUNC void bvh_build(kc::uint64 id) {
    bvh_t* t = (bvh_t*)id;
    const i32 n = t->num_items;
    f32* boxes = t->centers;   // 13 * num_items scratch
    for (i32 i = 0; i < n; ++i) {
        t->items[i] = i;
        const vec3& l = v_at(t->lowers, t->lower_stride, i);
        const vec3& u = v_at(t->uppers, t->upper_stride, i);
        for (int k = 0; k < 3; ++k) { boxes[6 * i + k] = l.c[k]; boxes[6 * i + 3 + k] = u.c[k]; }
    }
    f32 c0[6];
    bvh_range_bounds(boxes, 0, n, t->nodes[0].lo, t->nodes[0].hi, c0, c0 + 3);
    t->num_nodes = 1;
    i32 left = -1, mid = 0;
    f32 split[24];
    if (t->num_threads < 2 || n < 4096 || !bvh_split_node(t, boxes, 0, 0, n, 0, c0, c0 + 3, left, mid, split)) {
        t->num_nodes = 1;
        t->max_depth = bvh_build_subtree(t, boxes, t->stack, 0, 0, n, 0, c0);
        return;
    }
    // the two halves of the root build side by side (node ids are taken atomically)
    i32 d[2] = {1, 1};
    #pragma omp parallel for num_threads(2) schedule(static, 1)
    for (int h = 0; h < 2; ++h) {
        if (h == 0) d[0] = bvh_build_subtree(t, boxes, t->stack, left, 0, mid, 1, split + 6);
        else d[1] = bvh_build_subtree(t, boxes, t->stack + 10 * 96, left + 1, mid, n, 1, split + 18);
    }
    t->max_depth = d[0] > d[1] ? d[0] : d[1];
}

KC_FUNC void bvh_node_bounds(bvh_t* t, bvh_node_t& n, i32 s, i32 e) {
    for (int k = 0; k < 3; ++k) { n.lo[k] = GEO_INF; n.hi[k] = -GEO_INF; }
    for (i32 i = s; i < e; ++i) {
        const vec3& l = v_at(t->lowers, t->lower_stride, t->items[i]);
        const vec3& u = v_at(t->uppers, t->upper_stride, t->items[i]);
        for (int k = 0; k < 3; ++k) {
            if (l.c[k] < n.lo[k]) n.lo[k] = l.c[k];
            if (u.c[k] > n.hi[k]) n.hi[k] = u.c[k];
        }
    }
}

// Recompute node bounds from the item bounds (children always follow their parent).
KC_FUNC void bvh_refit(kc::uint64 id) {
    bvh_t* t = (bvh_t*)id;
    for (i32 i = t->num_nodes - 1; i >= 0; --i) {
        bvh_node_t& nd = t->nodes[i];
        if (bvh_is_leaf(nd)) {
            bvh_node_bounds(t, nd, nd.a, nd.a - nd.b);
        } else {
            const bvh_node_t& l = t->nodes[nd.a];
            const bvh_node_t& r = t->nodes[nd.b];
            for (int k = 0; k < 3; ++k) { nd.lo[k] = kc::min(l.lo[k], r.lo[k]); nd.hi[k] = kc::max(l.hi[k], r.hi[k]); }
        }
    }
}
#else
KC_FUNC void bvh_build(kc::uint64) {}
KC_FUNC void bvh_refit(kc::uint64) {}
#endif
KC_FUNC void adj_bvh_build(kc::uint64, kc::uint64&) {}
KC_FUNC void adj_bvh_refit(kc::uint64, kc::uint64&) {}

// ---- iterator queries: every item whose box overlaps an AABB, or is crossed by a ray ------
struct bvh_query_t {
    const bvh_t* bvh;
    i32 kind;                // 0: aabb, 1: ray
    i32 top;                 // stack size
    i32 leaf_pos, leaf_end;  // items of the leaf being visited
    vec3 a, b;               // aabb: lower, upper; ray: origin, reciprocal direction
    i32 stack[GEO_STACK];
};

KC_FUNC bvh_query_t bvh_query_make(kc::uint64 id, i32 kind, const vec3& a, const vec3& b, i32 root) {
    bvh_query_t q;
    q.bvh = (const bvh_t*)id;
    q.kind = kind; q.a = a; q.b = b;
    q.leaf_pos = q.leaf_end = 0;
    q.top = 0;
    if (q.bvh && q.bvh->num_items > 0) {
        i32 r = root < 0 ? 0 : root;
        if (r < q.bvh->num_nodes) { q.stack[0] = r; q.top = 1; }
    }
    return q;
}
KC_FUNC bvh_query_t bvh_query_aabb(kc::uint64 id, const vec3& lo, const vec3& hi, i32 root) { return bvh_query_make(id, 0, lo, hi, root); }
KC_FUNC bvh_query_t bvh_query_aabb(kc::uint64 id, const vec3& lo, const vec3& hi) { return bvh_query_make(id, 0, lo, hi, -1); }
KC_FUNC bvh_query_t bvh_query_ray(kc::uint64 id, const vec3& o, const vec3& d, i32 root) { return bvh_query_make(id, 1, o, safe_inverse(d), root); }
KC_FUNC bvh_query_t bvh_query_ray(kc::uint64 id, const vec3& o, const vec3& d) { return bvh_query_make(id, 1, o, safe_inverse(d), -1); }
KC_FUNC void adj_bvh_query_aabb(kc::uint64, const vec3&, const vec3&, i32, kc::uint64&, vec3&, vec3&, i32&, const bvh_query_t&) {}
KC_FUNC void adj_bvh_query_aabb(kc::uint64, const vec3&, const vec3&, kc::uint64&, vec3&, vec3&, const bvh_query_t&) {}
KC_FUNC void adj_bvh_query_ray(kc::uint64, const vec3&, const vec3&, i32, kc::uint64&, vec3&, vec3&, i32&, const bvh_query_t&) {}
KC_FUNC void adj_bvh_query_ray(kc::uint64, const vec3&, const vec3&, kc::uint64&, vec3&, vec3&, const bvh_query_t&) {}

KC_FUNC bool bvh_query_hits(const bvh_query_t& q, const f32* lo, const f32* hi, f32 max_dist) {
    if (q.kind == 0) return box_overlap(lo, hi, q.a, q.b);
    return box_ray(lo, hi, q.a, q.b, max_dist) < GEO_INF;
}

KC_FUNC bool bvh_query_next(bvh_query_t& q, i32& index, f32 max_dist) {
    const bvh_t* t = q.bvh;
    for (;;) {
        while (q.leaf_pos < q.leaf_end) {
            i32 item = t->items[q.leaf_pos++];
            const vec3& l = v_at(t->lowers, t->lower_stride, item);
            const vec3& u = v_at(t->uppers, t->upper_stride, item);
            if (t->leaf_size == 1 || bvh_query_hits(q, l.c, u.c, max_dist)) { index = item; return true; }
        }
        if (q.top <= 0) return false;
        const bvh_node_t& nd = t->nodes[q.stack[--q.top]];
        if (!bvh_query_hits(q, nd.lo, nd.hi, max_dist)) continue;
        if (bvh_is_leaf(nd)) { q.leaf_pos = nd.a; q.leaf_end = nd.a - nd.b; }
        else if (q.top + 2 <= GEO_STACK) { q.stack[q.top++] = nd.b; q.stack[q.top++] = nd.a; }
    }
}
KC_FUNC bool bvh_query_next(bvh_query_t& q, i32& index) { return bvh_query_next(q, index, GEO_INF); }
KC_FUNC void adj_bvh_query_next(bvh_query_t&, i32&, f32, bvh_query_t&, i32&, f32&, bool) {}
KC_FUNC void adj_bvh_query_next(bvh_query_t&, i32&, bvh_query_t&, i32&, bool) {}

}  // namespace geo
