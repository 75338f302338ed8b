"""8 processes compiling the same module into an empty cache at the same moment (issue #21).

Each child imports kernelcore, counts its own compiler calls, waits at a file barrier
so that all eight reach their first launch together, then launches.  The cache must end
with one valid entry, every child must compute the right numbers with no error, and the
entry lock must let exactly one of them run the compiler (the others load its binary).
"""
import os
import subprocess
import sys
import textwrap
import time

from kernelcore import cache

CHILD = textwrap.dedent("""
    import os, sys, time
    import numpy as np
    import kernelcore as kc
    from kernelcore import toolchain

    log, barrier, me = sys.argv[1], sys.argv[2], sys.argv[3]
    real = toolchain.compile_cpu

    def counted(*a, **k):  # one line per compiler run, appended atomically
        with open(log, "a") as f:
            f.write(me + "\\n")
        return real(*a, **k)

    toolchain.compile_cpu = counted

    @kc.kernel
    def k(x: kc.array(dtype=float)):
        i = kc.tid()
        x[i] = float(i) * 3.0 + 0.5

    open(os.path.join(barrier, "ready." + me), "w").close()
    while not os.path.exists(os.path.join(barrier, "go")):
        time.sleep(0.002)
    x = np.zeros(16, np.float32)
    kc.launch(k, dim=16, inputs=[x])
    print(repr(float(x.sum())))
""")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
N = 8


def test_eight_cold_processes_one_entry_one_compile(tmp_path):
    cache_root = tmp_path / "cache"
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    log = tmp_path / "compiles.log"
    script = tmp_path / "cold_module.py"
    script.write_text(CHILD)
    env = dict(os.environ, KERNELCORE_CACHE_DIR=str(cache_root),
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    procs = [subprocess.Popen([sys.executable, str(script), str(log), str(barrier), str(i)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(N)]
    try:
        deadline = time.monotonic() + 300
        while len([p for p in os.listdir(barrier) if p.startswith("ready.")]) < N:
            assert all(p.poll() is None for p in procs), [p.communicate()[1] for p in procs if p.poll() is not None]
            assert time.monotonic() < deadline, "children did not start"
            time.sleep(0.01)
        (barrier / "go").touch()
        outs = [p.communicate(timeout=300) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    assert [p.returncode for p in procs] == [0] * N, [o[1][-2000:] for o in outs]
    assert all(not err.strip() for _, err in outs), [err for _, err in outs]
    expected = sum(i * 3.0 + 0.5 for i in range(16))
    assert [float(out) for out, _ in outs] == [expected] * N
    binaries = [p for p in os.listdir(cache_root) if p.endswith(".so")]
    assert len(binaries) == 1, binaries  # one entry, valid: its digest matches its binary
    key = binaries[0][:-3]
    with open(cache_root / (key + ".so.sha256")) as f:
        assert cache.file_digest(str(cache_root / binaries[0])) == f.read().strip()
    assert not [p for p in os.listdir(cache_root) if p.startswith(".")], "temporary files left behind"
    assert len(log.read_text().split()) == 1, "the compiler ran more than once for one entry"
