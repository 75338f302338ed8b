"""Gradient tools: Jacobians by adjoint launches and by finite differences, gradchecks.

``jacobian`` evaluates one Jacobian row per adjoint launch (the output adjoint selects
one scalar component); ``jacobian_fd`` perturbs one input component at a time with
central differences.  ``gradcheck`` compares them per (input, output) pair and reports
the largest absolute and relative error.  ``gradient_norms`` and ``clip_grad_norm``
(grad_health.py) watch and bound gradients over long rollouts.
"""
from __future__ import annotations

import numpy as np

from . import types as T
from .array import ArrayType, array, clone, zeros_like
from .launch import launch
from .grad_health import clip_grad_norm, gradient_norms  # noqa: F401  (kc.autograd.clip_grad_norm, ...)


def _is_float_array(a):
    return isinstance(a, array) and (T.is_float(a.dtype) or (T.is_composite(a.dtype) and T.is_float(a.dtype._dtype)))


def _arg_names(kernel, n_inputs, n_outputs):
    names = kernel.arg_names
    return names[:n_inputs], names[n_inputs:n_inputs + n_outputs]


def _selected(mask, in_name, out_name):
    return mask is None or (in_name, out_name) in mask


def jacobian(kernel, dim, inputs, outputs, input_output_mask=None, device=None, max_outputs_per_var=-1):
    """Jacobians {(input_name, output_name): (n_out, n_in) numpy array} from adjoint launches.

    Runs the forward once, then one adjoint launch per output component. Rows beyond
    ``max_outputs_per_var`` are NaN.
    """
    inputs, outputs = list(inputs), list(outputs)
    in_names, out_names = _arg_names(kernel, len(inputs), len(outputs))
    launch(kernel, dim, inputs=inputs, outputs=outputs, device=device, record_tape=False)
    jacs = {}
    for oi, (oname, out) in enumerate(zip(out_names, outputs)):
        if not _is_float_array(out):
            continue
        n_out = out.numpy().size
        pairs = [(ii, iname, a) for ii, (iname, a) in enumerate(zip(in_names, inputs))
                 if _is_float_array(a) and _selected(input_output_mask, iname, oname)]
        if not pairs:
            continue
        for ii, iname, a in pairs:
            jacs[(iname, oname)] = np.full((n_out, a.numpy().size), np.nan)
        rows = n_out if max_outputs_per_var is None or max_outputs_per_var < 0 else min(n_out, max_outputs_per_var)
        for k in range(rows):
            adj_out = [zeros_like(o, requires_grad=False) if isinstance(o, array) else None for o in outputs]
            adj_out[oi].numpy().reshape(-1)[k] = 1.0
            adj_in = [zeros_like(a, requires_grad=False) if isinstance(a, array) else None for a in inputs]
            launch(kernel, dim, inputs=inputs, outputs=outputs, device=device, adjoint=True,
                   adj_inputs=adj_in, adj_outputs=adj_out, record_tape=False)
            for ii, iname, a in pairs:
                jacs[(iname, oname)][k, :] = adj_in[ii].numpy().reshape(-1)
    return jacs


def jacobian_fd(kernel, dim, inputs, outputs, input_output_mask=None, device=None, max_inputs_per_var=-1, eps=1e-4):
    """Jacobians by central finite differences (inputs perturbed in place and restored)."""
    inputs, outputs = list(inputs), list(outputs)
    in_names, out_names = _arg_names(kernel, len(inputs), len(outputs))
    saved_out = [o.numpy().copy() if isinstance(o, array) else None for o in outputs]

    def evaluate():
        for o, s in zip(outputs, saved_out):
            if s is not None:
                o.numpy()[...] = s
        launch(kernel, dim, inputs=inputs, outputs=outputs, device=device, record_tape=False)
        return [o.numpy().reshape(-1).astype(np.float64).copy() if _is_float_array(o) else None for o in outputs]

    jacs = {}
    for ii, (iname, a) in enumerate(zip(in_names, inputs)):
        if not _is_float_array(a):
            continue
        sel = [(oi, oname) for oi, oname in enumerate(out_names)
               if _is_float_array(outputs[oi]) and _selected(input_output_mask, iname, oname)]
        if not sel:
            continue
        flat = a.numpy().reshape(-1)
        n_in = flat.size
        for oi, oname in sel:
            jacs[(iname, oname)] = np.full((outputs[oi].numpy().size, n_in), np.nan)
        cols = n_in if max_inputs_per_var is None or max_inputs_per_var < 0 else min(n_in, max_inputs_per_var)
        for j in range(cols):
            x0 = flat[j].copy()
            flat[j] = x0 + eps
            fp = evaluate()
            flat[j] = x0 - eps
            fm = evaluate()
            flat[j] = x0
            for oi, oname in sel:
                jacs[(iname, oname)][:, j] = (fp[oi] - fm[oi]) / (2.0 * eps)
    evaluate()  # leave outputs as the unperturbed forward produced them
    return jacs


