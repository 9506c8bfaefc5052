"""Past one machine: the suite on other hosts over SSH, through pytest-xdist's own
execnet gateways (``llama-conformance run --hosts``), and the hosts made ready for it
(``llama-conformance prepare --hosts``).

* :mod:`.hosts`: ``--hosts a,b,2*c`` parsed, where things live on a host, the ``--tx``
  specs xdist gets and the environment each worker gets;
* :mod:`.ssh`: one command on a host (``ssh`` itself, so ``~/.ssh/config`` aliases work);
* :mod:`.probe`: what a host has (package version and digest, pin, build, vocabs), run
  on the host by its own Python;
* :mod:`.prepare`: ``llama-conformance prepare``: a venv with this package, the pin
  fetched, built and verified, on each host;
* :mod:`.launch`: ``run --hosts``: the hosts checked, the pytest arguments;
* :mod:`.session`: the controller's xdist session: no rsync, and a host that dies has
  its unfinished tests re-run on the others or reported ``not checked``.
"""
