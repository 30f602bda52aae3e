"""Debugging the graph: anomaly detection (``detect_anomaly``) and a picture of the backward
graph (``to_dot``), as PyTorch's ``torch.autograd.detect_anomaly`` and torchviz's ``make_dot``."""

from __future__ import annotations

import functools
import shutil

from . import _engine, _watch
from .errors import GraphvizUnavailable

# ------------------------------------------------------------------------------ anomaly mode


def is_anomaly_enabled() -> bool:
    """Return whether anomaly detection is on."""
    return _watch.anomaly


class detect_anomaly:
    """Anomaly detection for the block (or decorated function), as torch.autograd.detect_anomaly.

    While it is on, every recorded operation keeps the stack of the forward call that made it,
    and backward checks every gradient each node returns: a NaN or inf raises
    :class:`~arraygrad.errors.AnomalyError` naming the node (``<LogBackward>``), the input, and
    the forward line that created it; any other error raised in backward gets that traceback as
    a note. It slows recording down (a stack per op) and backward (a check per gradient): use it
    to find a bug, not in production. The mode is global, as PyTorch's: it covers every thread.
    """

    def __init__(self, check_nan: bool = True):
        self._check = bool(check_nan)
        self._previous: list[bool] = []

    def __enter__(self):
        self._previous.append(_watch.anomaly)
        _watch.set_anomaly(self._check)
        return self

    def __exit__(self, *exc):
        _watch.set_anomaly(self._previous.pop())
        return False

    def __call__(self, func):
        check = self._check

        @functools.wraps(func)
        def with_anomaly_detection(*args, **kwargs):
            with detect_anomaly(check):
                return func(*args, **kwargs)

        return with_anomaly_detection


class set_detect_anomaly(detect_anomaly):
    """Set anomaly detection on or off now; as a context manager it restores the mode on exit."""

    def __init__(self, mode: bool):
        super().__init__(mode)
        self._previous.append(_watch.anomaly)
        _watch.set_anomaly(self._check)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _watch.set_anomaly(self._previous.pop() if self._previous else False)
        return False

    def __call__(self, func):
        if self._previous:  # as a decorator: the mode set at construction must not leak
            _watch.set_anomaly(self._previous.pop())
        return super().__call__(func)


# ------------------------------------------------------------------------------ to_dot

_GRAPH_ATTRS = ('graph [rankdir=BT];\n'
                '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=11, '
                'fillcolor=lightgrey];')


class Dot:
    """The DOT text of a graph (``str(dot)``, ``dot.source``), rendered by Graphviz on demand."""

    def __init__(self, source: str):
        self.source = source

    def __str__(self):
        return self.source

    def __repr__(self):
        return f"<arraygrad.Dot: {self.source.count(chr(10)) + 1} lines; .source, .render()>"

    def _graphviz(self):
        try:
            import graphviz
        except ImportError:
            raise GraphvizUnavailable(
                'rendering needs the graphviz Python package: pip install "arraygrad[graph]" '
                "(and Graphviz's dot program: apt-get install graphviz, brew install graphviz); "
                "the DOT text itself is in .source") from None
        if shutil.which("dot") is None:
            raise GraphvizUnavailable(
                "rendering needs Graphviz's dot program, which is not on PATH: install Graphviz "
                "(Debian/Ubuntu: apt-get install graphviz; macOS: brew install graphviz; conda: "
                "conda install graphviz); the DOT text itself is in .source")
        return graphviz.Source(self.source)

    def pipe(self, format: str = "svg") -> bytes:
        """The graph rendered in ``format`` (``"svg"``, ``"png"``, ``"pdf"``...), as bytes."""
        return self._graphviz().pipe(format=format)

    def render(self, path, format: str = "svg") -> str:
        """Write the graph rendered in ``format`` to ``path``; return the path written."""
        path = str(path)
        data = self.pipe(format)
        with open(path, "wb") as file:
            file.write(data)
        return path

    save = render

    def _repr_svg_(self):  # Jupyter shows the picture when Graphviz is installed
        try:
            return self.pipe("svg").decode()
        except GraphvizUnavailable:
            return None


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _describe(value) -> str:
    shape = getattr(value, "shape", None)
    if shape is None:
        return repr(value)
    return f"{tuple(shape)} {value.dtype}"


