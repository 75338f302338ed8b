// geometry: sparse voxel volume of float values in bricks of 8^3.
//
// Voxel (i, j, k) sits at index-space point (i, j, k); world = xform * ijk + translation.
// Brick (i >> 3, j >> 3, k >> 3) is found through an open-addressing hash table; voxels in
// no brick read the background value.
#pragma once
#include "geo_mesh.h"

namespace geo {

// Layout mirrored by geometry/volume.py (ctypes).
struct volume_t {
    f32 xform[9];           // index -> world, row-major
    f32 translation[3];
    f32 inv_xform[9];       // world -> index (linear part)
    f32 background;
    i32 num_bricks;
    kc::uint32 table_mask;  // table capacity - 1 (a power of two minus one)
    i32 _pad;
    kc::uint64* table_keys;
    i32* table_vals;
    f32* data;              // num_bricks * 512 values, x fastest within a brick
    const i32* brick_coords;  // 3 per brick
};

#define GEO_EMPTY_KEY 0xffffffffffffffffULL

KC_FUNC kc::uint64 brick_key(i32 bx, i32 by, i32 bz) {
    const kc::uint64 m = (1ULL << 21) - 1ULL;
    return (((kc::uint64)(bx + (1 << 20)) & m) << 42) | (((kc::uint64)(by + (1 << 20)) & m) << 21) | ((kc::uint64)(bz + (1 << 20)) & m);
}
KC_FUNC kc::uint32 key_slot(kc::uint64 key, kc::uint32 mask) {
    kc::uint64 h = key * 0x9E3779B97F4A7C15ULL;
    return (kc::uint32)(h >> 32) & mask;
}

KC_FUNC i32 volume_find_brick(const volume_t* vol, i32 bx, i32 by, i32 bz) {
    if (vol->num_bricks <= 0) return -1;
    kc::uint64 key = brick_key(bx, by, bz);
    kc::uint32 slot = key_slot(key, vol->table_mask);
    for (kc::uint32 probe = 0; probe <= vol->table_mask; ++probe) {
        kc::uint64 k = vol->table_keys[slot];
        if (k == key) return vol->table_vals[slot];
        if (k == GEO_EMPTY_KEY) return -1;
        slot = (slot + 1) & vol->table_mask;
    }
    return -1;
}

#if !KC_CUDA
KC_FUNC void volume_build_table(kc::uint64 id) {
    volume_t* vol = (volume_t*)id;
    for (kc::uint32 s = 0; s <= vol->table_mask; ++s) { vol->table_keys[s] = GEO_EMPTY_KEY; vol->table_vals[s] = -1; }
    for (i32 b = 0; b < vol->num_bricks; ++b) {
        const i32* c = vol->brick_coords + 3 * b;
        kc::uint64 key = brick_key(c[0], c[1], c[2]);
        kc::uint32 slot = key_slot(key, vol->table_mask);
        while (vol->table_keys[slot] != GEO_EMPTY_KEY && vol->table_keys[slot] != key) slot = (slot + 1) & vol->table_mask;
        vol->table_keys[slot] = key;
        vol->table_vals[slot] = b;
    }
}
#else
KC_FUNC void volume_build_table(kc::uint64) {}
#endif
KC_FUNC void adj_volume_build_table(kc::uint64, kc::uint64&) {}

KC_FUNC f32* volume_voxel_ptr(const volume_t* vol, i32 i, i32 j, i32 k) {
    i32 b = volume_find_brick(vol, i >> 3, j >> 3, k >> 3);
    if (b < 0) return (f32*)0;
    return vol->data + (kc::int64)b * 512 + (((k & 7) * 8 + (j & 7)) * 8 + (i & 7));
}
KC_FUNC f32 volume_value(const volume_t* vol, i32 i, i32 j, i32 k) {
    const f32* p = volume_voxel_ptr(vol, i, j, k);
    return p ? *p : vol->background;
}

// The 8 corner values of the cell whose lowest corner is (i, j, k); one brick lookup when the
// cell lies inside a brick.
KC_FUNC void volume_cell(const volume_t* vol, i32 i, i32 j, i32 k, f32* v) {
    if ((i & 7) < 7 && (j & 7) < 7 && (k & 7) < 7) {
        i32 b = volume_find_brick(vol, i >> 3, j >> 3, k >> 3);
        if (b < 0) { for (int c = 0; c < 8; ++c) v[c] = vol->background; return; }
        const f32* base = vol->data + (kc::int64)b * 512 + (((k & 7) * 8 + (j & 7)) * 8 + (i & 7));
        for (int c = 0; c < 8; ++c) v[c] = base[((c >> 2) & 1) * 64 + ((c >> 1) & 1) * 8 + (c & 1)];
        return;
    }
    for (int c = 0; c < 8; ++c) v[c] = volume_value(vol, i + (c & 1), j + ((c >> 1) & 1), k + ((c >> 2) & 1));
}

KC_FUNC i32 volume_round(f32 x) { return (i32)kc::round(x); }   // halfway cases away from zero

// Value, gradient and the mixed second derivatives (d2/dxdy, d2/dxdz, d2/dydz) of the
// trilinear interpolant at index-space point uvw.
KC_FUNC f32 volume_trilinear(const volume_t* vol, const vec3& uvw, vec3* grad, f32* mixed) {
    f32 fx = kc::floor(uvw.c[0]), fy = kc::floor(uvw.c[1]), fz = kc::floor(uvw.c[2]);
    i32 i = (i32)fx, j = (i32)fy, k = (i32)fz;
    f32 tx = uvw.c[0] - fx, ty = uvw.c[1] - fy, tz = uvw.c[2] - fz;
    f32 v[8];
    volume_cell(vol, i, j, k, v);
    // interpolate along x, then y, then z
    f32 x00 = v[0] + (v[1] - v[0]) * tx, x10 = v[2] + (v[3] - v[2]) * tx;
    f32 x01 = v[4] + (v[5] - v[4]) * tx, x11 = v[6] + (v[7] - v[6]) * tx;
    f32 y0 = x00 + (x10 - x00) * ty, y1 = x01 + (x11 - x01) * ty;
    f32 val = y0 + (y1 - y0) * tz;
    if (grad) {
        f32 dx00 = v[1] - v[0], dx10 = v[3] - v[2], dx01 = v[5] - v[4], dx11 = v[7] - v[6];
        f32 dxy0 = dx00 + (dx10 - dx00) * ty, dxy1 = dx01 + (dx11 - dx01) * ty;
        grad->c[0] = dxy0 + (dxy1 - dxy0) * tz;
        grad->c[1] = (x10 - x00) + ((x11 - x01) - (x10 - x00)) * tz;
        grad->c[2] = y1 - y0;
        if (mixed) {
            mixed[0] = (dx10 - dx00) + ((dx11 - dx01) - (dx10 - dx00)) * tz;   // d2/dxdy
            mixed[1] = dxy1 - dxy0;                                           // d2/dxdz
            mixed[2] = (x11 - x01) - (x10 - x00);                             // d2/dydz
        }
    }
    return val;
}

KC_FUNC const volume_t* volume_ptr(kc::uint64 id) { return (const volume_t*)id; }

KC_FUNC f32 volume_sample_f(kc::uint64 id, const vec3& uvw, i32 mode) {
    const volume_t* vol = volume_ptr(id);
    if (mode == 0) return volume_value(vol, volume_round(uvw.c[0]), volume_round(uvw.c[1]), volume_round(uvw.c[2]));
    return volume_trilinear(vol, uvw, (vec3*)0, (f32*)0);
}
KC_FUNC void adj_volume_sample_f(kc::uint64 id, const vec3& uvw, i32 mode, kc::uint64&, vec3& adj_uvw, i32&, f32 adj_ret) {
    if (mode == 0) return;
    vec3 g;
    volume_trilinear(volume_ptr(id), uvw, &g, (f32*)0);
    adj_uvw = v_add(adj_uvw, v_mul(g, adj_ret));
}

KC_FUNC f32 volume_sample_grad_f(kc::uint64 id, const vec3& uvw, i32 mode, vec3& grad) {
    const volume_t* vol = volume_ptr(id);
    if (mode == 0) {
        grad = v3(0.0f, 0.0f, 0.0f);
        return volume_value(vol, volume_round(uvw.c[0]), volume_round(uvw.c[1]), volume_round(uvw.c[2]));
    }
    return volume_trilinear(vol, uvw, &grad, (f32*)0);
}
KC_FUNC void adj_volume_sample_grad_f(kc::uint64 id, const vec3& uvw, i32 mode, vec3&, kc::uint64&, vec3& adj_uvw, i32&, vec3& adj_grad,
                                      f32 adj_ret) {
    if (mode != 0) {
        vec3 g; f32 h[3];
        volume_trilinear(volume_ptr(id), uvw, &g, h);
        // value -> gradient; gradient output -> Hessian (zero diagonal for a trilinear cell)
        adj_uvw.c[0] += g.c[0] * adj_ret + h[0] * adj_grad.c[1] + h[1] * adj_grad.c[2];
        adj_uvw.c[1] += g.c[1] * adj_ret + h[0] * adj_grad.c[0] + h[2] * adj_grad.c[2];
        adj_uvw.c[2] += g.c[2] * adj_ret + h[1] * adj_grad.c[0] + h[2] * adj_grad.c[1];
    }
    adj_grad = v3(0.0f, 0.0f, 0.0f);   // the call overwrote grad
}

KC_FUNC f32 volume_lookup_f(kc::uint64 id, i32 i, i32 j, i32 k) { return volume_value(volume_ptr(id), i, j, k); }
KC_FUNC void adj_volume_lookup_f(kc::uint64, i32, i32, i32, kc::uint64&, i32&, i32&, i32&, f32) {}
KC_FUNC void volume_store_f(kc::uint64 id, i32 i, i32 j, i32 k, f32 value) {
    f32* p = volume_voxel_ptr(volume_ptr(id), i, j, k);
    if (p) *p = value;
}
KC_FUNC void adj_volume_store_f(kc::uint64, i32, i32, i32, f32, kc::uint64&, i32&, i32&, i32&, f32&) {}

KC_FUNC vec3 mat3_apply(const f32* m, const vec3& x) {
    return v3(m[0] * x.c[0] + m[1] * x.c[1] + m[2] * x.c[2], m[3] * x.c[0] + m[4] * x.c[1] + m[5] * x.c[2],
              m[6] * x.c[0] + m[7] * x.c[1] + m[8] * x.c[2]);
}
KC_FUNC vec3 mat3_apply_t(const f32* m, const vec3& x) {
    return v3(m[0] * x.c[0] + m[3] * x.c[1] + m[6] * x.c[2], m[1] * x.c[0] + m[4] * x.c[1] + m[7] * x.c[2],
              m[2] * x.c[0] + m[5] * x.c[1] + m[8] * x.c[2]);
}
KC_FUNC vec3 volume_index_to_world(kc::uint64 id, const vec3& uvw) {
    const volume_t* vol = volume_ptr(id);
    return v_add(mat3_apply(vol->xform, uvw), v3(vol->translation[0], vol->translation[1], vol->translation[2]));
}
KC_FUNC void adj_volume_index_to_world(kc::uint64 id, const vec3&, kc::uint64&, vec3& adj_uvw, const vec3& adj_ret) {
    adj_uvw = v_add(adj_uvw, mat3_apply_t(volume_ptr(id)->xform, adj_ret));
}
KC_FUNC vec3 volume_world_to_index(kc::uint64 id, const vec3& xyz) {
    const volume_t* vol = volume_ptr(id);
    return mat3_apply(vol->inv_xform, v_sub(xyz, v3(vol->translation[0], vol->translation[1], vol->translation[2])));
}
KC_FUNC void adj_volume_world_to_index(kc::uint64 id, const vec3&, kc::uint64&, vec3& adj_xyz, const vec3& adj_ret) {
    adj_xyz = v_add(adj_xyz, mat3_apply_t(volume_ptr(id)->inv_xform, adj_ret));
}
KC_FUNC vec3 volume_index_to_world_dir(kc::uint64 id, const vec3& uvw) { return mat3_apply(volume_ptr(id)->xform, uvw); }
KC_FUNC void adj_volume_index_to_world_dir(kc::uint64 id, const vec3&, kc::uint64&, vec3& adj_uvw, const vec3& adj_ret) {
    adj_uvw = v_add(adj_uvw, mat3_apply_t(volume_ptr(id)->xform, adj_ret));
}
KC_FUNC vec3 volume_world_to_index_dir(kc::uint64 id, const vec3& xyz) { return mat3_apply(volume_ptr(id)->inv_xform, xyz); }
KC_FUNC void adj_volume_world_to_index_dir(kc::uint64 id, const vec3&, kc::uint64&, vec3& adj_xyz, const vec3& adj_ret) {
    adj_xyz = v_add(adj_xyz, mat3_apply_t(volume_ptr(id)->inv_xform, adj_ret));
}

// World-space sampling (the seeds' volume_sample_world): world -> index, then sample.
KC_FUNC f32 volume_sample_world(kc::uint64 id, const vec3& xyz, i32 mode) { return volume_sample_f(id, volume_world_to_index(id, xyz), mode); }
KC_FUNC void adj_volume_sample_world(kc::uint64 id, const vec3& xyz, i32 mode, kc::uint64& adj_id, vec3& adj_xyz, i32& adj_mode, f32 adj_ret) {
    vec3 uvw = volume_world_to_index(id, xyz);
    vec3 adj_uvw = v3(0.0f, 0.0f, 0.0f);
    adj_volume_sample_f(id, uvw, mode, adj_id, adj_uvw, adj_mode, adj_ret);
    adj_volume_world_to_index(id, xyz, adj_id, adj_xyz, adj_uvw);
}

// SDF of a mesh at voxel `linear` (brick * 512 + offset) of the volume, within +-band.
KC_FUNC void volume_fill_sdf(kc::uint64 vol_id, kc::uint64 mesh_id, i32 linear, f32 band, i32 sign_mode) {
    volume_t* vol = (volume_t*)vol_id;
    i32 b = linear >> 9, o = linear & 511;
    const i32* c = vol->brick_coords + 3 * b;
    vec3 ijk = v3((f32)(c[0] * 8 + (o & 7)), (f32)(c[1] * 8 + ((o >> 3) & 7)), (f32)(c[2] * 8 + (o >> 6)));
    vec3 p = volume_index_to_world(vol_id, ijk);
    f32 s = 1.0f, u = 0.0f, v = 0.0f; i32 f = -1;
    f32 value = band;
    if (mesh_query_point_impl(mesh_id, p, band, sign_mode, 1e-3f, 2.0f, 0.5f, s, f, u, v)) {
        vec3 q = mesh_eval_position(mesh_id, f, u, v);
        value = v_len(v_sub(p, q));
        if (s < 0.0f) value = -value;
    } else {
        // beyond the band: keep the sign so inside voxels read -band
        const mesh_t* m = mesh_ptr(mesh_id);
        f32 sg = sign_mode == 3 && m->support_winding_number ? (mesh_winding_number(m, p, 2.0f) > 0.5f ? -1.0f : 1.0f) : mesh_sign_rays(m, p);
        value = sg * band;
    }
    vol->data[linear] = value;
}
KC_FUNC void adj_volume_fill_sdf(kc::uint64, kc::uint64, i32, f32, i32, kc::uint64&, kc::uint64&, i32&, f32&, i32&) {}

}  // namespace geo
