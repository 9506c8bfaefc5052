# llama.cpp tokenizer conformance harness.
#   make conformance   the main job: every pinned vocab, port vs llama.cpp, in parallel
#   make test          the harness's own tests (fetches and builds the reference first)
#   make dist          wheel + sdist in dist/ (pip install gives the llama-conformance command)
#   make fuzz-ports    hostile ports against the engine for FUZZ_S seconds (FUZZ_SEED=N)
# Options: PORT="cmd --vocab {vocab}"  VOCABS="qwen2 llama-spm"  SOURCE=sdist|github|dir  LLAMA_CPP_DIR=...
#          HYPOTHESIS_PROFILE=ci|conformance|thorough  BUDGET=5m  CONFORMANCE_SEED=N  JOBS=auto
#          KNOWN_EXAMPLES=0 (generation alone)  PIN=<pin name or commit prefix> (default: the newest)
#          ALLOW_UNSUPPORTED=1 (declared-unsupported cases pass)  REPORTS=reports  LENGTH_SCALING=0 (no runs timed)
#          CHECKS="encode chat" (the suite's checks, chat, or all)  CHAT_EXAMPLES=N
# The targets call `llama-conformance` (harness/cli.py), the command `pip install` gives. GNU make
# exits 2 whenever a recipe fails: tools/conformance.sh is make conformance with its own exit code.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
CLI    := $(VENV)/bin/llama-conformance
JOBS   ?= auto
REPORTS ?= reports
SOURCE ?=
SOURCE_FLAG := $(if $(SOURCE),--source $(SOURCE),)

export LLAMA_CPP_DIR PORT VOCABS HYPOTHESIS_PROFILE KNOWN_EXAMPLES BUDGET CONFORMANCE_SEED PIN ALLOW_UNSUPPORTED LENGTH_SCALING

.PHONY: all fetch reference chat-check test test-slow test-remote chromium openssh scoreboard-deps conformance sweep bench scoreboard scoreboard-readme fuzz-ports diagnosis-bench diagnosis-bench-readme pin pin-diff test-pins verify dist clean help coverage fuzz

all: test

help:
	@sed -n '1,11p' Makefile

# The venv is created and the project installed on first use; reinstalled when pyproject changes.
# examples/toyport (a port checked through the pytest plugin) is installed too: make test runs its tests.
$(STAMP): pyproject.toml examples/toyport/pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e . -e examples/toyport
	touch $@

fetch: $(STAMP)
	$(CLI) fetch $(SOURCE_FLAG)

verify: $(STAMP)
	$(PY) -m reference verify

reference: fetch
	$(CLI) build $(SOURCE_FLAG)

# An extra's requirements, read from pyproject.toml: installed on their own, the project is not
# built again (`pip install -e '.[dev]'` rebuilds its editable wheel: 4.5 s of a fresh make test's 20 s setup).
EXTRA = $(PY) -c 'import sys, tomllib; print(*tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"][sys.argv[1]])'

# The dev extra: import-linter, for the layers contract in pyproject.toml.
$(VENV)/.dev: $(STAMP)
	$(PY) -m pip install --quiet --disable-pip-version-check $$($(EXTRA) dev)
	touch $@

# lint-imports first: the layers contract (pyproject.toml, docs/architecture.md) is part of the tests.
test: reference $(VENV)/.dev
	$(VENV)/bin/lint-imports --no-cache
	LLAMA_CONFORMANCE_REQUIRE_REFERENCE=1 HYPOTHESIS_PROFILE=$${HYPOTHESIS_PROFILE:-ci} \
	  $(PY) -m pytest -n $(JOBS) --dist loadgroup -m "not slow and not pins and not remote" tests examples/toyport/tests \
	  --doctest-modules harness reference tools --ignore=harness/conformance/suite

# The long checks: every token piece re-encoded, 1 MB texts, every pre string, every .inp text
# through llama-tokenize one process at a time, the self-test mutants under the conformance profile
# (make test: under ci), and the remote tests below (about 30 minutes).
test-slow: reference chromium openssh
	LLAMA_CONFORMANCE_REQUIRE_REFERENCE=1 $(PY) -m pytest -n $(JOBS) --dist loadgroup -m "slow or remote" tests

# run --hosts, prepare, --shard and merge against an OpenSSH server on a loopback port (throwaway
# keys and config; tests/test_remote.py), about 4 minutes.
test-remote: reference openssh
	LLAMA_CONFORMANCE_REQUIRE_REFERENCE=1 $(PY) -m pytest -m remote tests

# sshd for test-remote and test-slow (Debian's package; needs root; the tests start their own
# server with their own config and keys, never the system's).
openssh:
	@test -x /usr/sbin/sshd || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssh-server; }

