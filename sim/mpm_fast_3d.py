"""Forward-only fast P2G and G2P of the 3-D SolverMPM step on the CPU (an untaped run without gradients).

Why: in the 3-D benchmark step (104K particles, 64^3 cells, one thread) P2G took 24 and G2P 11.5 of
37 ms, and much of P2G was index arithmetic, not arithmetic on values: each of the 27 stencil nodes
is addressed as ``grid[bx + i, by + j, bz + k]``, which the generated C++ passes through the
negative-index wrap of each of the three indices (``kc::wrap_array_index``: a compare and select
per index per access).  And the scatter's atomic adds kept it on one thread: a shared grid that
threads add into needs compare-and-swap loops, slower on two cores than one thread (launch.py).
Here:

- ``p2g_stress_3d_lanes_kernel``: the constitutive update (new F, Jp) and the APIC affine matrix per
  particle, as mpm_transfer's split stress kernel, with ``simd=True`` for the straight-line models
  (neo-Hookean; docs/cpu_codegen.md, "SIMD lanes"): 4.7 -> 3.8 ms;
- ``slab_count_kernel`` + ``slab_fill_kernel``: a stable counting sort of the particles by the x-slab
  of their stencil base (``SLAB`` = 2 node layers; an index array, the State's particle order is
  untouched), in ``SORT_CHUNKS`` chunks of particles on all threads: each chunk counts its own
  particles per slab, then places them from all the chunks' counts (no atomics; before: atomic
  counts, 0.9 ms, and a serial fill, 0.25-0.45 ms; now 0.6 ms on one thread, split over two);
- ``p2g_scatter_3d_slab_kernel``: one thread per slab scatters that slab's particles, the even slabs
  in one launch and the odd in a second.  Two slabs of one colour never write the same node, so the
  adds are plain loads and stores on any number of threads (no atomics), and a slab's nodes (2 x 71 x
  71 x 16 bytes) stay in cache.  It writes flat views of the grid's memory (``flat_view``: node n's
  momentum at vec3 element n, mass at n) with the stencil base written ``max(min(int(x - 0.5), n - 3), 0)``
  (mpm_transfer.stencil_base's node for n >= 3) and the strides ``max(., 0)`` of the grid sizes, so
  that the frontend knows every index is >= 0 and emits a plain address.  One thread: the scatter
  with its sort ran 13.1 ms (float views; vec3 views: ~11% less) against 17.3 for the unsorted
  scatter into float views with (serial) accumulating adds (particles in lattice order, as
  add_particle_grid makes them; in a random order the sorted scatter gathers the particles' data
  at random and ran 35 against 30 ms, float views);
- ``g2p_3d_rows_kernel``: the G2P with the >= 0 base on a flat float view of the grid velocities,
  summed by stencil rows (a row: 9 consecutive floats, 3 nodes along z), vectorised across particles
  (``simd=True``; GCC gathers the rows): 11.5 -> 9.9 ms (axis by axis, session 16) -> 5.4 ms.

The step 37 -> 27 ms (one thread, CPU time; bench_mpm_fast3d.py) -> 19.7 ms (session 17: the sort
and the G2P above).  The stress kernel computes the
same values as mpm_transfer's; the scatter adds them to each node in the slab order and G2P regroups
its sums (float32 rounding: ~1e-6 relative after 50 steps; tests/sim/test_mpm_fast_3d.py).  The result
does not depend on the thread count (each slab is one thread's, in the particles' order).  Tried and
dropped (same benchmark): G2P node by node on flat views (17 ms; with ``simd=True`` 41 ms, also with
``-mtune-ctrl=^use_gather``), the rows G2P without ``simd=True`` (9.0 ms), the old G2P with the >= 0 base alone (14 ms), the regrouped G2P with
wrapped indices (13.6 ms), a scatter building the node momentum axis by axis (16.7 ms), an unsorted
scatter with atomic adds into flat vec3 views (12.8 vs 12.0 ms into float views) and one fused P2G
kernel on flat views (18-21 ms).

Forward only (``enable_backward=False``): SolverMPM takes this path only for a 3-D step on the CPU
whose grid has no gradients and with no Tape recording; everything else uses sim/mpm_transfer.py.
The affine matrices go to ``MPMGrid.particle_affine`` (36 bytes per particle per grid).
"""
from __future__ import annotations

