# Two commands a newcomer needs: `make run` (try Docent) and `make test`.
# Both create .venv and install the project from pyproject.toml the first time.

VENV ?= .venv
PYTHON ?= python3
STAMP := $(VENV)/.installed

.PHONY: install run test clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(VENV)/bin/kb run

test: $(STAMP)
	$(VENV)/bin/python -m pytest

clean:
	rm -rf $(VENV) .pytest_cache
