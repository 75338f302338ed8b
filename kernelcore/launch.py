"""kc.launch: argument checking and packing, grid bounds, the native call, tape recording."""
from __future__ import annotations

import ctypes
import operator
import struct

import numpy as np

from . import config, hooks
from . import types as T
from .accumulation import plan as accumulation_plan
from .adjoint_check import check_backward
from .array import ArrayType, array, array_ctypes
from .device import get_device, get_runtime, num_threads
from .errors import KernelRuntimeError, assertion_report
from .module import error_state_ctypes  # noqa: F401  (defined where the library is loaded; importable here too)
from .module import options_key


class launch_bounds_ctypes(ctypes.Structure):
    """Mirror of kc::launch_bounds_t."""
    _fields_ = [("shape", ctypes.c_int32 * 4), ("ndim", ctypes.c_int32), ("nthreads", ctypes.c_int32), ("size", ctypes.c_int64),
                ("private_mask", ctypes.c_int32), ("_pad", ctypes.c_int32)]


def _arg_error(kernel, name, msg, exc=TypeError):
    return exc(f"kernel '{kernel.key}' argument '{name}': {msg}")


def as_kc_array(value, want: ArrayType, kernel=None, name="", device=None):
    """Accept kc arrays and external arrays with __array_interface__ (zero-copy on the CPU)."""
    if isinstance(value, array):
        return value
    if not isinstance(value, np.ndarray):  # torch tensors, CUDA arrays, DLPack producers
        from .interop.external import resolve_external

        try:
            value = resolve_external(value, want.dtype)
        except (TypeError, ValueError) as e:
            if kernel is None:
                raise
            raise _arg_error(kernel, name, str(e), type(e)) from None
        if isinstance(value, array):
            return value
    if hasattr(value, "__array_interface__") or isinstance(value, np.ndarray):
        a = np.asarray(value)
        np_dt, inner = T.np_dtype_of(want.dtype)
        if a.dtype != np_dt:
            raise _arg_error(kernel, name, f"numpy array of dtype {a.dtype} cannot be passed as {want!r} (needs {np_dt})")
        if inner and a.shape[-len(inner):] != inner:
            raise _arg_error(kernel, name, f"numpy array of shape {a.shape} cannot hold {T.type_repr(want.dtype)} elements (trailing {inner})", ValueError)
        out = array.__new__(array, shape=1)
        out.device = get_device("cpu")
        out.dtype = want.dtype
        out._requires_grad = False
        out.grad = None
        out._tape_reads = False
        out._set_buffer(a, a.ndim - len(inner))
        return out
    raise _arg_error(kernel, name, f"expected {want!r}, got {type(value).__name__}")


def pack_array(value, grad=None):
    s = array_ctypes()
    if value is None:
        return s
    s.data = value.ptr
    g = grad if grad is not None else value.grad
    s.grad = g.ptr if g is not None else 0
    n = s.ndim = value.ndim
    s.shape[:n] = value.shape
    s.strides[:n] = value.strides
    return s


def pack_struct(stype, value):
    if not isinstance(value, stype):
        raise TypeError(f"expected a {stype._name} struct value, got {type(value).__name__}")
    ct = stype._ctypes()
    for name, ft in stype._fields.items():
        v = getattr(value, name)
        if isinstance(ft, ArrayType) and v is not None:
            v = as_kc_array(v, ft)
            T._check_array_field(value, name, ft, v)
        setattr(ct, name, pack_value(ft, v, name))
    return ct


hooks.fill("pack_struct", pack_struct)  # array.py (a lower layer) stores struct values through it


