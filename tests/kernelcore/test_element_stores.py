"""Stores into part of an array element: p[i].vel = v, a[i][1] = x, a[i].x += d, m[i][r, c] = x;
values vs numpy, gradients vs float64 central finite differences."""
import numpy as np

import kernelcore as kc


@kc.struct
class Body:
    pos: kc.vec3
    vel: kc.vec3
    mass: float


@kc.kernel
def update_parts(bodies: kc.array(dtype=Body), a: kc.array(dtype=kc.vec3), m: kc.array(dtype=kc.mat22),
                 t: kc.array(dtype=kc.transform), d: float, k: int):
    i = kc.tid()
    bodies[i].vel = kc.vec3(1.0, 2.0, float(i))
    bodies[i].mass = 5.0
    bodies[i].vel.y = 9.0
    bodies[i].pos += kc.vec3(d)
    a[i][1] = d
    a[i].x += d
    a[i][k] -= 1.0
    m[i][1, 0] = d
    m[i][0] = kc.vec2(7.0, 8.0)
    t[i].p = kc.vec3(float(i), 0.0, 0.0)
    t[i].q.w = 1.0


def test_stores_write_only_that_part_of_the_element():
    n = 3
    bodies = kc.zeros(n, dtype=Body)
    h = bodies.numpy()
    h["pos"] = 1.0
    h["vel"] = -1.0
    a = kc.array(np.full((n, 3), 10.0, np.float32), dtype=kc.vec3)
    m = kc.array(np.full((n, 2, 2), 3.0, np.float32), dtype=kc.mat22)
    t = kc.zeros(n, dtype=kc.transform)
    kc.launch(update_parts, dim=n, inputs=[bodies, a, m, t, 0.5, -1])
    h = bodies.numpy()
    np.testing.assert_array_equal(h["pos"], np.full((n, 3), 1.5))
    np.testing.assert_array_equal(h["vel"], [[1.0, 9.0, 0.0], [1.0, 9.0, 1.0], [1.0, 9.0, 2.0]])
    np.testing.assert_array_equal(h["mass"], [5.0] * n)
    np.testing.assert_array_equal(a.numpy(), np.tile([10.5, 0.5, 9.0], (n, 1)))
    np.testing.assert_array_equal(m.numpy(), np.tile([[7.0, 8.0], [0.5, 3.0]], (n, 1, 1)))
    np.testing.assert_array_equal(t.numpy(), [[i, 0, 0, 0, 0, 0, 1] for i in range(n)])


@kc.struct
class BodyD:
    pos: kc.vec3d
    vel: kc.vec3d
    mass: kc.float64


@kc.kernel
def write_parts(x: kc.array(dtype=kc.float64), bodies: kc.array(dtype=BodyD), v: kc.array(dtype=kc.vec3d),
                m: kc.array(dtype=kc.mat22d)):
    i = kc.tid()
    bodies[i].vel = kc.vec3d(x[i] * x[i], kc.sin(x[i]), kc.float64(1.0))
    bodies[i].mass = x[i] * kc.float64(3.0)
    v[i][1] = x[i] * kc.float64(2.0)
    v[i].z += kc.cos(x[i])
    m[i][0, 1] = x[i] * x[i] * x[i]
    m[i][1] = kc.vec2d(x[i], kc.float64(0.5))


@kc.kernel
def parts_loss(bodies: kc.array(dtype=BodyD), v: kc.array(dtype=kc.vec3d), m: kc.array(dtype=kc.mat22d),
               out: kc.array(dtype=kc.float64)):
    i = kc.tid()
    b = bodies[i]
    s = kc.dot(b.vel, b.vel) * b.mass + kc.dot(b.pos, b.vel) + kc.length(v[i]) + kc.determinant(m[i])
    kc.atomic_add(out, 0, s)


def _fresh(n, rng_seed=3):
    rng = np.random.default_rng(rng_seed)
    bodies = kc.zeros(n, dtype=BodyD, requires_grad=True)
    bodies.numpy()["pos"] = rng.uniform(-1, 1, (n, 3))
    v = kc.array(rng.uniform(0.5, 1.5, (n, 3)), dtype=kc.vec3d, requires_grad=True)
    m = kc.array(rng.uniform(-1, 1, (n, 2, 2)), dtype=kc.mat22d, requires_grad=True)
    return bodies, v, m


def _loss(xv):
    n = len(xv)
    bodies, v, m = _fresh(n)
    out = kc.zeros(1, dtype=kc.float64)
    kc.launch(write_parts, dim=n, inputs=[kc.array(xv, dtype=kc.float64), bodies, v, m])
    kc.launch(parts_loss, dim=n, inputs=[bodies, v, m, out])
    return out.numpy()[0]


def test_part_stores_are_differentiable():
    xv = np.array([0.3, -0.7, 1.1], np.float64)
    n = len(xv)
    x = kc.array(xv, dtype=kc.float64, requires_grad=True)
    bodies, v, m = _fresh(n)
    out = kc.zeros(1, dtype=kc.float64, requires_grad=True)
    tape = kc.Tape()
    with tape:
        kc.launch(write_parts, dim=n, inputs=[x, bodies, v, m])
        kc.launch(parts_loss, dim=n, inputs=[bodies, v, m, out])
    assert np.isclose(out.numpy()[0], _loss(xv))
    tape.backward(loss=out)
    h = 1e-6
    fd = np.array([(_loss(xv + h * e) - _loss(xv - h * e)) / (2 * h) for e in np.eye(n)])
    np.testing.assert_allclose(x.grad.numpy(), fd, rtol=1e-6, atol=1e-8)
    # the parts no store overwrote keep their gradient: d loss / d pos = vel
    np.testing.assert_allclose(bodies.grad.numpy()["pos"], bodies.numpy()["vel"], rtol=1e-12)
