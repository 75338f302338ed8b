"""kc.Tape: records launches (and differentiable copies) and replays their adjoints."""
from __future__ import annotations

import ctypes
import warnings

import numpy as np

from . import config, hooks
from .adjoint_reads import adjoint_value_reads
from . import types as T
from .array import ArrayType, _raw_copy, array
from .device import get_runtime


class _Launch:
    def __init__(self, kernel, dim, params, device, reads, writes, n_inputs, native=None, stream=None):
        self.kernel, self.dim, self.params, self.device = kernel, dim, params, device
        self.n_inputs = n_inputs
        self.native = native  # (adjoint entry, bounds, packed args, [(array, grad ptr)]) for a direct call
        self.reads, self.writes = reads, writes
        self.stream = stream  # CUDA: the stream the forward ran on; the adjoint runs there too


class _Func:
    def __init__(self, backward, arrays, name="func"):
        self.backward, self.arrays, self.name = backward, arrays, name


class _Scope:
    def __init__(self, name, begin):
        self.name, self.begin = name, begin


class Tape:
    """Record kernel launches inside ``with tape:``; ``backward()`` runs their adjoints in reverse."""

    def __init__(self):
        self.launches = []
        self._gradients = {}          # array -> gradient array, see the gradients property
        self._gradients_stale = False  # backward ran since the map was last built
        self._gradless = {}  # id -> (array, kernel key, argument): float outputs without grad computed from grads
        self.loss = None

    @property
    def gradients(self):
        """Array -> gradient array, for every array on the tape that has one (after backward).

        Built on first access rather than at the end of backward: walking every parameter of
        every launch costs about a millisecond on a 200-launch tape, which backward should not
        pay when nobody reads the map.
        """
        if self._gradients_stale:
            for e in self.launches:
                for p in (e.params if isinstance(e, _Launch) else e.arrays if isinstance(e, _Func) else ()):
                    if isinstance(p, array) and p.grad is not None:
                        self._gradients[p] = p.grad
            self._gradients_stale = False
        return self._gradients

    def __enter__(self):
        get_runtime().tape_stack.append(self)
        return self

    def __exit__(self, *exc):
        stack = get_runtime().tape_stack
        if stack and stack[-1] is self:
            stack.pop()

    # -- recording ---------------------------------------------------------------------------
    def record_launch(self, kernel, dim, params, device, ir, n_inputs=None, native=None, stream=None, verify=True):
        """Record one launch.  ``stream``: the CUDA stream it ran on (the adjoint runs there too).
        ``verify``: run the checks of verify_autograd_array_access (once per launch: nested tapes
        that record the same launch pass False)."""
        reads, writes = set(), set()
        check_backward = verify and not kernel.enable_backward
        verify = verify and config.verify_autograd_array_access
        grad_in = grad_out = False   # see _note_gradless
        gradless_out, gradless_in = [], []
        for k, name, written, read_only, read, diff in _array_roles(kernel, ir):
            p = params[k]
            if not isinstance(p, array):
                continue
            if diff:
                has_grad = p.grad is not None
                if read:
                    grad_in |= has_grad
                    if not has_grad and id(p) in self._gradless:
                        gradless_in.append((k, name))
                if written:
                    grad_out |= has_grad
                    if not has_grad:
                        gradless_out.append((p, name))
            if p.grad is not None and p.grad.shape != p.shape:   # its adjoint would write past the end
                raise ValueError(f"kernel '{kernel.key}' argument '{name}': its .grad has shape {p.grad.shape} but "
                                 f"the array has shape {p.shape}")
            if check_backward and p.grad is not None and (written or read_only):
                _warn_not_differentiable(kernel, name)
                check_backward = False
            if written:
                if verify and name in adjoint_value_reads(ir):
                    warnings.warn(f"verify_autograd_array_access: kernel '{kernel.key}' argument '{name}' is read and written "
                                  "within one kernel and its adjoint needs the values read; it will see the overwritten "
                                  "values", stacklevel=4)
                writes.add(id(p))
                if verify:
                    check_write_after_read(p, f"kernel '{kernel.key}' (argument '{name}')")
            elif read_only:
                reads.add(id(p))
                if verify and name in adjoint_value_reads(ir):
                    p._tape_reads = True  # overwriting p later makes this launch's adjoint wrong
        if kernel.enable_backward and (gradless_in or gradless_out):
            self._note_gradless(kernel, params, grad_in, grad_out, gradless_in, gradless_out)
        self.launches.append(_Launch(kernel, dim, list(params), device, reads, writes,
                                     len(params) if n_inputs is None else n_inputs, native, stream))

    def _note_gradless(self, kernel, params, grad_in, grad_out, gradless_in, gradless_out):
        """Warn (once per kernel and argument) when a launch whose outputs require grad reads a
        float array without requires_grad that an earlier launch on this tape computed from
        arrays that do: the gradient cannot flow back through it and would come out zero."""
        if gradless_in and grad_out:
            for k, name in gradless_in:
                arr, writer, wname = self._gradless[id(params[k])]
                key = (kernel, name)
                if key not in _warned_gradless:
                    _warned_gradless.add(key)
                    warnings.warn(f"kernel '{kernel.key}' ({kernel.defn.file}:{kernel.defn.firstline}) reads argument "
                                  f"'{name}', an array of shape {arr.shape} without requires_grad that kernel "
                                  f"'{writer}' (argument '{wname}') computed on this Tape from arrays that require "
                                  "grad: no gradient flows back through it (create it with requires_grad=True)",
                                  stacklevel=4)
        if grad_in:
            for p, name in gradless_out:
                self._gradless[id(p)] = (p, kernel.key, name)  # the tape's launches keep p alive: ids stay unique

    def record_func(self, backward, arrays):
        """Record a Python-side step; ``backward()`` is called during the reverse pass."""
        self.launches.append(_Func(backward, list(arrays)))

    def record_scope_begin(self, name):
        self.launches.append(_Scope(name, True))

    def record_scope_end(self):
        self.launches.append(_Scope(None, False))

    # -- reverse -----------------------------------------------------------------------------
    def backward(self, loss=None, grads=None):
        """Propagate adjoints from ``loss`` (a 1-element float array) or from ``grads={array: adjoint}``."""
        if not any(isinstance(e, (_Launch, _Func)) for e in self.launches):
            raise RuntimeError("Tape.backward(): the tape is empty — record launches inside 'with tape:' first")
        if loss is None and not grads:
            raise ValueError("Tape.backward() needs loss=... or grads={array: adjoint}")
        if loss is not None:
            if not isinstance(loss, array) or loss.size != 1 or not T.is_float(loss.dtype):
                raise ValueError("Tape.backward(loss): loss must be a 1-element float array "
                                 f"(got {getattr(loss, 'shape', type(loss).__name__)}, dtype {T.type_repr(getattr(loss, 'dtype', None))})")
            if loss.grad is None:
                raise ValueError("Tape.backward(loss): the loss array was not created with requires_grad=True")
            if not self._participates(loss):
                raise ValueError("Tape.backward(loss): the loss array never took part in a recorded launch")
            loss.grad.fill_(1.0)
        for a, g in (grads or {}).items():
            if not isinstance(a, array):
                raise TypeError("Tape.backward(grads=...): keys must be kernelcore arrays")
            if not self._participates(a):
                raise ValueError(f"Tape.backward(grads=...): array of shape {a.shape} never took part in a recorded launch")
            if a.grad is None:
                raise ValueError("Tape.backward(grads=...): the array was not created with requires_grad=True")
            g = g if isinstance(g, array) else array(np.asarray(g), dtype=a.dtype, device=a.device)
            if g.shape != a.shape:
                raise ValueError(f"Tape.backward(grads=...): adjoint shape {g.shape} does not match array shape {a.shape}")
            _raw_copy(a.grad, g)
        self._run_adjoints()

    def _run_adjoints(self):
        """Run the adjoints of the recording in reverse, from the gradients the arrays hold now
        (kernelcore.checkpoint seeds them itself and calls this for each recomputed segment)."""
        from .adjoint_check import check_backward
        from .launch import launch

        for pos, e in reversed(list(enumerate(self.launches))):
            if isinstance(e, _Launch):
                if not e.kernel.enable_backward:
                    continue  # declared non-differentiable (e.g. building an acceleration structure)
                native = e.native is not None and _grads_unchanged(e.native[3])
                # a needed adjoint that does not exist (gradient shapes: checked at record time, or by launch)
                check_backward(e.kernel, e.kernel.ir(), e.params, grad_shapes=False)
                if native:
                    # the arguments were packed at record time: call the adjoint directly
                    entry, bounds, packed, _ = e.native
                    entry(ctypes.addressof(bounds), ctypes.addressof(packed))
                else:
                    launch(e.kernel, e.dim, inputs=e.params, device=e.device, adjoint=True, record_tape=False,
                           stream=e.stream)
                if config.verify_nan:
                    from .verify_nan import check_adjoint

                    check_adjoint(e.kernel, e.params, pos)
            elif isinstance(e, _Func):
                e.backward()
        self._gradients_stale = True

    def _participates(self, a):
        for e in reversed(self.launches):  # a loss is usually written by one of the last launches
            items = e.params if isinstance(e, _Launch) else e.arrays if isinstance(e, _Func) else ()
            for p in items:
                if p is a or (isinstance(p, array) and p.ptr == a.ptr and p.shape == a.shape):
                    return True
        return False

    def zero(self):
        """Zero every gradient of arrays on the tape (keeps the recording)."""
        # each gradient once: a rollout passes every state to two steps and the model's arrays
        # to all of them (a 64-step 2-D MPM tape: 12.6 -> 11.0 ms, its states were cleared twice)
        done = set()
        for e in self.launches:
            for p in (e.params if isinstance(e, _Launch) else e.arrays if isinstance(e, _Func) else ()):
                if isinstance(p, array) and p.grad is not None and id(p.grad) not in done:
                    done.add(id(p.grad))
                    p.grad.zero_()
        for g in self._gradients.values():
            if id(g) not in done:
                g.zero_()

    def reset(self):
        """Forget the recording (and the read marks of verify_autograd_array_access); zero gradients."""
        self.zero()
        for e in self.launches:
            for p in (e.params if isinstance(e, _Launch) else e.arrays if isinstance(e, _Func) else ()):
                if isinstance(p, array):
                    p._tape_reads = False
        self.launches = []
        self._gradless = {}
        self._gradients = {}
        self._gradients_stale = False

    # -- visualisation ------------------------------------------------------------------------
    def visualize(self, filename=None, array_labels=None):
        """Write a GraphViz dot graph of launches (boxes) and arrays (ellipses; green = requires_grad)."""
        labels = {id(k): v for k, v in (array_labels or {}).items()}
        lines = ["digraph tape {", '  rankdir=TB; node [fontname="Helvetica"];']
        arrays = {}

        def arr_node(a):
            key = id(a)
            if key not in arrays:
                name = f"a{len(arrays)}"
                arrays[key] = name
                lab = labels.get(key, f"array{tuple(a.shape)}")
                color = "palegreen" if a.requires_grad else "lightgray"
                lines.append(f'  {name} [shape=ellipse, style=filled, fillcolor={color}, label="{lab}\\n{T.type_repr(a.dtype)}"];')
            return arrays[key]

        depth = 0
        for i, e in enumerate(self.launches):
            if isinstance(e, _Scope):
                if e.begin:
                    lines.append(f'  subgraph cluster_{i} {{ label="{e.name}";')
                    depth += 1
                elif depth:
                    lines.append("  }")
                    depth -= 1
                continue
            if isinstance(e, _Func):
                lines.append(f'  l{i} [shape=box, style=filled, fillcolor=lightblue, label="record_func"];')
                continue
            lines.append(f'  l{i} [shape=box, style=filled, fillcolor=gray90, label="{e.kernel.key}\\ndim={e.dim}"];')
            for name, t, p in zip(e.kernel.arg_names, e.kernel.arg_types, e.params):
                if not isinstance(p, array):
                    continue
                n = arr_node(p)
                if id(p) in e.writes:
                    lines.append(f'  l{i} -> {n} [label="{name}"];')
                else:
                    lines.append(f'  {n} -> l{i} [label="{name}"];')
        lines.extend(["  }"] * depth)
        lines.append("}")
        text = "\n".join(lines) + "\n"
        if filename:
            with open(filename, "w") as f:
                f.write(text)
        return text


