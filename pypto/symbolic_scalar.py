"""Upstream's ``pypto.symbolic_scalar`` module: ``SymbolicScalar``, ``SatStatus`` (the answer of
``SymbolicScalar.check``) and the ``SymInt`` annotation.

(``pypto.symbolic_scalar`` the attribute is the class itself, as upstream; ``from
pypto.symbolic_scalar import SymInt`` reads this module.)
"""

from .frontend.scalar import SymbolicScalar, SymInt
from .ir.solver import SatStatus

__all__ = ["SymbolicScalar", "SymInt", "SatStatus"]
