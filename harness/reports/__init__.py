"""The reports room: the finding model, the cell outcomes, and every form a report takes.

- :mod:`~harness.reports.diff`: where two outputs part (first index, byte offset, the
  i-2..i+5 window), pure;
- :mod:`~harness.reports.finding`: one divergence in context, and its JSON;
- :mod:`~harness.reports.cells`: the cells of a run and their one outcome function, the table;
- :mod:`~harness.reports.escape`, :mod:`~harness.reports.render`,
  :mod:`~harness.reports.repro`: text for people: escaped pieces, the finding's block, the
  command that reproduces it;
- :mod:`~harness.reports.run`: one run's tallies gathered, the terminal summary and
  ``conformance.json`` (its schema);
- :mod:`~harness.reports.html`: ``conformance.html``;
- :mod:`~harness.reports.scoreboard`, :mod:`~harness.reports.pindiff`: the scoreboard's and
  pin-diff's pages.

The tools render through here; nothing here runs a port or llama.cpp.
"""
