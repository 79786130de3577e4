"""``.func`` calls: every ``call`` of a device function defined in the module is inlined before lowering.

PTX ISA §9.7.12.3 ``call``: arguments and results travel through ``.param`` variables the caller declares
for the call (``st.param`` before it, ``ld.param`` after it); the callee reads its parameters with
``ld.param`` from its own parameter names and writes its results to its return parameters; ``ret``
returns (§9.7.12.4). The emulator gives a call exactly that meaning by substitution: the callee's body
replaces the ``call``, with

* its registers, labels and local variables renamed apart (``callee#k@name``: the *k*-th call site);
* its parameter and return-parameter names replaced by the caller's call-site ``.param`` variables;
* each ``ret`` turned into a branch to the instruction after the call (so divergent lanes reconverge
  there, as they do after a real return);
* a guarded call (``@p call``) skipped by the lanes whose guard is false.

The callee's instructions keep their own source lines, so an error inside a device function names the
line of that function. Calls through a register (``call %rd, (...), proto``), calls of functions with no
body in the module (other than ``vprintf``, which the emulator executes) and recursion are refused with
:class:`~h100lab.emu.errors.UnsupportedInstruction` naming the call.
"""
from __future__ import annotations

import copy
from dataclasses import replace

from .errors import UnsupportedInstruction
from .ptx import Function, Instr, Module, Operand

__all__ = ["inline_calls", "inline_function"]

_BUILTIN = {"vprintf"}  # executed by the emulator itself (lower.py)


def inline_calls(module: Module) -> Module:
    """Inline every call of a module-defined ``.func`` into every kernel of ``module`` (in place)."""
    for fn in list(module.functions.values()):
        if fn.entry:
            inline_function(module, fn)
    return module


def inline_function(module: Module, fn: Function) -> Function:
    """Inline the calls of kernel ``fn`` (in place; a second call finds nothing left to do)."""
    return _inline_into(module, fn, stack=(fn.name,))


def _calls(fn: Function) -> bool:
    return any(ins.opcode == "call" and ins.ops and ins.ops[0].kind in ("sym", "label")
               and ins.ops[0].name not in _BUILTIN for ins in fn.body)


def _inline_into(module: Module, fn: Function, stack: tuple) -> Function:
    if not _calls(fn):
        return fn
    body: list[Instr] = []
    old_to_new: dict[int, int] = {}
    extra_labels: dict[str, int] = {}
    site = 0
    for i, ins in enumerate(fn.body):
        old_to_new[i] = len(body)
        callee_name = ins.ops[0].name if ins.opcode == "call" and ins.ops else None
        if callee_name is None or callee_name in _BUILTIN:
            body.append(ins)
            continue
        if ins.ops[0].kind not in ("sym", "label"):
            raise UnsupportedInstruction(f"{ins.text}: an indirect call (through a register) is not emulated "
                                         "(PTX §9.7.12.3)")
        callee = module.functions.get(callee_name)
        if callee is None or (not callee.body and not callee.entry):
            raise UnsupportedInstruction(f"call {callee_name}: the module declares no body for it (an extern "
                                         "device function needs linking, which NVRTC's single-file PTX lacks)")
        if callee.entry:
            raise UnsupportedInstruction(f"call {callee_name}: a kernel (.entry) cannot be called (PTX §11.1)")
        if callee_name in stack:
            raise UnsupportedInstruction(f"call {callee_name}: recursion ({' -> '.join(stack + (callee_name,))}) is "
                                         "not emulated: the emulator inlines device functions")
        callee = _inline_into(module, copy.deepcopy(callee), stack + (callee_name,))
        site += 1
        body += _expand(fn, ins, callee, f"{callee_name}#{site}@", extra_labels, len(body))
    old_to_new[len(fn.body)] = len(body)
    fn.labels = {name: old_to_new[idx] for name, idx in fn.labels.items()}
    fn.labels.update(extra_labels)
    fn.body = body
    return fn


def _expand(fn: Function, call: Instr, callee: Function, prefix: str, labels: dict, at: int) -> list[Instr]:
    """The instructions that replace ``call`` (starting at index ``at`` of the new body)."""
    rets, args = call.ops[1].items, call.ops[2].items
    if len(args) != len(callee.params) or len(rets) != len(callee.rets):
        raise UnsupportedInstruction(f"{call.text}: {len(args)} arguments and {len(rets)} results for "
                                     f"{callee.name}, which takes {len(callee.params)} and returns "
                                     f"{len(callee.rets)} (PTX §9.7.12.3)")
    params = {p.name: a.name for p, a in zip(callee.params, args)}
    params.update({p.name: r.name for p, r in zip(callee.rets, rets)})
    for r, t in callee.regs.items():
        fn.regs[prefix + r] = t
    for v in callee.variables:
        fn.variables.append(replace(v, name=prefix + v.name))
    local_vars = {v.name for v in callee.variables}
    end = prefix + "$return"
    out: list[Instr] = []
    if call.guard is not None:  # lanes whose guard is false skip the call
        out.append(_branch(end, call.guard, not call.guard_neg, call))
    base = at + len(out)
    for name, idx in callee.labels.items():
        labels[prefix + name] = base + idx

    def ren(o: Operand) -> Operand:
        k = o.kind
        if k == "reg":
            return replace(o, name=prefix + o.name)
        if k == "label":
            return replace(o, name=prefix + o.name)
        if k == "sym":
            if o.name in params:
                return replace(o, name=params[o.name])
            if o.name in local_vars:
                return replace(o, name=prefix + o.name)
            return o
        if k == "addr":
            return replace(o, base=ren(o.base) if o.base is not None else None,
                           items=tuple(ren(x) for x in o.items))
        if k in ("vec", "pair"):
            return replace(o, items=tuple(ren(x) for x in o.items))
        return o

    for ins in callee.body:
        g = prefix + ins.guard if ins.guard is not None else None
        if ins.opcode == "ret":
            out.append(_branch(end, g, ins.guard_neg, ins))
            continue
        new = replace(ins, ops=tuple(ren(o) for o in ins.ops), guard=g)
        new._suffixes = ins._suffixes
        out.append(new)
    labels[end] = at + len(out)
    return out


def _branch(label: str, guard: str | None, neg: bool, like: Instr) -> Instr:
    b = Instr("bra", (), (), (Operand("label", label),), guard, neg, like.line, f"bra {label}  // {like.text}",
              like.src)
    b._suffixes = ()
    return b