def to_dot(outputs, params=None, show_saved=False) -> Dot:
    """The backward graph of ``outputs`` (a Variable or a sequence of them) as Graphviz DOT.

    One box per ``grad_fn`` named by its op (``MulBackward``), one per leaf (``AccumulateGrad``,
    with the leaf's shape, dtype and backend, and its name from ``params``, a ``{name:
    Variable}`` mapping as torchviz's, or a list of Variables), the outputs with their shapes,
    and an arrow for every entry of ``next_functions`` (from the input to the node that uses
    it; labelled with the output number when a node has several outputs). ``show_saved=True``
    adds what each node saved for backward (shape and dtype, or "freed"). ``str(dot)`` is the
    DOT text;
    ``dot.render("graph.svg")`` draws it (needs ``pip install "arraygrad[graph]"`` and Graphviz).
    """
    outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    if isinstance(params, (list, tuple)):
        params = {f"params[{k}]": v for k, v in enumerate(params)}
    elif params is not None and not hasattr(params, "items"):
        raise TypeError(f"to_dot(): params must be a dict name -> Variable (torchviz's form), or "
                        f"a list of Variables, got a {type(params).__name__}")
    names = {id(v): name for name, v in (params or {}).items()}
    lines = ["digraph backward {", "  " + _GRAPH_ATTRS]

    def node_id(node):  # stable while the graph lives: tests compare it to next_functions
        return f"n{id(node)}"

    seen = set()
    stack = []
    for k, output in enumerate(outputs):
        out_id = f"out{k}"
        label = "output" if len(outputs) == 1 else f"output {k}"
        if id(output) in names:
            label = names[id(output)]
        lines.append(f"  {out_id} [label={_quote(label + chr(10) + _describe(output))}, "
                     "fillcolor=darkolivegreen1];")
        grad_fn = getattr(output, "grad_fn", None)
        if grad_fn is None and getattr(output, "requires_grad", False):
            grad_fn = _engine.accumulator(output)
        if grad_fn is not None:
            lines.append(f"  {node_id(grad_fn)} -> {out_id};")
            if id(grad_fn) not in seen:
                seen.add(id(grad_fn))
                stack.append(grad_fn)
    while stack:
        node = stack.pop()
        me = node_id(node)
        if isinstance(node, _engine.AccumulateGrad):
            variable = node.variable
            label = "AccumulateGrad"
            if id(variable) in names:
                label += "\n" + names[id(variable)]
            label += f"\n{tuple(variable.shape)} {variable.dtype}\n{variable._backend.name}"
            lines.append(f"  {me} [label={_quote(label)}, fillcolor=lightblue];")
        else:
            lines.append(f"  {me} [label={_quote(node.name())}];")
        for child, output_nr in node.next_functions:
            if child is None:
                continue
            attrs = ""
            if getattr(child, "n_outputs", 1) > 1:
                attrs = f" [label={_quote(str(output_nr))}]"
            lines.append(f"  {node_id(child)} -> {me}{attrs};")
            if id(child) not in seen:
                seen.add(id(child))
                stack.append(child)
        if show_saved and not isinstance(node, _engine.AccumulateGrad):
            lines.extend(_saved_lines(node, me))
    lines.append("}")
    return Dot("\n".join(lines) + "\n")


def _saved_lines(node, me):
    saved = getattr(node, "saved", None)
    rule = getattr(node, "rule", None)
    if saved is None or rule is None:
        return []
    if saved is _engine._FREED:
        return [f"  {me}_saved [label=\"saved: freed\", shape=note, fillcolor=orange];",
                f"  {me}_saved -> {me} [style=dashed, arrowhead=none];"]
    lines = []
    items = getattr(rule, "saved_items", None)  # a custom Function's rule names its own
    items = items(saved) if items is not None else zip(getattr(rule, "saves", ()), saved)
    for k, (name, value) in enumerate(items):
        if value is None:
            continue
        if isinstance(value, (list, tuple)) and value and hasattr(value[0], "shape"):
            text = ", ".join(_describe(v) for v in value)
        else:
            text = _describe(value)
        lines.append(f"  {me}_s{k} [label={_quote(f'{name}: {text}')}, shape=note, "
                     "fillcolor=orange];")
        lines.append(f"  {me}_s{k} -> {me} [style=dashed, arrowhead=none];")
    return lines
