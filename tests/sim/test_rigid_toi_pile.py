"""A pile of mixed spheres, boxes and capsules falling onto the ground with time of impact on (issue 15):
nothing is pumped (no body ends faster than the pile's fall allows, nor than it does with penalty contacts)
and the final poses overlap by at most a few mm, checked by a brute-force numpy distance of every pair.

The scene is benchmarks/bench_rigid.py's pile (spheres r = 6 cm, cubes of half extent 5 cm, capsules
r = 4 cm with half height 5 cm; 1000 kg/m^3; random orientations; columns 18 cm apart, layers 18 cm
apart, the lowest 10 cm up; ke = 1e4 N/m, e = 0.5, mu = 0.5; dt = 1 ms)."""
import math

import numpy as np
import pytest

import kernelcore as kc
import sim
from sim.builder import quat_to_matrix

RADIUS = {"sphere": 0.06, "box": 0.0, "capsule": 0.04}
BOX_HALF = 0.05
CAPSULE_HALF = 0.05
SPACING = 0.18
G = 9.81


def _pile(n, seed, layers):
    """(model, kinds): ``n`` bodies, a third each sphere, box and capsule, ``layers`` layers of columns."""
    rng = np.random.default_rng(seed)
    side = max(1, int(math.ceil(math.sqrt(n / layers))))
    b = sim.ModelBuilder(gravity=(0, -G, 0))
    mat = b.add_material(ke=1.0e4, restitution=0.5, mu=0.5)
    b.set_ground_plane(material=mat)
    kinds = []
    for k in range(n):
        lay, rest = divmod(k, side * side)
        i, j = divmod(rest, side)
        pos = ((i - 0.5 * (side - 1)) * SPACING, 0.1 + lay * SPACING, (j - 0.5 * (side - 1)) * SPACING)
        q = rng.normal(size=4)
        q /= np.linalg.norm(q)
        body = b.add_body(kc.transform(kc.vec3(*pos), kc.quat(*q)))
        kind = ("sphere", "box", "capsule")[k % 3]
        if kind == "sphere":
            b.add_shape_sphere(radius=RADIUS[kind], body=body, density=1000.0, material=mat)
        elif kind == "box":
            b.add_shape_box(half_extents=(BOX_HALF,) * 3, body=body, density=1000.0, material=mat)
        else:
            b.add_shape_capsule(radius=RADIUS[kind], half_height=CAPSULE_HALF, body=body, density=1000.0,
                                material=mat)
        kinds.append(kind)
    return b.finalize(), kinds


def _core_points(kind, n=9):
    """Body-frame points (m, 3) whose distance to another shape, minus RADIUS[kind], bounds this shape's:
    a box's faces on an n x n grid (corners and edges included), a capsule's core segment, a sphere's centre."""
    if kind == "sphere":
        return np.zeros((1, 3))
    if kind == "capsule":
        t = np.linspace(-CAPSULE_HALF, CAPSULE_HALF, 4 * n)
        return np.stack([0.0 * t, t, 0.0 * t], 1)
    g = np.linspace(-BOX_HALF, BOX_HALF, n)
    a, c = (x.ravel() for x in np.meshgrid(g, g))
    faces = []
    for axis in range(3):
        for side in (-1.0, 1.0):
            p = np.zeros((a.size, 3))
            p[:, axis] = side * BOX_HALF
            p[:, (axis + 1) % 3] = a
            p[:, (axis + 2) % 3] = c
            faces.append(p)
    return np.concatenate(faces)


def _signed_distance(kind, p):
    """Signed distance [m] of body-frame points p (m, 3) from the shape."""
    if kind == "sphere":
        return np.linalg.norm(p, axis=1) - RADIUS[kind]
    if kind == "capsule":
        y = np.clip(p[:, 1], -CAPSULE_HALF, CAPSULE_HALF)
        return np.linalg.norm(p - np.stack([0.0 * y, y, 0.0 * y], 1), axis=1) - RADIUS[kind]
    q = np.abs(p) - BOX_HALF
    return np.linalg.norm(np.maximum(q, 0.0), axis=1) + np.minimum(q.max(axis=1), 0.0)


def _deepest_overlap(body_q, kinds):
    """(deepest overlap [m] of any two bodies, of any body with the ground y = 0), float64 brute force."""
    q = np.asarray(body_q, np.float64)
    rot = [quat_to_matrix(q[i, 3:7]) for i in range(len(kinds))]
    pts = [q[i, :3] + _core_points(kinds[i]) @ rot[i].T for i in range(len(kinds))]
    pair = 0.0
    for i in range(len(kinds)):
        for j in range(len(kinds)):
            if i != j and np.linalg.norm(q[i, :3] - q[j, :3]) < 0.3:
                local = (pts[i] - q[j, :3]) @ rot[j]
                pair = max(pair, -(_signed_distance(kinds[j], local) - RADIUS[kinds[i]]).min())
    ground = max(-(p[:, 1] - RADIUS[k]).min() for p, k in zip(pts, kinds))
    return pair, ground


STEPS = 1200  # 1.2 s: the four layers have landed, rolled off and come to rest (spheres roll on)


@pytest.fixture(scope="module")
def settled_pile():
    """(final body_q (64, 7), final body_qd (64, 6), kinds, fastest speed [m/s] over the run's last 200 steps)."""
    m, kinds = _pile(64, 0, layers=4)
    solver = sim.SolverSemiImplicit(m, toi=True)
    s0, s1 = m.state(), m.state()
    fastest = 0.0
    for k in range(STEPS):
        solver.step(m, s0, s1, None, 1.0e-3)
        s0, s1 = s1, s0
        if k >= STEPS - 200 and k % 20 == 0:
            fastest = max(fastest, float(np.linalg.norm(s0.body_qd.numpy()[:, :3], axis=1).max()))
    return s0.body_q.numpy(), s0.body_qd.numpy(), kinds, fastest


@pytest.mark.slow
def test_toi_pile_pumps_no_body(settled_pile):
    # the top layer starts 0.64 m up: sqrt(2 g h) = 3.5 m/s is the fastest any body may land; after
    # 1 s the pile has settled (penalty contacts: 0.7 m/s, a sphere rolling away).  A bounce manifold of
    # touching points only at every impact speed pumped a box overlapped by a sphere to 2.6 m/s by
    # step 1130 (6 m/s by step 2000)
    q, qd, kinds, fastest = settled_pile
    assert np.all(np.isfinite(q)) and np.all(np.isfinite(qd))
    assert fastest < 1.7, fastest  # (1.2 m/s here: a box tumbling off the pile at step 1180)
    assert np.linalg.norm(qd[:, 3:], axis=1).max() < 40.0  # rad/s: 2 m/s at 5 cm
    pair, ground = _deepest_overlap(q, kinds)
    assert ground < 1e-3, ground  # the ground sweep (sim/toi_shapes.py) lets nothing sink
    # the body-body contacts (penalty below the resting speed, sim/toi_body_pairs.py above) leave
    # 1-2 cm overlaps in this pile (main too); a pumped body overlaps by 5+ cm
    assert pair < 0.025, pair


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason="capsules and boxes moving at 0.1-0.3 m/s over boxes lying on the ground "
                                       "overlap them by 4-7 mm (penalty contacts, approaching slower than the "
                                       "resting speed; 9 mm before the ground took its share of pair impulses): "
                                       "issue 15")
def test_toi_pile_overlaps_by_a_few_mm_at_most(settled_pile):
    q, _, kinds, _ = settled_pile
    assert _deepest_overlap(q, kinds)[0] < 3e-3
