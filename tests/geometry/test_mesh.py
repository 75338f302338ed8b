"""Mesh queries against brute force: closest points, signs, rays, boxes, gradients."""
import numpy as np
import pytest

import kernelcore as kc
import geometry
from geometry import Mesh

from geo_reference import brute_closest, brute_ray, random_triangles, sphere_mesh, winding_number


@kc.kernel
def query_points(mesh: kc.uint64, queries: kc.array(dtype=kc.vec3), max_dist: float, mode: int,
                 found: kc.array(dtype=kc.int32), face: kc.array(dtype=kc.int32), closest: kc.array(dtype=kc.vec3),
                 sign: kc.array(dtype=float)):
    i = kc.tid()
    p = queries[i]
    q = kc.mesh_query_point_no_sign(mesh, p, max_dist)
    if mode == 1:
        q = kc.mesh_query_point(mesh, p, max_dist)
    if mode == 2:
        q = kc.mesh_query_point_sign_normal(mesh, p, max_dist)
    if mode == 3:
        q = kc.mesh_query_point_sign_winding_number(mesh, p, max_dist, 2.0, 0.5)
    if q.result:
        found[i] = 1
        face[i] = q.face
        closest[i] = kc.mesh_eval_position(mesh, q.face, q.u, q.v)
        sign[i] = q.sign


# The seeds' example, as written there with kc in place of wp.
@kc.kernel
def project(positions: kc.array(dtype=kc.vec3),
            mesh: kc.uint64,
            output_pos: kc.array(dtype=kc.vec3),
            output_face: kc.array(dtype=int)):

    tid = kc.tid()

    x = kc.load(positions, tid)

    face_index = int(0)
    face_u = float(0.0)
    face_v = float(0.0)
    sign = float(0.0)

    max_dist = 2.0

    if (kc.mesh_query_point(mesh, x, max_dist, sign, face_index, face_u, face_v)):

        p = kc.mesh_eval_position(mesh, face_index, face_u, face_v)

        output_pos[tid] = p
        output_face[tid] = face_index


@kc.kernel
def cast_rays(mesh: kc.uint64, starts: kc.array(dtype=kc.vec3), dirs: kc.array(dtype=kc.vec3), max_t: float,
              t_out: kc.array(dtype=float), face: kc.array(dtype=kc.int32), sign: kc.array(dtype=float),
              hit_pos: kc.array(dtype=kc.vec3), normal: kc.array(dtype=kc.vec3)):
    i = kc.tid()
    q = kc.mesh_query_ray(mesh, starts[i], dirs[i], max_t)
    if q.result:
        t_out[i] = q.t
        face[i] = q.face
        sign[i] = q.sign
        hit_pos[i] = kc.mesh_eval_position(mesh, q.face, q.u, q.v)
        normal[i] = q.normal
    else:
        face[i] = -1


@kc.kernel
def cast_rays_out_args(mesh: kc.uint64, starts: kc.array(dtype=kc.vec3), dirs: kc.array(dtype=kc.vec3),
                       t_out: kc.array(dtype=float)):
    i = kc.tid()
    t = float(0.0)
    u = float(0.0)
    v = float(0.0)
    s = float(0.0)
    n = kc.vec3()
    f = int(0)
    t_out[i] = -1.0
    if kc.mesh_query_ray(mesh, starts[i], dirs[i], 1.0e6, t, u, v, s, n, f):
        t_out[i] = t


@kc.kernel
def faces_in_box(mesh: kc.uint64, lo: kc.vec3, hi: kc.vec3, hits: kc.array(dtype=kc.int32)):
    query = kc.mesh_query_aabb(mesh, lo, hi)
    face = int(0)
    while kc.mesh_query_aabb_next(query, face):
        hits[face] = hits[face] + 1


