"""Each compiler pass is testable without a C++ compiler: frontend -> IR -> reverse -> text."""
import os
import subprocess
import sys

import kernelcore as kc
from kernelcore.adjoint import RevIf, RevLoop, reverse_block
from kernelcore.emit_cpp import Emitter
from kernelcore.ir import Call, If, Loop, format_block


@kc.kernel
def sample(x: kc.array(dtype=float), n: int):
    i = kc.tid()
    s = float(0.0)
    for k in range(n):
        if x[k] > 0.0:
            s += x[k]
    x[i] = s


def test_frontend_builds_structured_ssa():
    ir = sample.ir()
    stmts = ir.block.stmts
    loops = [s for s in stmts if isinstance(s, Loop)]
    assert len(loops) == 1
    loop = loops[0]
    assert [c.name for c in loop.carried] == ["s"]
    assert any(isinstance(s, If) for s in loop.body.stmts)
    # the branch merge is an explicit select after the If
    names = [s.builtin.name for s in loop.body.stmts if isinstance(s, Call)]
    assert "select" in names
    assert "x" in ir.array_reads and "x" in ir.array_writes
    text = format_block(ir.block)
    assert "loop#" in text and "carried[s:" in text


def test_reverse_pass_mirrors_control_flow():
    rev = reverse_block(sample.ir().block)
    loops = [r for r in rev if isinstance(r, RevLoop)]
    assert len(loops) == 1
    assert any(isinstance(r, RevIf) for r in loops[0].body)


def test_emitter_prints_line_directives_without_compiling():
    em = Emitter()
    ir = sample.ir()
    em.emit_kernel_threads("k_sample", ir)
    text = em.text()
    assert f'#line {sample.defn.firstline + 5}' in text  # the "if x[k] > 0.0" line
    assert "k_sample_bwd_thread" in text and "ck_" in text  # checkpointed loop in the adjoint


def test_dump_ir_environment_variable(tmp_path):
    script = tmp_path / "dump.py"
    script.write_text(
        "import kernelcore as kc\n"
        "@kc.kernel\n"
        "def k(x: kc.array(dtype=float)):\n"
        "    x[kc.tid()] = kc.sin(x[kc.tid()])\n"
        "k.ir()\n")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, KERNELCORE_DUMP_IR="frontend,adjoint", PYTHONPATH=root)
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, check=True)
    assert "IR of kernel k after frontend" in out.stderr and "builtin='sin'" in out.stderr
    assert "reverse of k" in out.stderr


@kc.kernel
def accumulate_in_branch(x: kc.array(dtype=float), out: kc.array(dtype=float), cnt: kc.array(dtype=int)):
    i = kc.tid()
    s = float(0.0)
    c = int(0)
    for k in range(len(x)):
        d = x[k] - x[i]
        if d > 0.0:
            s += d
            c += 1
    out[i] = s
    cnt[i] = c


def test_fold_select_accumulate_rewrites_and_keeps_values_and_gradients():
    import numpy as np

    from kernelcore.ir import Loop

    loop = next(s for s in accumulate_in_branch.ir().block.stmts if isinstance(s, Loop))
    adds = [s for s in loop.body.stmts if isinstance(s, Call) and s.builtin.name == "add"]
    # the merged values are now "s + select(c, d, 0)": an add outside the If defines each carried exit
    exits = {c.exit.id for c in loop.carried}
    assert sum(1 for a in adds if a.out.id in exits) == 2
    xs = np.array([0.5, -1.0, 2.0, 0.25], np.float32)
    x = kc.array(xs, requires_grad=True)
    out = kc.zeros(4, dtype=float, requires_grad=True)
    cnt = kc.zeros(4, dtype=int)
    with kc.Tape() as tape:
        kc.launch(accumulate_in_branch, dim=4, inputs=[x], outputs=[out, cnt])
    d = xs[None, :] - xs[:, None]
    np.testing.assert_allclose(out.numpy(), np.where(d > 0, d, 0).sum(1), rtol=1e-6)
    assert cnt.numpy().tolist() == (d > 0).sum(1).tolist()
    tape.backward(grads={out: np.ones(4, np.float32)})
    ref = (d > 0).sum(0) - (d > 0).sum(1)  # d out_i / d x_k summed over i
    np.testing.assert_allclose(x.grad.numpy(), ref, rtol=1e-6)


