VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test lint types unit bench clean

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) examples/orders.py

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests examples
	$(VENV)/bin/ruff format --check src tests examples

types: $(STAMP)
	$(VENV)/bin/mypy

test: lint types
	$(VENV)/bin/pytest -q

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
