# Two commands on a fresh machine: `make demo` and `make test`. Everything they need is installed
# from PyPI and npm by the targets below; nothing is downloaded at build or run time.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
ANCHOR := $(BIN)/anchor
export PATH := $(CURDIR)/node_modules/.bin:$(PATH)
DEMO_DATA := $(CURDIR)/.anchor/demo
PORT ?= 8000

# What each long step does, and how long the run has taken so far: a cold `make demo` spends minutes in a
# quiet pip install, and `make test` printed nothing until a target ended. MAKE_START is the first make's.
MAKE_START ?= $(shell date +%s)
export MAKE_START
, := ,
say = @echo "[make $@, $$(( $$(date +%s) - $(MAKE_START) )) s] $(1)"

.PHONY: image install demo explore test check e2e browser sandbox postgres screenshots fuzz lock test-forge test-python lint fmt snapshot bench clean artifact wheel docs-cli

install: $(VENV)/.installed node_modules/.installed

# requirements-mlflow.lock: what MLflow (the `[mlflow]` extra's client, and the server the tests start) adds
# to the venv; kept apart so that the container image (Dockerfile: requirements.lock only) does not carry it
$(VENV)/.installed: pyproject.toml requirements.lock requirements-mlflow.lock
	$(call say,installing $$(cat requirements.lock requirements-mlflow.lock | grep -c ==) pinned Python packages (requirements.lock$(,) requirements-mlflow.lock) into $(VENV)/: several minutes the first time$(,) quietly)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements.lock -r requirements-mlflow.lock
	# editable as a plain path entry (a .pth naming this checkout), not setuptools' import-hook finder: the
	# finder is imported by every interpreter the venv starts, `python -c pass` included (32 ms against 13
	# here: a "path-hook-free install")
	$(BIN)/pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e . \
	  --config-settings editable_mode=compat
	# compiled once, as pip compiles a wheel it installs: with PYTHONDONTWRITEBYTECODE set (CI's images,
	# this machine) an editable checkout would otherwise recompile every module on every call (~45 ms)
	$(BIN)/python -m compileall -q anchor api
	touch $@
	$(call say,Python packages installed)

node_modules/.installed: package.json package-lock.json
	$(call say,installing the pinned node packages (anvil$(,) solc; package-lock.json) into node_modules/)
	npm ci --no-audit --no-fund --loglevel=error
	touch $@
	$(call say,node packages installed)

## The main job on the embedded local chain: bundle anchored and verified, then a research search.
demo: install sandbox
	$(call say,the demo: a bundle anchored and verified on the embedded chain$(,) then a research search (data in $(DEMO_DATA)))
	ANCHOR_DATA_DIR=$(DEMO_DATA) bash examples/demo.sh
	$(call say,demo done)

## What `make demo` anchored, in the explorer: the demo's chain is started for the server and stopped
## again when the server ends (Ctrl-C).
## PORT=… serves elsewhere (default 8000): every link the pages and `anchor lookup` print then names it.
explore: install
	ANCHOR_DATA_DIR=$(DEMO_DATA) bash -c 'trap "$(BIN)/anchor chain down" EXIT; $(BIN)/anchor chain up && \
	  $(BIN)/anchor serve --port $(PORT)'