@kc.kernel
def closest_distance(mesh: kc.uint64, queries: kc.array(dtype=kc.vec3), out: kc.array(dtype=float)):
    i = kc.tid()
    p = queries[i]
    q = kc.mesh_query_point_no_sign(mesh, p, 10.0)
    c = kc.mesh_eval_position(mesh, q.face, q.u, q.v)
    out[i] = kc.length(p - c)


@kc.kernel
def closest_point_out(mesh: kc.uint64, queries: kc.array(dtype=kc.vec3), out: kc.array(dtype=kc.vec3)):
    i = kc.tid()
    p = queries[i]
    face = int(0)
    u = float(0.0)
    v = float(0.0)
    if kc.mesh_query_point_no_sign(mesh, p, 10.0, face, u, v):
        out[i] = kc.mesh_eval_position(mesh, face, u, v)


@kc.kernel
def ray_t(mesh: kc.uint64, starts: kc.array(dtype=kc.vec3), dirs: kc.array(dtype=kc.vec3), out: kc.array(dtype=float),
          hit: kc.array(dtype=kc.vec3)):
    i = kc.tid()
    q = kc.mesh_query_ray(mesh, starts[i], dirs[i], 100.0)
    out[i] = q.t
    hit[i] = kc.mesh_eval_position(mesh, q.face, q.u, q.v)


@kc.kernel
def evaluate_faces(mesh: kc.uint64, faces: kc.array(dtype=kc.int32), u: kc.array(dtype=float), v: kc.array(dtype=float),
                   pos: kc.array(dtype=kc.vec3), vel: kc.array(dtype=kc.vec3), normal: kc.array(dtype=kc.vec3)):
    i = kc.tid()
    pos[i] = kc.mesh_eval_position(mesh, faces[i], u[i], v[i])
    vel[i] = kc.mesh_eval_velocity(mesh, faces[i], u[i], v[i])
    normal[i] = kc.mesh_eval_face_normal(mesh, faces[i])


def _run_point_queries(mesh, queries, max_dist, mode):
    n = len(queries)
    found, face = kc.zeros(n, dtype=kc.int32), kc.zeros(n, dtype=kc.int32)
    closest, sign = kc.zeros(n, dtype=kc.vec3), kc.zeros(n, dtype=float)
    kc.launch(query_points, dim=n, inputs=[mesh.id, kc.array(queries, dtype=kc.vec3), max_dist, mode, found, face, closest, sign])
    return found.numpy().astype(bool), face.numpy(), closest.numpy(), sign.numpy()


@pytest.fixture(scope="module")
def closed_mesh():
    pts, tris = sphere_mesh(20, 40, radius=1.0, noise=0.3, seed=3)
    return pts, tris, Mesh(pts, tris.reshape(-1), support_winding_number=True)


@pytest.fixture(scope="module")
def soup_mesh():
    pts, tris = random_triangles(300, seed=5)
    return pts, tris, Mesh(pts, tris)


@pytest.mark.parametrize("which", ["closed", "soup"])
def test_closest_point_matches_brute_force(which, closed_mesh, soup_mesh):
    pts, tris, mesh = closed_mesh if which == "closed" else soup_mesh
    rng = np.random.default_rng(11)
    queries = (rng.random((400, 3)) * 3.0 - 1.5).astype(np.float32) if which == "closed" else \
        (rng.random((400, 3)) * 1.4 - 0.2).astype(np.float32)
    ref_d, _ = brute_closest(pts.astype(np.float64), tris, queries.astype(np.float64))
    found, face, closest, _ = _run_point_queries(mesh, queries, 10.0, 0)
    assert found.all()
    d = np.linalg.norm(queries - closest, axis=1)
    np.testing.assert_allclose(d, ref_d, atol=2e-5, rtol=1e-5)
    # the reported face is a closest one (ties allowed)
    a, b, c = (pts[tris[face, k]].astype(np.float64) for k in range(3))
    from geo_reference import closest_point_triangles
    fd = np.array([np.sqrt(closest_point_triangles(q, a[i:i + 1], b[i:i + 1], c[i:i + 1])[1][0]) for i, q in enumerate(queries)])
    np.testing.assert_allclose(fd, ref_d, atol=2e-5, rtol=1e-5)


