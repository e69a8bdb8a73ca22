# Two commands a newcomer needs: `make run` (try Docent) and `make test` (the linters, then the suite).
# `make test-fast` is the check before a commit: the tests without a database or a model.
# Both create .venv and install the project from pyproject.toml the first time.

VENV ?= .venv
PYTHON ?= python3
STAMP := $(VENV)/.installed
# On Linux, PyPI's torch is the CUDA build (several GB). `make run TORCH_INDEX=https://download.pytorch.org/whl/cpu`
# installs PyTorch's CPU build of the pinned version first, as PyTorch documents for pip (see README).
TORCH_INDEX ?=

.PHONY: install run test test-fast lint clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(if $(TORCH_INDEX),$(VENV)/bin/pip install --quiet 'torch==2.13.0' --index-url $(TORCH_INDEX))
	$(VENV)/bin/pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(VENV)/bin/kb run

# The suite on every core: each pytest-xdist worker has its own embedded Postgres and syncs the sample
# wiki once; --dist loadfile keeps a module's tests (and its module-scoped servers) on one worker.
TEST_WORKERS ?= auto

test: lint
	$(VENV)/bin/python -m pytest -n $(TEST_WORKERS) --dist loadfile --durations=15

# Neither `integration` (the session's index: a database and the embedding model) nor `slow`
# (a wheel build, a subprocess, a model export, a fuzz campaign): see [tool.pytest.ini_options].
test-fast: $(STAMP)
	$(VENV)/bin/python -m pytest -n $(TEST_WORKERS) --dist loadfile -m "not integration and not slow"

# ruff and mypy as pyproject.toml configures them ([tool.ruff], [tool.mypy]); mypy keeps its cache
# in .mypy_cache (a first run takes about a minute of CPU, a warm one seconds).
lint: $(STAMP)
	$(VENV)/bin/ruff check
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
