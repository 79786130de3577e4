"""What the chapters display besides figures: markdown tables and kernel listings.

One copy for every chapter (they used to define these themselves): ``md_table`` renders rows of dicts,
``excerpt`` shows a slice of a kernel file (or of one of the package's CUDA headers) between two marker lines,
``annotated`` shows a whole source with line numbers and a table of notes keyed by a snippet of their line.
"""
from __future__ import annotations

from pathlib import Path

__all__ = ["md_table", "excerpt", "annotated", "header_source"]


def _markdown(text: str):
    from IPython.display import Markdown

    return Markdown(text)


def md_table(rows, columns=None):
    """A list of dicts as a markdown table (``columns``: their order; default: the first row's keys)."""
    columns = columns or list(rows[0])
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(str(r[c]) for c in columns) + " |" for r in rows]
    return _markdown("\n".join(lines))


def header_source(name: str) -> str:
    """The text of a CUDA header the kernels include (``h100lab/wgmma_probe.cuh``), from the package's include
    folder (:data:`h100lab.nvrtc.INCLUDE_DIR`)."""
    from ..nvrtc import INCLUDE_DIR

    return (Path(INCLUDE_DIR) / name).read_text()


def excerpt(name: str, start: str | None = None, stop: str | None = None, source: str | None = None,
            header: str | None = None):
    """The lines of kernel ``name`` (``h100lab/cuda/kernels/<name>.cu``) from the first containing ``start`` to
    the next containing ``stop`` (whole file without them). ``header="h100lab/x.cuh"`` shows a header the kernels
    include instead; ``source`` shows given text under the kernel's name."""
    from ..nvrtc import kernel_source

    if header is not None:
        text, label = header_source(header), f"h100lab/cuda/include/{header}"
    else:
        text, label = (source or kernel_source(name)), f"h100lab/cuda/kernels/{name}.cu"
    lines = text.splitlines()
    i = next((k for k, s in enumerate(lines) if start in s), 0) if start else 0
    j = next((k for k, s in enumerate(lines) if k > i and stop in s), len(lines) - 1) if stop else len(lines) - 1
    return _markdown(f"`{label}`, lines {i + 1}–{j + 1}:\n\n```cuda\n" + "\n".join(lines[i:j + 1]) + "\n```")


def annotated(src: str, notes: dict, title: str):
    """A listing with line numbers and a table: ``notes`` maps a snippet of a line to what that line does
    (a snippet no line holds raises StopIteration: the note lost its line)."""
    lines = src.splitlines()
    # a MyST code-block with line numbers (the chapters render markdown outputs as MyST): numbers typed into the
    # code would break the CUDA lexer on every preprocessor line ('#' after a number)
    out = [f"**{title}**", "", "```{code-block} cuda", ":linenos:", ""] + lines + ["```", ""]
    rows = []
    for snippet, what in notes.items():
        n = next(i + 1 for i, l in enumerate(lines) if snippet in l)
        rows.append(f"| {n} | `{snippet}` | {what} |")
    return _markdown("\n".join(out + ["| line | code | what it does |", "|---|---|---|"] + rows))
