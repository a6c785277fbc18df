"""The ``%%pypto`` cell magic, run through a real IPython shell (no kernel, no browser).

Cells go through ``shell.run_cell`` like a notebook cell would, so usage errors and kernel errors
are shown the way IPython shows them; ``capture_output`` collects stdout, stderr and displays.
"""

import re

import pytest
from IPython.testing.globalipapp import start_ipython
from IPython.utils.capture import capture_output

import pypto

KERNELS = '''
import torch, pypto

@pypto.jit
def add(x: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32),
        y: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32),
        out: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(32, 64)
    for b in pypto.loop(pypto.ceildiv(x.shape[0], 32)):
        rows = slice(b * 32, (b + 1) * 32)
        out[rows, :] = x[rows, :] + y[rows, :]

@pypto.jit
def scale(x: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32),
          out: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(32, 64)
    for b in pypto.loop(pypto.ceildiv(x.shape[0], 32)):
        rows = slice(b * 32, (b + 1) * 32)
        out[rows, :] = x[rows, :] * 2.0

x = torch.randn(70, 64)
out = torch.empty(70, 64)
'''


@pytest.fixture(scope="module")
def shell():
    ip = start_ipython()
    ip.run_line_magic("load_ext", "pypto_lab")
    assert ip.run_cell(KERNELS).success
    yield ip
    ip.run_line_magic("unload_ext", "pypto_lab")


@pytest.fixture()
def magics(shell):
    return shell.magics_manager.registry["PyptoMagics"]


def run(shell, line, body):
    """Run ``%%pypto line`` + body as one notebook cell; the captured output."""
    with capture_output() as cap:
        shell.run_cell(f"%%pypto {line}\n{body}")
    return cap


def test_runtime_options_reach_every_kernel_and_are_restored(shell, magics):
    cap = run(shell, "--sched-mode 1 --stitch 4 --aicpu 2 --valid-shape-opt 1 --show cache,timeline",
              "seen = dict(pypto.get_runtime_options())\nscale(x, out)\nadd(x, out, out)\n")
    assert "Traceback" not in cap.stdout + cap.stderr
    seen = shell.user_ns["seen"]
    assert (seen["device_sched_mode"], seen["stitch_function_max_num"]) == (1, 4)
    assert (seen["launch_sched_aicpu_num"], seen["valid_shape_optimize"]) == (2, 1)
    for name in ("add", "scale"):
        tl_options = shell.user_ns[name].last_run.timeline.options
        assert tl_options["device_sched_mode"] == 1
        assert tl_options["stitch_function_max_num"] == 4
        assert tl_options["launch_sched_aicpu_num"] == 2
    # the overrides end with the cell
    assert pypto.get_runtime_options()["device_sched_mode"] == 0
    shell.run_cell("add(x, x, out)")
    assert shell.user_ns["add"].last_run.timeline.options["device_sched_mode"] == 0


def test_flags_win_over_a_kernels_own_runtime_options(shell, magics):
    shell.run_cell("""
@pypto.jit(runtime_options={"device_sched_mode": 2, "stitch_function_max_num": 16})
def pinned(x: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32), out: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32)):
    out[:] = x * 3.0
""")
    run(shell, "--sched-mode 1 --show cache", "pinned(x, out)")
    options = shell.user_ns["pinned"].last_run.timeline.options
    assert options["device_sched_mode"] == 1  # the cell's flag
    assert options["stitch_function_max_num"] == 16  # the kernel's own option, not overridden
    shell.run_cell("pinned(x, out)")
    assert shell.user_ns["pinned"].last_run.timeline.options["device_sched_mode"] == 2


def test_one_dashboard_per_kernel_in_call_order(shell, magics):
    cap = run(shell, "--show cache,timeline", "scale(x, out)\nadd(x, out, out)\nscale(out, out)\nadd(x, x, out)\n")
    assert [k.__name__ for k in magics.last_kernels] == ["scale", "add"]
    assert len(magics.last_dashboards) == 2
    for board, name in zip(magics.last_dashboards, ("scale", "add")):
        assert board.kernel is shell.user_ns[name]
        assert board.titles == ("Cache", "Timeline")
    assert len(cap.outputs) == 2  # both dashboards were displayed


def test_default_shows_every_tab(shell, magics):
    run(shell, "", "add(x, x, out)")
    assert magics.last_dashboards[0].titles == ("Graph", "Passes", "Code", "Cache", "Timeline", "Tune", "Sweep")


def test_run_mode_accepts_names_and_numbers(shell, magics):
    run(shell, "--run-mode sim --show cache", "add(x, x, out)")
    assert [k.__name__ for k in magics.last_kernels] == ["add"]
    run(shell, "--run-mode 1 --show cache", "add(x, x, out)")
    assert len(magics.last_dashboards) == 1