def pack_value(t, value, name="", kernel=None):
    """ctypes value for a non-array kernel argument of type t."""
    if isinstance(t, ArrayType):
        if value is None:
            return array_ctypes()
        return pack_array(as_kc_array(value, t, kernel, name))
    if T.is_struct(t):
        if kernel is not None:
            _check_null_fields(kernel, name, value)
        return pack_struct(t, value)
    if T.is_scalar(t):
        if isinstance(value, (T.scalar_base,)):
            value = value.value
        if isinstance(value, (np.ndarray,)) and value.size == 1:
            value = value.item()
        if T.is_int(t) and isinstance(value, (float, np.floating)):
            raise _arg_error(kernel, name, f"expected {T.type_repr(t)}, got float {value!r}") if kernel else TypeError(f"expected {T.type_repr(t)}, got float")
        if not isinstance(value, (int, float, bool, np.integer, np.floating, np.bool_)):
            raise _arg_error(kernel, name, f"expected {T.type_repr(t)}, got {type(value).__name__}") if kernel else TypeError(f"expected {T.type_repr(t)}")
        return T.to_ctypes_value(t, value)
    if T.is_composite(t):
        try:
            return T.to_ctypes_value(t, value)
        except (ValueError, TypeError) as e:
            raise _arg_error(kernel, name, f"expected {T.type_repr(t)}: {e}", ValueError) if kernel else e
    raise TypeError(f"unsupported argument type {T.type_repr(t)}")


def _check_array(kernel, name, want: ArrayType, a, device):
    if a is None:
        return None
    a = as_kc_array(a, want, kernel, name)
    if a.dtype is not want.dtype and not (T.is_struct(a.dtype) and a.dtype._ctype == getattr(want.dtype, "_ctype", None)):
        raise _arg_error(kernel, name, f"expected array of {T.type_repr(want.dtype)}, got array of {T.type_repr(a.dtype)}")
    if a.ndim != want.ndim:
        raise _arg_error(kernel, name, f"expected a {want.ndim}-d array, got {a.ndim}-d with shape {a.shape}", ValueError)
    if a.device != device:
        raise _arg_error(kernel, name, f"array is on device '{a.device}' but the launch runs on '{device}'", ValueError)
    return a


def _check_null_array(kernel, name):
    """``None`` for an array argument is a null array (as in Warp): its shape is all zeros and it
    has no data, so a kernel that loads from or stores to it would dereference a null pointer
    (a segfault in release mode). Refused here, on the general path only: the fast path never
    takes ``None``. The index arrays of an indexedarray's unindexed dimensions are null on
    purpose (the kernel tests them before use)."""
    ir = kernel.ir()
    if name in ir.array_reads or name in ir.array_writes:
        base = getattr(kernel, "base", None)  # IndexedKernel: its spread index arguments
        if base is not None and name not in base.arg_names and "__indices" in name:
            return
        what = "reads" if name in ir.array_reads else "writes"
        raise _arg_error(kernel, name, f"got None (a null array), but the kernel {what} it "
                         f"({kernel.defn.file}:{kernel.defn.firstline}); pass an array, or kc.zeros(0, ...) "
                         f"if the access is never reached", ValueError)


def _check_null_fields(kernel, name, value):
    """None for an array field of struct argument ``name`` is a null array, as for an array
    argument (_check_null_array): refused when the kernel (or a function it calls) loads from or
    stores to that field."""
    ir = kernel.ir()
    for what, paths in (("reads", getattr(ir, "field_reads", ())), ("writes", getattr(ir, "field_writes", ()))):
        for path in paths:
            if path[0] != name:
                continue
            v = value
            for k, field in enumerate(path[1:], 1):
                v = getattr(v, field, None)
                if v is None:
                    break
            if v is None:
                raise _arg_error(kernel, name, f"field '{'.'.join(path[1:k + 1])}' of struct {type(value).__name__} is "
                                 f"None (a null array), but the kernel {what} it ({kernel.defn.file}:"
                                 f"{kernel.defn.firstline}); set it to an array, or kc.zeros(0, ...) if the access "
                                 f"is never reached", ValueError)


def _launch_device(device, params):
    if device is not None:
        return get_device(device)
    for p in params:
        if isinstance(p, array):
            return p.device
    return get_device(None)


_MAX_DIM = 2**31 - 1


