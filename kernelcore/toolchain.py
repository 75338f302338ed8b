"""Native compilers: g++/clang++ with OpenMP for the CPU (NVRTC lives in emit_cuda/cuda backend)."""
from __future__ import annotations

import functools
import os
import platform
import subprocess

from . import config
from .errors import NativeBuildError

NATIVE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "native")
# -fno-tree-loop-vectorize: the loop vectorizer versions the 2-4 iteration component loops of the
# adjoint builtins for aliasing, which made adjoints 2-3x slower; SLP vectorization stays on.
# -ffp-contract=off: a*b+c stays two roundings. GCC fuses it into an FMA or not depending on how
# the code around it was optimised (a product hoisted out of a loop is not fused), so the same
# expression gave results 1 ulp apart in the vectorised and the generic entry point of a kernel,
# and between a host call of a builtin and a kernel (tests/kernelcore/test_cpu_entry_points.py,
# test_host_math.py promise the same bits).
COMMON_FLAGS = ["-O3", "-std=c++17", "-fPIC", "-shared", "-fopenmp", "-march=native", "-fno-math-errno",
                "-ffp-contract=off", "-fvisibility=hidden", "-w"]
GCC_FLAGS = ["-fno-tree-loop-vectorize"]
# Modules holding a kc.kernel(simd=True) kernel (module.py): GCC may then assume that no
# floating-point operation traps (kernelcore never unmasks FP exceptions; no value changes), so
# it if-converts the selects around an int -> float conversion (an MPM stencil base's clamp).
# It must be the whole file: GCC does not inline floating-point code into a function built with
# other floating-point options, so the former optimize("no-trapping-math") attribute on the
# vectorised loop's function left bench_autodiff's G2P calling its B-spline @kc.func per element
# (0.6-0.8x with simd=True). Not every build: bench_autodiff's integrator adjoint ran 0.54x with it.
SIMD_FLAGS = ["-fno-trapping-math"]
CPU_FLAGS = COMMON_FLAGS + GCC_FLAGS  # the default compiler's flags (g++)

# Opt-in extra flags for the CPU build of one kernel module, by module name (the `module=` of
# kc.kernel): appended after the others and part of the cache key; set before the module's first
# launch. sim/pbf_lanes.py puts GCC's "-mtune-ctrl=^use_gather" here: its simd=True neighbour
# loops then load the neighbours' values one by one into vectors instead of AVX2 gather
# instructions, which ran 2-4x slower than scalar loads on the benchmark machine (AMD EPYC, whose
# -march=native tuning enables gathers).
MODULE_FLAGS: dict = {}


# @kc.kernel(fast_math=True): appended after the common flags. The "safe" part of -ffast-math:
# reassociation (vectorised sums), reciprocals for divisions, no signed zeros or traps, and FMA
# contraction (-ffp-contract=fast overrides the common =off). Not -ffinite-math-only: with it GCC
# folds isnan/isinf to false and NaN checks inside kernels would silently pass; NaN and inf still
# propagate through a fast-math kernel and are caught where the solvers check for them.
FAST_MATH_FLAGS = ["-fno-trapping-math", "-fno-signed-zeros", "-fassociative-math", "-freciprocal-math",
                   "-ffp-contract=fast"]

CLANG_FLAGS = ["-fopenmp=libgomp"]  # GCC's OpenMP runtime: present wherever g++ is, unlike libomp


def cpu_flags(cxx: str) -> list:
    """Flags for this compiler (GCC and clang each get their own extras)."""
    return COMMON_FLAGS + (CLANG_FLAGS if "clang" in os.path.basename(cxx) else GCC_FLAGS)


@functools.lru_cache(maxsize=None)
def compiler_identity(cxx: str) -> str:
    """First line of `cxx --version` plus the CPU model: part of the cache key."""
    try:
        out = subprocess.run([cxx, "--version"], capture_output=True, text=True, check=True).stdout.splitlines()[0]
    except (OSError, subprocess.CalledProcessError) as e:
        raise RuntimeError(f"C++ compiler '{cxx}' not found or not working ({e}); install g++ or set KERNELCORE_CXX") from None
    cpu = platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu += next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "")
    except OSError:
        pass
    return f"{out} | {cpu}"


def compile_cpu(source_path: str, out_path: str, module_name: str, include_dirs=(), extra_flags=()):
    """Compile one translation unit to a shared library; raises NativeBuildError with the log."""
    cxx = config.cxx
    cmd = [cxx, *cpu_flags(cxx), *extra_flags, f"-I{NATIVE_DIR}", *(f"-I{d}" for d in include_dirs), source_path,
           "-o", out_path]
    if config.verbose:
        print("kernelcore: " + " ".join(cmd))
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise NativeBuildError(module_name, proc.stderr, source_path)
    return proc