import kernelcore as kc
from kernelcore import config

from .mpm_constitutive import MPM_NEO_HOOKEAN, update_particle_material
from .mpm_scatter import bspline_weights


@kc.func
def stencil_base_nonneg(xg: float, n: int):
    """mpm_transfer.stencil_base written so that the frontend sees a result >= 0 (kc.max(., 0) last)."""
    return kc.max(kc.min(int(xg - 0.5), n - 3), 0)


def flat_view(a, dtype=float):
    """A 1-D array of ``dtype`` (float: 3 floats per vec3 element; kc.vec3: one per element of a vec3
    array) aliasing the memory of a contiguous CPU array ``a``, for kernels that address the grid by
    one flat index."""
    if not a.is_contiguous:
        raise ValueError("sim.mpm_fast_3d.flat_view: the grid array must be contiguous")
    flat = a.numpy().reshape(-1, 3) if dtype is kc.vec3 else a.numpy().reshape(-1)
    return kc.array(flat, dtype=dtype, device=a.device, copy=False)


def make_p2g_stress_3d_lanes_kernel(update, name, simd):
    """mpm_transfer.make_p2g_stress_kernel's stress kernel (new F, Jp and the APIC affine matrix
    ``m C - dt V (4 / dx^2) tau`` [kg/s] per particle), vectorised (``simd=True``) where the update is
    straight-line code (``SIMD_MODELS``; the others branch around loads and keep the default entry point)."""
    def p2g_stress_3d_lanes_kernel(C: kc.array(dtype=kc.mat33), F: kc.array(dtype=kc.mat33),
                                   Jp: kc.array(dtype=float), mass: kc.array(dtype=float),
                                   volume: kc.array(dtype=float), material: kc.array(dtype=kc.int32),
                                   mat_kind: kc.array(dtype=kc.int32), mat_E: kc.array(dtype=float),
                                   mat_nu: kc.array(dtype=float), mat_hardening: kc.array(dtype=float),
                                   mat_theta_c: kc.array(dtype=float), mat_theta_s: kc.array(dtype=float),
                                   mat_friction: kc.array(dtype=float), mat_viscosity: kc.array(dtype=float),
                                   actuation: kc.array(dtype=float), act_axis: kc.vec3, dx: float, dt: float,
                                   F_out: kc.array(dtype=kc.mat33), Jp_out: kc.array(dtype=float),
                                   affine_out: kc.array(dtype=kc.mat33)):
        p = kc.tid()
        m = material[p]
        Fn, Jn, tau = update(mat_kind[m], F[p], C[p], Jp[p], dt, mat_E[m], mat_nu[m], mat_hardening[m],
                             mat_theta_c[m], mat_theta_s[m], mat_friction[m], mat_viscosity[m], actuation[p], act_axis)
        F_out[p] = Fn
        Jp_out[p] = Jn
        inv_dx = 1.0 / dx
        affine_out[p] = tau * (-dt * volume[p] * 4.0 * inv_dx * inv_dx) + C[p] * mass[p]

    p2g_stress_3d_lanes_kernel.__qualname__ = f"p2g_stress_3d_lanes_kernel_{name}"
    return kc.kernel(p2g_stress_3d_lanes_kernel, simd=True if simd else None, enable_backward=False)


#: particles are bucketed by the x-slab of their stencil base: slab s holds the bases bx in
#: [SLAB s, SLAB s + SLAB).  A particle writes nodes bx .. bx + 2, so two slabs of one colour
#: (s and s + 2) never write the same node when SLAB >= 2: the slabs of one colour run on any
#: number of threads with plain (non-atomic) adds.
SLAB = 2


#: chunks of particles of the counting sort: each chunk's thread counts, then places, its own
#: particles (no atomics, no serial pass); the sorted order does not depend on the chunking
SORT_CHUNKS = 32


