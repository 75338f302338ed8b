"""Volume samples against trilinear interpolation of the dense source; gradients; SDF from a mesh."""
import numpy as np
import pytest

import kernelcore as kc
from geometry import Mesh, Volume

from geo_reference import brute_closest, sphere_mesh, winding_number


@kc.kernel
def sample(volume: kc.uint64, uvw: kc.array(dtype=kc.vec3), mode: int, out: kc.array(dtype=float),
           grad: kc.array(dtype=kc.vec3), grad_value: kc.array(dtype=float)):
    i = kc.tid()
    out[i] = kc.volume_sample_f(volume, uvw[i], mode)
    g = kc.vec3()
    grad_value[i] = kc.volume_sample_grad_f(volume, uvw[i], mode, g)
    grad[i] = g


@kc.kernel
def sample_world(volume: kc.uint64, xyz: kc.array(dtype=kc.vec3), out: kc.array(dtype=float),
                 roundtrip: kc.array(dtype=kc.vec3)):
    i = kc.tid()
    out[i] = kc.volume_sample_world(volume, xyz[i], kc.Volume.LINEAR)
    uvw = kc.volume_world_to_index(volume, xyz[i])
    roundtrip[i] = kc.volume_index_to_world(volume, uvw)


@kc.kernel
def sample_linear(volume: kc.uint64, xyz: kc.array(dtype=kc.vec3), out: kc.array(dtype=float)):
    i = kc.tid()
    out[i] = kc.volume_sample_f(volume, kc.volume_world_to_index(volume, xyz[i]), kc.Volume.LINEAR)


@kc.kernel
def grad_norm_sq(volume: kc.uint64, uvw: kc.array(dtype=kc.vec3), out: kc.array(dtype=float)):
    i = kc.tid()
    g = kc.vec3()
    v = kc.volume_sample_grad_f(volume, uvw[i], kc.Volume.LINEAR, g)
    out[i] = v + kc.dot(g, kc.vec3(1.0, 2.0, 3.0))


@kc.kernel
def lookup(volume: kc.uint64, ijk: kc.array(dtype=kc.vec3i), out: kc.array(dtype=float)):
    i = kc.tid()
    c = ijk[i]
    out[i] = kc.volume_lookup_f(volume, c[0], c[1], c[2])


@kc.kernel
def store(volume: kc.uint64, ijk: kc.array(dtype=kc.vec3i), values: kc.array(dtype=float)):
    i = kc.tid()
    c = ijk[i]
    kc.volume_store_f(volume, c[0], c[1], c[2], values[i])


def trilinear(dense, bg, uvw):
    """Reference: trilinear interpolation of dense[i, j, k] at index points, bg outside."""
    uvw = np.asarray(uvw, np.float64)
    base = np.floor(uvw).astype(np.int64)
    t = uvw - base
    out = np.zeros(len(uvw))
    for c in range(8):
        o = np.array([c & 1, (c >> 1) & 1, (c >> 2) & 1])
        idx = base + o
        inside = np.all((idx >= 0) & (idx < np.array(dense.shape)), axis=1)
        v = np.full(len(uvw), bg, np.float64)
        ii = idx[inside]
        v[inside] = dense[ii[:, 0], ii[:, 1], ii[:, 2]]
        w = np.prod(np.where(o == 1, t, 1.0 - t), axis=1)
        out += w * v
    return out


def _dense(seed=0, shape=(21, 13, 18), bg=0.5):
    rng = np.random.default_rng(seed)
    dense = rng.normal(size=shape).astype(np.float32)
    dense[:, :, 9:] = bg                       # a region holding only background: its bricks are not stored
    return dense