# forge and the Python side side by side (each target's output printed whole when it ends): forge's
# fuzzing fills the CPU the pytest workers leave idle while they wait on chains and sleeps.
test: install browser sandbox postgres
	$(call say,every tier: forge (fmt$(,) build$(,) tests$(,) gas snapshot) beside pytest (fast$(,) chain$(,) postgres$(,) browser$(,) sandbox$(,) soak); each target's output is printed whole when it ends)
	$(MAKE) --no-print-directory -j2 --output-sync=target test-forge test-python
	$(call say,all tests passed)

## The fast tier: every test that touches no chain, database, browser or sandbox (tests/conftest.py marks
## them from their fixtures), and ruff. Under a minute here; `make test` runs everything.
check: install
	$(call say,the fast tier: ruff$(,) then every test that touches no chain$(,) database$(,) browser or sandbox)
	$(BIN)/ruff check anchor api tests benchmarks
	$(BIN)/pytest -n 2 -m "not chain and not postgres and not browser and not sandbox and not soak"
	$(call say,fast tier passed)

## anchor -> verify -> lookup on a real chain: ANCHOR_RPC_URL and a funded key, else it says so and exits 0.
e2e: install
	bash examples/e2e.sh

## gVisor's runsc or bubblewrap: research attempts and mission commands run sandboxed (anchor/fence/),
## their seccomp policy compiled by libseccomp2. Debian's packages; needs root, as CI has. As root, untrusted
## code runs as the unprivileged system user anchor-attempt, never as uid 0 (anchor/fence/identity.py).
sandbox:
	(command -v bwrap && command -v runsc && command -v setpriv && ls /usr/lib/*/libseccomp.so.2) >/dev/null 2>&1 || \
	  (apt-get update -qq && apt-get install -y -qq bubblewrap runsc libseccomp2 util-linux mount)
	@if [ "$$(id -u)" = 0 ] && ! id -u anchor-attempt >/dev/null 2>&1; then \
	  echo "sandbox: making the system user anchor-attempt"; \
	  useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin anchor-attempt; \
	fi

## PostgreSQL 15 for the shared-ledger tests (tests/postgres.py runs initdb in a temporary directory as an
## unprivileged user and stops the server by its PID). Debian's package; needs root, as CI has.
postgres:
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq postgresql)

## Headless Chromium for the explorer-page tests (Debian's package; needs root, as CI has).
browser:
	command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium)

screenshots: install browser
	bash examples/screenshots.sh

## Hostile proof files, nightly-sized: FUZZ_SCALE (default 20) times the 5,000 that `make test` feeds to the
## library, the CLI and the REST API, and the 1,000 sealed sections given to the browser's check
## (tests/hostile/test_fuzzed_proofs.py), with fresh randomness each run.
FUZZ_SCALE ?= 20
fuzz: install
	$(call say,hostile proofs: $$(( $(FUZZ_SCALE) * 5000 )) to the library$(,) the CLI and the REST API$(,) $$(( $(FUZZ_SCALE) * 1000 )) to the browser's check)
	ANCHOR_FUZZ_SCALE=$(FUZZ_SCALE) $(BIN)/pytest -n 2 -q tests/hostile/test_fuzzed_proofs.py
	$(call say,fuzz passed: every hostile proof was a typed error)

# Gas snapshot: unit tests only (fuzz and invariant figures vary between runs), compared with our
# own diff because `forge snapshot --check` 1.7.1 prints a mismatch yet exits 0.
SNAPSHOT_FILTER := --no-match-test '^(testFuzz|invariant)'

test-forge: install
	$(call say,forge: fmt$(,) build$(,) the Solidity tests (fuzz and invariants)$(,) the gas snapshot)
	cd foundry && forge fmt --check
	cd foundry && forge build --sizes
	cd foundry && forge test
	cd foundry && forge snapshot $(SNAPSHOT_FILTER) --snap cache/gas-snapshot.current > /dev/null
	diff -u foundry/.gas-snapshot foundry/cache/gas-snapshot.current && echo "gas snapshot: unchanged"
	$(call say,forge passed)

# Three workers on two cores (many tests wait on a chain, a server or a sleep: 453 s against 489 s with two);
# tests that share a module fixture or the demo run stay on one worker (tests/conftest.py scope_of).
PYTEST_PARALLEL ?= -n 3 --dist loadgroup

test-python: install
	$(call say,ruff$(,) mypy$(,) then pytest $(PYTEST_PARALLEL): every tier (README "Tests"))
	$(BIN)/ruff check anchor api tests benchmarks
	$(BIN)/mypy anchor api
	$(BIN)/pytest $(PYTEST_PARALLEL)
	$(call say,pytest passed)

snapshot: install
	cd foundry && forge snapshot $(SNAPSHOT_FILTER)

## docs/cli.md and the `anchor --help` in README.md, written from the CLI (anchor/cli/reference.py);
## tests/cli/test_cli_reference.py fails when they differ from it.
docs-cli: install
	$(BIN)/python -m anchor.cli.reference

fmt: install
	cd foundry && forge fmt
	$(BIN)/ruff format anchor api tests benchmarks

bench: install
	command -v b3sum >/dev/null && command -v wrk >/dev/null || (apt-get update -qq && apt-get install -y -qq b3sum wrk)
	$(BIN)/python benchmarks/cli_startup.py
	$(BIN)/python benchmarks/gas_report.py
	$(BIN)/python benchmarks/hash_bench.py
	$(BIN)/python benchmarks/hash_bench.py --end-to-end --runs 3
	$(BIN)/python benchmarks/anchor_bench.py
	$(BIN)/python benchmarks/research_overhead.py
	$(BIN)/python benchmarks/api_bench.py
	$(BIN)/python benchmarks/hostile_bench.py
	$(BIN)/python benchmarks/journal_bench.py
	$(BIN)/python benchmarks/missions.py
	$(BIN)/python benchmarks/chain_only.py
	$(BIN)/python benchmarks/calendar_bench.py
	$(BIN)/python benchmarks/research_reads.py

## Rewrite the committed registry build (anchor/chain/artifacts) from a fresh compile with the pinned solc.
artifact: install
	$(BIN)/python -m anchor.chain.compiler

## Build the wheel (dist/): an `anchor` that works outside this checkout (tests/project/test_wheel.py installs it).
wheel: install
	$(BIN)/pip wheel --quiet --disable-pip-version-check --no-deps --no-build-isolation -w dist .

## Regenerate requirements.lock from the venv (--all keeps setuptools and wheel, which the editable install needs).
lock:
	$(BIN)/pip freeze --all --exclude-editable | grep -v -e '^-e' -e '^pip==' -e '^anchor-provenance' | sort -f > .lock.all
	$(BIN)/python -c "import sys; name = lambda r: r.split('==')[0].lower().replace('_', '-'); \
	  ml = {name(r) for r in open('requirements-mlflow.lock')}; rows = open('.lock.all').read().splitlines(); \
	  open('requirements.lock', 'w').writelines(r + '\n' for r in rows if name(r) not in ml); \
	  open('requirements-mlflow.lock', 'w').writelines(r + '\n' for r in rows if name(r) in ml)"
	rm .lock.all

clean:
	rm -rf foundry/out foundry/cache .anchor/demo

## The container image (Dockerfile): BASE_IMAGE must be pinned by digest (name@sha256:<64 hex>).
image:
	@echo "$(BASE_IMAGE)" | grep -Eq '^[a-z0-9][a-z0-9._/:-]*@sha256:[0-9a-f]{64}$$' || \
		{ echo "make image: BASE_IMAGE=$(BASE_IMAGE) is not pinned by digest (hint: BASE_IMAGE=python:3.11-slim-bookworm@sha256:<64 hex>)" >&2; exit 2; }
	docker build --build-arg BASE_IMAGE=$(BASE_IMAGE) -t anchor:$(shell git rev-parse --short HEAD) .
