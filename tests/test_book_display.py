"""h100lab.book.display: the tables and kernel listings every chapter shows."""
from h100lab.book.display import annotated, excerpt, header_source, md_table


def test_md_table_keeps_column_order():
    t = md_table([{"b": 1, "a": 2}, {"b": 3, "a": 4}]).data
    assert t.splitlines()[0] == "| b | a |" and t.splitlines()[-1] == "| 3 | 4 |"
    assert md_table([{"b": 1, "a": 2}], columns=["a"]).data.splitlines()[2] == "| 2 |"


def test_excerpt_cuts_between_markers_and_names_the_file():
    m = excerpt("smoke_vector_add", "extern", "}").data
    assert m.startswith("`h100lab/cuda/kernels/smoke_vector_add.cu`, lines ") and "```cuda" in m
    body = m.split("```cuda\n")[1]
    assert body.lstrip().startswith("extern") and body.rstrip("`\n").rstrip().endswith("}")


def test_excerpt_of_an_included_header():
    text = header_source("h100lab/wgmma_probe.cuh")
    m = excerpt("l07_sparse_probe", "template <class Acc, int NREG, class Mma>", "}  // namespace",
                header="h100lab/wgmma_probe.cuh").data
    assert m.startswith("`h100lab/cuda/include/h100lab/wgmma_probe.cuh`") and "sparse_probe" in m
    assert len(m.split("```cuda\n")[1].splitlines()) < len(text.splitlines())


def test_annotated_numbers_lines_and_finds_each_note():
    m = annotated("a = 1;\nb = 2;", {"b =": "sets b"}, "T").data
    assert "```{code-block} cuda\n:linenos:" in m and "\nb = 2;\n" in m and "| 2 | `b =` | sets b |" in m