def test_samples_match_trilinear_interpolation():
    bg = 0.5
    dense = _dense(bg=bg)
    vol = Volume.load_from_numpy(dense, bg_value=bg)
    assert vol.num_bricks < np.prod([(s + 7) // 8 for s in dense.shape])   # sparse
    rng = np.random.default_rng(1)
    uvw = (rng.random((4000, 3)) * (np.array(dense.shape) + 4) - 2).astype(np.float32)
    n = len(uvw)
    out, grad, gv = kc.zeros(n, dtype=float), kc.zeros(n, dtype=kc.vec3), kc.zeros(n, dtype=float)
    kc.launch(sample, dim=n, inputs=[vol.id, kc.array(uvw, dtype=kc.vec3), Volume.LINEAR, out, grad, gv])
    ref = trilinear(dense.astype(np.float64), bg, uvw)
    np.testing.assert_allclose(out.numpy(), ref, atol=2e-5)
    np.testing.assert_allclose(gv.numpy(), ref, atol=2e-5)
    h = 1e-3
    fd = np.stack([(trilinear(dense, bg, uvw + h * e) - trilinear(dense, bg, uvw - h * e)) / (2 * h) for e in np.eye(3)], 1)
    frac = uvw - np.floor(uvw)
    clear = np.all((frac > 2 * h) & (frac < 1 - 2 * h), axis=1)    # away from cell faces (kinks)
    np.testing.assert_allclose(grad.numpy()[clear], fd[clear], atol=2e-3)

    kc.launch(sample, dim=n, inputs=[vol.id, kc.array(uvw, dtype=kc.vec3), Volume.CLOSEST, out, grad, gv])
    r = np.sign(uvw) * np.floor(np.abs(uvw) + 0.5)      # nearest voxel, halfway away from zero
    ok = np.all(np.abs(np.abs(uvw - np.trunc(uvw)) - 0.5) > 1e-4, axis=1)
    ref_c = trilinear(dense, bg, r.astype(np.float32))
    np.testing.assert_allclose(out.numpy()[ok], ref_c[ok], atol=1e-6)
    assert np.all(grad.numpy() == 0.0)


def test_world_space_and_lookup():
    bg = -1.0
    dense = _dense(2, (9, 17, 8), bg)
    vol = Volume.load_from_numpy(dense, min_world=(1.0, -2.0, 0.5), voxel_size=0.25, bg_value=bg)
    rng = np.random.default_rng(3)
    xyz = (rng.random((1000, 3)) * np.array([3.0, 5.0, 3.0]) + np.array([0.5, -2.5, 0.0])).astype(np.float32)
    out, rt = kc.zeros(len(xyz), dtype=float), kc.zeros(len(xyz), dtype=kc.vec3)
    kc.launch(sample_world, dim=len(xyz), inputs=[vol.id, kc.array(xyz, dtype=kc.vec3), out, rt])
    uvw = (xyz - np.array([1.0, -2.0, 0.5])) / 0.25
    np.testing.assert_allclose(out.numpy(), trilinear(dense, bg, uvw), atol=3e-5)
    np.testing.assert_allclose(rt.numpy(), xyz, atol=1e-5)
    np.testing.assert_allclose(vol.world_to_index(xyz), uvw, atol=1e-5)
    ijk = np.stack(np.meshgrid(np.arange(-2, 11), np.arange(-1, 19), np.arange(-3, 9), indexing="ij"), -1).reshape(-1, 3)
    res = kc.zeros(len(ijk), dtype=float)
    kc.launch(lookup, dim=len(ijk), inputs=[vol.id, kc.array(ijk.astype(np.int32), dtype=kc.vec3i), res])
    inside = np.all((ijk >= 0) & (ijk < np.array(dense.shape)), axis=1)
    ref = np.full(len(ijk), bg, np.float32)
    ref[inside] = dense[ijk[inside, 0], ijk[inside, 1], ijk[inside, 2]]
    np.testing.assert_array_equal(res.numpy(), ref)


def test_sample_gradients_match_finite_differences():
    bg = 0.0
    dense = _dense(4, (12, 12, 12), bg)
    vol = Volume.load_from_numpy(dense, min_world=(0.0, 0.0, 0.0), voxel_size=0.5, bg_value=bg)
    rng = np.random.default_rng(5)
    xyz = (rng.random((200, 3)) * 5.0 + 0.3).astype(np.float32)
    x = kc.array(xyz, dtype=kc.vec3, requires_grad=True)
    out = kc.zeros(len(xyz), dtype=float, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(sample_linear, dim=len(xyz), inputs=[vol.id, x, out])
    tape.backward(grads={out: np.ones(len(xyz), np.float32)})
    h = 1e-3
    f = lambda p: trilinear(dense, bg, p / 0.5)  # noqa: E731
    fd = np.stack([(f(xyz + h * e) - f(xyz - h * e)) / (2 * h) for e in np.eye(3)], 1)
    frac = xyz / 0.5 - np.floor(xyz / 0.5)
    clear = np.all((frac > 4 * h) & (frac < 1 - 4 * h), axis=1)
    np.testing.assert_allclose(x.grad.numpy()[clear], fd[clear], rtol=1e-3, atol=2e-3)

    # second order: the gradient output differentiated through volume_sample_grad_f
    uvw = (rng.random((200, 3)) * 9.0 + 1.0).astype(np.float32)
    u = kc.array(uvw, dtype=kc.vec3, requires_grad=True)
    out = kc.zeros(len(uvw), dtype=float, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(grad_norm_sq, dim=len(uvw), inputs=[vol.id, u, out])
    tape.backward(grads={out: np.ones(len(uvw), np.float32)})

    def g(p):
        fdg = np.stack([(trilinear(dense, bg, p + 1e-4 * e) - trilinear(dense, bg, p - 1e-4 * e)) / 2e-4 for e in np.eye(3)], 1)
        return trilinear(dense, bg, p) + fdg @ np.array([1.0, 2.0, 3.0])

    fd = np.stack([(g(uvw + h * e) - g(uvw - h * e)) / (2 * h) for e in np.eye(3)], 1)
    frac = uvw - np.floor(uvw)
    clear = np.all((frac > 4 * h) & (frac < 1 - 4 * h), axis=1)
    np.testing.assert_allclose(u.grad.numpy()[clear], fd[clear], rtol=1e-2, atol=1e-2)


def test_allocate_by_voxels_and_store():
    rng = np.random.default_rng(6)
    pts = (rng.random((50, 3)) * 40.0 - 20.0).astype(np.float32)
    vol = Volume.allocate_by_voxels(pts, voxel_size=0.5, bg_value=-3.0)
    ijk = np.floor(pts / 0.5 + 0.5).astype(np.int32)
    ijk = np.unique(ijk, axis=0)
    vals = np.arange(len(ijk), dtype=np.float32)
    kc.launch(store, dim=len(ijk), inputs=[vol.id, kc.array(ijk, dtype=kc.vec3i), kc.array(vals, dtype=float)])
    res = kc.zeros(len(ijk), dtype=float)
    kc.launch(lookup, dim=len(ijk), inputs=[vol.id, kc.array(ijk, dtype=kc.vec3i), res])
    np.testing.assert_array_equal(res.numpy(), vals)
    far = np.array([[1000, 1000, 1000]], np.int32)
    kc.launch(lookup, dim=1, inputs=[vol.id, kc.array(far, dtype=kc.vec3i), res])
    assert res.numpy()[0] == -3.0
    assert vol.num_bricks == len(np.unique(np.floor_divide(ijk, 8), axis=0))


def test_sdf_from_mesh():
    pts, tris = sphere_mesh(16, 32, radius=1.0)
    mesh = Mesh(pts, tris)
    vs = 0.1
    vol = Volume.from_mesh_sdf(mesh, voxel_size=vs, band_width=0.3)
    # voxel values are the clamped signed distance to the mesh
    ijk = np.concatenate([t + np.stack(np.meshgrid(*[np.arange(8)] * 3, indexing="ij"), -1).reshape(-1, 3)
                          for t in vol.get_tiles()[::7]])
    res = kc.zeros(len(ijk), dtype=float)
    kc.launch(lookup, dim=len(ijk), inputs=[vol.id, kc.array(ijk.astype(np.int32), dtype=kc.vec3i), res])
    world = vol.index_to_world(ijk)
    d, _ = brute_closest(pts.astype(np.float64), tris, world)
    inside = winding_number(pts.astype(np.float64), tris, world) > 0.5
    ref = np.clip(np.where(inside, -d, d), -0.3, 0.3)
    np.testing.assert_allclose(res.numpy(), ref, atol=1e-4)
    # world-space samples near the surface approximate the distance to the sphere
    rng = np.random.default_rng(7)
    dirs = rng.normal(size=(500, 3))
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    p = (dirs * rng.uniform(0.85, 1.15, size=(500, 1))).astype(np.float32)
    out = kc.zeros(500, dtype=float)
    kc.launch(sample_linear, dim=500, inputs=[vol.id, kc.array(p, dtype=kc.vec3), out])
    d, _ = brute_closest(pts.astype(np.float64), tris, p.astype(np.float64))
    sd = np.where(winding_number(pts.astype(np.float64), tris, p.astype(np.float64)) > 0.5, -d, d)
    assert np.abs(out.numpy() - sd).max() < 0.02


def test_bad_input_is_a_value_error():
    with pytest.raises(ValueError, match="ndarray"):
        Volume.load_from_numpy(np.zeros((4, 4)))
    with pytest.raises(ValueError, match="voxel_size"):
        Volume.load_from_numpy(np.zeros((4, 4, 4)), voxel_size=0.0)
    with pytest.raises(ValueError, match="ndarray"):
        Volume.load_from_numpy(np.full((4, 4, 4), np.nan))
    with pytest.raises(ValueError, match="voxel_points"):
        Volume.allocate_by_voxels(np.zeros((0, 3), np.float32))
    with pytest.raises(NotImplementedError, match="NanoVDB"):
        Volume.load_from_nvdb("x.nvdb")
