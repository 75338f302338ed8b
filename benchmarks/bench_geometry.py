"""Geometry benchmark: hash grid build + neighbour queries, mesh BVH build + closest points.

(a) Hash grid: 100K points uniform in the unit cube, a 128^3 table, radius chosen for about
    29 neighbours per point; the query kernel visits points in cell order
    (``hash_grid_point_id``) and writes, per point, the neighbour count and the sum of
    (r - d) over the neighbours.
(b) Mesh: a latitude-longitude sphere of ~20K triangles; build = Mesh construction (face
    bounds + BVH); queries = 1M points uniform in [-1.5, 1.5]^3, closest point unsigned
    (``mesh_query_point_no_sign``) and signed (``mesh_query_point``: sign by three axis rays),
    writing the (signed) distance.

When warp-lang is importable the same kernels written for Warp run on its CPU device in the
same process, interleaved with kernelcore's (kc, warp, kc, ...), and their results are
checked against each other. kernelcore runs with its default thread count (all cores) and
with one thread (``--kc-threads default,1``); Warp's CPU backend runs on one thread.
Hash-grid samples are the mean of ``--calls`` back-to-back calls (steady state, as in a
simulation loop); single calls are reported too (``query_single_call_*``): on a VM whose idle
vCPU is lent to other guests while Warp runs alone, kernelcore's second thread then starts
with cold caches.
Reported: medians (seconds) and ratios warp / kc (> 1: kernelcore faster).

Run: python benchmarks/bench_geometry.py --repeats 5 --out benchmarks/results/geometry.json
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import kernelcore as kc  # noqa: E402
import geometry  # noqa: E402
from common import environment, interleaved, ratio, write_json  # noqa: E402

GRID_POINTS = 100_000
GRID_DIM = 128
GRID_NEIGHBOURS = 29          # target mean neighbour count (self included)
MESH_LAT, MESH_LON = 100, 100  # 2 * 100 * 98 + 200 = 19,800 triangles
MESH_QUERIES = 1_000_000
MAX_DIST = 10.0


# ---------------------------------------------------------------------------------------------
# kernelcore kernels
# ---------------------------------------------------------------------------------------------
@kc.kernel(enable_backward=False)
def kc_grid_query(grid: kc.uint64, points: kc.array(dtype=kc.vec3), radius: float,
                  counts: kc.array(dtype=kc.int32), sums: kc.array(dtype=float)):
    tid = kc.tid()
    i = kc.hash_grid_point_id(grid, tid)
    p = points[i]
    query = kc.hash_grid_query(grid, p, radius)
    index = int(0)
    c = int(0)
    s = float(0.0)
    while kc.hash_grid_query_next(query, index):
        d = kc.length(p - points[index])
        if d <= radius:
            c += 1
            s += radius - d
    counts[i] = c
    sums[i] = s


@kc.kernel(enable_backward=False)
def kc_closest_unsigned(mesh: kc.uint64, queries: kc.array(dtype=kc.vec3), max_dist: float, out: kc.array(dtype=float)):
    i = kc.tid()
    p = queries[i]
    q = kc.mesh_query_point_no_sign(mesh, p, max_dist)
    d = max_dist
    if q.result:
        d = kc.length(p - kc.mesh_eval_position(mesh, q.face, q.u, q.v))
    out[i] = d


@kc.kernel(enable_backward=False)
def kc_closest_signed(mesh: kc.uint64, queries: kc.array(dtype=kc.vec3), max_dist: float, out: kc.array(dtype=float)):
    i = kc.tid()
    p = queries[i]
    q = kc.mesh_query_point(mesh, p, max_dist)
    d = max_dist
    if q.result:
        d = kc.length(p - kc.mesh_eval_position(mesh, q.face, q.u, q.v)) * q.sign
    out[i] = d


# ---------------------------------------------------------------------------------------------
# the same kernels for Warp (defined only when warp-lang is installed)
# ---------------------------------------------------------------------------------------------
def warp_kernels(wp):
    @wp.kernel(enable_backward=False)
    def wp_grid_query(grid: wp.uint64, points: wp.array(dtype=wp.vec3), radius: float,
                      counts: wp.array(dtype=wp.int32), sums: wp.array(dtype=float)):
        tid = wp.tid()
        i = wp.hash_grid_point_id(grid, tid)
        p = points[i]
        query = wp.hash_grid_query(grid, p, radius)
        index = int(0)
        c = int(0)
        s = float(0.0)
        while wp.hash_grid_query_next(query, index):
            d = wp.length(p - points[index])
            if d <= radius:
                c += 1
                s += radius - d
        counts[i] = c
        sums[i] = s

    @wp.kernel(enable_backward=False)
    def wp_closest_unsigned(mesh: wp.uint64, queries: wp.array(dtype=wp.vec3), max_dist: float, out: wp.array(dtype=float)):
        i = wp.tid()
        p = queries[i]
        q = wp.mesh_query_point_no_sign(mesh, p, max_dist)
        d = max_dist
        if q.result:
            d = wp.length(p - wp.mesh_eval_position(mesh, q.face, q.u, q.v))
        out[i] = d

    @wp.kernel(enable_backward=False)
    def wp_closest_signed(mesh: wp.uint64, queries: wp.array(dtype=wp.vec3), max_dist: float, out: wp.array(dtype=float)):
        i = wp.tid()
        p = queries[i]
        q = wp.mesh_query_point(mesh, p, max_dist)
        d = max_dist
        if q.result:
            d = wp.length(p - wp.mesh_eval_position(mesh, q.face, q.u, q.v)) * q.sign
        out[i] = d

    return wp_grid_query, wp_closest_unsigned, wp_closest_signed


def sphere_mesh(n_lat, n_lon):
    """Closed latitude-longitude unit sphere (outward winding): points (n, 3), indices (3t,)."""
    theta = np.linspace(0, np.pi, n_lat + 1)[1:-1]
    phi = np.linspace(0, 2 * np.pi, n_lon, endpoint=False)
    tt, pp = np.meshgrid(theta, phi, indexing="ij")
    ring = np.stack([np.sin(tt) * np.cos(pp), np.sin(tt) * np.sin(pp), np.cos(tt)], -1).reshape(-1, 3)
    pts = np.concatenate([[[0, 0, 1]], ring, [[0, 0, -1]]]).astype(np.float32)
    j = np.arange(n_lon)
    idx = lambda i, jj: 1 + i * n_lon + (jj % n_lon)  # noqa: E731
    tris = [np.stack([np.zeros(n_lon, int), idx(0, j), idx(0, j + 1)], 1)]
    for i in range(n_lat - 2):
        a, b, c, d = idx(i, j), idx(i + 1, j), idx(i + 1, j + 1), idx(i, j + 1)
        tris += [np.stack([a, b, c], 1), np.stack([a, c, d], 1)]
    last = len(pts) - 1
    tris.append(np.stack([np.full(n_lon, last), idx(n_lat - 2, j + 1), idx(n_lat - 2, j)], 1))
    return pts, np.concatenate(tris).astype(np.int32).reshape(-1)


def set_kc_threads(n):
    if n == "default":
        os.environ.pop("KERNELCORE_NUM_THREADS", None)
    else:
        os.environ["KERNELCORE_NUM_THREADS"] = str(n)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default=None, help="also write the JSON here")
    ap.add_argument("--kc-threads", default="default,1", help="comma list of kernelcore thread counts")
    ap.add_argument("--grid-points", type=int, default=GRID_POINTS)
    ap.add_argument("--mesh-queries", type=int, default=MESH_QUERIES)
    ap.add_argument("--calls", type=int, default=5,
                    help="hash grid: back-to-back calls per sample (steady state); single calls are reported too")
    ap.add_argument("--no-warp", action="store_true", help="kernelcore figures only")
    args = ap.parse_args(argv)
    # Warp prints its start-up and module-load messages to stdout: keep stdout for the JSON
    with contextlib.redirect_stdout(sys.stderr):
        results, wp = run(args)
    out = {"benchmark": "geometry", "environment": environment(),
           "warp_version": getattr(wp, "__version__", None) if wp is not None else None,
           "note": "speedup = warp median / kernelcore median (> 1: kernelcore faster); Warp's CPU backend is single-threaded",
           "results": results}
    write_json(out, args.out)
    return out


def run(args):

    wp = None
    if not args.no_warp:
        try:
            import warp as wp
            wp.config.quiet = True
            wp.init()
        except ImportError:
            wp = None
    rng = np.random.default_rng(0)
    thread_opts = [t.strip() for t in args.kc_threads.split(",") if t.strip()]

    # ---- (a) hash grid -------------------------------------------------------------------
    n = args.grid_points
    pts_np = rng.random((n, 3)).astype(np.float32)
    radius = float((GRID_NEIGHBOURS * 3.0 / (4.0 * np.pi * n)) ** (1.0 / 3.0))
    kc_pts = kc.array(pts_np, dtype=kc.vec3)
    kc_grid = geometry.HashGrid(GRID_DIM, GRID_DIM, GRID_DIM)
    kc_counts, kc_sums = kc.zeros(n, dtype=kc.int32), kc.zeros(n, dtype=float)
    cases_build, cases_query = {}, {}
    cases_build["kc"] = lambda: kc_grid.build(kc_pts, radius) and None
    cases_query["kc"] = lambda: kc.launch(kc_grid_query, dim=n, inputs=[kc_grid.id, kc_pts, radius, kc_counts, kc_sums]) and None
    if wp is not None:
        wk_grid, wk_unsigned, wk_signed = warp_kernels(wp)
        wp_pts = wp.array(pts_np, dtype=wp.vec3, device="cpu")
        wp_grid = wp.HashGrid(GRID_DIM, GRID_DIM, GRID_DIM, device="cpu")
        wp_counts, wp_sums = wp.zeros(n, dtype=wp.int32, device="cpu"), wp.zeros(n, dtype=float, device="cpu")
        cases_build["warp"] = lambda: wp_grid.build(wp_pts, radius)
        def wp_grid_query():
            wp.launch(wk_grid, dim=n, inputs=[wp_grid.id, wp_pts, radius, wp_counts, wp_sums], device="cpu")
            wp.synchronize_device("cpu")

        cases_query["warp"] = wp_grid_query
    results = {"hash_grid": {"points": n, "dims": GRID_DIM, "radius": radius}, "mesh": {}}
    hg = results["hash_grid"]
    for th in thread_opts:
        set_kc_threads(th)
        b = interleaved(cases_build, repeats=args.repeats, calls=args.calls)
        q = interleaved(cases_query, repeats=args.repeats, calls=args.calls)
        q1 = interleaved(cases_query, repeats=args.repeats)
        hg[f"kc_threads={th}"] = {"build_s": b["kc"]["median"], "query_s": q["kc"]["median"],
                                  "query_single_call_s": q1["kc"]["median"]}
        if wp is not None:
            hg.setdefault("warp", {"build_s": [], "query_s": [], "query_single_call_s": []})
            hg["warp"]["build_s"].append(b["warp"]["median"])
            hg["warp"]["query_s"].append(q["warp"]["median"])
            hg["warp"]["query_single_call_s"].append(q1["warp"]["median"])
    set_kc_threads("default")
    hg["mean_neighbours"] = float(kc_counts.numpy().mean())
    if wp is not None:
        hg["warp"] = {k: float(np.median(v)) for k, v in hg["warp"].items()}
        hg["results_match_warp"] = bool(np.array_equal(kc_counts.numpy(), wp_counts.numpy())
                                        and np.allclose(kc_sums.numpy(), wp_sums.numpy(), rtol=1e-4, atol=1e-5))
        for th in thread_opts:
            r = hg[f"kc_threads={th}"]
            r["build_speedup_vs_warp"] = ratio(hg["warp"]["build_s"], r["build_s"])
            r["query_speedup_vs_warp"] = ratio(hg["warp"]["query_s"], r["query_s"])
            r["query_single_call_speedup_vs_warp"] = ratio(hg["warp"]["query_single_call_s"], r["query_single_call_s"])

    # ---- (b) mesh ----------------------------------------------------------------------------
    mpts, mind = sphere_mesh(MESH_LAT, MESH_LON)
    m = args.mesh_queries
    qpts = (rng.random((m, 3)) * 3.0 - 1.5).astype(np.float32)
    kc_mpts, kc_mind, kc_q = kc.array(mpts, dtype=kc.vec3), kc.array(mind, dtype=kc.int32), kc.array(qpts, dtype=kc.vec3)
    kc_mesh = [geometry.Mesh(kc_mpts, kc_mind)]
    kc_out_u, kc_out_s = kc.zeros(m, dtype=float), kc.zeros(m, dtype=float)

    def kc_build():
        kc_mesh[0] = geometry.Mesh(kc_mpts, kc_mind)

    def kc_query(kernel, out):
        return lambda: kc.launch(kernel, dim=m, inputs=[kc_mesh[0].id, kc_q, MAX_DIST, out]) and None

    cases = {"kc_build": kc_build, "kc_unsigned": kc_query(kc_closest_unsigned, kc_out_u),
             "kc_signed": kc_query(kc_closest_signed, kc_out_s)}
    if wp is not None:
        wp_mpts = wp.array(mpts, dtype=wp.vec3, device="cpu")
        wp_mind = wp.array(mind, dtype=wp.int32, device="cpu")
        wp_q = wp.array(qpts, dtype=wp.vec3, device="cpu")
        wp_mesh = [wp.Mesh(points=wp_mpts, indices=wp_mind)]
        wp_out_u, wp_out_s = wp.zeros(m, dtype=float, device="cpu"), wp.zeros(m, dtype=float, device="cpu")

        def wp_build():
            wp_mesh[0] = wp.Mesh(points=wp_mpts, indices=wp_mind)
            wp.synchronize_device("cpu")

        cases["warp_build"] = wp_build
        def wp_query(kernel, out):
            def run():
                wp.launch(kernel, dim=m, inputs=[wp_mesh[0].id, wp_q, MAX_DIST, out], device="cpu")
                wp.synchronize_device("cpu")
            return run

        cases["warp_unsigned"] = wp_query(wk_unsigned, wp_out_u)
        cases["warp_signed"] = wp_query(wk_signed, wp_out_s)
    mr = results["mesh"]
    mr.update({"triangles": len(mind) // 3, "queries": m})
    order = ["build", "unsigned", "signed"]
    for th in thread_opts:
        set_kc_threads(th)
        for what in order:
            sub = {k: v for k, v in cases.items() if k.endswith("_" + what)}
            res = interleaved(sub, repeats=args.repeats if what == "build" else max(3, args.repeats // 2 + 1))
            mr.setdefault(f"kc_threads={th}", {})[f"{what}_s"] = res[f"kc_{what}"]["median"]
            if wp is not None:
                mr.setdefault("warp", {}).setdefault(f"{what}_s", []).append(res[f"warp_{what}"]["median"])
    set_kc_threads("default")
    ref_u = np.abs(np.linalg.norm(qpts, axis=1) - 1.0)
    mr["kc_unsigned_max_abs_err_vs_unit_sphere"] = float(np.max(np.abs(kc_out_u.numpy() - ref_u)))
    if wp is not None:
        mr["warp"] = {k: float(np.median(v)) for k, v in mr["warp"].items()}
        mr["unsigned_match_warp"] = bool(np.allclose(kc_out_u.numpy(), wp_out_u.numpy(), atol=1e-5))
        mr["signed_sign_agreement_with_warp"] = float(np.mean(np.sign(kc_out_s.numpy()) == np.sign(wp_out_s.numpy())))
        for th in thread_opts:
            r = mr[f"kc_threads={th}"]
            for what in order:
                r[f"{what}_speedup_vs_warp"] = ratio(mr["warp"][f"{what}_s"], r[f"{what}_s"])

    return results, wp


if __name__ == "__main__":
    main()