def test_max_dist_limits_results(soup_mesh):
    pts, tris, mesh = soup_mesh
    rng = np.random.default_rng(2)
    queries = (rng.random((300, 3)) * 1.4 - 0.2).astype(np.float32)
    ref_d, _ = brute_closest(pts.astype(np.float64), tris, queries.astype(np.float64))
    max_dist = float(np.median(ref_d))
    found, _, closest, _ = _run_point_queries(mesh, queries, max_dist, 0)
    clear = np.abs(ref_d - max_dist) > 1e-5
    np.testing.assert_array_equal(found[clear], (ref_d < max_dist)[clear])


@pytest.mark.parametrize("mode", [1, 2, 3])
def test_signs_match_winding_number_on_closed_mesh(mode, closed_mesh):
    pts, tris, mesh = closed_mesh
    rng = np.random.default_rng(7)
    queries = (rng.random((500, 3)) * 3.0 - 1.5).astype(np.float32)
    inside = winding_number(pts.astype(np.float64), tris, queries.astype(np.float64)) > 0.5
    ref_d, _ = brute_closest(pts.astype(np.float64), tris, queries.astype(np.float64))
    found, _, closest, sign = _run_point_queries(mesh, queries, 10.0, mode)
    assert found.all()
    np.testing.assert_allclose(np.linalg.norm(queries - closest, axis=1), ref_d, atol=2e-5, rtol=1e-5)
    clear = ref_d > 1e-3
    np.testing.assert_array_equal((sign < 0)[clear], inside[clear])


def test_seed_project_kernel(closed_mesh):
    pts, tris, mesh = closed_mesh
    rng = np.random.default_rng(4)
    queries = (rng.random((300, 3)) * 2.0 - 1.0).astype(np.float32)
    out_pos = kc.zeros(len(queries), dtype=kc.vec3)
    out_face = kc.zeros(len(queries), dtype=int)
    kc.launch(project, dim=len(queries), inputs=[kc.array(queries, dtype=kc.vec3), mesh.id, out_pos, out_face])
    ref_d, _ = brute_closest(pts.astype(np.float64), tris, queries.astype(np.float64))
    d = np.linalg.norm(queries - out_pos.numpy(), axis=1)
    np.testing.assert_allclose(d, ref_d, atol=2e-5)
    assert (out_face.numpy() >= 0).all() and (out_face.numpy() < len(tris)).all()


def test_rays_match_brute_force(closed_mesh, soup_mesh):
    rng = np.random.default_rng(9)
    for pts, tris, mesh in (closed_mesh, soup_mesh):
        n = 300
        starts = (rng.random((n, 3)) * 3.0 - 1.5).astype(np.float32)
        dirs = rng.normal(size=(n, 3)).astype(np.float32)
        dirs *= rng.uniform(0.5, 2.0, size=(n, 1)).astype(np.float32)   # t is in multiples of |dir|
        t_out, face = kc.zeros(n, dtype=float), kc.zeros(n, dtype=kc.int32)
        sign, hit, normal = kc.zeros(n, dtype=float), kc.zeros(n, dtype=kc.vec3), kc.zeros(n, dtype=kc.vec3)
        kc.launch(cast_rays, dim=n, inputs=[mesh.id, kc.array(starts, dtype=kc.vec3), kc.array(dirs, dtype=kc.vec3), 1.0e6,
                                            t_out, face, sign, hit, normal])
        f = face.numpy()
        for i in range(n):
            t_ref, f_ref = brute_ray(pts, tris, starts[i], dirs[i])
            assert (f[i] >= 0) == (f_ref >= 0), i
            if f_ref >= 0:
                assert abs(t_out.numpy()[i] - t_ref) <= 1e-4 * max(1.0, t_ref), i
                np.testing.assert_allclose(hit.numpy()[i], starts[i] + t_ref * dirs[i], atol=1e-4)
                a, b, c = (pts[tris[f[i], k]].astype(np.float64) for k in range(3))
                nrm = np.cross(b - a, c - a)
                nrm /= np.linalg.norm(nrm)
                np.testing.assert_allclose(normal.numpy()[i], nrm, atol=1e-5)
                assert sign.numpy()[i] == (1.0 if np.dot(nrm, dirs[i]) < 0 else -1.0)
        # the out-argument form agrees
        t2 = kc.zeros(n, dtype=float)
        kc.launch(cast_rays_out_args, dim=n, inputs=[mesh.id, kc.array(starts, dtype=kc.vec3), kc.array(dirs, dtype=kc.vec3), t2])
        np.testing.assert_array_equal(np.where(f >= 0, t_out.numpy(), -1.0), t2.numpy())