@kc.func
def chunk_range(c: int, chunks: int, n: int):
    """The particles [lo, hi) of chunk ``c`` of ``chunks`` (consecutive, as equal as can be)."""
    per = n // chunks
    extra = n - per * chunks
    lo = c * per + kc.min(c, extra)
    return kc.vec2i(lo, lo + per + kc.where(c < extra, 1, 0))


@kc.kernel(enable_backward=False)
def slab_count_kernel(q: kc.array(dtype=kc.vec3), grid_lower: kc.vec3, dx: float, nx: int, n: int, chunks: int,
                      slabs: int, key: kc.array(dtype=kc.int32), hist: kc.array(dtype=kc.int32)):
    """Chunk ``tid`` of the particles: the x-slab of each particle's stencil base (``key`` (n,)) and
    the chunk's particle count per slab (``hist`` row tid of (chunks, slabs), flat).  The scatter's
    own float32 operations (the C++ is built with -ffp-contract=off: no FMA in one kernel and not
    the other), so that the bucket and the nodes written agree exactly."""
    c = kc.tid()
    r = chunk_range(c, chunks, n)
    row = c * slabs
    for s in range(slabs):
        hist[row + s] = kc.int32(0)
    for p in range(r[0], r[1]):
        bx = stencil_base_nonneg((q[p][0] - grid_lower[0]) * (1.0 / dx), nx)
        s = bx // SLAB
        key[p] = kc.int32(s)
        hist[row + s] = hist[row + s] + kc.int32(1)


@kc.kernel(enable_backward=False)
def slab_fill_kernel(key: kc.array(dtype=kc.int32), hist: kc.array(dtype=kc.int32), n: int, chunks: int,
                     slabs: int, start: kc.array(dtype=kc.int32), pos: kc.array(dtype=kc.int32),
                     order: kc.array(dtype=kc.int32)):
    """A stable counting sort by slab, chunk ``tid`` of the particles: ``order`` (n,) the particle
    indices slab by slab, each slab in the particles' order; chunk 0 also writes ``start``
    (slabs + 1,), the first position of each slab in ``order``.  Each chunk finds its own first
    position in each slab from all the chunks' counts (``hist``, chunks x slabs: ~1K adds) into
    its row of ``pos`` (chunks x slabs, flat; ``hist`` is read by every chunk, so not written)."""
    c = kc.tid()
    total = int(0)
    for s in range(slabs):
        if c == 0:
            start[s] = kc.int32(total)
        mine = total
        for b in range(chunks):
            h = int(hist[b * slabs + s])
            if b < c:
                mine = mine + h
            total = total + h
        pos[c * slabs + s] = kc.int32(mine)
    if c == 0:
        start[slabs] = kc.int32(total)
    r = chunk_range(c, chunks, n)
    row = c * slabs
    for p in range(r[0], r[1]):
        s = int(key[p])
        t = int(pos[row + s])
        order[t] = kc.int32(p)
        pos[row + s] = kc.int32(t + 1)


# a launch of a few dozen threads, each over thousands of particles (see also the scatter below)
slab_count_kernel.parallel_grain = 2
slab_fill_kernel.parallel_grain = 2


