"""Global options. Set them before the first launch of a module (they key the cache)."""
import os

#: "release" or "debug" (debug bounds-checks array accesses and reports them as exceptions)
mode = os.environ.get("KERNELCORE_MODE", "release")
#: print compiler commands and keep full compiler output
verbose = False
#: static range() loops with at most this many iterations are unrolled
max_unroll = 16
#: per-thread checkpoints kept by the adjoint of each dynamic loop, at least 2 (see docs in adjoint.py)
loop_checkpoints = 64
#: check the float arrays every launch writes (and every adjoint on a Tape) for NaN/Inf and raise
#: verify_nan.NonFiniteError naming the kernel, argument and index; KERNELCORE_VERIFY_NAN=1 sets it
verify_nan = os.environ.get("KERNELCORE_VERIFY_NAN", "0") not in ("", "0")
#: warn when an array is written after being read on a Tape (write-after-read)
verify_autograd_array_access = False
#: C++ compiler for the CPU backend ("g++" or "clang++"); KERNELCORE_CXX overrides
cxx = os.environ.get("KERNELCORE_CXX", "g++")
#: launches smaller than this run on one thread (OpenMP start-up costs more than it saves)
parallel_grain = 4096
#: launches that scatter with atomics (or adjoints of array reads) stay on one thread below this size
scatter_parallel_grain = 1 << 18
#: add-only scatter targets get per-thread private copies when their element count is at most
#: this many times the launch size (the copies cost zeroing and a reduction per thread)
private_copy_ratio = 4
#: dump the IR after a named pass to stderr: "frontend", or set KERNELCORE_DUMP_IR
dump_ir = os.environ.get("KERNELCORE_DUMP_IR", "")
