# Two entry points for a fresh clone: `make demo` and `make test`.
# Everything lands in .venv (one torch, CPU build) and .triton/<release> (each Triton release
# installed with --no-deps --target and selected per run with PYTHONPATH).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# `make test-quick` runs the suite under these releases only: the seed's release and the newest (writing
# bytecode, as measure/matrix.py's rows do, whatever PYTHONDONTWRITEBYTECODE says).
TEST_TRITONS ?= 3.0.0 3.9.0
DEMO_TRITON ?= 3.0.0
PYTEST_ARGS ?=

.PHONY: demo doctor test test-quick lint matrix suites speed docs venv clean

venv: $(VENV)/.installed

# kwshim with torch (the CPU build), numpy and ml_dtypes (bf16/fp8 as floats), and pytest: enough for
# the demo and the README's quick start, which runs a suite right after it.
$(VENV)/.base: setup.cfg setup.py pyproject.toml
	@echo "== creating $(VENV): kwshim, torch 2.13.0 (CPU build), numpy<2, ml_dtypes, pytest (about 700 MB)"
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --disable-pip-version-check --progress-bar off -e . torch==2.13.0 'numpy>=1.21,<2' 'ml_dtypes>=0.5' pytest
	touch $@

# The test toolchain on top (pytest, hypothesis, flake8, mypy, build, twine).
$(VENV)/.installed: $(VENV)/.base
	@echo "== installing the test toolchain into $(VENV)"
	$(PY) -m pip install --disable-pip-version-check --progress-bar off -e '.[test]'
	touch $@

.triton/%/.installed: | $(VENV)/.base
	@echo "== installing Triton $* into .triton/$* (0.4-1 GB)"
	rm -rf .triton/$*
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps --target .triton/$* 'triton==$*'
	touch $@

demo: $(VENV)/.base .triton/$(DEMO_TRITON)/.installed
	TRITON_INTERPRET=1 PYTHONPATH=.triton/$(DEMO_TRITON) $(PY) examples/demo.py
	@echo "== next: make doctor (kwshim doctor on Triton $(DEMO_TRITON)); any tool on a release of .triton/:"
	@echo "   TRITON_INTERPRET=1 PYTHONPATH=.triton/$(DEMO_TRITON) .venv/bin/kwshim doctor"

# kwshim doctor on the demo's release (DEMO_TRITON=<release> for another one of .triton/).
doctor: $(VENV)/.base .triton/$(DEMO_TRITON)/.installed
	TRITON_INTERPRET=1 PYTHONPATH=.triton/$(DEMO_TRITON) $(VENV)/bin/kwshim doctor

# The docs site, into .site/, with warnings as errors (its code blocks run in tests/test_docs.py).
docs: venv
	$(VENV)/bin/mkdocs build --strict --quiet

# flake8 over the whole repository (setup.cfg's [flake8]: pycodestyle and pyflakes, 120 columns).
lint: venv
	$(VENV)/bin/flake8

# The linter, the docs site, then the full matrix: every Triton release 2.2.0..3.9.0 (+ wrapt 1.x rows); a table.
test: venv lint docs
	$(PY) measure/matrix.py

# The same, and rewrite the docs site's compatibility page from the run.
matrix: venv docs
	$(PY) measure/matrix.py --page docs/evidence/compatibility.md

test-quick: venv $(foreach v,$(TEST_TRITONS),.triton/$(v)/.installed)
	@status=0; for v in $(TEST_TRITONS); do \
	  echo "=== Triton $$v (CPU interpreter)"; \
	  env -u PYTHONDONTWRITEBYTECODE TRITON_INTERPRET=1 PYTHONPATH=.triton/$$v $(PY) -m pytest -q -p no:cacheprovider -n auto $(PYTEST_ARGS) || status=1; \
	done; exit $$status

# Real libraries' own tests, classified, the device column held to the H200's outcomes
# (measure/outcomes/): Liger-Kernel 0.8.5's test/transformers bare, under --kwshim and under the
# virtual CUDA device, on Triton 3.0.0 and 3.9.0; flash-linear-attention v0.5.2's three op files
# under the device, and Triton 3.6.0's own language tests under the device (git checkouts: where
# GitHub cannot be reached, the step says so and is skipped).
# Rewrites docs/evidence/suites.md's tables. Slow: not part of `make test`.
suites: venv
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[test,suites]'
	$(PY) measure/suites.py --page docs/evidence/suites.md
	-$(PY) measure/suites.py --library fla --releases 3.6.0 --modes device --grids batched --timeout 700 --page docs/evidence/suites.md
	-$(PY) measure/suites.py --library flaggems --releases 3.6.0 --modes device --grids batched --per-file 2 --jobs 2 --timeout 1800 --page docs/evidence/suites.md
	-$(PY) measure/suites.py --library triton --releases 3.6.0 --per-file 2 --modes device compile --grids batched --timeout 1800 --page docs/evidence/suites.md
	-$(PY) measure/suites.py --library triton --releases 3.6.0 --per-file 2 --modes bare device compile --grids batched --timeout 1800 --marker interpreter --page docs/evidence/suites.md

# Liger-Kernel's kernels batched against Triton's loop, torch and the NumPy floor (Triton 3.9.0,
# Liger from `make suites`' checkout), the virtual device's cost per torch operation against each
# mechanism's floor, a tensor-core matmul kernel against torch.matmul, and a fresh runner's first run against
# a warm one; rewrites docs/evidence/speed.md.
speed: venv .triton/3.9.0/.installed
	$(PY) -c "import sys; sys.path.insert(0, 'measure'); import suites; suites.LIBRARIES['liger'].fetch()"
	TRITON_INTERPRET=1 PYTHONPATH=.triton/3.9.0:.suites/liger_kernel-0.8.5/src $(PY) benchmarks/grid_speed.py --page docs/evidence/speed.md
	TRITON_INTERPRET=1 PYTHONPATH=.triton/3.9.0 $(PY) benchmarks/device_cost.py --page docs/evidence/speed.md
	TRITON_INTERPRET=1 PYTHONPATH=.triton/3.9.0 $(PY) benchmarks/dot_speed.py --page docs/evidence/speed.md
	PYTHONPATH=.triton/3.9.0 $(PY) benchmarks/cold_start.py --page docs/evidence/speed.md

clean:
	rm -rf $(VENV) .triton .wrapt .suites .matrix .site *.egg-info