def parallel_grain(kernel) -> int:
    """Launches of ``kernel`` smaller than this run on one thread: ``kernel.parallel_grain`` when
    set (a kernel whose every thread does much work, such as a whole articulation's step, gains
    from all cores at a few dozen threads), else ``config.parallel_grain``."""
    return getattr(kernel, "parallel_grain", None) or config.parallel_grain


def _bounds(dim, nthreads, grain=None):
    """(launch_bounds_ctypes, dims); ``nthreads`` is called for the thread count of launches of at
    least ``grain`` threads (default ``config.parallel_grain``)."""
    grain = grain or config.parallel_grain
    if type(dim) is int and 0 <= dim <= _MAX_DIM:  # the common case, without the general path's loops
        b = launch_bounds_ctypes()
        b.shape[0] = b.size = dim
        b.ndim = 1
        b.nthreads = 1 if dim < grain else nthreads()
        return b, (dim,)
    if isinstance(dim, (int, np.integer)) and not isinstance(dim, (bool, np.bool_)):
        dim = (int(dim),)
    elif isinstance(dim, np.ndarray) and dim.ndim == 1:
        dim = tuple(dim.tolist())
    if not isinstance(dim, (tuple, list)) or not all(isinstance(d, (int, np.integer)) and not isinstance(d, (bool, np.bool_))
                                                     for d in dim):
        # a float or a string would have been truncated or parsed ("2" launched 2 threads)
        raise TypeError(f"launch dim must be an int or a tuple of 1 to 4 ints, got {dim!r}")
    dim = tuple(int(d) for d in dim)
    if not 1 <= len(dim) <= 4:
        raise ValueError(f"launch dim must have 1 to 4 dimensions, got {dim}")
    b = launch_bounds_ctypes()
    size = 1
    for k, d in enumerate(dim):
        if d < 0:
            raise ValueError(f"negative launch dimension in {dim}")
        if d > _MAX_DIM:
            # launch bounds and kc.tid() are 32-bit per dimension: a larger one would wrap
            raise ValueError(f"launch dimension {k} is {d}, more than the {_MAX_DIM} (2**31 - 1) threads per dimension "
                             f"kernelcore supports; split the launch or use a multi-dimensional dim")
        b.shape[k] = d
        size *= d
    b.ndim = len(dim)
    b.size = size
    b.nthreads = 1 if size < grain else nthreads()
    return b, dim


