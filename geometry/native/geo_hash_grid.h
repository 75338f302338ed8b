// geometry: uniform hash grid over points (neighbour queries).
//
// Cells are boxes of cell_width[0] * cell_width[1] * cell_width[2] over all of space; cell
// (x, y, z) is folded into a dim_x * dim_y * dim_z table by wrapping each coordinate. A build
// counting-sorts the point indices by table cell; cell_starts holds num_cells + 1 offsets into
// sorted_ids.
//
// A cell is the build radius cut into split[k] slices along axis k, as many as the points'
// extent along that axis allows without wrapping around the table (at most
// GEO_HASH_GRID_MAX_SPLIT_X/Y/Z). A query walks rows of cells along x, so thin x slices trim
// the candidates at both ends of each row for free; y or z slices trim them further but add
// rows. 100K uniform points, ~29 neighbours: 132 candidates per query with cubes, 88 with 8 x
// slices (query 49 -> 36 ms, one thread), 70 with 8 x and 2 y slices (but 41 ms: 13 rows, not 8).
#pragma once
#include "geo_common.h"

namespace geo {

// Layout mirrored by geometry/hash_grid.py (ctypes).
struct hash_grid_t {
    i32 dim_x, dim_y, dim_z, num_points;
    f32 build_radius;                 // the query radius the grid is built for
    i32 _pad0;
    f32 cell_width[3];                // set by the build: build_radius / split
    f32 inv_cell_width[3];
    i32 split[3];
    i32 _pad1;
    kc::int64 point_stride;         // bytes between consecutive points
    const char* points;             // vec3 points the grid was built from
    i32* sorted_ids;                // num_points: original point index, in cell order
    i32* cell_starts;               // num_cells + 1
    i32* point_cells;               // num_points scratch: table cell of each point
};

KC_FUNC i32 grid_coord(f32 x, f32 inv_w) {
    f32 f = kc::floor(x * inv_w);
    // keep far-away (or non-finite) coordinates in int range; they still hash consistently
    if (!(f > -1.0e9f)) f = -1.0e9f;
    if (f > 1.0e9f) f = 1.0e9f;
    return (i32)f;
}
KC_FUNC i32 wrap(i32 x, i32 n) { i32 r = x % n; return r < 0 ? r + n : r; }
KC_FUNC i32 grid_cell(const hash_grid_t* g, i32 x, i32 y, i32 z) {
    return (wrap(z, g->dim_z) * g->dim_y + wrap(y, g->dim_y)) * g->dim_x + wrap(x, g->dim_x);
}

// A query walks the rows of cells (fixed y, z) of the box around the point. Within a row the
// cells that meet the ball are adjacent in the table, so their points form one range of
// sorted_ids (two when the row wraps around the table); rows and cells the ball misses are
// skipped. When the box is wider than the table along an axis the table cells hold several
// periodic images of space, so nothing is skipped then.
//
// Rows are turned into ranges a batch at a time (hash_grid_fill_ranges): the rows of a batch are
// independent, so their square roots and table loads overlap. The ranges' ids are then copied
// into a buffer inside the query (hash_grid_refill), in fixed-size blocks, so the user's
// candidate loop runs over one array: one mispredicted loop exit per query instead of one per
// row, and no call per row. (Row at a time, ~40% of the neighbour-sum benchmark went to rows.)
#define GEO_HASH_GRID_BATCH_ROWS 12
#if KC_CUDA
#define GEO_HASH_GRID_QUERY_CAPACITY 64
#else
#define GEO_HASH_GRID_QUERY_CAPACITY 256
#endif
// Ids are copied in blocks of this many: the block may read past the end of its range and write
// past the end of the buffer, so sorted_ids and the buffer carry this much padding (mirrored by
// geometry/hash_grid.py ID_PADDING).
#define GEO_HASH_GRID_COPY_BLOCK 32

struct hash_grid_query_head_t {
    const hash_grid_t* grid;
    const i32* ids;         // grid->sorted_ids
    f32 px, py, pz, r2;     // the ball (radius slightly inflated against rounding)
    i32 x0, y0, z0;         // first cell of the box (unwrapped)
    i32 x0w, y0w, z0w;      // the same, wrapped into the table
    i32 nx, ny, nz;         // cells per axis (at most the table size, so no cell repeats)
    i32 next_row;           // rows (iz * ny + iy) before this one are in ranges already
    i32 cull;               // skip cells outside the ball
    i32 num_ranges, next_range;                 // ranges of the current batch of rows
    i32 pending, pending_end;                   // the part of a range that did not fit in buf
    i32 cur, end;                               // candidates left: buf[cur .. end)
    i32 starts[2 * GEO_HASH_GRID_BATCH_ROWS];   // (a wrapping row gives two ranges)
    i32 ends[2 * GEO_HASH_GRID_BATCH_ROWS];
};

struct hash_grid_query_t : hash_grid_query_head_t {
    i32 buf[GEO_HASH_GRID_QUERY_CAPACITY + GEO_HASH_GRID_COPY_BLOCK];

