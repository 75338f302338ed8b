// geometry: marching cubes without a case table.
//
// For each cell the iso-surface boundary is traced face by face: every cube face with sign
// changes contributes one or two directed segments between its crossed edges (an ambiguous
// face separates its two inside corners, a rule both cells sharing the face agree on), the
// segments chain into loops, and each loop is fanned into triangles. Segment direction puts
// the outside (value >= iso) on the left when the face is seen from outside the cell, so
// triangles wind counter-clockwise seen from the outside and the mesh is closed wherever the
// surface stays inside the grid.
#pragma once
#include "geo_common.h"

namespace geo {

// Corner c has offset (c & 1, (c >> 1) & 1, (c >> 2) & 1). Edge e: axis e / 4, and its
// lower corner has the other two offsets from the bits of e % 4.
KC_FUNC int mc_edge_corner(int e) {
    int axis = e >> 2, k = e & 3;
    if (axis == 0) return ((k & 1) << 1) | ((k >> 1) << 2);
    if (axis == 1) return (k & 1) | ((k >> 1) << 2);
    return (k & 1) | ((k >> 1) << 1);
}
KC_FUNC int mc_edge_between(int c0, int c1) {
    int d = c0 ^ c1;
    int axis = d == 1 ? 0 : (d == 2 ? 1 : 2);
    int lo = c0 < c1 ? c0 : c1;
    int k;
    if (axis == 0) k = ((lo >> 1) & 1) | (((lo >> 2) & 1) << 1);
    else if (axis == 1) k = (lo & 1) | (((lo >> 2) & 1) << 1);
    else k = (lo & 1) | (((lo >> 1) & 1) << 1);
    return axis * 4 + k;
}

// Builds the segment successor table next[12] of a cell; returns 0 when the surface misses it.
KC_FUNC int mc_cell_loops(const f32* v, f32 iso, int* next) {
    int inside = 0;
    for (int c = 0; c < 8; ++c) if (v[c] < iso) inside |= 1 << c;
    for (int e = 0; e < 12; ++e) next[e] = -1;
    if (inside == 0 || inside == 255) return 0;
    for (int f = 0; f < 6; ++f) {
        int axis = f >> 1, side = f & 1;
        int u = (axis + 1) % 3, w = (axis + 2) % 3;
        // corners of the face in cyclic order: (0,0) (1,0) (1,1) (0,1) in the (u, w) axes
        int cc[4];
        for (int q = 0; q < 4; ++q) {
            int du = (q == 1 || q == 2) ? 1 : 0, dw = (q >= 2) ? 1 : 0;
            cc[q] = (side << axis) | (du << u) | (dw << w);
        }
        int crossings = 0;
        for (int q = 0; q < 4; ++q) crossings += (((inside >> cc[q]) & 1) != ((inside >> cc[(q + 1) & 3]) & 1));
        if (crossings == 0) continue;
        // each segment cuts off corner `cut` of the face: it joins the two face edges at that corner
        int cuts[2], ncut = 0;
        if (crossings == 4) {
            for (int q = 0; q < 4; ++q) if ((inside >> cc[q]) & 1) cuts[ncut++] = q;
        } else {
            // two crossings: the lone corner on one side, or a pair split down the middle
            int cnt_in = 0;
            for (int q = 0; q < 4; ++q) cnt_in += (inside >> cc[q]) & 1;
            if (cnt_in == 1 || cnt_in == 3) {
                int want = cnt_in == 1 ? 1 : 0;
                for (int q = 0; q < 4; ++q) if (((inside >> cc[q]) & 1) == want) cuts[ncut++] = q;
            } else {
                cuts[ncut++] = -1;   // the segment joins two opposite face edges
            }
        }
        for (int s = 0; s < ncut; ++s) {
            int ea, eb, ref;
            if (cuts[s] >= 0) {
                int q = cuts[s];
                ea = mc_edge_between(cc[(q + 3) & 3], cc[q]);
                eb = mc_edge_between(cc[q], cc[(q + 1) & 3]);
                ref = cc[q];
            } else {
                int found[2], nf = 0;
                for (int q = 0; q < 4; ++q)
                    if (((inside >> cc[q]) & 1) != ((inside >> cc[(q + 1) & 3]) & 1)) found[nf++] = mc_edge_between(cc[q], cc[(q + 1) & 3]);
                ea = found[0]; eb = found[1];
                ref = cc[0];
            }
            // orientation from the edge midpoints, the reference corner and the outward face normal
            f32 pa[3], pb[3], pr[3];
            for (int k = 0; k < 3; ++k) {
                int ca = mc_edge_corner(ea), cb = mc_edge_corner(eb);
                pa[k] = (k == (ea >> 2)) ? 0.5f : (f32)((ca >> k) & 1);
                pb[k] = (k == (eb >> 2)) ? 0.5f : (f32)((cb >> k) & 1);
                pr[k] = (f32)((ref >> k) & 1);
            }
            vec3 d = v3(pb[0] - pa[0], pb[1] - pa[1], pb[2] - pa[2]);
            vec3 r = v3(pr[0] - pa[0], pr[1] - pa[1], pr[2] - pa[2]);
            f32 s_axis = v_cross(d, r).c[axis] * (side ? 1.0f : -1.0f);
            bool ref_inside = (inside >> ref) & 1;
            bool forward = ref_inside ? (s_axis < 0.0f) : (s_axis > 0.0f);
            if (forward) next[ea] = eb; else next[eb] = ea;
        }
    }
    return 1;
}

// Faces of the cube an edge lies on, as a 6-bit mask (face = axis * 2 + side).
KC_FUNC int mc_edge_faces(int e) {
    int axis = e >> 2, c = mc_edge_corner(e), mask = 0;
    for (int b = 0; b < 3; ++b)
        if (b != axis) mask |= 1 << (b * 2 + ((c >> b) & 1));
    return mask;
}

// The cell's loops (at most 4, 12 edges in all) and how each is triangulated: a fan from an
// apex whose diagonals never join two vertices of one cube face (such a diagonal could be
// made again by the neighbouring cell), or else a fan around an added centre vertex.
struct mc_cell_t {
    int nloops;
    int len[4];
    int apex[4];        // -1: fan around a centre vertex
    int loop[4][12];
    int tris, centers;
};

KC_FUNC void mc_cell(const f32* v, f32 iso, mc_cell_t& out) {
    int next[12];
    out.nloops = 0; out.tris = 0; out.centers = 0;
    if (!mc_cell_loops(v, iso, next)) return;
    int seen = 0;
    for (int e = 0; e < 12 && out.nloops < 4; ++e) {
        if (next[e] < 0 || ((seen >> e) & 1)) continue;
        int L = out.nloops, len = 0, x = e;
        while (x >= 0 && !((seen >> x) & 1) && len < 12) { seen |= 1 << x; out.loop[L][len++] = x; x = next[x]; }
        if (len < 3) continue;
        out.len[L] = len;
        out.apex[L] = -1;
        for (int s = 0; s < len && out.apex[L] < 0; ++s) {
            bool ok = true;
            int fs = mc_edge_faces(out.loop[L][s]);
            for (int j = 2; j <= len - 2 && ok; ++j) ok = (fs & mc_edge_faces(out.loop[L][(s + j) % len])) == 0;
            if (ok) out.apex[L] = s;
        }
        if (out.apex[L] >= 0) out.tris += len - 2;
        else { out.tris += len; out.centers += 1; }
        out.nloops++;
    }
}

KC_FUNC void mc_corner_values(const kc::array_t<f32>& field, i32 i, i32 j, i32 k, f32* v) {
    for (int c = 0; c < 8; ++c)
        v[c] = *kc::address(field, i + (c & 1), j + ((c >> 1) & 1), k + ((c >> 2) & 1));
}

// Triangles + 256 * centre vertices of the cell.
KC_FUNC i32 mc_cell_count(const kc::array_t<f32>& field, i32 i, i32 j, i32 k, f32 iso) {
    f32 v[8];
    mc_corner_values(field, i, j, k, v);
    mc_cell_t c;
    mc_cell(v, iso, c);
    return c.tris + 256 * c.centers;
}

// Writes the cell's triangles (3 vertex ids each) from tris[3 * tri_offset] and its centre
// vertices from points[vert_offset]. edge_ids holds the vertex id of every grid edge:
// index ((i * ny + j) * nz + k) * 3 + axis; points holds their positions.
KC_FUNC void mc_cell_emit(const kc::array_t<f32>& field, const kc::array_t<i32>& edge_ids, i32 i, i32 j, i32 k, f32 iso,
                          const kc::array_t<i32>& tris, i32 tri_offset, const kc::array_t<vec3>& points, i32 vert_offset) {
    f32 v[8];
    mc_corner_values(field, i, j, k, v);
    mc_cell_t c;
    mc_cell(v, iso, c);
    if (c.tris == 0) return;
    const i32 ny = field.shape[1], nz = field.shape[2];
    i32* out = tris.data + 3 * (kc::int64)tri_offset;
    for (int L = 0; L < c.nloops; ++L) {
        int len = c.len[L];
        i32 ids[12];
        for (int q = 0; q < len; ++q) {
            int e = c.loop[L][q], cc = mc_edge_corner(e);
            kc::int64 g = (((kc::int64)(i + (cc & 1)) * ny + (j + ((cc >> 1) & 1))) * nz + (k + ((cc >> 2) & 1))) * 3 + (e >> 2);
            ids[q] = edge_ids.data[g];
        }
        if (c.apex[L] >= 0) {
            int s = c.apex[L];
            for (int q = 1; q + 1 < len; ++q) {
                out[0] = ids[s]; out[1] = ids[(s + q) % len]; out[2] = ids[(s + q + 1) % len];
                out += 3;
            }
        } else {
            vec3 centre = v3(0.0f, 0.0f, 0.0f);
            for (int q = 0; q < len; ++q) centre = v_add(centre, points.data[ids[q]]);
            i32 cid = vert_offset++;
            points.data[cid] = v_mul(centre, 1.0f / (f32)len);
            for (int q = 0; q < len; ++q) {
                out[0] = cid; out[1] = ids[q]; out[2] = ids[(q + 1) % len];
                out += 3;
            }
        }
    }
}

}  // namespace geo
