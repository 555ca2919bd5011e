# The two quick-start commands: `make demo` and `make test` (see README.md).
# The interpreter that builds .venv: Debian's own Python 3.11 where there is one, else the first python3 on PATH.
# Debian builds it with profile-guided and link-time optimisation, which pyenv's default build lacks: graded
# classes take about 4 % less time on it (docs/performance.md). 3.11, the version of the course machines' local
# CPU wheel of torch==2.13.0 (another version would download a CUDA build). `make PYTHON=...` picks another.
PYTHON ?= $(or $(wildcard /usr/bin/python3.11),python3)
VENV := .venv
BIN := $(VENV)/bin
JOBS ?= 2

.PHONY: system-deps install demo check test bench release clean

# bubblewrap and python3-venv, from apt-get as root or with `sudo -n`; else it stops, installing nothing,
# and prints the one command to run as root.
system-deps:
	PYTHON=$(PYTHON) sh scripts/system-deps

# pip compiles the modules of a package it installs; an editable one's are compiled here, so that where no
# bytecode may be written (PYTHONDONTWRITEBYTECODE, as on the course's machines) no command compiles the
# grader and the suite afresh at each start (a third of `grade`'s own imports). Quick when nothing changed.
install: system-deps $(VENV)/.installed
	$(BIN)/python -m compileall -q autograder solutions

$(VENV)/.installed: pyproject.toml | system-deps
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[torch,test,nbgrader,dask,slurm]'
	touch $@

demo: install
	$(BIN)/autograder doctor
	$(BIN)/autograder grade w07_attention examples/w07_class --db out/demo.db
	$(BIN)/autograder report --db out/demo.db --out out/report

# The fast tier: lint, then everything but the end-to-end runs, in $(JOBS) processes. Whole files go to one
# process (--dist loadfile), so a module's fixture (a class graded once, a sandbox) is built once.
check: install
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q -n $(JOBS) --dist loadfile -m "not slow and not fuzz_long and not nbgrader_table"

test: install
	$(BIN)/python -m pytest -q -n $(JOBS)

# The students' version through nbgrader, scanned for leaks: release/w07_attention/ (see README, Instructors).
release: install
	$(BIN)/autograder release w07_attention

bench: install
	$(BIN)/python bench/sandbox_overhead.py
	$(BIN)/python bench/submission_profile.py
	$(BIN)/python bench/batch.py
	$(BIN)/python bench/slow_students.py
	$(BIN)/python bench/cluster.py
	$(BIN)/python bench/one_handin.py

clean:
	rm -rf out .pytest_cache
