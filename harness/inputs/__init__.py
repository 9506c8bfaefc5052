"""What the checks feed: texts and vocab-derived material, defined once.

- :mod:`~harness.inputs.strategies`: the named Hypothesis text families and recipes,
  and the profiles (``ci``, ``conformance``, ``thorough``);
- :mod:`~harness.inputs.drift`: code points where llama.cpp's Unicode view differs from
  a platform's (tables in ``harness.tokenizer.unicode._drift_tables``, generated);
- :mod:`~harness.inputs.vocabgen`: adversarial texts from one vocab's own structure
  (``wordbpe``: the plain merge loop it compares with);
- :mod:`~harness.inputs.vocabtexts`: a vocab's token and special-token texts;
- :mod:`~harness.inputs.known`: texts that broke real ports;
- :mod:`~harness.inputs.pool`: the fast phase's fragment pool, seed and budget;
- :mod:`~harness.inputs.corpus`: the fixed benchmark corpus;
- :mod:`~harness.inputs.rules`: texts crossing the rules llama.cpp changes between pins.

Nothing here knows ports, the engine or reports.
"""