@kc.kernel
def state_after_loop(out: kc.array(dtype=float), n: int):
    state = kc.rand_init(7, kc.tid())
    k = int(0)
    while k < n:
        kc.randf(state)
        k += 1
    out[kc.tid()] = kc.randf(state)


@kc.kernel
def random_walk_static(out: kc.array(dtype=float), last: kc.array(dtype=float)):
    i = kc.tid()
    state = kc.rand_init(7, i)
    s = float(0.0)
    for k in range(5):
        s += kc.randf(state)
    out[i] = s
    last[i] = kc.randf(state)


def test_value_used_after_the_loop_keeps_its_copy():
    """The state is read after the loop: its final value must come from the same place as in
    the adjoint's replay, so the forward keeps the copy (and the unrolled loop's numbers)."""
    from kernelcore.emit_cpp import _function_uses, _in_place_carried

    ir = state_after_loop.ir()
    loop = next(s for s in ir.block.stmts if isinstance(s, Loop))
    assert _in_place_carried(loop, _function_uses(ir)) == []
    a = kc.zeros(8, dtype=float)
    kc.launch(state_after_loop, dim=8, inputs=[a, 5])
    c, d = kc.zeros(8, dtype=float), kc.zeros(8, dtype=float)
    kc.launch(random_walk_static, dim=8, inputs=[c, d])
    assert (a.numpy() == d.numpy()).all()


@kc.kernel
def random_sum(out: kc.array(dtype=float), n: int):
    i = kc.tid()
    state = kc.rand_init(7, i)
    k = int(0)
    s = float(0.0)
    while k < n:
        s += kc.randf(state)
        k += 1
    out[i] = s


def test_in_place_loop_update_gives_the_same_numbers():
    """A value a builtin mutates in a loop (rand state, query iterators) is updated in place in
    the forward code, with no copy per iteration, and gives the unrolled loop's numbers."""
    from kernelcore.emit_cpp import _function_uses, _in_place_carried

    ir = random_sum.ir()
    loop = next(s for s in ir.block.stmts if isinstance(s, Loop))
    assert [c.name for c in loop.carried if any(c.exit is o for o, _ in _in_place_carried(loop, _function_uses(ir)))] == ["state"]
    a = kc.zeros(8, dtype=float, requires_grad=True)
    kc.launch(random_sum, dim=8, inputs=[a, 5])
    c, d = kc.zeros(8, dtype=float), kc.zeros(8, dtype=float)
    kc.launch(random_walk_static, dim=8, inputs=[c, d])
    assert (a.numpy() == c.numpy()).all()


def test_in_place_loop_update_of_a_query_iterator():
    import geometry  # noqa: F401  (registers the hash-grid builtins)
    from kernelcore.emit_cpp import _function_uses, _in_place_carried

    @kc.kernel
    def count_near(grid: kc.uint64, pts: kc.array(dtype=kc.vec3), r: float, out: kc.array(dtype=int)):
        i = kc.tid()
        q = kc.hash_grid_query(grid, pts[i], r)
        j = int(0)
        c = int(0)
        while kc.hash_grid_query_next(q, j):
            if kc.length(pts[j] - pts[i]) <= r:
                c += 1
        out[i] = c

    ir = count_near.ir()
    loop = next(s for s in ir.block.stmts if isinstance(s, Loop))
    pairs = _in_place_carried(loop, _function_uses(ir))
    assert sorted(c.name for c in loop.carried if any(c.exit is o for o, _ in pairs)) == ["j", "q"]


@kc.kernel
def apic_affine(g: kc.array(dtype=kc.vec2), d: kc.array(dtype=kc.vec2), w: kc.array(dtype=float),
                c_out: kc.array(dtype=kc.mat22), m_out: kc.array(dtype=kc.mat22)):
    i = kc.tid()
    c = kc.mat22(0.0, 0.0, 0.0, 0.0)
    for k in range(3):
        c += kc.outer(g[i * 3 + k], d[i * 3 + k]) * w[i * 3 + k]   # fused
    c_out[i] = c
    m = kc.outer(g[i], d[i])             # read twice: stays an outer product
    mo = m * w[i] + m
    if w[i] > 0.5:
        mo = w[i] * kc.outer(d[i], g[i]) + mo   # scalar first, inside a branch: fused
    m_out[i] = mo