def test_a_cell_without_kernels_shows_nothing(shell, magics):
    cap = run(shell, "--sched-mode 2", "answer = 6 * 7")
    assert shell.user_ns["answer"] == 42
    assert magics.last_dashboards == [] and cap.outputs == []


@pytest.mark.parametrize("line, words", [
    ("--bogus 1", "unrecognized arguments: --bogus"),
    ("--sched-mode 9", "--sched-mode: expected an integer in 0..3, got '9'"),
    ("--sched-mode one", "--sched-mode: expected an integer in 0..3"),
    ("--stitch 0", "--stitch: expected an integer in 1..1024"),
    ("--stitch 2000", "--stitch: expected an integer in 1..1024"),
    ("--valid-shape-opt 2", "--valid-shape-opt: expected an integer in 0..1"),
    ("--aicpu 8", "--aicpu: expected an integer in 1..7"),
    ("--run-mode GPU", "--run-mode: expected SIM, NPU, 1 or 0"),
    ("--show graph,flames", "unknown tab 'flames'"),
    ("--sched-mode", "expected one argument"),
])
def test_bad_flags_give_a_one_line_usage_error(shell, magics, line, words):
    shell.user_ns.pop("ran", None)
    cap = run(shell, line, "ran = True\nadd(x, x, out)")
    text = (cap.stdout + cap.stderr).strip()
    assert "Traceback" not in text
    assert len(text.splitlines()) == 1, text
    assert text.startswith("UsageError: ") and words in text and "usage: %%pypto" in text
    assert "ran" not in shell.user_ns  # the cell did not run


def test_kernel_error_shows_the_clean_pypto_message_at_the_cell_line(shell, magics):
    body = (
        "@pypto.jit\n"                                                                # cell line 2
        "def bad(x: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32),\n"
        "        out: pypto.Tensor([pypto.DYNAMIC, 64], pypto.DT_FP32)):\n"
        "    pypto.set_vec_tile_shapes(32, 64)\n"
        "    for b in pypto.loop(pypto.ceildiv(x.shape[0], 32)):\n"
        "        out[b * 32:(b + 1) * 32, :] = x[b * 32:(b + 1) * 32, :32] + out[b * 32:(b + 1) * 32, :]\n"
        "add(x, x, out)\n"
        "bad(x, out)\n"
    )
    cap = run(shell, "--sched-mode 1", body)
    text = cap.stdout + cap.stderr
    assert "Traceback" not in text and "pypto/frontend" not in text and "site-packages" not in text
    assert text.lstrip().startswith("ShapeError: pypto.add: shapes of 'input' and 'other' do not broadcast")
    # line 7 of the notebook cell (line 1 is the %%pypto line), named as IPython names cells
    assert re.search(r"at Cell In\[\d+\], line 7 in bad\n\s+out\[b \* 32", text), text
    assert text.count("ShapeError") == 1  # shown once: by the cell, which fails
    # the kernel that ran before the error still gets its dashboard; options are restored
    assert [k.__name__ for k in magics.last_kernels] == ["add"]
    assert pypto.get_runtime_options()["device_sched_mode"] == 0


def test_npu_run_mode_is_a_clean_error(shell, magics):
    cap = run(shell, "--run-mode NPU", "add(x, x, out)")
    text = (cap.stdout + cap.stderr).strip()
    assert text.startswith("BackendUnavailableError: runtime_options['run_mode'] is NPU")
    assert "Traceback" not in text
    assert magics.last_dashboards == []


def test_other_errors_keep_their_traceback_and_handlers_are_restored(shell, magics):
    before = shell.custom_exceptions
    cap = run(shell, "", "1 / 0")
    assert "ZeroDivisionError" in cap.stdout and "Traceback" in cap.stdout
    assert shell.custom_exceptions == before


def test_show_outside_the_magic(shell):
    # call add here: under xdist the tests that called it before may run in another worker
    with capture_output() as cap:
        shell.run_cell("import pypto_lab\nadd(x, x, out)\npypto_lab.show(add, tabs='cache')")
    assert len(cap.outputs) == 1 and not cap.stderr
    body = ("@pypto.jit\ndef never(x: pypto.Tensor([8], pypto.DT_FP32)):\n    pass\n"
            "pypto_lab.show(never)\n")
    with capture_output() as cap:
        shell.run_cell(body)
    text = (cap.stdout + cap.stderr).strip()
    assert text == ("NotCalledError: never has not been called yet: call it once, then show it "
                    "(the dashboard shows its last call)")


def test_unload_removes_the_magic(shell):
    shell.run_line_magic("unload_ext", "pypto_lab")
    try:
        assert "pypto" not in shell.magics_manager.magics["cell"]
    finally:
        shell.run_line_magic("load_ext", "pypto_lab")
    assert "pypto" in shell.magics_manager.magics["cell"]