@kc.kernel(enable_backward=False)
def p2g_scatter_3d_slab_kernel(order: kc.array(dtype=kc.int32), start: kc.array(dtype=kc.int32), first: int,
                               step: int, per: int, slabs: int, q: kc.array(dtype=kc.vec3), qd: kc.array(dtype=kc.vec3),
                               mass: kc.array(dtype=float), affine_in: kc.array(dtype=kc.mat33), grid_lower: kc.vec3,
                               dx: float, nx: int, ny: int, nz: int, grid_mv: kc.array(dtype=kc.vec3),
                               grid_m: kc.array(dtype=float)):
    """The scatter of the particles of slabs ``first + step u``, u in [per tid, per tid + per), slab by
    slab in ``order``, with plain adds: with ``step`` = 2 no other thread writes those nodes (see
    SLAB); ``per`` = all the slabs and one thread (step 1) is the serial scatter of a small problem.  ``grid_mv``, ``grid_m``:
    flat views (nodes,) of the grid's momentum [kg m/s] and mass [kg].

    The momentum as one vec3 load and store per node: against three float ones, 9.8 vs 11.0 ms
    with the sort (one thread), and NVRTC compiles it in 9 s of CPU instead of 42 (each of the
    108 float stores may alias the loads after it)."""
    inv_dx = 1.0 / dx
    sy = kc.max(nz, 0)            # node strides, known >= 0 (plain addresses, see the module docstring)
    sx = kc.max(ny * nz, 0)
    for u in range(per * kc.tid(), per * kc.tid() + per):
        s = first + step * u
        if s >= slabs:
            break
        for t in range(int(start[s]), int(start[s + 1])):
            p = int(order[t])
            mp = mass[p]
            affine = affine_in[p]
            g = (q[p] - grid_lower) * inv_dx
            bx = stencil_base_nonneg(g[0], nx)
            by = stencil_base_nonneg(g[1], ny)
            bz = stencil_base_nonneg(g[2], nz)
            fx = g - kc.vec3(float(bx), float(by), float(bz))
            mv = qd[p] * mp
            base = bx * sx + by * sy + bz
            wx = bspline_weights(fx[0])
            wy = bspline_weights(fx[1])
            wz = bspline_weights(fx[2])
            for i in range(3):
                for j in range(3):
                    for k in range(3):
                        dpos = (kc.vec3(float(i), float(j), float(k)) - fx) * dx
                        w = wx[i] * wy[j] * wz[k]
                        node = base + i * sx + j * sy + k
                        val = (mv + affine * dpos) * w
                        grid_mv[node] = grid_mv[node] + val
                        grid_m[node] = grid_m[node] + w * mp


#: fewer particles than this scatter on one thread, all slabs in order (as the other particle kernels:
#: waking a team of threads costs more than such a scatter)
PARALLEL_PARTICLES = config.parallel_grain

# one thread per slab: a launch of a few dozen threads that each scatter thousands of particles
# (a launch of one thread, the serial scatter, stays on one)
p2g_scatter_3d_slab_kernel.parallel_grain = 2


#: 3 nodes along z, 3 velocity components each: one row of a particle's stencil (9 consecutive floats)
vec9 = kc.vector(length=9, dtype=float)


@kc.func
def node_row(f: kc.array(dtype=float), o: int):
    """The 9 floats f[o : o + 9] (a stencil row of 3 nodes' velocities)."""
    return vec9(f[o], f[o + 1], f[o + 2], f[o + 3], f[o + 4], f[o + 5], f[o + 6], f[o + 7], f[o + 8])


@kc.func
def z_sum(r: vec9, wz: kc.vec3):
    """sum_k wz[k] r[3k : 3k + 3] of a stencil row sum ``r``."""
    return kc.vec3(r[0], r[1], r[2]) * wz[0] + kc.vec3(r[3], r[4], r[5]) * wz[1] + kc.vec3(r[6], r[7], r[8]) * wz[2]


