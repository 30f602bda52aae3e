"""The section of docs/interop.md on torch's API on Variables (``__torch_function__``), from
``arraygrad/_torch_protocol.py``'s tables and the installed torch.

The functions counted are those torch itself lists as overridable
(``torch.overrides.get_testing_overrides()``) in ``torch``, ``torch.nn.functional``,
``torch.linalg`` and ``torch.special``, and the public methods of ``torch.Tensor``. Run
``python -m tests.interop.torch_matrix`` from the repository root to rewrite the section;
``tests/interop/test_matrix.py`` fails when it is not current. ``python -m tests.interop.matrix``
writes it too, with the rest of the page.
"""

from __future__ import annotations

import pathlib

from arraygrad import _torch_protocol as P

OUTPUT = pathlib.Path(__file__).resolve().parents[2] / "docs" / "interop.md"
HEADING = "## torch's API on Variables (`__torch_function__`"
MODULES = ("torch", "torch.nn.functional", "torch.linalg", "torch.special")


def covered(prefix, name):
    """Whether torch's function or method ``prefix + name`` has an entry (an in-place method
    ``x_`` where ``x`` has one and is listed in ``IN_PLACE``)."""
    if P.entry(prefix + name) is not None:
        return True
    return prefix == "Tensor." and name.endswith("_") and name[:-1] in P.IN_PLACE


def torch_api():
    """``{module: (covered names, uncovered names)}`` from the installed torch."""
    import sys

    import torch
    import torch.nn.functional  # noqa: F401
    from torch.overrides import get_testing_overrides

    overridable = get_testing_overrides()

    def listed(value):
        try:
            return value in overridable
        except TypeError:  # unhashable
            return False
    result = {}
    for module_name in MODULES + ("torch.Tensor",):
        prefix = P.MODULES[module_name][0]
        module = ({n: getattr(torch.Tensor, n, None) for n in dir(torch.Tensor)}
                  if module_name == "torch.Tensor" else vars(sys.modules[module_name]))
        names = sorted(n for n, f in module.items() if not n.startswith("_") and listed(f))
        result[module_name] = ([n for n in names if covered(prefix, n)],
                               [n for n in names if not covered(prefix, n)])
    return result


def torch_api_section():
    """The lines of docs/interop.md on torch's API on Variables."""
    import torch

    api = torch_api()

    def names(group):
        return ", ".join(f"`{n}`" for n in group) or "(none)"
    total_covered = sum(len(c) for m, (c, _) in api.items() if m != "torch.Tensor")
    total = sum(len(c) + len(u) for m, (c, u) in api.items() if m != "torch.Tensor")
    lines = [f"{HEADING}; torch {torch.__version__.split('+')[0]})", "",
             "On the torch backend, torch's functions and Tensor methods called with Variables "
             "(`torch.sum(v, dim=0)`, `F.cross_entropy(v, target)`, `torch.linalg.inv(v)`, "
             "`tensor + v`, `Tensor.add_(v, w)`) record through the differentiable namespace, "
             "with torch's signatures, and a Variable's own methods are torch's there "
             "(`v.sum(dim=1)`, `v.view(-1)`, `v.std()` dividing by n − 1, `v.max(0)` giving "
             "values and indices, `v.size()`), so PyTorch code runs as it is written "
             "(`examples/tutorials/verbatim/`). `out=` and any argument an entry does not "
             "take are refused by name; a function with no entry raises `TypeError` naming it. "
             "On another backend a torch function refuses a Variable, naming its backend, and "
             "a torch method says what to write instead. `tests/test_torch_function.py` checks "
             "gradients and Hessians against `torch.func`.", "",
             "Coverage of what torch lists as overridable "
             "(`torch.overrides.get_testing_overrides()`); `python -m "
             "tests.interop.torch_matrix` writes this section from "
             "`arraygrad/_torch_protocol.py`:", "",
             "| module | recorded | of | share |", "|---|---|---|---|"]
    for module_name, (done, missing) in api.items():
        n = len(done) + len(missing)
        label = "`torch.Tensor` methods" if module_name == "torch.Tensor" else f"`{module_name}`"
        lines.append(f"| {label} | {len(done)} | {n} | {100 * len(done) / n:.0f}% |")
    lines.append(f"| functions, all four modules | {total_covered} | {total} | "
                 f"{100 * total_covered / total:.0f}% |")
    for module_name, (done, missing) in api.items():
        label = "`torch.Tensor` methods" if module_name == "torch.Tensor" else f"`{module_name}`"
        lines += ["", f"**{label}**, recorded: " + names(done), "",
                  f"**{label}**, not covered (`TypeError`): " + names(missing)]
    return lines


def render_into(text):
    """``text`` (docs/interop.md) with its torch section, which is its last, replaced (or
    appended)."""
    start = text.find(HEADING)
    head = text if start < 0 else text[:start]
    return head.rstrip("\n") + "\n\n" + "\n".join(torch_api_section()) + "\n"


def main():
    OUTPUT.write_text(render_into(OUTPUT.read_text()))
    print(f"wrote the torch section of {OUTPUT}")


if __name__ == "__main__":
    main()
