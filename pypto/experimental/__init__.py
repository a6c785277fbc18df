"""``pypto.experimental``: upstream's custom operators with many constraints and no stability promise.

Each name here is re-exported from the module that registers it (see pypto/ops/).
"""

from ..ops.activation import online_softmax, online_softmax_update

__all__ = ["online_softmax", "online_softmax_update"]