@kc.kernel(enable_backward=False, simd=True)
def g2p_3d_rows_kernel(q: kc.array(dtype=kc.vec3), grid_vf: kc.array(dtype=float), grid_lower: kc.vec3,
                       dx: float, nx: int, ny: int, nz: int, dt: float,
                       q_out: kc.array(dtype=kc.vec3), qd_out: kc.array(dtype=kc.vec3),
                       C_out: kc.array(dtype=kc.mat33)):
    """mpm_transfer.g2p_3d_kernel with the sums regrouped by stencil rows (equal to float32 rounding).

    ``grid_vf``: the grid velocities [m/s] as a flat float view (nodes * 3,).  A row (i, j) of the
    stencil is 9 consecutive floats (nodes k = 0, 1, 2); the rows are summed as 9-vectors, weighted
    by wy, then by wx: ``S = sum_ij wx_i wy_j row_ij``, and the same with i wx_i (``Si``) and j wy_j
    (``Sj``); the z weights last: ``v = sum_k wz_k S_k``, the moments ``m_x, m_y`` likewise from Si, Sj
    and ``m_z = sum_k k wz_k S_k``, and ``B = [m_x m_y m_z] - v fx^T``.  ~15 flops per node (the
    node-by-node axis sums before: ~20, and ~30 naive).  ``simd=True``: 8 particles per AVX2 lane
    block, each row load a gather; 104K particles, one thread: 10.8 ms (axis sums) -> 9.0 (rows,
    scalar) -> 5.4 ms.
    """
    p = kc.tid()
    inv_dx = 1.0 / dx
    x = q[p]
    g = (x - grid_lower) * inv_dx
    bx = stencil_base_nonneg(g[0], nx)
    by = stencil_base_nonneg(g[1], ny)
    bz = stencil_base_nonneg(g[2], nz)
    fx = g - kc.vec3(float(bx), float(by), float(bz))
    wx = bspline_weights(fx[0])
    wy = bspline_weights(fx[1])
    wz = bspline_weights(fx[2])
    sy = kc.max(nz * 3, 0)        # float strides, known >= 0 (plain addresses, see the module docstring)
    sx = kc.max(ny * nz * 3, 0)
    o = bx * sx + by * sy + bz * 3
    S = vec9()
    Si = vec9()
    Sj = vec9()
    for i in range(3):
        oi = o + i * sx
        a1 = node_row(grid_vf, oi + sy) * wy[1]
        a2 = node_row(grid_vf, oi + 2 * sy) * wy[2]
        t = (node_row(grid_vf, oi) * wy[0] + a1 + a2) * wx[i]
        S += t
        if i > 0:   # (i is a constant of the unrolled loop: no branch)
            Si += t * float(i)
        Sj += (a1 + a2 * 2.0) * wx[i]
    v = z_sum(S, wz)
    mx = z_sum(Si, wz)
    my = z_sum(Sj, wz)
    mz = kc.vec3(S[3], S[4], S[5]) * wz[1] + kc.vec3(S[6], S[7], S[8]) * (2.0 * wz[2])
    B = kc.mat33(mx[0] - v[0] * fx[0], my[0] - v[0] * fx[1], mz[0] - v[0] * fx[2],
                 mx[1] - v[1] * fx[0], my[1] - v[1] * fx[1], mz[1] - v[1] * fx[2],
                 mx[2] - v[2] * fx[0], my[2] - v[2] * fx[1], mz[2] - v[2] * fx[2])
    qd_out[p] = v
    C_out[p] = B * (4.0 * inv_dx)
    q_out[p] = x + v * dt


_stress_kernels = {}
#: material model codes whose particle update is straight-line (no branch around loads), so that the
#: stress kernel vectorises with simd=True (neo-Hookean: 4.7 -> 3.8 ms at 104K particles, one thread)
SIMD_MODELS = (MPM_NEO_HOOKEAN,)


def p2g_stress_3d_lanes_kernel(model_code=None):
    """The vectorised stress kernel specialised to one material model code (None: any mix)."""
    if model_code not in _stress_kernels:
        from .mpm_transfer import model_update
        update, name = (update_particle_material, "any") if model_code is None else model_update(3, model_code)
        _stress_kernels[model_code] = make_p2g_stress_3d_lanes_kernel(update, name, model_code in SIMD_MODELS)
    return _stress_kernels[model_code]