def launch(kernel, dim, inputs=(), outputs=(), adj_inputs=None, adj_outputs=None, device=None, adjoint=False,
           record_tape=True, stream=None, block_dim=256, max_blocks=0):
    """Run ``kernel`` over a grid of ``dim`` threads (int or tuple of up to 4 ints).

    ``inputs`` then ``outputs`` fill the kernel's arguments in order.  With
    ``adjoint=True`` the kernel's adjoint runs: array gradients come from
    ``adj_inputs``/``adj_outputs`` when given, else from each array's ``.grad``.
    """
    fast = getattr(kernel, "_fast_launch", None)
    # an explicit device equal to the fast path's own (sim launchers pass ``device=model.device``) takes it too
    if fast is not None and not adjoint and adj_inputs is None and adj_outputs is None \
            and (device is None or device is fast.dev or device == fast.dev.alias) \
            and stream is None and fast.run(dim, inputs, outputs):
        return
    if not isinstance(kernel, _kernel_class()):
        raise TypeError(f"kc.launch needs a @kc.kernel, got {type(kernel).__name__}")
    params = list(inputs) + list(outputs)
    if len(params) != len(kernel.arg_types):
        raise TypeError(f"kernel '{kernel.key}' takes {len(kernel.arg_types)} arguments "
                        f"({', '.join(kernel.arg_names)}), got {len(params)}")
    if kernel.generic:
        from .kernel_generic import resolve

        kernel = resolve(kernel, params)
    if kernel.indexed:
        from .indexed_launch import spread_arguments

        kernel, inputs, outputs, adj_inputs, adj_outputs = spread_arguments(kernel, inputs, outputs, adj_inputs,
                                                                            adj_outputs)
        params = list(inputs) + list(outputs)
    dev = _launch_device(device, params)
    adj_params = None
    if adjoint and (adj_inputs is not None or adj_outputs is not None):
        adj_params = list(adj_inputs or [None] * len(inputs)) + list(adj_outputs or [None] * len(outputs))
    values = []
    scalar_arrays = False
    for k, (name, t, v) in enumerate(zip(kernel.arg_names, kernel.arg_types, params)):
        # fast paths for the common cases (a kc array that passes every check of _check_array,
        # a Python float for a float32, an in-range Python int for an int32); others go the general way
        tv = type(v)
        if tv is array and adj_params is None and isinstance(t, ArrayType) and v.dtype is t.dtype \
                and v.ndim == t.ndim and v.device is dev:
            values.append(pack_array(v))
            continue
        if (tv is float and t is T.float32) or (tv is int and t is T.int32 and -0x80000000 <= v <= 0x7FFFFFFF):
            values.append(v)
            continue
        if isinstance(t, ArrayType):
            if v is None:
                _check_null_array(kernel, name)
            a = _check_array(kernel, name, t, v, dev)
            g = None
            if adj_params is not None and adj_params[k] is not None:
                g = _check_array(kernel, "adj_" + name, t, adj_params[k], dev)
            packed = pack_array(a, g) if a is not None else array_ctypes()
            if g is not None:
                packed.keep_grad = 1  # the caller owns this adjoint buffer: stores do not consume it
            values.append(packed)
            params[k] = a
        elif tv is array:
            scalar_arrays = True  # a one-element array for a value argument: its gradient is wanted
        else:
            values.append(pack_value(t, v, name, kernel))
    if scalar_arrays:
        from .scalar_grads import scalar_array_args, variant

        return launch(variant(kernel, scalar_array_args(kernel, params)), dim, inputs, outputs, adj_inputs,
                      adj_outputs, device, adjoint, record_tape, stream, block_dim, max_blocks)
    ir = kernel.ir()
    if adjoint:
        check_backward(kernel, ir, params, adj_params)
    bounds, dims = _bounds(dim, num_threads, parallel_grain(kernel))
    if ir.tid_arity > 1 and ir.tid_arity != len(dims):
        raise ValueError(f"kernel '{kernel.key}' unpacks kc.tid() into {ir.tid_arity} indices but was launched with dim={dims}")
    if ir.tid_arity == 1 and bounds.size > _MAX_DIM:
        raise ValueError(f"kernel '{kernel.key}' reads the flat kc.tid() (int32) but dim={dims} launches {bounds.size} "
                         f"threads, more than 2**31 - 1; unpack kc.tid() into one index per dimension")
    if bounds.size == 0:
        return
    if dev.is_cuda:
        from .cuda_backend import launch_cuda

        stream = launch_cuda(kernel, dev, bounds, values, adjoint, stream, block_dim, max_blocks)
    else:
        lk = kernel.module.ensure_built(kernel, dev)
        _thread_policy(bounds, ir, adjoint, values)
        args_struct = _args_struct(kernel, lk)
        packed = args_struct(*values)
        entry = lk.bwd if adjoint else lk.fwd
        if entry is None:
            raise RuntimeError(f"kernel '{kernel.key}' was built with enable_backward=False")
        entry(ctypes.addressof(bounds), ctypes.addressof(packed))
        # debug mode's checks; in release, run-time component indices out of range (clamped)
        _check_error_state(kernel, lk.chunk.error_state)
        if config.mode != "debug" and not adjoint:
            fast = kernel.__dict__.get("_fast_launch")
            if fast is None or fast.key != options_key():  # the next launches skip what this one did
                kernel._fast_launch = FastLaunch.create(kernel, ir, lk, dev, args_struct)
    if config.verify_nan and not adjoint:
        from .verify_nan import check_forward

        check_forward(kernel, ir, params)
    if record_tape and not adjoint:
        rt = get_runtime()
        if rt.tape_stack:
            native = None
            if not dev.is_cuda and lk.bwd is not None and config.mode != "debug":
                native = _prepare_backward(lk, bounds, ir, values, args_struct, params, parallel_grain(kernel))
            # every enclosing tape records the launch (a nested tape's work belongs to the outer ones too)
            inner = rt.tape_stack[-1]
            inner.record_launch(kernel, dims, params, dev, ir, len(inputs), native, stream)
            if len(rt.tape_stack) > 1:
                for tape in _outer_tapes(rt.tape_stack):
                    tape.record_launch(kernel, dims, params, dev, ir, len(inputs), native, stream, verify=False)


