# The two commands: `make run` starts recall, `make test` runs the whole suite.
# Both set up everything on a fresh machine first (a virtualenv with the package and its deps).

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Wheels of recall-memory's runtime dependencies (pyproject's [project] dependencies and every extra
# but dev, resolved as a user's `pip install "recall-memory[all]"` resolves them): tests/test_wheel.py
# installs the project's wheel from here with --no-index, the core and then every extra, so the
# tests download nothing.
WHEELHOUSE := $(VENV)/wheelhouse
WHEELHOUSE_STAMP := $(WHEELHOUSE)/.filled

CHROMIUM := /usr/bin/chromium
# The TypeScript client (`recall-memory` on npm) and the stamp `npm ci` leaves in its node_modules
# (ignored by git, as node_modules is) once package-lock.json's packages are installed.
TS_CLIENT := clients/typescript
TS_STAMP := $(TS_CLIENT)/node_modules/.recall-installed
# What `make test` runs a second time on the standard sqlite3: the store, the Python API and the
# CLI on SQLite.
STDLIB_SQLITE_TESTS := tests/store tests/test_api.py tests/test_cli.py

.PHONY: run test lint bench clean browser node wheelhouse

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	@# The distribution was called `recall` before it became `recall-memory`: an old .venv drops it
	@# first (it owns the same package and command).
	$(BIN)/python -m pip uninstall --quiet --yes recall 2>/dev/null || true
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# Filled afresh when pyproject.toml changes; pip takes the files it already fetched from its cache.
$(WHEELHOUSE_STAMP): pyproject.toml | $(STAMP)
	rm -rf $(WHEELHOUSE)
	mkdir -p $(WHEELHOUSE)
	$(BIN)/python -c 'from tests.platform_lock import requirements; print(*sum(requirements().values(), []), sep="\n")' \
		> $(WHEELHOUSE)/requirements.txt
	$(BIN)/python -m pip wheel --quiet --wheel-dir $(WHEELHOUSE) -r $(WHEELHOUSE)/requirements.txt
	touch $(WHEELHOUSE_STAMP)

wheelhouse: $(WHEELHOUSE_STAMP)

run: $(STAMP)
	$(BIN)/recall serve --demo

# Besides style and types: the import graph (pyproject's [tool.importlinter]: layers point down,
# no circles) and every module of src/ at most MAX_MODULE_LINES long.
MAX_MODULE_LINES := 450

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache
	@long=$$(find src -name '*.py' -exec wc -l {} + | awk '$$2 != "total" && $$1 > $(MAX_MODULE_LINES)'); \
	if [ -n "$$long" ]; then echo "modules over $(MAX_MODULE_LINES) lines (split them along their seams):"; echo "$$long"; exit 1; fi

# The suite, then its SQLite-facing part again on Python's standard sqlite3 (what recall runs on
# where pysqlite3-binary has no wheel: tests/__init__.py); each on every core (pytest-xdist). Tests
# go to whichever worker is free: the OpenAPI fuzzing's generated tests share one name, and any
# mode that groups tests (by file, scope or group) runs one of them only.
PARALLEL := -n auto

test: $(STAMP) lint browser $(TS_STAMP) $(WHEELHOUSE_STAMP)
	$(BIN)/python -m pytest $(PARALLEL)
	RECALL_TEST_STDLIB_SQLITE=1 $(BIN)/python -m pytest $(PARALLEL) $(STDLIB_SQLITE_TESTS) -k "not postgres"

# The inspector's tests drive Debian's Chromium; installed when missing and run as root (else
# those tests are skipped, saying why).
browser:
	@if [ ! -x $(CHROMIUM) ] && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	fi

# The TypeScript client's tests run on Node.js and npm: Debian's, installed when missing and run
# as root (else those tests are skipped, saying why).
node:
	@if ! command -v node >/dev/null && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null; \
	fi

# The client's devDependencies (TypeScript, openapi-typescript, the AI SDK of its example), as
# package-lock.json pins them; again when it changes. Nothing runs at install (no build in the
# repository: the tests build the package into a temporary folder).
$(TS_STAMP): $(TS_CLIENT)/package-lock.json | node
	@if command -v npm >/dev/null; then \
		cd $(TS_CLIENT) && npm ci --ignore-scripts --no-audit --no-fund --silent && touch node_modules/.recall-installed; \
	else \
		echo "no npm: the TypeScript client's tests will be skipped (make test installs Node.js as root)"; \
	fi

bench: $(STAMP)
	$(BIN)/python bench/context_bench.py

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
	rm -rf $(TS_CLIENT)/node_modules $(TS_CLIENT)/dist $(TS_CLIENT)/build
