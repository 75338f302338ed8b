// geometry: uniform hash grid over points (neighbour queries).
//
// Cells are cubes of side cell_width over all of space; cell (x, y, z) is folded into a
// dim_x * dim_y * dim_z table by wrapping each coordinate. A build counting-sorts the point
// indices by table cell; cell_starts holds num_cells + 1 offsets into sorted_ids.
#pragma once
#include "geo_common.h"

namespace geo {

// Layout mirrored by geometry/hash_grid.py (ctypes).
struct hash_grid_t {
    i32 dim_x, dim_y, dim_z, num_points;
    f32 cell_width, inv_cell_width;   // set by the build from build_radius
    f32 build_radius;                 // the cell width asked for
    i32 _pad0;
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
struct hash_grid_query_t {
    const hash_grid_t* grid;
    const i32* ids;         // grid->sorted_ids, kept here so the candidate loop need not reload it
    f32 px, py, pz, r2;     // the ball (radius slightly inflated against rounding)
    i32 x0, y0, z0;         // first cell of the box (unwrapped)
    i32 x0w, y0w, z0w;      // the same, wrapped into the table
    i32 nx, ny, nz;         // cells per axis (at most the table size, so no cell repeats)
    i32 iy, iz;             // next row
    i32 cull;               // skip cells outside the ball
    i32 cur, end, cur2, end2;
};

KC_FUNC hash_grid_query_t hash_grid_query(kc::uint64 id, const vec3& p, f32 radius) {
    hash_grid_query_t q = {};
    const hash_grid_t* g = (const hash_grid_t*)id;
    q.grid = g;
    if (g) q.ids = g->sorted_ids;
    if (!g || g->num_points <= 0 || !(radius >= 0.0f)) return q;   // nz = 0: no rows
    i32 lo[3], n[3], dims[3] = {g->dim_x, g->dim_y, g->dim_z};
    q.cull = 1;
    for (int k = 0; k < 3; ++k) {
        lo[k] = grid_coord(p.c[k] - radius, g->inv_cell_width);
        i32 hi = grid_coord(p.c[k] + radius, g->inv_cell_width);
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

// Move q on to the next non-empty range of candidates; false when the box is done. Kept out of
// line on the CPU: inlined into the user's loop, its state competed with the loop body for
// registers (measured 9% slower for the neighbour-sum benchmark).
#if KC_CUDA
KC_FUNC bool hash_grid_next_range(hash_grid_query_t& q) {
#else
__attribute__((noinline)) static bool hash_grid_next_range(hash_grid_query_t& q) {
#endif
    const hash_grid_t* g = q.grid;
    for (;;) {
        if (q.cur < q.end) return true;
        if (q.cur2 < q.end2) { q.cur = q.cur2; q.end = q.end2; q.cur2 = q.end2 = 0; continue; }
        if (q.iz >= q.nz) return false;
        i32 iy = q.iy, iz = q.iz;
        if (++q.iy >= q.ny) { q.iy = 0; ++q.iz; }
        i32 xl = q.x0, n = q.nx;
        if (q.cull) {
            f32 w = g->cell_width;
            f32 dy = cell_gap(q.py, q.y0 + iy, w), dz = cell_gap(q.pz, q.z0 + iz, w);
            f32 rem = q.r2 - dy * dy - dz * dz;
            if (rem < 0.0f) continue;
            f32 rx = kc::sqrt(rem);
            i32 a = grid_coord(q.px - rx, g->inv_cell_width), b = grid_coord(q.px + rx, g->inv_cell_width);
            if (a < q.x0) a = q.x0;
            if (b > q.x0 + q.nx - 1) b = q.x0 + q.nx - 1;
            xl = a; n = b - a + 1;
            if (n <= 0) continue;
        }
        i32 y = q.y0w + iy, z = q.z0w + iz, x = q.x0w + (xl - q.x0);
        if (y >= g->dim_y) y -= g->dim_y;
        if (z >= g->dim_z) z -= g->dim_z;
        if (x >= g->dim_x) x -= g->dim_x;
        const i32* starts = g->cell_starts;
        i32 base = (z * g->dim_y + y) * g->dim_x;
        if (x + n <= g->dim_x) {
            q.cur = starts[base + x]; q.end = starts[base + x + n];
        } else {   // the row wraps around the table: two ranges
            q.cur = starts[base + x]; q.end = starts[base + g->dim_x];
            q.cur2 = starts[base]; q.end2 = starts[base + x + n - g->dim_x];
        }
    }
}

KC_FUNC bool hash_grid_query_next(hash_grid_query_t& q, i32& index) {
    if (q.cur < q.end || hash_grid_next_range(q)) { index = q.ids[q.cur++]; return true; }
    return false;
}
KC_FUNC void adj_hash_grid_query_next(hash_grid_query_t&, i32&, hash_grid_query_t&, i32&, bool) {}

KC_FUNC i32 hash_grid_point_id(kc::uint64 id, i32 index) {
    const hash_grid_t* g = (const hash_grid_t*)id;
    if (!g || index < 0 || index >= g->num_points) return -1;
    return g->sorted_ids[index];
}
KC_FUNC void adj_hash_grid_point_id(kc::uint64, i32, kc::uint64&, i32&, i32) {}

// Counting sort of the points by table cell (runs on the host, one thread).
KC_FUNC void hash_grid_build(kc::uint64 id) {
#if !KC_CUDA
    hash_grid_t* g = (hash_grid_t*)id;
    const i32 n = g->num_points;
    const kc::int64 ncells = (kc::int64)g->dim_x * g->dim_y * g->dim_z;
    f32 w = g->build_radius;
    g->cell_width = w;
    g->inv_cell_width = 1.0f / w;
    i32* starts = g->cell_starts;
    memset(starts, 0, sizeof(i32) * (ncells + 1));
    for (i32 i = 0; i < n; ++i) {
        const vec3& p = v_at(g->points, g->point_stride, i);
        i32 c = grid_cell(g, grid_coord(p.c[0], g->inv_cell_width), grid_coord(p.c[1], g->inv_cell_width),
                          grid_coord(p.c[2], g->inv_cell_width));
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
