# llama.cpp tokenizer conformance harness.
#   make conformance   the main job: every pinned vocab, port vs llama.cpp, in parallel
#   make test          the harness's own tests (fetches and builds the reference first)
# Options: PORT="cmd --vocab {vocab}"  VOCABS="qwen2 llama-spm"  SOURCE=sdist|github|dir  LLAMA_CPP_DIR=...
#          HYPOTHESIS_PROFILE=ci|conformance|thorough  JOBS=auto  KNOWN_EXAMPLES=0 (generation alone)
#          PIN=<pin name or commit prefix> (default: the newest in reference/lock.json)

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
JOBS   ?= auto
SOURCE ?=
SOURCE_FLAG := $(if $(SOURCE),--source $(SOURCE),)

export LLAMA_CPP_DIR PORT VOCABS HYPOTHESIS_PROFILE KNOWN_EXAMPLES PIN

.PHONY: all fetch reference test test-slow conformance sweep bench scoreboard pin pin-diff test-pins verify clean help

all: test

help:
	@sed -n '1,8p' Makefile

# The venv is created and the project installed on first use; reinstalled when pyproject changes.
$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e .
	touch $@

fetch: $(STAMP)
	$(PY) -m reference fetch $(SOURCE_FLAG)

verify: $(STAMP)
	$(PY) -m reference verify

reference: fetch
	$(PY) -m reference build $(SOURCE_FLAG)

test: reference
	LLAMA_CONFORMANCE_REQUIRE_REFERENCE=1 HYPOTHESIS_PROFILE=$${HYPOTHESIS_PROFILE:-ci} \
	  $(PY) -m pytest -n $(JOBS) -m "not slow and not pins" tests

# The long checks: every token piece re-encoded, 1 MB texts, every pre string (about 15 minutes).
test-slow: reference
	LLAMA_CONFORMANCE_REQUIRE_REFERENCE=1 $(PY) -m pytest -n $(JOBS) -m slow tests

conformance: reference
	mkdir -p reports
	LLAMA_CONFORMANCE_REQUIRE_REFERENCE=1 HYPOTHESIS_PROFILE=$${HYPOTHESIS_PROFILE:-conformance} \
	  $(PY) -m pytest -n $(JOBS) --dist loadgroup -p harness.conformance.plugin harness/conformance/suite \
	  --junitxml=reports/conformance-junit.xml

sweep: reference
	$(PY) tools/sweep.py --via session $(VOCABS)

$(VENV)/.bench: $(STAMP)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[bench]'
	touch $@

# Runs make conformance first (warm), so the table can quote the suite's own throughput.
bench: reference $(VENV)/.bench
	$(MAKE) --no-print-directory conformance \
	  || echo "bench: make conformance failed (see above); its throughput is reported all the same"
	$(PY) -m harness bench

# The ports extra compiles llama-cpp-python (about 10 minutes on 2 cores, once).
$(VENV)/.ports: $(STAMP)
	CMAKE_ARGS="-DGGML_NATIVE=OFF" $(PY) -m pip install --quiet --disable-pip-version-check -e '.[ports]'
	touch $@

scoreboard: reference $(VENV)/.ports
	$(PY) -m harness.scoreboard --out reports --jobs $(JOBS)

pin: $(STAMP)
	@test -n "$(REF)$(SDIST)" || (echo "usage: make pin SDIST=<llama-cpp-python version> | REF=<40-hex commit> SOURCE=github|dir [LLAMA_CPP_DIR=...]"; exit 2)
	$(PY) -m reference pin $(REF) $(if $(SDIST),--sdist $(SDIST),--source $(or $(SOURCE),github))

# llama.cpp against llama.cpp across two pins (both are fetched and built first).
pin-diff: $(STAMP)
	@test -n "$(FROM)" -a -n "$(TO)" || (echo "usage: make pin-diff FROM=<pin> TO=<pin>"; exit 2)
	PIN=$(FROM) $(MAKE) --no-print-directory reference
	PIN=$(TO) $(MAKE) --no-print-directory reference
	mkdir -p reports
	$(PY) -m reference pin-diff --from $(FROM) --to $(TO) --out reports

# make test on every pin in the lock, one after the other, then the tests across pins.
test-pins: $(STAMP)
	@for p in $$($(PY) -m reference pins); do echo "== make test PIN=$$p"; \
	  PIN=$$p $(MAKE) --no-print-directory test || exit 1; done
	LLAMA_CONFORMANCE_REQUIRE_REFERENCE=1 $(PY) -m pytest -n $(JOBS) -m pins tests

clean:
	rm -rf reports .pytest_cache .hypothesis