class FlatGrid:
    """Flat float views of one MPMGrid's momentum, mass and velocity, and the slab bucketing
    arrays of its scatter (made once per grid)."""

    def __init__(self, grid):
        self.mv, self.m, self.v = flat_view(grid.mv, kc.vec3), flat_view(grid.m), flat_view(grid.v)
        #: slabs of stencil bases along x (bases 0 .. nx - 3, see SLAB)
        self.slabs = (grid.shape[0] - 3) // SLAB + 1
        device = grid.m.device
        self.hist = kc.zeros(SORT_CHUNKS * self.slabs, dtype=kc.int32, device=device)
        self.pos = kc.zeros(SORT_CHUNKS * self.slabs, dtype=kc.int32, device=device)
        self.start = kc.zeros(self.slabs + 1, dtype=kc.int32, device=device)
        self.key = self.order = None

    def bucket(self, q, grid):
        """Sort the particles at ``q`` (n,) by slab: ``self.order`` (n,) and ``self.start`` (slabs + 1,)."""
        n = q.shape[0]
        if self.key is None or self.key.shape[0] != n:
            self.key = kc.zeros(n, dtype=kc.int32, device=q.device)
            self.order = kc.zeros(n, dtype=kc.int32, device=q.device)
        # one chunk (one thread) for a small problem, as the scatter below
        chunks = SORT_CHUNKS if n >= PARALLEL_PARTICLES else 1
        kc.launch(slab_count_kernel, dim=chunks, inputs=[q, grid.lower, grid.dx, grid.shape[0], n, chunks, self.slabs],
                  outputs=[self.key, self.hist], device=q.device)
        kc.launch(slab_fill_kernel, dim=chunks, inputs=[self.key, self.hist, n, chunks, self.slabs],
                  outputs=[self.start, self.pos, self.order], device=q.device)


def flat_grid(grid):
    """The FlatGrid of ``grid`` (cached on it)."""
    views = getattr(grid, "_flat_views", None)
    if views is None:
        views = grid._flat_views = FlatGrid(grid)
    return views


def particle_to_grid_fast(model, state_in, actuation, act_axis, grid, dt, state_out, model_code=None):
    """mpm_transfer.particle_to_grid for a 3-D grid without gradients on the CPU (the same F and Jp,
    the grid's mass and momentum to float32 rounding): the vectorised stress kernel, then the
    particles bucketed by x-slab and the scatter slab by slab, in two colours (plain adds, any number
    of threads).  The affine matrices go to ``grid.particle_affine`` (36 bytes per particle)."""
    flat = flat_grid(grid)
    affine = grid.particle_affine(model.particle_count)
    kc.launch(p2g_stress_3d_lanes_kernel(model_code), dim=model.particle_count,
              inputs=[state_in.particle_C, state_in.particle_F, state_in.particle_Jp, model.particle_mass,
                      model.particle_volume, model.particle_material, model.material_mpm_model,
                      model.material_youngs_modulus, model.material_poisson_ratio, model.material_hardening,
                      model.material_critical_compression, model.material_critical_stretch,
                      model.material_friction_angle, model.material_viscosity, actuation, act_axis, grid.dx, float(dt)],
              outputs=[state_out.particle_F, state_out.particle_Jp, affine], device=model.device)
    flat.bucket(state_in.particle_q, grid)
    data = [state_in.particle_q, state_in.particle_qd, model.particle_mass, affine, grid.lower, grid.dx, *grid.shape]
    if model.particle_count < PARALLEL_PARTICLES:
        kc.launch(p2g_scatter_3d_slab_kernel, dim=1, inputs=[flat.order, flat.start, 0, 1, flat.slabs, flat.slabs,
                                                             *data], outputs=[flat.mv, flat.m], device=model.device)
        return
    for colour in (0, 1):
        kc.launch(p2g_scatter_3d_slab_kernel, dim=(flat.slabs + 1) // 2,
                  inputs=[flat.order, flat.start, colour, 2, 1, flat.slabs, *data],
                  outputs=[flat.mv, flat.m], device=model.device)


def grid_to_particle_fast(model, state_in, grid, dt, state_out):
    """mpm_transfer.grid_to_particle for a 3-D grid on the CPU (g2p_3d_rows_kernel: equal to float32 rounding)."""
    kc.launch(g2p_3d_rows_kernel, dim=model.particle_count,
              inputs=[state_in.particle_q, flat_grid(grid).v, grid.lower, grid.dx, *grid.shape, float(dt)],
              outputs=[state_out.particle_q, state_out.particle_qd, state_out.particle_C], device=model.device)
