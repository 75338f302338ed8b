"""The layers of kernelcore, bottom up (docs/architecture.md): a module may import modules of
its own layer or a lower one, never a higher one (tests/kernelcore/test_layering.py checks
every import, at module level and inside functions, and imports each module alone).

Where a lower layer must call into a higher one (an array copy recorded on the Tape, a
struct packed for a launch), the lower layer calls a slot of ``kernelcore.hooks`` that the
higher module fills when it is imported; ``import kernelcore`` imports every module, so
every slot is filled once it has run.
"""

# (layer name, modules) bottom up; a package's ``__init__`` is listed under the package name
LAYERS = [
    ("base", ["config", "errors", "threads", "version", "hooks", "layers"]),
    ("types", ["types"]),  # scalars, vectors, matrices, structs, the array *type* and its C layout
    ("device", ["device", "interop.cuda_mem"]),
    ("array", ["array", "indexedarray", "interop", "interop.numpy_interop", "interop.dlpack", "interop.external",
               "interop.torch_interop", "interop.jax_interop"]),
    ("builtins", ["builtins", "builtins.registry", "builtins.scalar", "builtins.vector", "builtins.linalg",
                  "builtins.quaternion", "builtins.random", "builtins.noise", "builtins.atomics"]),
    ("compiler", ["ir", "passes", "adjoint", "accumulation", "adjoint_check", "kernel_api", "autodiff_api",
                  "frontend", "function"]),
    ("emit", ["emit_cpp", "emit_cuda", "adjoint_reads"]),
    ("build", ["cache", "toolchain", "nvrtc", "module", "cuda_check"]),
    ("kernel", ["kernel", "kernel_generic"]),
    ("launch", ["launch", "cuda_backend", "scalar_grads", "host_call", "indexed_launch", "verify_nan"]),
    ("tape", ["tape", "checkpoint", "checkpoint_revolve", "grad_health", "autograd"]),
    ("package", ["", "builtins.docgen"]),  # "": kernelcore/__init__.py, which imports everything
]


def layer_of(module: str) -> int:
    """Layer index (0 = base) of a kernelcore module, named relative to the package
    (``"emit_cpp"``, ``"builtins.registry"``; ``""`` for the package itself)."""
    for i, (_, mods) in enumerate(LAYERS):
        if module in mods:
            return i
    raise KeyError(f"kernelcore module '{module}' has no layer in kernelcore/layers.py: add it there")
