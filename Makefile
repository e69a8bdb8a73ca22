# Two commands a newcomer needs: `make run` (try Docent) and `make test` (the linters, then the suite).
# Both create .venv and install the project from pyproject.toml the first time.

VENV ?= .venv
PYTHON ?= python3
STAMP := $(VENV)/.installed
# On Linux, PyPI's torch is the CUDA build (several GB). `make run TORCH_INDEX=https://download.pytorch.org/whl/cpu`
# installs PyTorch's CPU build of the pinned version first, as PyTorch documents for pip (see README).
TORCH_INDEX ?=

.PHONY: install run test lint clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(if $(TORCH_INDEX),$(VENV)/bin/pip install --quiet 'torch==2.13.0' --index-url $(TORCH_INDEX))
	$(VENV)/bin/pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(VENV)/bin/kb run

test: lint
	$(VENV)/bin/python -m pytest

# ruff and mypy as pyproject.toml configures them ([tool.ruff], [tool.mypy]); mypy keeps its cache
# in .mypy_cache (a first run takes about a minute of CPU, a warm one seconds).
lint: $(STAMP)
	$(VENV)/bin/ruff check
	$(VENV)/bin/mypy

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
