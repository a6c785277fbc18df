"""``pypto.experimental``: upstream's custom operators with many constraints and no stability promise.

Each name here is re-exported from the module that registers it (see pypto/ops/).
"""

from ..ops.activation import online_softmax, online_softmax_update
from ..ops.cube import transposed_batchmatmul

__all__ = ["online_softmax", "online_softmax_update"]
__all__ += ["transposed_batchmatmul"]

# pypto/ops/more_indexing.py (paged gathers) and pypto/options.py (the "operation" option group)
from ..ops.more_indexing import gather_in_l1, gather_in_ub  # noqa: E402
from ..options import get_operation_options, set_operation_options  # noqa: E402

__all__ += ["gather_in_l1", "gather_in_ub", "get_operation_options", "set_operation_options"]

from ..ops import _wrap_public_ops  # noqa: E402

_wrap_public_ops(globals(), ["online_softmax", "online_softmax_update", "transposed_batchmatmul", "gather_in_l1",
                             "gather_in_ub"], "pypto.experimental")
