"""The lab's widgets. They only arrange the views of ``pypto_lab.views`` and wire controls to them.

- :class:`Dashboard` - the per-kernel Tab (Graph, Passes, Code, Cache, Timeline, Tune).
- :mod:`.panels` - the Graph, Passes, Code and Cache tabs.
- :class:`TimelineView`, :class:`TraceOpener` - swimlanes, stats and trace download; an upstream
  trace file opened next to it.
- :class:`TunePanel` - runtime-option controls that re-simulate the same call.

CSS classes a browser test can rely on: ``pypto-graph-panel`` (the Graph tab, its controls),
``pypto-graph`` (graph HTML; its ``pypto-graph-frame`` pans and zooms the SVG), ``pypto-hints``
(the folded hints under the summary), ``pypto-timeline`` (figure
container), ``pypto-makespan`` (current makespan), ``pypto-tune-<runtime option>`` (controls),
``pypto-model-error`` (the timing model's measured error beside a simulated time).
"""

from .dashboard import Dashboard, NotCalledError
from .timeline import TimelinePanel, TimelineView, TraceOpener
from .tune import TunePanel

__all__ = ["Dashboard", "NotCalledError", "TimelinePanel", "TimelineView", "TraceOpener", "TunePanel"]