class GradcheckResult:
    """Truthy when every pair passed; ``rows`` holds (input, output, max_abs, max_rel, passed)."""

    def __init__(self, name, rows):
        self.name, self.rows = name, rows

    def __bool__(self):
        return all(r[4] for r in self.rows)

    def summary(self) -> str:
        lines = [f"gradcheck for kernel {self.name}:", f"{'input':>12} {'output':>12} {'max abs err':>14} {'max rel err':>14}  pass"]
        for i, o, ae, re, ok in self.rows:
            lines.append(f"{i:>12} {o:>12} {ae:14.6e} {re:14.6e}  {'PASS' if ok else 'FAIL'}")
        lines.append(f"gradient check for kernel {self.name} {'passed' if self else 'FAILED'}")
        return "\n".join(lines)


def gradcheck(kernel, dim, inputs, outputs, eps=1e-4, atol=1e-3, rtol=1e-2, raise_exception=True,
              input_output_mask=None, device=None, max_inputs_per_var=-1, max_outputs_per_var=-1,
              show_summary=True) -> GradcheckResult:
    """Compare adjoint Jacobians with finite differences for every (input, output) pair."""
    fd = jacobian_fd(kernel, dim, inputs, outputs, input_output_mask, device, max_inputs_per_var, eps)
    ad = jacobian(kernel, dim, inputs, outputs, input_output_mask, device, max_outputs_per_var)
    rows = []
    for key in ad:
        if key not in fd:
            continue
        a, f = ad[key], fd[key]
        m = ~(np.isnan(a) | np.isnan(f))
        # rows past max_outputs_per_var (columns past max_inputs_per_var) are NaN by design;
        # a NaN adjoint where both sides were evaluated and the difference is finite is an error
        evaluated = np.zeros(a.shape, dtype=bool)
        evaluated[:a.shape[0] if max_outputs_per_var is None or max_outputs_per_var < 0 else max_outputs_per_var] = True
        nan_adjoint = bool(np.any(np.isnan(a) & evaluated & np.isfinite(f)))
        diff = np.abs(a - f)[m]
        max_abs = float(diff.max()) if diff.size else 0.0
        rel = diff / np.maximum(np.abs(f[m]), 1e-12) if diff.size else np.zeros(0)
        # relative error only where the entry is not tiny (else absolute error decides)
        rel_sig = rel[np.abs(f[m]) > atol] if diff.size else rel
        max_rel = float(rel_sig.max()) if rel_sig.size else 0.0
        ok = bool(np.all(diff <= atol + rtol * np.abs(f[m]))) if diff.size else True
        if nan_adjoint:
            ok, max_abs, max_rel = False, float("nan"), float("nan")
        rows.append((key[0], key[1], max_abs, max_rel, ok))
    result = GradcheckResult(kernel.key, rows)
    if show_summary:
        print(result.summary())
    if raise_exception and not result:
        raise AssertionError(result.summary())
    return result


def gradcheck_tape(tape, eps=1e-4, atol=1e-3, rtol=1e-2, raise_exception=True, input_output_mask=None,
                   max_inputs_per_var=-1, max_outputs_per_var=-1, show_summary=True) -> bool:
    """Gradcheck every launch recorded on a tape, each on copies of its arrays (the launches of
    every step of a ``kc.checkpointed`` loop included, recomputed from its initial state)."""
    from .tape import _Launch

    ok = True
    for e in tape.launches:
        if getattr(e, "expand", None) is not None:  # a kc.checkpointed loop: check the launches of its steps
            ok = gradcheck_tape(e.expand(), eps, atol, rtol, False, input_output_mask, max_inputs_per_var,
                                max_outputs_per_var, show_summary) and ok
            continue
        if not isinstance(e, _Launch):
            continue
        params = [clone(p, requires_grad=False) if isinstance(p, array) else p for p in e.params]
        n_in = e.n_inputs
        r = gradcheck(e.kernel, e.dim, params[:n_in], params[n_in:], eps, atol, rtol, False, input_output_mask,
                      e.device, max_inputs_per_var, max_outputs_per_var, show_summary)
        ok = ok and bool(r)
    if raise_exception and not ok:
        raise AssertionError("gradcheck_tape failed (see the summaries above)")
    return ok
