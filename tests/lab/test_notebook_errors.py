"""A failing ``%%pypto`` cell fails in a real kernel: nbclient (as papermill and CI use it) stops
there, and the error is shown once, located as IPython shows notebook cells (``Cell In[N]``)."""

import re

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

SETUP = """%load_ext pypto_lab
import torch, pypto

@pypto.jit
def add(x: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32),
        y: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32),
        out: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(32, 64)
    for b in pypto.loop(pypto.ceildiv(x.shape[0], 32)):
        out[b * 32:(b + 1) * 32, :] = x[b * 32:(b + 1) * 32, :] + y[b * 32:(b + 1) * 32, :]

x, out = torch.randn(40, 64), torch.empty(40, 64)"""

BAD_KERNEL = """%%pypto --show cache
@pypto.jit
def bad(x: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32),
        out: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32)):
    out[:, :] = x[:, :32] + out[:, :]
add(x, x, out)
bad(x, out)"""

PYTHON_ERROR = """%%pypto --show cache
add(x, x, out)
1 / 0"""

SYNTAX_ERROR = """%%pypto
add(x, x, out"""

AFTER = "ran_after = True"


def _plain(traceback: list) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(traceback))  # without the terminal colours


def _notebook(*cells: str):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    return nb


def _run(nb, allow_errors=False):
    NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=allow_errors).execute()
    return nb


@pytest.mark.parametrize("cell, ename", [(BAD_KERNEL, "ShapeError"), (PYTHON_ERROR, "ZeroDivisionError"),
                                         (SYNTAX_ERROR, "CellFailed")])
def test_a_failing_pypto_cell_stops_the_notebook(cell, ename):
    nb = _notebook(SETUP, cell, AFTER)
    with pytest.raises(CellExecutionError) as raised:
        _run(nb)
    assert raised.value.ename == ename
    assert nb.cells[2].execution_count is None  # the cell after it never ran


def test_the_error_is_shown_once_at_the_notebook_cell_line():
    nb = _run(_notebook(SETUP, BAD_KERNEL, PYTHON_ERROR, AFTER), allow_errors=True)
    errors = [o for o in nb.cells[1].outputs if o.output_type == "error"]
    assert len(errors) == 1 and errors[0].ename == "ShapeError"
    text = _plain(errors[0].traceback)
    # line 5 of the cell (the %%pypto line is line 1), named the way the notebook shows cells
    assert "at Cell In[2], line 5 in bad" in text and "ipykernel_" not in text, text
    assert "Traceback" not in text  # a pypto error is its message, not pypto's internals
    # the kernel that ran before the error still gets its dashboard
    assert any("application/vnd.jupyter.widget-view+json" in o.get("data", {}) for o in nb.cells[1].outputs)

    errors = [o for o in nb.cells[2].outputs if o.output_type == "error"]
    assert len(errors) == 1 and errors[0].ename == "ZeroDivisionError"
    text = _plain(errors[0].traceback)
    assert "Cell In[3], line 3" in text and "magics.py" not in text, text
    assert nb.cells[3].execution_count == 4  # allow_errors: the run went on


def test_argument_errors_point_at_the_call():
    call = "add(x, torch.randn(40, 64, dtype=torch.float16), out)"
    nb = _run(_notebook(SETUP, "y = 1\n" + call), allow_errors=True)
    errors = [o for o in nb.cells[1].outputs if o.output_type == "error"]
    assert len(errors) == 1 and errors[0].ename == "ArgumentTypeError"
    text = _plain(errors[0].traceback)
    assert "at Cell In[2], line 2\n    " + call in text, text
    assert "kernel 'add' is defined at Cell In[1], line 5" in text, text