# Headless Chromium renders conformance.html in test-slow (Debian's package; needs root or sudo).
# The llama-cpp-2 port's bindgen needs libclang and clang's builtin headers (Debian's libclang-dev).
scoreboard-deps:
	@ls /usr/lib/llvm-*/lib/clang/*/include/stdbool.h >/dev/null 2>&1 || ! command -v apt-get >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libclang-dev; }

chromium:
	@command -v chromium >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }

# Exit codes of llama-conformance run: 0 clean, 1 divergences, 2 port errors, 3 errors, 4 incomplete.
# make itself exits 2 on any of 1-4 (its "Error N" line keeps N); tools/conformance.sh (the same
# variables) exits with N itself. CONFORMANCE_EXIT=FILE writes N there (what the script reads).
# CHECKS= selects checks: the suite's (golden known encode decode piece crosscheck: the default,
# all of them) and chat (the chat check, as make chat-check, into $(REPORTS)/chat.json); e.g.
# CHECKS="encode chat", CHECKS=all; CHAT_EXAMPLES=N generated conversations per vocab (default 30).
# The exit code is the worse of the two, in run's order 3, 2, 1, 4.
SUITE_CHECKS := golden known encode decode piece crosscheck
CHECKS ?= $(SUITE_CHECKS)
override CHECKS := $(if $(filter all,$(CHECKS)),$(SUITE_CHECKS) chat,$(CHECKS))
suite_checks = $(filter $(SUITE_CHECKS),$(CHECKS))
# pytest -k for a subset of the suite's checks (none when all of them: the run as it always was)
suite_k = $(if $(filter-out $(suite_checks),$(SUITE_CHECKS)),-- -k '$(subst $(eval) , or ,$(strip $(patsubst %,test_%,$(subst piece,pieces,$(suite_checks)))))',)

unknown_checks = $(filter-out $(SUITE_CHECKS) chat,$(CHECKS))
unknown_checks_said = make conformance: unknown check(s) in CHECKS: $(unknown_checks) (known: $(SUITE_CHECKS) chat; or all)

conformance: reference
	@$(if $(unknown_checks),echo "$(unknown_checks_said)" >&2; exit 3;) \
	  code=0; \
	  $(if $(suite_checks),$(CLI) run --no-fetch --jobs $(JOBS) --report-dir $(REPORTS) $(suite_k); code=$$?;) \
	  $(if $(filter chat,$(CHECKS)),$(PY) -m harness chat-check --port "$${PORT:-harness}" $(if $(VOCABS),--vocabs $(VOCABS)) $(if $(CHAT_EXAMPLES),--examples $(CHAT_EXAMPLES)) --json $(REPORTS)/chat.json --html $(REPORTS)/chat.html --after $$code; code=$$?;) \
	  $(if $(CONFORMANCE_EXIT),echo $$code > '$(CONFORMANCE_EXIT)';) \
	  [ $$code -eq 0 ] || echo "make conformance: llama-conformance exited $$code; make exits 2 on any failure (tools/conformance.sh exits $$code)"; \
	  exit $$code

# The chat check (issue 32): the port's chat renderings of fixed and generated conversations vs
# llama.cpp's on every vocab that carries a chat template, with its causes (also make conformance
# CHECKS=chat). PORT=llama.cpp gives 0 divergences; the harness port answers unsupported where its
# renderer has not ported llama-server's step (a final assistant message continued), so exits 4.
chat-check: reference
	$(PY) -m harness chat-check --port "$${PORT:-harness}"

sweep: reference
	$(PY) tools/sweep.py --via session $(VOCABS)

$(VENV)/.bench: $(STAMP)
	$(PY) -m pip install --quiet --disable-pip-version-check $$($(EXTRA) bench)
	touch $@

# Runs make conformance first (warm), so the table can quote the suite's own throughput.
bench: reference $(VENV)/.bench
	$(MAKE) --no-print-directory conformance \
	  || echo "bench: make conformance failed (see above); its throughput is reported all the same"
	$(CLI) bench

$(VENV)/.coverage: $(STAMP)
	$(PY) -m pip install --quiet --disable-pip-version-check $$($(EXTRA) coverage)
	touch $@

# gcov coverage of llama.cpp's tokenizer code under the suite (instrumented build, cached apart;
# each phase/strategy family run in turn): reports/coverage.json and reports/coverage/index.html.
coverage: reference $(VENV)/.coverage
	$(PY) -m harness.coverage --profile $${HYPOTHESIS_PROFILE:-ci} --jobs $(JOBS)

# Every port of ports/*/*/port.json built (its build.sh) and run on the engine, one after the
# other (PORTS="ollama shimmytok" selects; BUDGET= each run's wall-time budget, default none: the
# profile's counts; JOBS= each run's workers): reports/scoreboard.{json,md,html}, each port's
# reports in reports/scoreboard/<port>/.
# SNAPSHOT=1 also copies scoreboard.json/.md into docs/ (then run make scoreboard-readme).
# Bindings' causes are checked for drift against the older pin (SCOREBOARD_OLD_PIN, default 4df29be),
# so its reference is built too (about 5 minutes the first time).
scoreboard: reference scoreboard-deps
	PIN=$${SCOREBOARD_OLD_PIN:-4df29be} $(MAKE) --no-print-directory reference
	$(CLI) scoreboard --out $(REPORTS) --jobs $(JOBS) $(if $(PORTS),--ports $(PORTS),) $(if $(SNAPSHOT),--snapshot,) $(if $(CHECKS_ONLY),--checks-only,)