def test_aabb_query_matches_brute_force(soup_mesh):
    pts, tris, mesh = soup_mesh
    lo, hi = np.array([0.2, 0.1, 0.3], np.float32), np.array([0.6, 0.5, 0.55], np.float32)
    hits = kc.zeros(len(tris), dtype=kc.int32)
    kc.launch(faces_in_box, dim=1, inputs=[mesh.id, kc.vec3(*lo), kc.vec3(*hi), hits])
    flo, fhi = pts[tris].min(axis=1), pts[tris].max(axis=1)
    ref = np.all(flo <= hi, axis=1) & np.all(fhi >= lo, axis=1)
    np.testing.assert_array_equal(hits.numpy(), ref.astype(np.int32))


def test_refit_follows_moved_points():
    pts, tris = sphere_mesh(10, 20)
    mesh = Mesh(pts, tris)
    mesh.points.numpy()[:] = pts * 2.0 + np.float32(0.5)
    mesh.refit()
    rng = np.random.default_rng(1)
    queries = (rng.random((200, 3)) * 6.0 - 2.5).astype(np.float32)
    ref_d, _ = brute_closest(pts.astype(np.float64) * 2.0 + 0.5, tris, queries.astype(np.float64))
    found, _, closest, _ = _run_point_queries(mesh, queries, 100.0, 0)
    assert found.all()
    np.testing.assert_allclose(np.linalg.norm(queries - closest, axis=1), ref_d, atol=5e-5)


def test_velocity_and_normal_evaluation():
    pts, tris = sphere_mesh(6, 12)
    vel = np.random.default_rng(0).normal(size=pts.shape).astype(np.float32)
    mesh = Mesh(pts, tris, velocities=vel)
    assert mesh.num_faces == len(tris)
    rng = np.random.default_rng(1)
    n = 50
    faces = rng.integers(0, len(tris), n).astype(np.int32)
    uv = rng.random((n, 2)).astype(np.float32) * 0.5
    pos, v, nrm = kc.zeros(n, dtype=kc.vec3), kc.zeros(n, dtype=kc.vec3), kc.zeros(n, dtype=kc.vec3)
    kc.launch(evaluate_faces, dim=n, inputs=[mesh.id, kc.array(faces, dtype=kc.int32), kc.array(uv[:, 0].copy(), dtype=float),
                                             kc.array(uv[:, 1].copy(), dtype=float), pos, v, nrm])
    w = np.stack([uv[:, 0], uv[:, 1], 1.0 - uv[:, 0] - uv[:, 1]], 1)[:, :, None]
    np.testing.assert_allclose(pos.numpy(), (pts[tris[faces]] * w).sum(axis=1), atol=1e-6)
    np.testing.assert_allclose(v.numpy(), (vel[tris[faces]] * w).sum(axis=1), atol=1e-5)
    a, b, c = (pts[tris[faces, k]] for k in range(3))
    ref = np.cross(b - a, c - a)
    np.testing.assert_allclose(nrm.numpy(), ref / np.linalg.norm(ref, axis=1, keepdims=True), atol=1e-6)
    d = mesh.signed_distance(np.array([[0, 0, 0], [0, 0, 3.0]], np.float32))
    assert d[0] < 0 < d[1]