def _outer_tapes(stack):
    """The tapes enclosing the innermost one, each once (a tape may be entered twice)."""
    seen = {id(stack[-1])}
    for tape in reversed(stack[:-1]):
        if id(tape) not in seen:
            seen.add(id(tape))
            yield tape


def _thread_policy(bounds, ir, adjoint, values):
    """Thread count, private accumulation copies and plain-add flags of one CPU launch.

    ``values`` are the packed arguments (array_ctypes for arrays), adjusted in place. See
    accumulation.py: targets every thread owns an element of take plain adds; add-only targets
    get per-thread copies when they are small next to the launch; anything else scatters
    with atomics, and contended compare-and-swap on few cores costs more than a second
    thread gains (P2G forward: 138 us on one thread, 524 us on two), so such launches stay
    on one thread until they are large.
    """
    bounds.private_mask = 0
    if bounds.nthreads > 1:
        p = accumulation_plan(ir, adjoint)
        if p.targets or p.shared:
            _share_targets(bounds, p, adjoint, values)
    if bounds.nthreads <= 1:  # one thread: accumulation needs no atomics (kc_array.h, accumulate)
        for v in values:
            if type(v) is array_ctypes:
                v.serial = 1


def _share_targets(bounds, p, adjoint, values):
    ptr_of = (lambda d: d.grad) if adjoint else (lambda d: d.data)
    small = bounds.size < config.scatter_parallel_grain
    shared = p.shared
    mask = 0
    if not shared:
        owned = {t.arg for t in p.targets}
        seen = {}
        for k, v in enumerate(values):  # an array passed twice would be updated two ways at once
            if type(v) is array_ctypes and ptr_of(v):
                if ptr_of(v) in seen and (k in owned or seen[ptr_of(v)] in owned):
                    shared = True
                seen.setdefault(ptr_of(v), k)
        if adjoint:   # a gradient array also passed as a plain array (a kc.func_grad reading it) is read while added to
            grads = {values[k].grad for k in owned if values[k].grad}
            if any(type(v) is array_ctypes and v.data in grads for v in values):
                shared = True
        for k, t in enumerate(p.private):
            d = values[t.arg]
            if not ptr_of(d):
                continue
            count = 1
            for i in range(d.ndim):
                count *= d.shape[i]
            if count * t.ncomp <= 0 or not _contiguous(d, t.itemsize) or count > config.private_copy_ratio * bounds.size:
                shared = True
                break
            mask |= 1 << k
    if shared:
        if small:
            bounds.nthreads = 1
        return
    bounds.private_mask = mask
    for t in p.exclusive:
        values[t.arg].serial = 1


def _contiguous(d, itemsize):
    step = itemsize
    for i in range(d.ndim - 1, -1, -1):
        if d.shape[i] > 1 and d.strides[i] != step:
            return False
        step *= d.shape[i]
    return True


