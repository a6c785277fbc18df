"""A Python mistake inside a kernel body shows the user's frames only (pypto's hidden unless
PYPTO_TRACEBACK=full), in a plain call, through `inspect` and in a notebook cell; pypto's own
errors keep their short form; the next good call works."""

from __future__ import annotations

import traceback
from pathlib import Path

import pytest
import torch

import pypto

D = pypto.DYNAMIC
FP32 = pypto.DT_FP32
PACKAGE = str(Path(pypto.__file__).resolve().parent)


@pypto.jit
def sometimes_broken(x: pypto.Tensor([D, 64], FP32), out: pypto.Tensor([D, 64], FP32), broken: bool = False):
    pypto.set_vec_tile_shapes(32, 64)
    for b in pypto.loop(pypto.ceildiv(x.shape[0], 32)):
        rows = slice(b * 32, (b + 1) * 32)
        out[rows, :] = x[rows, :] + (undefined_name if broken else 1.0)  # noqa: F821


def _frames(exc):
    return [(Path(f.filename).resolve(), f.lineno, f.line) for f in traceback.extract_tb(exc.__traceback__)]


def test_kernel_name_error_shows_only_user_frames(monkeypatch):
    monkeypatch.delenv("PYPTO_TRACEBACK", raising=False)
    x, out = torch.randn(40, 64), torch.zeros(40, 64)
    with pytest.raises(NameError, match="undefined_name") as err:
        sometimes_broken(x, out, True)
    frames = _frames(err.value)
    assert not [f for f in frames if str(f[0]).startswith(PACKAGE)], frames
    assert "undefined_name" in frames[-1][2] and frames[-1][0] == Path(__file__).resolve()
    assert len(frames) == 2  # this test's call, then the kernel line
    assert any("PYPTO_TRACEBACK=full" in n for n in err.value.__notes__)
    assert torch.count_nonzero(out) == 0  # nothing ran
    sometimes_broken(x, out)  # the next good call works
    torch.testing.assert_close(out, x + 1.0)


def test_inspect_filters_too(monkeypatch):
    monkeypatch.delenv("PYPTO_TRACEBACK", raising=False)
    with pytest.raises(NameError) as err:
        sometimes_broken.inspect(torch.randn(8, 64), torch.zeros(8, 64), True)
    assert not [f for f in _frames(err.value) if str(f[0]).startswith(PACKAGE)]


def test_full_traceback_on_request(monkeypatch):
    monkeypatch.setenv("PYPTO_TRACEBACK", "full")
    with pytest.raises(NameError) as err:
        sometimes_broken(torch.randn(8, 64), torch.zeros(8, 64), True)
    frames = _frames(err.value)
    assert [f for f in frames if str(f[0]).startswith(PACKAGE)], "pypto's frames are shown"
    assert not getattr(err.value, "__notes__", None)


def test_pypto_errors_stay_short():
    with pytest.raises(pypto.PyptoError) as err:
        sometimes_broken(torch.randn(8, 32), torch.zeros(8, 32))  # 32 where 64 is fixed
    assert len(_frames(err.value)) <= 2


def test_notebook_cell_traceback_points_at_the_cell():
    from IPython.testing.globalipapp import get_ipython

    shell = get_ipython()
    cell = ("import pypto, torch\n"
            "@pypto.jit\n"
            "def k(x: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32), out: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32)):\n"
            "    pypto.set_vec_tile_shapes(32, 64)\n"
            "    out[:, :] = x + not_defined_here\n"
            "k(torch.randn(4, 64), torch.zeros(4, 64))\n")
    result = shell.run_cell(cell)
    exc = result.error_in_exec
    assert isinstance(exc, NameError)
    files = [str(f[0]) for f in _frames(exc)]
    assert not [f for f in files if f.startswith(PACKAGE)], files
    assert "not_defined_here" in traceback.extract_tb(exc.__traceback__)[-1].line