_warned_not_differentiable = set()
_warned_gradless = set()  # (kernel, argument) already warned about by Tape._note_gradless


def _warn_not_differentiable(kernel, name):
    """Once per kernel: a kernel without an adjoint was recorded touching an array that requires grad."""
    if kernel in _warned_not_differentiable:
        return
    _warned_not_differentiable.add(kernel)
    warnings.warn(f"kernel '{kernel.key}' ({kernel.defn.file}:{kernel.defn.firstline}) was built with enable_backward=False but is recorded on a "
                  f"Tape with argument '{name}', an array that requires grad: Tape.backward() skips it, so no gradient "
                  "flows through it", stacklevel=4)


def _grads_unchanged(recorded):
    for a, ptr in recorded:
        g = a.grad
        if (g.ptr if g is not None else 0) != ptr:
            return False
    return True


def record_copy(dest, src):
    """Make kc.copy/clone/assign differentiable: adjoint of dest flows into src."""
    rt = get_runtime()
    if not rt.tape_stack:
        return

    def backward():
        if dest.grad is not None and src.grad is not None:
            g, dev = dest.grad, src.grad.device
            if g.device != dev:  # host<->device or across GPUs: bring the adjoint over first
                g = array(shape=src.grad.shape, dtype=src.grad.dtype, device=dev)
                _raw_copy(g, dest.grad)
            if dev.is_cpu:
                src.grad._buf += g._buf
            else:
                from .interop.cuda_mem import device_context

                with device_context(dev):
                    src.grad._buf += g._buf  # CuPy buffers, both on src's device
            if dest.grad is not src.grad:
                dest.grad.zero_()  # dest was overwritten: its gradient is consumed, as by a store

    entry = _Func(backward, [src, dest], "copy")
    seen = set()
    for tape in reversed(rt.tape_stack):  # every enclosing tape records it, as launches
        if id(tape) not in seen:
            seen.add(id(tape))
            tape.launches.append(entry)
    if config.verify_autograd_array_access:
        check_write_after_read(dest, "kc.copy")  # a copy's adjoint needs no values: src is not marked


hooks.fill("record_copy", record_copy)  # array.py (a lower layer) records copies through it


def _array_roles(kernel, ir):
    """(index, name, written, read only, read, differentiable dtype) of each array argument, worked
    out once per kernel IR."""
    roles = getattr(ir, "tape_array_roles", None)
    if roles is None:
        roles = ir.tape_array_roles = [
            (k, name, name in ir.array_writes, name in ir.array_reads and name not in ir.array_writes,
             name in ir.array_reads, T.is_differentiable_type(t.dtype) and not T.is_struct(t.dtype))
            for k, (name, t) in enumerate(zip(kernel.arg_names, kernel.arg_types)) if isinstance(t, ArrayType)]
    return roles


def check_write_after_read(a, where):
    """Warn when ``a`` is overwritten after a recorded launch whose adjoint needs its values."""
    if getattr(a, "_tape_reads", False):
        warnings.warn(f"verify_autograd_array_access: array of shape {a.shape} is written by {where} after being read "
                      "earlier on the tape by a kernel whose adjoint needs the values read; gradients through the "
                      "earlier read will be wrong (allocate a new array)",
                      stacklevel=3)


hooks.fill("check_write_after_read", check_write_after_read)  # called by array.py (a lower layer)
