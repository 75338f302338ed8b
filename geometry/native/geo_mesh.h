// geometry: triangle mesh queries over a BVH of triangle bounds.
//
// Barycentric convention (as in the mesh_eval_* builtins): a point with weights (u, v) on
// face f is u * p0 + v * p1 + (1 - u - v) * p2 for the face's vertices p0, p1, p2.
#pragma once
#include "geo_bvh.h"

namespace geo {

#define GEO_EMPTY_EDGE 0xffffffffffffffffULL

// Layout mirrored by geometry/mesh.py (ctypes).
struct mesh_t {
    const bvh_t* bvh;
    const vec3* points;
    const vec3* velocities;     // may be null
    const i32* indices;         // 3 per face
    i32 num_points, num_faces;
    i32 support_winding_number, _pad;
    vec3* lowers;               // per-face bounds (the BVH items)
    vec3* uppers;
    kc::uint8* degenerate;      // 1 for faces skipped by point queries
    i32* adjacency;             // 3 per face: face across edge (p0p1, p1p2, p2p0) or -1
    kc::uint64* edge_keys;      // build scratch: hash table of edges (capacity edge_mask + 1)
    i32* edge_vals;
    kc::uint64 edge_mask;
    vec3* vertex_normals;       // angle-weighted pseudo-normals
    vec3* edge_normals;         // 3 per face: sum of the unit normals of the faces on that edge
    f32* node_dipole;           // 8 per BVH node: area-weighted normal (3), area, centre (3), radius
    vec3* face_normals;         // build scratch: unit normal of each face
    f32* corner_angles;         // build scratch: 3 per face, the angle at each corner
};

// acos to about 2e-8 rad (Abramowitz & Stegun 4.4.46): the pseudo-normal weights of a
// refit are computed for every face corner, and libm's acos dominated the refit.
KC_FUNC f32 fast_acos(f32 x) {
    x = x < -1.0f ? -1.0f : (x > 1.0f ? 1.0f : x);
    f32 ax = x < 0.0f ? -x : x;
    f32 p = -0.0012624911f;
    p = p * ax + 0.0066700901f; p = p * ax - 0.0170881256f; p = p * ax + 0.0308918810f;
    p = p * ax - 0.0501743046f; p = p * ax + 0.0889789874f; p = p * ax - 0.2145988016f; p = p * ax + 1.5707963050f;
    f32 r = kc::sqrt(1.0f - ax) * p;
    return x < 0.0f ? 3.14159265358979f - r : r;
}

KC_FUNC const mesh_t* mesh_ptr(kc::uint64 id) { return (const mesh_t*)id; }
KC_FUNC void face_vertices(const mesh_t* m, i32 f, vec3& a, vec3& b, vec3& c) {
    a = m->points[m->indices[3 * f]]; b = m->points[m->indices[3 * f + 1]]; c = m->points[m->indices[3 * f + 2]];
}

// ---- refit: face bounds, degenerate flags, pseudo-normals, BVH and winding-number data ----
#if !KC_CUDA
// Face adjacency across edges through a hash table of (min, max) vertex pairs. An edge shared
// by more than two faces links only the first two.
KC_FUNC void mesh_adjacency(mesh_t* m) {
    const i32 nf = m->num_faces;
    for (kc::uint64 s = 0; s <= m->edge_mask; ++s) m->edge_keys[s] = GEO_EMPTY_EDGE;
    for (i32 e = 0; e < 3 * nf; ++e) m->adjacency[e] = -1;
    for (i32 e = 0; e < 3 * nf; ++e) {
        i32 f = e / 3, k = e - 3 * f;
        kc::uint64 a = (kc::uint32)m->indices[e], b = (kc::uint32)m->indices[k == 2 ? e - 2 : e + 1];
        kc::uint64 key = a < b ? (a << 32) | b : (b << 32) | a;
        // slots follow the lower vertex id (4 per vertex): meshes list nearby vertices together,
        // so the table is walked almost in order instead of at random
        kc::uint64 slot = ((key >> 30) + (key & 3)) & m->edge_mask;
        while (m->edge_keys[slot] != GEO_EMPTY_EDGE && m->edge_keys[slot] != key) slot = (slot + 1) & m->edge_mask;
        if (m->edge_keys[slot] == GEO_EMPTY_EDGE) { m->edge_keys[slot] = key; m->edge_vals[slot] = e; continue; }
        i32 other = m->edge_vals[slot];
        if (other >= 0 && m->adjacency[other] < 0) {
            m->adjacency[other] = f;
            m->adjacency[e] = other / 3;
            m->edge_vals[slot] = -1;   // a third face on this edge stays unlinked
        }
    }
}

// Face bounds, degenerate flags, pseudo-normals, the BVH (built or refitted) and the
// winding-number cluster data.
KC_FUNC void mesh_update(kc::uint64 id, bool rebuild) {
    mesh_t* m = (mesh_t*)id;
    const i32 nf = m->num_faces;
    if (rebuild) mesh_adjacency(m);
    // Per face, in parallel: bounds, the degenerate flag, the unit normal and the corner angles
    // (the acos calls are most of the work); then the serial scatter into the vertices and the
    // edge normals from the stored face normals.
    const int nt = m->bvh->num_threads > 1 && nf >= 4096 ? m->bvh->num_threads : 1;
    #pragma omp parallel for schedule(static) num_threads(nt)
    for (i32 f = 0; f < nf; ++f) {
        vec3 a, b, c;
        face_vertices(m, f, a, b, c);
        m->lowers[f] = v_min(a, v_min(b, c));
        m->uppers[f] = v_max(a, v_max(b, c));
        vec3 n = v_cross(v_sub(b, a), v_sub(c, a));
        f32 e2 = kc::max(v_len2(v_sub(b, a)), kc::max(v_len2(v_sub(c, b)), v_len2(v_sub(a, c))));
        // degenerate relative to its own size: |n| = 2 * area <= 1e-6 * longest edge^2
        m->degenerate[f] = (v_len2(n) <= 1e-12f * e2 * e2 || !(e2 > 0.0f)) ? 1 : 0;
        m->face_normals[f] = v_normalize(n);
        if (m->degenerate[f]) continue;
        const vec3* corners[3] = {&a, &b, &c};
        for (int k = 0; k < 3; ++k) {
            vec3 e0 = v_normalize(v_sub(*corners[(k + 1) % 3], *corners[k]));
            vec3 e1 = v_normalize(v_sub(*corners[(k + 2) % 3], *corners[k]));
            m->corner_angles[3 * f + k] = fast_acos(v_dot(e0, e1));
        }
    }
    for (i32 v = 0; v < m->num_points; ++v) m->vertex_normals[v] = v3(0.0f, 0.0f, 0.0f);
    for (i32 f = 0; f < nf; ++f) {
        if (m->degenerate[f]) continue;
        for (int k = 0; k < 3; ++k) {
            i32 vi = m->indices[3 * f + k];
            m->vertex_normals[vi] = v_add(m->vertex_normals[vi], v_mul(m->face_normals[f], m->corner_angles[3 * f + k]));
        }
    }
    #pragma omp parallel for schedule(static) num_threads(nt)
    for (i32 f = 0; f < nf; ++f) {
        for (int k = 0; k < 3; ++k) {
            i32 g = m->adjacency[3 * f + k];
            m->edge_normals[3 * f + k] = g >= 0 ? v_add(m->face_normals[f], m->face_normals[g]) : m->face_normals[f];
        }
    }
    if (rebuild) bvh_build((kc::uint64)m->bvh); else bvh_refit((kc::uint64)m->bvh);
    if (!m->support_winding_number) return;
    const bvh_t* t = m->bvh;
    for (i32 i = t->num_nodes - 1; i >= 0; --i) {
        const bvh_node_t& nd = t->nodes[i];
        f32* d = m->node_dipole + 8 * i;
        f32 ns[3] = {0, 0, 0}, area = 0.0f, cen[3] = {0, 0, 0};
        if (bvh_is_leaf(nd)) {
            for (i32 s = nd.a; s < nd.a - nd.b; ++s) {
                vec3 a, b, c;
                face_vertices(m, t->items[s], a, b, c);
                vec3 n = v_mul(v_cross(v_sub(b, a), v_sub(c, a)), 0.5f);
                f32 ar = v_len(n);
                for (int k = 0; k < 3; ++k) { ns[k] += n.c[k]; cen[k] += ar * (a.c[k] + b.c[k] + c.c[k]) / 3.0f; }
                area += ar;
            }
        } else {
            const f32* l = m->node_dipole + 8 * nd.a;
            const f32* r = m->node_dipole + 8 * nd.b;
            for (int k = 0; k < 3; ++k) { ns[k] = l[k] + r[k]; cen[k] = l[3] * l[4 + k] + r[3] * r[4 + k]; }
            area = l[3] + r[3];
        }
        for (int k = 0; k < 3; ++k) cen[k] = area > 0.0f ? cen[k] / area : 0.5f * (nd.lo[k] + nd.hi[k]);
        f32 rad2 = 0.0f;
        for (int corner = 0; corner < 8; ++corner) {
            f32 r2 = 0.0f;
            for (int k = 0; k < 3; ++k) { f32 x = ((corner >> k) & 1 ? nd.hi[k] : nd.lo[k]) - cen[k]; r2 += x * x; }
            rad2 = kc::max(rad2, r2);
        }
        d[0] = ns[0]; d[1] = ns[1]; d[2] = ns[2]; d[3] = area;
        d[4] = cen[0]; d[5] = cen[1]; d[6] = cen[2]; d[7] = kc::sqrt(rad2);
    }
}
KC_FUNC void mesh_build(kc::uint64 id) { mesh_update(id, true); }
KC_FUNC void mesh_refit(kc::uint64 id) { mesh_update(id, false); }
#else
KC_FUNC void mesh_build(kc::uint64) {}
KC_FUNC void mesh_refit(kc::uint64) {}
#endif

// ---- closest point -----------------------------------------------------------------------
struct closest_t {
    i32 face;
    f32 u, v;
    int region;
    f32 dist2;
};

KC_FUNC bool mesh_closest(const mesh_t* m, const vec3& p, f32 max_dist, closest_t& out) {
    out.face = -1; out.u = out.v = 0.0f; out.region = 0;
    if (!m || m->num_faces <= 0 || !(max_dist > 0.0f)) return false;
    const bvh_t* t = m->bvh;
    const bvh_node_t* nodes = t->nodes;
    f32 best = max_dist * max_dist;
    i32 stack[GEO_STACK];
    f32 sdist[GEO_STACK];   // box distance of each stacked node, re-checked when popped
    int top = 0;
    f32 d0 = box_dist2(nodes[0].lo, nodes[0].hi, p);
    if (d0 >= best) return false;
    stack[0] = 0; sdist[0] = d0; top = 1;
    while (top > 0) {
        --top;
        if (sdist[top] >= best) continue;
        const bvh_node_t& nd = nodes[stack[top]];
        if (bvh_is_leaf(nd)) {
            for (i32 s = nd.a; s < nd.a - nd.b; ++s) {
                i32 f = t->items[s];
                if (m->degenerate[f]) continue;
                vec3 a, b, c;
                face_vertices(m, f, a, b, c);
                f32 wa, wb; int region;
                closest_on_triangle(a, b, c, p, wa, wb, region);
                vec3 d = v_sub(p, v_lerp3(a, b, c, wa, wb));
                f32 d2 = v_len2(d);
                if (d2 < best) { best = d2; out.face = f; out.u = wa; out.v = wb; out.region = region; }
            }
            continue;
        }
        // visit the nearer child first
        f32 dl = box_dist2(nodes[nd.a].lo, nodes[nd.a].hi, p);
        f32 dr = box_dist2(nodes[nd.b].lo, nodes[nd.b].hi, p);
        i32 near = nd.a, far = nd.b;
        if (dr < dl) { f32 tmp = dl; dl = dr; dr = tmp; near = nd.b; far = nd.a; }
        if (dr < best && top < GEO_STACK) { stack[top] = far; sdist[top] = dr; ++top; }
        if (dl < best && top < GEO_STACK) { stack[top] = near; sdist[top] = dl; ++top; }
    }
    out.dist2 = best;
    return out.face >= 0;
}

// Closest hit along a ray (t in multiples of |dir|).
struct ray_hit_t {
    i32 face;
    f32 t, u, v;
};

KC_FUNC bool mesh_ray(const mesh_t* m, const vec3& o, const vec3& d, f32 max_t, ray_hit_t& out) {
    out.face = -1; out.t = max_t; out.u = out.v = 0.0f;
    if (!m || m->num_faces <= 0 || !(max_t > 0.0f)) return false;
    const bvh_t* t = m->bvh;
    const bvh_node_t* nodes = t->nodes;
    vec3 inv = safe_inverse(d);
    f32 best = max_t;
    i32 stack[GEO_STACK];
    int top = 0;
    if (box_ray(nodes[0].lo, nodes[0].hi, o, inv, best) >= GEO_INF) return false;
    stack[top++] = 0;
    while (top > 0) {
        const bvh_node_t& nd = nodes[stack[--top]];
        if (bvh_is_leaf(nd)) {
            for (i32 s = nd.a; s < nd.a - nd.b; ++s) {
                i32 f = t->items[s];
                if (m->degenerate[f]) continue;
                vec3 a, b, c;
                face_vertices(m, f, a, b, c);
                f32 th, wa, wb;
                if (ray_triangle(o, d, a, b, c, best, th, wa, wb)) { best = th; out.face = f; out.t = th; out.u = wa; out.v = wb; }
            }
            continue;
        }
        f32 tl = box_ray(nodes[nd.a].lo, nodes[nd.a].hi, o, inv, best);
        f32 tr = box_ray(nodes[nd.b].lo, nodes[nd.b].hi, o, inv, best);
        i32 near = nd.a, far = nd.b;
        if (tr < tl) { f32 tmp = tl; tl = tr; tr = tmp; near = nd.b; far = nd.a; }
        if (tr < GEO_INF && top < GEO_STACK) stack[top++] = far;
        if (tl < GEO_INF && top < GEO_STACK) stack[top++] = near;
    }
    return out.face >= 0;
}

KC_FUNC vec3 face_normal(const mesh_t* m, i32 f) {
    vec3 a, b, c;
    face_vertices(m, f, a, b, c);
    return v_normalize(v_cross(v_sub(b, a), v_sub(c, a)));
}

// ---- inside / outside --------------------------------------------------------------------
// Majority vote of three axis-aligned rays: a ray whose closest hit is on the back of a face
// votes inside; a miss votes outside.
KC_FUNC f32 mesh_sign_rays(const mesh_t* m, const vec3& p) {
    int inside = 0;
    for (int k = 0; k < 3; ++k) {
        vec3 d = v3(k == 0 ? 1.0f : 0.0f, k == 1 ? 1.0f : 0.0f, k == 2 ? 1.0f : 0.0f);
        ray_hit_t h;
        if (mesh_ray(m, p, d, GEO_INF, h) && v_dot(face_normal(m, h.face), d) > 0.0f) ++inside;
    }
    return inside >= 2 ? -1.0f : 1.0f;
}

// Angle-weighted pseudo-normal of the feature (face, edge or vertex) holding the closest point.
KC_FUNC f32 mesh_sign_normal(const mesh_t* m, const vec3& p, const closest_t& c, f32 eps) {
    f32 w[3] = {c.u, c.v, 1.0f - c.u - c.v};
    int small = 0, which = -1, big = 0;
    for (int k = 0; k < 3; ++k) {
        if (w[k] < eps) { ++small; which = k; }
        if (w[k] > w[big]) big = k;
    }
    vec3 n;
    const i32* idx = m->indices + 3 * c.face;
    if (small >= 2) n = m->vertex_normals[idx[big]];
    else if (small == 1) n = m->edge_normals[3 * c.face + (which + 1) % 3];   // edge opposite vertex `which`
    else n = face_normal(m, c.face);
    vec3 a, b, cc;
    face_vertices(m, c.face, a, b, cc);
    vec3 d = v_sub(p, v_lerp3(a, b, cc, c.u, c.v));
    return v_dot(d, n) < 0.0f ? -1.0f : 1.0f;
}

// Signed solid angle of triangle abc seen from p (positive when p is behind the face).
KC_FUNC f32 solid_angle(const vec3& p, const vec3& a, const vec3& b, const vec3& c) {
    vec3 x = v_sub(a, p), y = v_sub(b, p), z = v_sub(c, p);
    f32 lx = v_len(x), ly = v_len(y), lz = v_len(z);
    f32 num = v_dot(x, v_cross(y, z));
    f32 den = lx * ly * lz + v_dot(x, y) * lz + v_dot(x, z) * ly + v_dot(y, z) * lx;
    return 2.0f * kc::atan2(num, den);
}

// Generalised winding number by a BVH traversal: far clusters contribute through their
// dipole (area-weighted normal at the area centroid), near ones exactly, face by face.
KC_FUNC f32 mesh_winding_number(const mesh_t* m, const vec3& p, f32 accuracy) {
    const bvh_t* t = m->bvh;
    const f32 inv4pi = 0.07957747154594767f;
    f32 w = 0.0f;
    i32 stack[GEO_STACK];
    int top = 0;
    stack[top++] = 0;
    while (top > 0) {
        i32 ni = stack[--top];
        const bvh_node_t& nd = t->nodes[ni];
        const f32* d = m->node_dipole + 8 * ni;
        vec3 r = v3(d[4] - p.c[0], d[5] - p.c[1], d[6] - p.c[2]);
        f32 dist = v_len(r);
        if (ni != 0 && dist > accuracy * d[7]) {
            w += (d[0] * r.c[0] + d[1] * r.c[1] + d[2] * r.c[2]) / (dist * dist * dist) * inv4pi;
            continue;
        }
        if (bvh_is_leaf(nd)) {
            for (i32 s = nd.a; s < nd.a - nd.b; ++s) {
                vec3 a, b, c;
                face_vertices(m, t->items[s], a, b, c);
                w += solid_angle(p, a, b, c) * inv4pi;
            }
        } else if (top + 2 <= GEO_STACK) {
            stack[top++] = nd.b; stack[top++] = nd.a;
        }
    }
    return w;
}

// ---- builtins: closest point ---------------------------------------------------------------
// mode: 0 unsigned, 1 ray majority, 2 pseudo-normal, 3 winding number
KC_FUNC bool mesh_query_point_impl(kc::uint64 id, const vec3& p, f32 max_dist, int mode, f32 eps, f32 accuracy, f32 threshold,
                                   f32& sign, i32& face, f32& u, f32& v) {
    const mesh_t* m = mesh_ptr(id);
    closest_t c;
    if (!mesh_closest(m, p, max_dist, c)) return false;
    face = c.face; u = c.u; v = c.v;
    if (mode == 0) sign = 0.0f;
    else if (mode == 2) sign = mesh_sign_normal(m, p, c, eps);
    else if (mode == 3 && m->support_winding_number) sign = mesh_winding_number(m, p, accuracy) > threshold ? -1.0f : 1.0f;
    else sign = mesh_sign_rays(m, p);
    return true;
}

// Adjoint of (u, v) with respect to p (face, sign and the feature stay fixed).
KC_FUNC void mesh_query_point_uv_adjoint(kc::uint64 id, const vec3& p, f32 max_dist, f32 g_u, f32 g_v, vec3& adj_p) {
    if (g_u == 0.0f && g_v == 0.0f) return;
    const mesh_t* m = mesh_ptr(id);
    closest_t c;
    if (!mesh_closest(m, p, max_dist, c)) return;
    vec3 a, b, cc;
    face_vertices(m, c.face, a, b, cc);
    adj_p = v_add(adj_p, closest_weights_vjp(a, b, cc, c.region, g_u, g_v));
}

// Struct-returning forms (the result type R is the geometry.MeshQueryPoint kernel struct).
template <typename R> KC_FUNC R mesh_query_point_result(bool ok, f32 s, i32 f, f32 u, f32 v) {
    R r = {};
    r.result = ok; r.sign = s; r.face = f; r.u = u; r.v = v;
    return r;
}
template <typename R> KC_FUNC R mesh_query_point_s(kc::uint64 id, const vec3& p, f32 max_dist) {
    f32 s = 0.0f, u = 0.0f, v = 0.0f; i32 f = -1;
    bool ok = mesh_query_point_impl(id, p, max_dist, 1, 1e-3f, 2.0f, 0.5f, s, f, u, v);
    return mesh_query_point_result<R>(ok, s, f, u, v);
}
template <typename R> KC_FUNC void adj_mesh_query_point_s(kc::uint64 id, const vec3& p, f32 max_dist, kc::uint64&, vec3& adj_p, f32&,
                                                          const R& adj_ret) {
    mesh_query_point_uv_adjoint(id, p, max_dist, adj_ret.u, adj_ret.v, adj_p);
}
template <typename R> KC_FUNC R mesh_query_point_no_sign_s(kc::uint64 id, const vec3& p, f32 max_dist) {
    f32 s = 0.0f, u = 0.0f, v = 0.0f; i32 f = -1;
    bool ok = mesh_query_point_impl(id, p, max_dist, 0, 1e-3f, 2.0f, 0.5f, s, f, u, v);
    return mesh_query_point_result<R>(ok, s, f, u, v);
}
template <typename R> KC_FUNC void adj_mesh_query_point_no_sign_s(kc::uint64 id, const vec3& p, f32 max_dist, kc::uint64&, vec3& adj_p,
                                                                  f32&, const R& adj_ret) {
    mesh_query_point_uv_adjoint(id, p, max_dist, adj_ret.u, adj_ret.v, adj_p);
}
template <typename R> KC_FUNC R mesh_query_point_sign_normal_s(kc::uint64 id, const vec3& p, f32 max_dist, f32 eps) {
    f32 s = 0.0f, u = 0.0f, v = 0.0f; i32 f = -1;
    bool ok = mesh_query_point_impl(id, p, max_dist, 2, eps, 2.0f, 0.5f, s, f, u, v);
    return mesh_query_point_result<R>(ok, s, f, u, v);
}
template <typename R> KC_FUNC void adj_mesh_query_point_sign_normal_s(kc::uint64 id, const vec3& p, f32 max_dist, f32, kc::uint64&,
                                                                      vec3& adj_p, f32&, f32&, const R& adj_ret) {
    mesh_query_point_uv_adjoint(id, p, max_dist, adj_ret.u, adj_ret.v, adj_p);
}
template <typename R> KC_FUNC R mesh_query_point_sign_winding_number_s(kc::uint64 id, const vec3& p, f32 max_dist, f32 accuracy,
                                                                       f32 threshold) {
    f32 s = 0.0f, u = 0.0f, v = 0.0f; i32 f = -1;
    bool ok = mesh_query_point_impl(id, p, max_dist, 3, 1e-3f, accuracy, threshold, s, f, u, v);
    return mesh_query_point_result<R>(ok, s, f, u, v);
}
template <typename R> KC_FUNC void adj_mesh_query_point_sign_winding_number_s(kc::uint64 id, const vec3& p, f32 max_dist, f32, f32,
                                                                              kc::uint64&, vec3& adj_p, f32&, f32&, f32&,
                                                                              const R& adj_ret) {
    mesh_query_point_uv_adjoint(id, p, max_dist, adj_ret.u, adj_ret.v, adj_p);
}

// Default-argument overloads (epsilon 1e-3; accuracy 2, threshold 0.5).
template <typename R> KC_FUNC R mesh_query_point_sign_normal_s(kc::uint64 id, const vec3& p, f32 max_dist) {
    return mesh_query_point_sign_normal_s<R>(id, p, max_dist, 1e-3f);
}
template <typename R> KC_FUNC void adj_mesh_query_point_sign_normal_s(kc::uint64 id, const vec3& p, f32 max_dist, kc::uint64&,
                                                                      vec3& adj_p, f32&, const R& adj_ret) {
    mesh_query_point_uv_adjoint(id, p, max_dist, adj_ret.u, adj_ret.v, adj_p);
}
template <typename R> KC_FUNC R mesh_query_point_sign_winding_number_s(kc::uint64 id, const vec3& p, f32 max_dist) {
    return mesh_query_point_sign_winding_number_s<R>(id, p, max_dist, 2.0f, 0.5f);
}
template <typename R> KC_FUNC void adj_mesh_query_point_sign_winding_number_s(kc::uint64 id, const vec3& p, f32 max_dist, kc::uint64&,
                                                                              vec3& adj_p, f32&, const R& adj_ret) {
    mesh_query_point_uv_adjoint(id, p, max_dist, adj_ret.u, adj_ret.v, adj_p);
}

// Out-argument forms: bool f(id, p, max_dist, [sign,] face, u, v[, extra]) writing in place.
KC_FUNC bool mesh_query_point(kc::uint64 id, const vec3& p, f32 max_dist, f32& sign, i32& face, f32& u, f32& v) {
    return mesh_query_point_impl(id, p, max_dist, 1, 1e-3f, 2.0f, 0.5f, sign, face, u, v);
}
KC_FUNC bool mesh_query_point_no_sign(kc::uint64 id, const vec3& p, f32 max_dist, i32& face, f32& u, f32& v) {
    f32 s; return mesh_query_point_impl(id, p, max_dist, 0, 1e-3f, 2.0f, 0.5f, s, face, u, v);
}
KC_FUNC bool mesh_query_point_sign_normal(kc::uint64 id, const vec3& p, f32 max_dist, f32& sign, i32& face, f32& u, f32& v, f32 eps) {
    return mesh_query_point_impl(id, p, max_dist, 2, eps, 2.0f, 0.5f, sign, face, u, v);
}
KC_FUNC bool mesh_query_point_sign_winding_number(kc::uint64 id, const vec3& p, f32 max_dist, f32& sign, i32& face, f32& u, f32& v,
                                                  f32 accuracy, f32 threshold) {
    return mesh_query_point_impl(id, p, max_dist, 3, 1e-3f, accuracy, threshold, sign, face, u, v);
}
// In the out-argument forms the adjoints of u and v arrive in adj_u / adj_v (they hold the
// values written by the call); they flow to p and are consumed (the inputs were overwritten).
KC_FUNC void adj_mesh_query_point(kc::uint64 id, const vec3& p, f32 max_dist, f32&, i32&, f32&, f32&, kc::uint64&, vec3& adj_p,
                                  f32&, f32& adj_sign, i32&, f32& adj_u, f32& adj_v, bool) {
    mesh_query_point_uv_adjoint(id, p, max_dist, adj_u, adj_v, adj_p);
    adj_sign = 0.0f; adj_u = 0.0f; adj_v = 0.0f;
}
KC_FUNC void adj_mesh_query_point_no_sign(kc::uint64 id, const vec3& p, f32 max_dist, i32&, f32&, f32&, kc::uint64&, vec3& adj_p,
                                          f32&, i32&, f32& adj_u, f32& adj_v, bool) {
    mesh_query_point_uv_adjoint(id, p, max_dist, adj_u, adj_v, adj_p);
    adj_u = 0.0f; adj_v = 0.0f;
}
KC_FUNC void adj_mesh_query_point_sign_normal(kc::uint64 id, const vec3& p, f32 max_dist, f32&, i32&, f32&, f32&, f32, kc::uint64&,
                                              vec3& adj_p, f32&, f32& adj_sign, i32&, f32& adj_u, f32& adj_v, f32&, bool) {
    mesh_query_point_uv_adjoint(id, p, max_dist, adj_u, adj_v, adj_p);
    adj_sign = 0.0f; adj_u = 0.0f; adj_v = 0.0f;
}
KC_FUNC void adj_mesh_query_point_sign_winding_number(kc::uint64 id, const vec3& p, f32 max_dist, f32&, i32&, f32&, f32&, f32, f32,
                                                      kc::uint64&, vec3& adj_p, f32&, f32& adj_sign, i32&, f32& adj_u, f32& adj_v,
                                                      f32&, f32&, bool) {
    mesh_query_point_uv_adjoint(id, p, max_dist, adj_u, adj_v, adj_p);
    adj_sign = 0.0f; adj_u = 0.0f; adj_v = 0.0f;
}

// ---- builtins: ray ---------------------------------------------------------------------------
KC_FUNC bool mesh_query_ray_impl(kc::uint64 id, const vec3& o, const vec3& d, f32 max_t, f32& t, f32& u, f32& v, f32& sign,
                                 vec3& normal, i32& face) {
    const mesh_t* m = mesh_ptr(id);
    ray_hit_t h;
    if (!mesh_ray(m, o, d, max_t, h)) return false;
    t = h.t; u = h.u; v = h.v; face = h.face;
    normal = face_normal(m, h.face);
    sign = v_dot(normal, d) < 0.0f ? 1.0f : -1.0f;
    return true;
}

// Adjoint of (t, u, v) with respect to the ray origin and direction (the hit face fixed).
KC_FUNC void mesh_query_ray_adjoint(kc::uint64 id, const vec3& o, const vec3& d, f32 max_t, f32 g_t, f32 g_u, f32 g_v,
                                    vec3& adj_o, vec3& adj_d) {
    if (g_t == 0.0f && g_u == 0.0f && g_v == 0.0f) return;
    const mesh_t* m = mesh_ptr(id);
    ray_hit_t h;
    if (!mesh_ray(m, o, d, max_t, h)) return;
    vec3 a, b, c;
    face_vertices(m, h.face, a, b, c);
    vec3 n = v_cross(v_sub(b, a), v_sub(c, a));
    f32 nd = v_dot(n, d);
    if (nd == 0.0f) return;
    // h = o + t d; (u, v) are the in-plane coordinates of h; t = n.(a - o) / n.d
    vec3 gh = closest_weights_vjp(a, b, c, REG_FACE, g_u, g_v);
    f32 gt = g_t + v_dot(gh, d);
    vec3 go = v_sub(gh, v_mul(n, gt / nd));
    adj_o = v_add(adj_o, go);
    adj_d = v_add(adj_d, v_mul(go, h.t));
}

template <typename R> KC_FUNC R mesh_query_ray_s(kc::uint64 id, const vec3& o, const vec3& d, f32 max_t) {
    R r = {}; f32 t = 0.0f, u = 0.0f, v = 0.0f, s = 0.0f; vec3 n = v3(0.0f, 0.0f, 0.0f); i32 f = -1;
    r.result = mesh_query_ray_impl(id, o, d, max_t, t, u, v, s, n, f);
    r.t = t; r.u = u; r.v = v; r.sign = s; r.normal = n; r.face = f;
    return r;
}
template <typename R> KC_FUNC void adj_mesh_query_ray_s(kc::uint64 id, const vec3& o, const vec3& d, f32 max_t, kc::uint64&, vec3& adj_o,
                                                        vec3& adj_d, f32&, const R& adj_ret) {
    mesh_query_ray_adjoint(id, o, d, max_t, adj_ret.t, adj_ret.u, adj_ret.v, adj_o, adj_d);
}
KC_FUNC bool mesh_query_ray(kc::uint64 id, const vec3& o, const vec3& d, f32 max_t, f32& t, f32& u, f32& v, f32& sign, vec3& normal,
                            i32& face) {
    return mesh_query_ray_impl(id, o, d, max_t, t, u, v, sign, normal, face);
}
KC_FUNC void adj_mesh_query_ray(kc::uint64 id, const vec3& o, const vec3& d, f32 max_t, f32&, f32&, f32&, f32&, vec3&, i32&,
                                kc::uint64&, vec3& adj_o, vec3& adj_d, f32&, f32& adj_t, f32& adj_u, f32& adj_v, f32& adj_sign,
                                vec3& adj_normal, i32&, bool) {
    mesh_query_ray_adjoint(id, o, d, max_t, adj_t, adj_u, adj_v, adj_o, adj_d);
    adj_t = 0.0f; adj_u = 0.0f; adj_v = 0.0f; adj_sign = 0.0f; adj_normal = v3(0.0f, 0.0f, 0.0f);
}

// ---- builtins: face evaluation ------------------------------------------------------------
KC_FUNC vec3 mesh_eval_position(kc::uint64 id, i32 face, f32 u, f32 v) {
    const mesh_t* m = mesh_ptr(id);
    if (!m || face < 0 || face >= m->num_faces) return v3(0.0f, 0.0f, 0.0f);
    vec3 a, b, c;
    face_vertices(m, face, a, b, c);
    return v_lerp3(a, b, c, u, v);
}
KC_FUNC void adj_mesh_eval_position(kc::uint64 id, i32 face, f32 u, f32 v, kc::uint64&, i32&, f32& adj_u, f32& adj_v, const vec3& adj_ret) {
    const mesh_t* m = mesh_ptr(id);
    if (!m || face < 0 || face >= m->num_faces) return;
    vec3 a, b, c;
    face_vertices(m, face, a, b, c);
    adj_u += v_dot(adj_ret, v_sub(a, c));
    adj_v += v_dot(adj_ret, v_sub(b, c));
}
KC_FUNC vec3 mesh_eval_velocity(kc::uint64 id, i32 face, f32 u, f32 v) {
    const mesh_t* m = mesh_ptr(id);
    if (!m || !m->velocities || face < 0 || face >= m->num_faces) return v3(0.0f, 0.0f, 0.0f);
    const i32* idx = m->indices + 3 * face;
    return v_lerp3(m->velocities[idx[0]], m->velocities[idx[1]], m->velocities[idx[2]], u, v);
}
KC_FUNC void adj_mesh_eval_velocity(kc::uint64 id, i32 face, f32 u, f32 v, kc::uint64&, i32&, f32& adj_u, f32& adj_v, const vec3& adj_ret) {
    const mesh_t* m = mesh_ptr(id);
    if (!m || !m->velocities || face < 0 || face >= m->num_faces) return;
    const i32* idx = m->indices + 3 * face;
    const vec3 &a = m->velocities[idx[0]], &b = m->velocities[idx[1]], &c = m->velocities[idx[2]];
    adj_u += v_dot(adj_ret, v_sub(a, c));
    adj_v += v_dot(adj_ret, v_sub(b, c));
}
KC_FUNC vec3 mesh_eval_face_normal(kc::uint64 id, i32 face) {
    const mesh_t* m = mesh_ptr(id);
    if (!m || face < 0 || face >= m->num_faces) return v3(0.0f, 0.0f, 0.0f);
    return face_normal(m, face);
}
KC_FUNC void adj_mesh_eval_face_normal(kc::uint64, i32, kc::uint64&, i32&, const vec3&) {}
KC_FUNC vec3 mesh_get_point(kc::uint64 id, i32 index) {
    const mesh_t* m = mesh_ptr(id);
    if (!m || index < 0 || index >= m->num_points) return v3(0.0f, 0.0f, 0.0f);
    return m->points[index];
}
KC_FUNC void adj_mesh_get_point(kc::uint64, i32, kc::uint64&, i32&, const vec3&) {}
KC_FUNC i32 mesh_get_index(kc::uint64 id, i32 index) {
    const mesh_t* m = mesh_ptr(id);
    if (!m || index < 0 || index >= 3 * m->num_faces) return -1;
    return m->indices[index];
}
KC_FUNC void adj_mesh_get_index(kc::uint64, i32, kc::uint64&, i32&, i32) {}
KC_FUNC kc::uint64 mesh_get_bvh(kc::uint64 id) { const mesh_t* m = mesh_ptr(id); return m ? (kc::uint64)m->bvh : 0; }
KC_FUNC void adj_mesh_get_bvh(kc::uint64, kc::uint64&, kc::uint64) {}

// ---- builtins: faces overlapping a box ----------------------------------------------------------
KC_FUNC bvh_query_t mesh_query_aabb(kc::uint64 id, const vec3& lo, const vec3& hi) {
    const mesh_t* m = mesh_ptr(id);
    return bvh_query_make(m ? (kc::uint64)m->bvh : 0, 0, lo, hi, -1);
}
KC_FUNC void adj_mesh_query_aabb(kc::uint64, const vec3&, const vec3&, kc::uint64&, vec3&, vec3&, const bvh_query_t&) {}
KC_FUNC bool mesh_query_aabb_next(bvh_query_t& q, i32& index) { return bvh_query_next(q, index, GEO_INF); }
KC_FUNC void adj_mesh_query_aabb_next(bvh_query_t&, i32&, bvh_query_t&, i32&, bool) {}

}  // namespace geo