# The README's scoreboard table, rewritten from docs/scoreboard.json (tests/test_scoreboard.py checks it).
scoreboard-readme: $(STAMP)
	$(CLI) scoreboard --readme README.md

# The engine's causes scored against hand-labelled bugs (tests/data/port-bugs/<port>.json): each
# labelled port built and run the scoreboard's way on its label file's vocabs (PORTS= selects; a
# fixed seed, CONFORMANCE_SEED=, default 1; JOBS=), into reports/diagnosis-bench/<port>/, then
# reports/diagnosis-bench.{json,md}: bugs found, named correctly, wrong diagnoses, mixed causes.
# FROM_REPORTS=DIR scores existing runs again without building or running anything (token types
# come from the fetched vocabs).
diagnosis-bench: $(if $(FROM_REPORTS),fetch,reference)
	$(CLI) diagnosis-bench --out $(REPORTS) --jobs $(JOBS) $(if $(PORTS),--ports $(PORTS),) $(if $(FROM_REPORTS),--from-reports $(FROM_REPORTS),)

# The README's diagnosis-bench table, rewritten from reports/diagnosis-bench.json.
diagnosis-bench-readme: $(STAMP)
	$(CLI) diagnosis-bench --out $(REPORTS) --readme README.md

pin: $(STAMP)
	@test -n "$(REF)$(SDIST)" || (echo "usage: make pin SDIST=<llama-cpp-python version> | REF=<40-hex commit> SOURCE=github|dir [LLAMA_CPP_DIR=...]"; exit 2)
	$(CLI) pin $(REF) $(if $(SDIST),--sdist $(SDIST),--source $(or $(SOURCE),github))

# llama.cpp against llama.cpp across two pins (both are fetched and built first).
pin-diff: $(STAMP)
	@test -n "$(FROM)" -a -n "$(TO)" || (echo "usage: make pin-diff FROM=<pin> TO=<pin>"; exit 2)
	PIN=$(FROM) $(MAKE) --no-print-directory reference
	PIN=$(TO) $(MAKE) --no-print-directory reference
	mkdir -p reports
	$(PY) -m harness pin-diff --from $(FROM) --to $(TO) --out reports

# make test on every pin in the lock, one after the other, then the tests across pins.
test-pins: $(STAMP)
	@for p in $$($(PY) -m reference pins); do echo "== make test PIN=$$p"; \
	  PIN=$$p $(MAKE) --no-print-directory test || exit 1; done
	LLAMA_CONFORMANCE_REQUIRE_REFERENCE=1 $(PY) -m pytest -n $(JOBS) -m pins tests

# sdist with setuptools' PEP 517 hook, wheel with pip (no extra build tool); the suite ships inside.
dist: $(STAMP)
	rm -rf dist build  # build/: setuptools would pack files deleted from the tree since the last build
	$(PY) -c "from setuptools import build_meta as b; b.build_sdist('dist')"
	$(PY) -m pip wheel --quiet --disable-pip-version-check --no-deps -w dist .
	@ls -1 dist

# Hostile GGUF files through the harness tokenizer and llama.cpp, judged by llama.cpp (FUZZ_S seconds).
fuzz: reference
	$(PY) -m harness fuzz --seconds $${FUZZ_S:-600} --seed $${FUZZ_SEED:-0}

# Hostile ports (malformed, truncated, huge, slow, misplaced answers, crashes, hangs, forked
# children...) played against the engine's port client, in process, plus a few end-to-end runs.
fuzz-ports: reference
	$(PY) -m harness fuzz-ports --seconds $${FUZZ_S:-600} --seed $${FUZZ_SEED:-0}

clean:
	rm -rf reports .pytest_cache .hypothesis dist