def _prepare_backward(lk, fwd_bounds, ir, values, args_struct, params, grain):
    """Everything Tape.backward needs to call the adjoint entry point directly.

    ``values`` are the forward's packed arguments (already copied into its struct), reused
    here with the adjoint's own thread policy: repacking them is cheaper than copying the
    forward struct and walking its fields (a taped launch cost 12 us more than an untaped one).
    ``grain``: the kernel's parallel_grain; a larger one than config's keeps the adjoint on one
    thread too (a small 2-D MPM loss), a smaller one does not lower the adjoint's (not measured).
    """
    b = launch_bounds_ctypes.from_buffer_copy(fwd_bounds)
    b.nthreads = num_threads() if b.size >= max(grain, config.parallel_grain) else 1
    for v in values:
        if type(v) is array_ctypes:
            v.serial = 0
    _thread_policy(b, ir, True, values)
    grads = [(p, p.grad.ptr if p.grad is not None else 0) for p in params if type(p) is array]
    return lk.bwd, b, args_struct(*values), grads


def _kernel_class():
    global _Kernel
    if _Kernel is None:  # an import statement inside launch() costs ~1 us per call
        from .kernel import Kernel

        _Kernel = Kernel
    return _Kernel


_Kernel = None


def _args_struct(kernel, lk):
    cls = getattr(lk, "args_struct", None)
    if cls is None:
        ir = kernel.ir()

        class _Args(ctypes.Structure):
            _fields_ = [(v.cname, T.ctypes_of(v.type)) for v in ir.args] or [("_unused", ctypes.c_int)]

        lk.args_struct = cls = _Args
    return cls


def _check_error_state(kernel, st):
    if not st.flag:
        return
    idx = tuple(st.index[d] for d in range(st.nidx))
    shape = tuple(st.shape[d] for d in range(st.ndim))
    line, kind, thread = st.line, st.kind, st.thread
    st.flag = 0
    where = f"at {kernel.defn.file}:{line} (thread {thread})"
    if kind == 1:
        if config.mode != "debug":  # release records no thread and clamps the index to 0
            where = f"at {kernel.defn.file}:{line} (clamped to 0; the launch's results are unreliable)"
        raise KernelRuntimeError(f"kernel '{kernel.key}': component index {idx[0]} out of range for a value of "
                                 f"{shape[0]} components {where}")
    if kind == 2:
        raise KernelRuntimeError(f"kernel '{kernel.key}': integer division or modulo by zero {where}")
    if kind == 4:
        raise KernelRuntimeError(f"kernel '{kernel.key}': index {idx[0]} out of range for dimension {shape[1]} of an "
                                 f"indexedarray of {shape[0]} elements along it {where}")
    if kind == 3:
        file, line, text, message = assertion_report(idx[0]) or (kernel.defn.file, line, "assert", None)
        raise KernelRuntimeError(f"kernel '{kernel.key}': {text} failed{': ' + message if message else ''} "
                                 f"at {file}:{line} (thread {thread})")
    raise KernelRuntimeError(f"kernel '{kernel.key}': index {idx} out of bounds for array of shape {shape} {where}")


