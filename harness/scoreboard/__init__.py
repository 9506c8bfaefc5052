"""The scoreboard of real tokenizer ports against llama.cpp (``make scoreboard``), on the engine.

What is specific to the scoreboard lives here; everything else is the engine's
(``llama-conformance run``: the same checks, causes, diagnoses, reports and exit codes as
any port):

- :mod:`.ports`: the list of ports, discovered from ``ports/<language>/<name>/port.json``;
- :mod:`.build`: building a port (its ``build.sh``, timed, the log kept; a failure is that
  port's ``error``, never the board's);
- :mod:`.summary`: each port's ``conformance.json`` read into its row (per vocab: outcome,
  per-check outcomes, causes);
- :mod:`.drift`: a binding's causes labelled drift where an older pinned llama.cpp gives the
  binding's answer;
- :mod:`.run`: ``llama-conformance scoreboard`` (build, run, summarise, README table);
- :mod:`harness.reports.scoreboard` (the reports room) renders ``scoreboard.json``, ``.md``,
  ``.html`` and the README table.

>>> from harness.scoreboard.summary import VOCAB_OUTCOMES
>>> VOCAB_OUTCOMES
('pass', 'divergence', 'unsupported', 'error', 'not checked')
"""
