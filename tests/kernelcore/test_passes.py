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