def test_gradient_of_distance_matches_finite_differences(closed_mesh):
    pts, tris, mesh = closed_mesh
    rng = np.random.default_rng(5)
    q0 = (rng.random((64, 3)) * 3.0 - 1.5).astype(np.float32)
    x = kc.array(q0, dtype=kc.vec3, requires_grad=True)
    out = kc.zeros(len(q0), dtype=float, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(closest_distance, dim=len(q0), inputs=[mesh.id, x, out])
    tape.backward(grads={out: np.ones(len(q0), np.float32)})
    g = x.grad.numpy().astype(np.float64)
    # analytic reference: d|p - c(p)|/dp = (p - c) / |p - c| (the closest point moves tangentially)
    ref_d, _ = brute_closest(pts.astype(np.float64), tris, q0.astype(np.float64))
    h = 1e-3
    fd = np.zeros_like(g)
    for k in range(3):
        e = np.zeros(3)
        e[k] = h
        dp, _ = brute_closest(pts.astype(np.float64), tris, q0.astype(np.float64) + e)
        dm, _ = brute_closest(pts.astype(np.float64), tris, q0.astype(np.float64) - e)
        fd[:, k] = (dp - dm) / (2 * h)
    np.testing.assert_allclose(g, fd, atol=5e-3)


def test_gradient_of_closest_point_is_a_tangent_projection(closed_mesh):
    pts, tris, mesh = closed_mesh
    rng = np.random.default_rng(6)
    q0 = (rng.normal(size=(32, 3)) * 0.4).astype(np.float32)
    for k in range(3):
        x = kc.array(q0, dtype=kc.vec3, requires_grad=True)
        out = kc.zeros(len(q0), dtype=kc.vec3, requires_grad=True)
        tape = kc.Tape()
        with tape:
            kc.launch(closest_point_out, dim=len(q0), inputs=[mesh.id, x, out])
        seed = np.zeros((len(q0), 3), np.float32)
        seed[:, k] = 1.0
        tape.backward(grads={out: seed})
        g = x.grad.numpy().astype(np.float64)
        h = 1e-3
        for j in range(3):
            e = np.zeros(3, np.float32)
            e[j] = h
            cp, cm = kc.zeros(len(q0), dtype=kc.vec3), kc.zeros(len(q0), dtype=kc.vec3)
            kc.launch(closest_point_out, dim=len(q0), inputs=[mesh.id, kc.array(q0 + e, dtype=kc.vec3), cp])
            kc.launch(closest_point_out, dim=len(q0), inputs=[mesh.id, kc.array(q0 - e, dtype=kc.vec3), cm])
            fd = (cp.numpy()[:, k].astype(np.float64) - cm.numpy()[:, k]) / (2 * h)
            # points whose closest face changes within +-h are excluded by comparing the two sides
            ok = np.abs(fd - g[:, j]) < 2e-2
            assert ok.mean() > 0.9, (k, j, ok.mean())


def test_gradient_of_ray_t_matches_finite_differences(closed_mesh):
    pts, tris, mesh = closed_mesh
    rng = np.random.default_rng(8)
    n = 32
    starts = (rng.normal(size=(n, 3)) * 0.2).astype(np.float32)     # inside: every ray hits
    dirs = rng.normal(size=(n, 3)).astype(np.float32)
    s = kc.array(starts, dtype=kc.vec3, requires_grad=True)
    d = kc.array(dirs, dtype=kc.vec3, requires_grad=True)
    out = kc.zeros(n, dtype=float, requires_grad=True)
    hit = kc.zeros(n, dtype=kc.vec3)
    tape = kc.Tape()
    with tape:
        kc.launch(ray_t, dim=n, inputs=[mesh.id, s, d, out, hit])
    tape.backward(grads={out: np.ones(n, np.float32)})
    h = 1e-3

    def t_of(st, di):
        return np.array([brute_ray(pts.astype(np.float64), tris, st[i], di[i])[0] for i in range(n)])

    for arr, grad, which in ((starts, s.grad.numpy(), 0), (dirs, d.grad.numpy(), 1)):
        fd = np.zeros((n, 3))
        for k in range(3):
            e = np.zeros(3)
            e[k] = h
            if which == 0:
                fd[:, k] = (t_of(starts + e, dirs) - t_of(starts - e, dirs)) / (2 * h)
            else:
                fd[:, k] = (t_of(starts, dirs + e) - t_of(starts, dirs - e)) / (2 * h)
        ok = np.all(np.abs(fd - grad) < 1e-2 * np.maximum(1.0, np.abs(fd)), axis=1)
        assert ok.mean() > 0.9, ok.mean()


def test_degenerate_faces_are_skipped():
    pts = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0.5, 0.5, 1.0], [2.0, 2.0, 2.0]], np.float32)
    tris = np.array([[0, 1, 2], [0, 3, 3], [4, 4, 4], [1, 4, 1]], np.int32)   # one good face, three degenerate
    mesh = Mesh(pts, tris)
    np.testing.assert_array_equal(mesh.degenerate_faces(), [1, 2, 3])
    queries = np.array([[0.5, 0.5, 1.0], [2.0, 2.0, 2.1], [0.2, 0.2, -0.5]], np.float32)
    found, face, closest, _ = _run_point_queries(mesh, queries, 10.0, 2)
    assert found.all() and (face == 0).all()
    ref_d, _ = brute_closest(pts.astype(np.float64), tris[:1], queries.astype(np.float64))
    np.testing.assert_allclose(np.linalg.norm(queries - closest, axis=1), ref_d, atol=1e-6)
    n = 2
    t_out, fc = kc.zeros(n, dtype=float), kc.zeros(n, dtype=kc.int32)
    sign, hit, normal = kc.zeros(n, dtype=float), kc.zeros(n, dtype=kc.vec3), kc.zeros(n, dtype=kc.vec3)
    starts = np.array([[2.0, 2.0, 3.0], [0.2, 0.2, 1.0]], np.float32)
    dirs = np.array([[0, 0, -1.0], [0, 0, -1.0]], np.float32)
    kc.launch(cast_rays, dim=n, inputs=[mesh.id, kc.array(starts, dtype=kc.vec3), kc.array(dirs, dtype=kc.vec3), 100.0,
                                        t_out, fc, sign, hit, normal])
    np.testing.assert_array_equal(fc.numpy(), [-1, 0])