def _calls(block, name):
    return [s for s in block.walk() if isinstance(s, Call) and s.builtin.name == name]


def test_fuse_scaled_outer_rewrites_once_read_products_only():
    ir = apic_affine.ir()
    assert len(_calls(ir.block, "outer_scaled")) == 4   # three unrolled iterations + the branch
    assert len(_calls(ir.block, "outer")) == 1          # the product read twice


def test_fuse_scaled_outer_keeps_values_and_gradients():
    """Forward values are bit-identical to the unfused product; gradients match float64 finite differences."""
    import numpy as np

    @kc.kernel
    def unfused(g: kc.array(dtype=kc.vec2), d: kc.array(dtype=kc.vec2), w: kc.array(dtype=float),
                c_out: kc.array(dtype=kc.mat22)):
        i = kc.tid()
        m = kc.outer(g[i], d[i])
        c_out[i] = m * w[i] + m * 0.0   # m read twice: not fused

    @kc.kernel
    def fused(g: kc.array(dtype=kc.vec2), d: kc.array(dtype=kc.vec2), w: kc.array(dtype=float),
              c_out: kc.array(dtype=kc.mat22)):
        i = kc.tid()
        c_out[i] = kc.outer(g[i], d[i]) * w[i] + kc.mat22(0.0, 0.0, 0.0, 0.0)

    rng = np.random.default_rng(5)
    n = 64
    g, d = rng.normal(size=(n, 2)).astype(np.float32), rng.normal(size=(n, 2)).astype(np.float32)
    w = rng.uniform(0.1, 2.0, n).astype(np.float32)
    outs = []
    for k in (unfused, fused):
        o = kc.zeros(n, dtype=kc.mat22)
        kc.launch(k, dim=n, inputs=[kc.array(g, dtype=kc.vec2), kc.array(d, dtype=kc.vec2), kc.array(w)], outputs=[o])
        outs.append(o.numpy())
    assert (outs[0] == outs[1]).all()

    # gradients of apic_affine (fused in its loop and branch) against float64 finite differences
    n = 8
    g64, d64 = rng.normal(size=(3 * n, 2)), rng.normal(size=(3 * n, 2))
    w64 = rng.uniform(0.0, 1.0, 3 * n)
    wc, wm = rng.normal(size=(n, 2, 2)), rng.normal(size=(n, 2, 2))

    def loss64(g, d, w):
        c = np.einsum("pki,pkj,pk->pij", g.reshape(n, 3, 2), d.reshape(n, 3, 2), w.reshape(n, 3))
        m = np.einsum("pi,pj->pij", g[:n], d[:n])
        mo = m * w[:n, None, None] + m
        hi = w[:n] > 0.5
        mo[hi] += w[:n][hi, None, None] * np.einsum("pi,pj->pij", d[:n][hi], g[:n][hi])
        return (c * wc).sum() + (mo * wm).sum()

    ga = kc.array(g64.astype(np.float32), dtype=kc.vec2, requires_grad=True)
    da = kc.array(d64.astype(np.float32), dtype=kc.vec2, requires_grad=True)
    wa = kc.array(w64.astype(np.float32), requires_grad=True)
    co = kc.zeros(n, dtype=kc.mat22, requires_grad=True)
    mo = kc.zeros(n, dtype=kc.mat22, requires_grad=True)
    with kc.Tape() as tape:
        kc.launch(apic_affine, dim=n, inputs=[ga, da, wa], outputs=[co, mo])
    tape.backward(grads={co: wc.astype(np.float32), mo: wm.astype(np.float32)})
    eps = 1e-6
    for k, (arr, x) in enumerate(((ga, g64), (da, d64), (wa, w64))):
        num = np.zeros_like(x)
        for idx in np.ndindex(*x.shape):
            args = [g64, d64, w64]
            args[k] = x.copy()
            args[k][idx] += eps
            fp = loss64(*args)
            args[k][idx] -= 2 * eps
            num[idx] = (fp - loss64(*args)) / (2 * eps)
        np.testing.assert_allclose(arr.grad.numpy(), num, rtol=1e-4, atol=1e-4)