    // Not an aggregate: a declaration leaves the buffer alone, and copies take only the header and
    // the candidates still pending (kernels copy queries around loops).
    KC_FUNC hash_grid_query_t() {
        grid = nullptr; ids = nullptr;
        ny = nz = next_row = num_ranges = next_range = pending = pending_end = cur = end = 0;
    }
    KC_FUNC hash_grid_query_t(const hash_grid_query_t& o) { copy_from(o); }
    KC_FUNC hash_grid_query_t& operator=(const hash_grid_query_t& o) {
        if (this != &o) copy_from(o);
        return *this;
    }
    KC_FUNC void copy_from(const hash_grid_query_t& o) {
        static_cast<hash_grid_query_head_t&>(*this) = o;
        for (i32 i = o.cur; i < o.end; ++i) buf[i] = o.buf[i];
    }
};

KC_FUNC hash_grid_query_t hash_grid_query(kc::uint64 id, const vec3& p, f32 radius) {
    hash_grid_query_t q;   // no rows, no candidates
    q.grid = (const hash_grid_t*)id;
    q.ids = q.grid ? q.grid->sorted_ids : nullptr;
    q.px = q.py = q.pz = q.r2 = 0.0f;
    q.x0 = q.y0 = q.z0 = q.x0w = q.y0w = q.z0w = q.nx = q.cull = 0;
    const hash_grid_t* g = q.grid;
    if (!g || g->num_points <= 0 || !(radius >= 0.0f)) return q;
    i32 lo[3], n[3], dims[3] = {g->dim_x, g->dim_y, g->dim_z};
    const f32* inv_w = g->inv_cell_width;
    q.cull = 1;
    for (int k = 0; k < 3; ++k) {
        lo[k] = grid_coord(p.c[k] - radius, inv_w[k]);
        i32 hi = grid_coord(p.c[k] + radius, inv_w[k]);
        n[k] = hi - lo[k] + 1;
        if (n[k] > dims[k]) { n[k] = dims[k]; q.cull = 0; }
    }
    f32 r = radius * 1.00001f + 1e-30f;
    q.px = p.c[0]; q.py = p.c[1]; q.pz = p.c[2]; q.r2 = r * r;
    q.x0 = lo[0]; q.y0 = lo[1]; q.z0 = lo[2];
    q.x0w = wrap(lo[0], dims[0]); q.y0w = wrap(lo[1], dims[1]); q.z0w = wrap(lo[2], dims[2]);
    q.nx = n[0]; q.ny = n[1]; q.nz = n[2];
    return q;
}
KC_FUNC void adj_hash_grid_query(kc::uint64, const vec3&, f32, kc::uint64&, vec3&, f32&, const hash_grid_query_t&) {}

// Distance from x to the cell interval [c * w, (c + 1) * w].
KC_FUNC f32 cell_gap(f32 x, i32 c, f32 w) {
    f32 lo = (f32)c * w, hi = lo + w;
    return x < lo ? lo - x : (x > hi ? x - hi : 0.0f);
}

// Turn the next batch of rows into non-empty ranges of sorted_ids.
KC_FUNC void hash_grid_fill_ranges(hash_grid_query_t& q) {
    const hash_grid_t* g = q.grid;
    const i32 total = q.ny * q.nz;
    const i32 first = q.next_row;
    const i32 count = total - first < GEO_HASH_GRID_BATCH_ROWS ? total - first : GEO_HASH_GRID_BATCH_ROWS;
    q.next_row = first + count;
    // x extent of each row: the cells the ball meets (or the whole box row without culling)
    i32 row_x[GEO_HASH_GRID_BATCH_ROWS], row_n[GEO_HASH_GRID_BATCH_ROWS];
    const f32 wy = g->cell_width[1], wz = g->cell_width[2], inv_wx = g->inv_cell_width[0];
    for (i32 k = 0; k < count; ++k) {
        i32 row = first + k, iz = row / q.ny, iy = row - iz * q.ny;
        i32 a = q.x0, b = q.x0 + q.nx - 1;
        if (q.cull) {
            f32 dy = cell_gap(q.py, q.y0 + iy, wy), dz = cell_gap(q.pz, q.z0 + iz, wz);
            f32 rem = q.r2 - dy * dy - dz * dz;
            f32 rx = kc::sqrt(rem > 0.0f ? rem : 0.0f);
            i32 ca = grid_coord(q.px - rx, inv_wx), cb = grid_coord(q.px + rx, inv_wx);
            a = ca > a ? ca : a;
            b = cb < b ? cb : b;
            if (rem < 0.0f) b = a - 1;
        }
        row_x[k] = a;
        row_n[k] = b - a + 1;
    }
    const i32* starts = g->cell_starts;
    i32 m = 0;
    for (i32 k = 0; k < count; ++k) {
        i32 row = first + k, iz = row / q.ny, iy = row - iz * q.ny, n = row_n[k];
        i32 y = q.y0w + iy, z = q.z0w + iz, x = q.x0w + (row_x[k] - q.x0);
        if (y >= g->dim_y) y -= g->dim_y;
        if (z >= g->dim_z) z -= g->dim_z;
        if (x >= g->dim_x) x -= g->dim_x;
        i32 base = (z * g->dim_y + y) * g->dim_x;
        if (n <= 0) continue;
        if (x + n <= g->dim_x) {
            q.starts[m] = starts[base + x]; q.ends[m] = starts[base + x + n];
            m += q.starts[m] < q.ends[m];
        } else {   // the row wraps around the table: two ranges
            q.starts[m] = starts[base + x]; q.ends[m] = starts[base + g->dim_x];
            m += q.starts[m] < q.ends[m];
            q.starts[m] = starts[base]; q.ends[m] = starts[base + x + n - g->dim_x];
            m += q.starts[m] < q.ends[m];
        }
    }
    q.num_ranges = m;
    q.next_range = 0;
}

// Copy the next candidates into q.buf (at most its capacity); false when the box is done. Kept
// out of line on the CPU so that the user's candidate loop stays small.
#if KC_CUDA
KC_FUNC bool hash_grid_refill(hash_grid_query_t& q) {
#else
__attribute__((noinline)) static bool hash_grid_refill(hash_grid_query_t& q) {
#endif
    i32 m = 0;
    for (;;) {
        if (q.pending < q.pending_end) {
            i32 take = q.pending_end - q.pending, room = GEO_HASH_GRID_QUERY_CAPACITY - m;
            if (take > room) take = room;
            for (i32 i = 0; i < take; i += GEO_HASH_GRID_COPY_BLOCK)
                memcpy(q.buf + m + i, q.ids + q.pending + i, sizeof(i32) * GEO_HASH_GRID_COPY_BLOCK);
            q.pending += take;
            m += take;
            if (m == GEO_HASH_GRID_QUERY_CAPACITY) break;
        } else if (q.next_range < q.num_ranges) {
            q.pending = q.starts[q.next_range];
            q.pending_end = q.ends[q.next_range];
            ++q.next_range;
        } else if (q.next_row < q.ny * q.nz) {
            hash_grid_fill_ranges(q);
        } else {
            break;
        }
    }
    q.cur = 0;
    q.end = m;
    return m > 0;
}

KC_FUNC bool hash_grid_query_next(hash_grid_query_t& q, i32& index) {
    if (q.cur < q.end || hash_grid_refill(q)) { index = q.buf[q.cur++]; return true; }
    return false;
}
KC_FUNC void adj_hash_grid_query_next(hash_grid_query_t&, i32&, hash_grid_query_t&, i32&, bool) {}

KC_FUNC i32 hash_grid_point_id(kc::uint64 id, i32 index) {
    const hash_grid_t* g = (const hash_grid_t*)id;
    if (!g || index < 0 || index >= g->num_points) return -1;
    return g->sorted_ids[index];
}
KC_FUNC void adj_hash_grid_point_id(kc::uint64, i32, kc::uint64&, i32&, i32) {}

#ifndef GEO_HASH_GRID_MAX_SPLIT_X
#define GEO_HASH_GRID_MAX_SPLIT_X 8
#define GEO_HASH_GRID_MAX_SPLIT_Y 1   // see above: measured slower with 2
#define GEO_HASH_GRID_MAX_SPLIT_Z 1
#endif

// The most slices of a cell along axis k (up to max_split) for which the points' cells along k
// still fit in the table without wrapping; 1 when even whole cells wrap (then slicing would only
// add aliases). lo / hi: the points' finite extent along k.
KC_FUNC i32 hash_grid_choose_split(f32 lo, f32 hi, f32 w, i32 dim, i32 max_split) {
    for (i32 s = max_split; s > 1; --s) {
        f32 inv = (f32)s / w;
        if ((kc::int64)grid_coord(hi, inv) - grid_coord(lo, inv) + 1 <= dim) return s;
    }
    return 1;
}

KC_FUNC void hash_grid_set_cells(hash_grid_t* g) {
    const i32 n = g->num_points;
    f32 lo[3] = {0.0f, 0.0f, 0.0f}, hi[3] = {0.0f, 0.0f, 0.0f};
    bool any = false;
    for (i32 i = 0; i < n; ++i) {
        const vec3& p = v_at(g->points, g->point_stride, i);
        bool finite = true;
        for (int k = 0; k < 3; ++k) finite = finite && p.c[k] - p.c[k] == 0.0f;   // false for NaN, inf
        if (!finite) continue;   // hashed into an arbitrary cell anyway
        for (int k = 0; k < 3; ++k) {
            f32 x = p.c[k];
            lo[k] = !any || x < lo[k] ? x : lo[k];
            hi[k] = !any || x > hi[k] ? x : hi[k];
        }
        any = true;
    }
    const f32 w = g->build_radius;
    const i32 dims[3] = {g->dim_x, g->dim_y, g->dim_z};
    const i32 max_split[3] = {GEO_HASH_GRID_MAX_SPLIT_X, GEO_HASH_GRID_MAX_SPLIT_Y, GEO_HASH_GRID_MAX_SPLIT_Z};
    for (int k = 0; k < 3; ++k) {
        g->split[k] = any ? hash_grid_choose_split(lo[k], hi[k], w, dims[k], max_split[k]) : 1;
        g->cell_width[k] = w / (f32)g->split[k];
        g->inv_cell_width[k] = (f32)g->split[k] / w;
    }
}

// Counting sort of the points by table cell (runs on the host, one thread).
KC_FUNC void hash_grid_build(kc::uint64 id) {
#if !KC_CUDA
    hash_grid_t* g = (hash_grid_t*)id;
    const i32 n = g->num_points;
    const kc::int64 ncells = (kc::int64)g->dim_x * g->dim_y * g->dim_z;
    hash_grid_set_cells(g);
    const f32* inv_w = g->inv_cell_width;
    i32* starts = g->cell_starts;
    memset(starts, 0, sizeof(i32) * (ncells + 1));
    for (i32 i = 0; i < n; ++i) {
        const vec3& p = v_at(g->points, g->point_stride, i);
        i32 c = grid_cell(g, grid_coord(p.c[0], inv_w[0]), grid_coord(p.c[1], inv_w[1]), grid_coord(p.c[2], inv_w[2]));
        g->point_cells[i] = c;
        starts[c]++;
    }
    // inclusive scan, then place points back to front: each cell's counter ends at its start
    i32 run = 0;
    for (kc::int64 c = 0; c < ncells; ++c) { run += starts[c]; starts[c] = run; }
    starts[ncells] = run;
    for (i32 i = n - 1; i >= 0; --i) g->sorted_ids[--starts[g->point_cells[i]]] = i;
#endif
}
KC_FUNC void adj_hash_grid_build(kc::uint64, kc::uint64&) {}

}  // namespace geo