def test_bad_mesh_input_is_a_value_error():
    pts = np.zeros((4, 3), np.float32)
    with pytest.raises(ValueError, match="indices"):
        Mesh(pts, np.array([0, 1, 4], np.int32))
    with pytest.raises(ValueError, match="indices"):
        Mesh(pts, np.array([0, 1, -1], np.int32))
    with pytest.raises(ValueError, match="indices"):
        Mesh(pts, np.array([0, 1], np.int32))
    with pytest.raises(ValueError, match="indices"):
        Mesh(pts, np.zeros(0, np.int32))
    with pytest.raises(ValueError, match="indices"):
        Mesh(pts, np.array([0.0, 1.0, 2.0]))
    with pytest.raises(ValueError, match="points"):
        Mesh(np.zeros((0, 3), np.float32), np.array([0, 1, 2], np.int32))
    with pytest.raises(ValueError, match="points"):
        Mesh(np.zeros((4, 2), np.float32), np.array([0, 1, 2], np.int32))
    with pytest.raises(ValueError, match="velocities"):
        Mesh(pts, np.array([0, 1, 2], np.int32), velocities=np.zeros((3, 3), np.float32))
    mesh = Mesh(np.eye(3, dtype=np.float32), np.array([0, 1, 2], np.int32))
    with pytest.raises(ValueError, match="sign"):
        mesh.signed_distance(np.zeros((1, 3), np.float32), sign="parity")