class FastLaunch:
    """The CPU forward launch of one kernel with its per-launch work that does not depend on the
    values done once: the loaded entry point, the argument struct's layout (a struct.Struct
    format, so packing is one call), the checks each argument needs (by position), and each
    array's packed descriptor (cached on the array, see _packed_array).

    ``run`` handles the common case (int dim, kc arrays of the declared dtype/ndim on the CPU,
    Python floats/ints for float32/int32, values of other non-array types, no tape, no
    verify_nan, no private accumulation copies) and returns False for anything else, before
    doing anything observable: kc.launch then takes its general path, which raises the usual
    errors. A launch used to spend ~10 us in Python with four arguments, most of it repacking
    what the previous launch had packed.
    """

    __slots__ = ("kernel", "ir", "entry", "dev", "key", "kinds", "types", "fmt", "nargs", "needs_policy",
                 "tid_arity", "has_arrays", "sizes", "value_slots", "array_slots", "composite", "memo", "err")

    @classmethod
    def create(cls, kernel, ir, lk, dev, args_struct):
        if lk.fwd is None or kernel.generic or kernel.indexed or dev.is_cuda:
            return None
        f = cls()
        f.kernel, f.ir, f.entry, f.dev, f.key = kernel, ir, lk.fwd, dev, options_key()
        f.err = lk.chunk.error_state
        f.kinds, f.types, f.sizes, fmt, pos = [], list(kernel.arg_types), [], ["="], 0
        for (name, ctype_), t in zip(args_struct._fields_, kernel.arg_types):
            field = getattr(args_struct, name)
            f.sizes.append(field.size)
            if field.offset > pos:
                fmt.append(f"{field.offset - pos}x")
            if isinstance(t, ArrayType):
                f.kinds.append(0)
                fmt.append(f"{field.size}s")
            elif t is T.float32:
                f.kinds.append(1)
                fmt.append("f")
            elif t is T.int32:
                f.kinds.append(2)
                fmt.append("i")
            else:
                f.kinds.append(3)  # packed by pack_value (vectors, structs, other scalars)
                fmt.append(f"{field.size}s")
            pos = field.offset + field.size
        size = ctypes.sizeof(args_struct)
        if size > pos:
            fmt.append(f"{size - pos}x")
        if not kernel.arg_types:
            fmt = ["=", f"{size}x"]
        f.fmt = struct.Struct("".join(fmt))
        if f.fmt.size != size:
            return None
        f.nargs = len(kernel.arg_types)
        p = accumulation_plan(ir, False)
        f.needs_policy = bool(p.targets or p.shared)
        f.tid_arity = ir.tid_arity
        f.has_arrays = 0 in f.kinds
        f.value_slots = [k for k, kind in enumerate(f.kinds) if kind == 3]
        f.array_slots = [k for k, kind in enumerate(f.kinds) if kind == 0]
        f.composite = [T.is_composite(t) for t in f.types]
        f.memo = []
        return f

    def run(self, dim, inputs, outputs):
        """Launch if this is the common case (True); False: nothing happened, take the general path."""
        if type(dim) is int:
            if not 0 <= dim <= _MAX_DIM or self.tid_arity > 1:
                return False
            size, shape, ndim = dim, (dim, 0, 0, 0), 1
        elif type(dim) is tuple and 1 <= len(dim) <= 4:
            size = 1
            for d in dim:
                if type(d) is not int or not 0 <= d <= _MAX_DIM:
                    return False
                size *= d
            arity = self.tid_arity
            if (arity > 1 and arity != len(dim)) or (arity == 1 and size > _MAX_DIM) or size >= 1 << 62:
                return False
            shape, ndim = dim + (0, 0, 0)[:4 - len(dim)], len(dim)
        else:
            return False
        params = (*inputs, *outputs)
        if len(params) != self.nargs or config.verify_nan or get_runtime().tape_stack:
            return False
        if options_key() != self.key:
            return False
        nthreads = 1 if size < parallel_grain(self.kernel) else num_threads()
        if nthreads > 1 and self.needs_policy:
            return False
        serial = nthreads <= 1
        dev = self.dev
        if not self.has_arrays and get_device(None) is not dev:
            return False
        values = self._repeat(params, serial)
        if values is None:
            values = self._pack(params, serial)
            if values is None:
                return False
        if size:
            self.entry(_BOUNDS.pack(*shape, ndim, nthreads, size, 0, 0), self.fmt.pack(*values))
            if self.err.flag:
                _check_error_state(self.kernel, self.err)
        return True

    def _pack(self, params, serial):
        """The packed values of ``params`` (None: not the common case), remembered in the memo.

        Slots that hold the same objects as the latest launch with the same ``serial`` (arrays
        with the same gradients) take its packed values: a taped rollout launches each kernel
        with a new state every step, so the memo never matches a whole argument list, while
        most arguments (model arrays, grid sizes and constants) are those of the step before
        (a 2-D MPM grid update with 35 arguments: 32 -> ~12 us of packing per launch)."""
        base = None
        for memo in self.memo:
            if memo[0] == serial:
                base = memo
                break
        if base is None:
            values, redo = [None] * self.nargs, range(self.nargs)
        else:
            values = list(base[4])
            same = list(map(operator.is_, params, base[1]))
            redo = [k for k, s in enumerate(same) if not s]
            # an unchanged array given another gradient since, and every value slot (changed in place?)
            regrad = map(operator.is_, map(_GRAD, base[2]), base[3])
            redo += [k for k, ok in zip(self.array_slots, regrad) if not ok and same[k]]
            redo += [k for k in self.value_slots if same[k]]
        kinds, types, dev = self.kinds, self.types, self.dev
        for k in redo:
            kind, t, v = kinds[k], types[k], params[k]
            tv = type(v)
            if kind == 0:
                if tv is not array or v.dtype is not t.dtype or v.ndim != t.ndim or v.device is not dev:
                    return None
                values[k] = _packed_array(v, serial)
            elif kind == 1:
                if tv is not float:
                    return None
                values[k] = v
            elif kind == 2:
                if tv is not int or not -0x80000000 <= v <= 0x7FFFFFFF:
                    return None
                values[k] = v
            else:
                if tv is array or isinstance(v, np.ndarray):  # one-element arrays: gradient variants
                    return None
                b = self._value_bytes(k, v)
                if b is None:
                    return None
                values[k] = b
        arrays = [params[k] for k in self.array_slots]
        self.memo = [(serial, params, arrays, list(map(_GRAD, arrays)), values)] + self.memo[:_MEMO_SIZE - 1]
        return values

    def _value_bytes(self, k, v):
        """The packed bytes of value argument ``k`` (None: it does not pack to the slot's size).
        A vector or matrix of the slot's own type is its storage's bytes (what pack_value's
        ctypes copy of it holds, without building one)."""
        t = self.types[k]
        if self.composite[k] and type(v) is t:
            b = v._v.tobytes()
        else:
            try:
                b = bytes(pack_value(t, v, self.kernel.arg_names[k], self.kernel))
            except (TypeError, ValueError):
                return None
        if len(b) != self.sizes[k]:  # struct's "Ns" would pad or cut it silently
            return None
        return b

    def _repeat(self, params, serial):
        """The packed values of one of the last few launches when ``params`` are the same objects
        and its arrays still have the same gradients (an array's buffer is fixed when it is made),
        else None.  A solver stepping two states in turn launches its kernels with the same two
        argument lists every step: packing 48 arguments cost ~25 us of Python each time,
        checking them by identity ~3 us.
        Values of other types (vectors, structs) may be changed in place, so they are packed again.
        The memo keeps the arguments of the last _MEMO_SIZE launches alive until the kernel is
        launched with others."""
        for memo in self.memo:
            if memo[0] == serial and all(map(operator.is_, params, memo[1])):
                break
        else:
            return None
        if not all(map(operator.is_, map(_GRAD, memo[2]), memo[3])):
            return None
        values = memo[4]
        if self.value_slots:
            values = list(values)  # another Python thread may be packing from the same entry
        for k in self.value_slots:
            b = self._value_bytes(k, params[k])
            if b is None:
                return None
            values[k] = b
        return values


_MEMO_SIZE = 4  # argument lists remembered per kernel (FastLaunch._repeat)
_GRAD = operator.attrgetter("grad")
_BOUNDS = struct.Struct("=4iiiqii")  # launch_bounds_ctypes, packed in one call
assert _BOUNDS.size == ctypes.sizeof(launch_bounds_ctypes)


def _packed_array(a, serial):
    """The bytes of ``a``'s array_ctypes descriptor (no keep_grad; serial as given), cached on
    the array and rebuilt when its buffer or gradient changes."""
    grad = a.grad
    c = a.__dict__.get("_kc_packed")
    if c is None or c[0] is not a._buf or c[1] is not grad or (grad is not None and c[2] != grad.ptr):
        s = pack_array(a)
        s.serial = 0
        b0 = bytes(s)
        s.serial = 1
        c = a._kc_packed = (a._buf, grad, grad.ptr if grad is not None else 0, b0, bytes(s))
    return c[4] if serial else c[3]
