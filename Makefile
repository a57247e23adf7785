# ckptsim: two commands. `make demo` runs the main job, `make test` the whole suite.
# Both create .venv when missing and install the project (editable, with dev extras).

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: demo test lint typecheck unit conformance java clean bench pictures docs

$(STAMP): setup.cfg pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' || \
		{ echo "ckptsim needs Python >= 3.11 (found: $$($(PYTHON) --version 2>&1)). Install python3.11 and rerun, or set PYTHON=/path/to/python3.11."; exit 2; }
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

java:
	@if command -v java >/dev/null 2>&1; then \
		java -version 2>&1 | head -n 1; \
	else \
		echo "WARNING: no 'java' on PATH. PySpark (the Spark bridge) needs Java 17:"; \
		echo "  Debian/Ubuntu: sudo apt-get install -y openjdk-17-jre-headless"; \
		echo "  macOS:         brew install openjdk@17"; \
		echo "  or set JAVA_HOME to a JDK 17 installation."; \
	fi

demo: $(STAMP) java
	@echo "== the main job: 2M clicks from Spark (local[2]), a keyed aggregation on actors with checkpoints every 200 ms, a task failure midway, checked against Spark's groupBy =="
	$(BIN)/python examples/spark_clicks.py
	@echo
	$(BIN)/ckptsim conformance -q tests/conformance
	@echo
	@mkdir -p build
	@echo "== a keyed running sum behind a slow operator, aligned checkpoints =="
	$(BIN)/ckptsim run examples/slow_running_sum.py -p 2 --timeline build/timeline-aligned.png --stats build/archive-aligned.json
	@echo
	@echo "== the same job, unaligned checkpoints =="
	$(BIN)/ckptsim run examples/slow_running_sum.py -p 2 -D execution.checkpointing.unaligned.enabled=true --timeline build/timeline-unaligned.png --stats build/archive-unaligned.json
	@echo "Browse both runs (Flink's REST API and the web page): $(BIN)/ckptsim serve build/archive-aligned.json build/archive-unaligned.json"
	@echo
	@echo "== the same job on the deterministic simulation (seed 7, virtual time), its trace checked =="
	@trace=$$(mktemp -t ckptsim-trace-XXXXXX.jsonl) && \
		$(BIN)/ckptsim run examples/slow_running_sum.py -p 2 --simulate --seed 7 -q --trace $$trace \
			-D execution.checkpointing.unaligned.enabled=true && \
		$(BIN)/ckptsim check $$trace; status=$$?; rm -f $$trace; exit $$status
	@echo
	@echo "== failure and recovery: a task fails, an actor crashes; restored from the latest checkpoint, output verified =="
	$(BIN)/python examples/failure_recovery.py

# the README's picture: the slow running sum, aligned then unaligned, on the simulation (seed 7)
pictures: $(STAMP)
	@mkdir -p build docs
	$(BIN)/ckptsim run examples/slow_running_sum.py -p 2 --simulate --seed 7 -q -D web.checkpoints.history=100 --stats build/slow-running-sum-aligned.json
	$(BIN)/ckptsim run examples/slow_running_sum.py -p 2 --simulate --seed 7 -q -D web.checkpoints.history=100 -D execution.checkpointing.unaligned.enabled=true --stats build/slow-running-sum-unaligned.json
	$(BIN)/ckptsim timeline build/slow-running-sum-aligned.json build/slow-running-sum-unaligned.json -o docs/timeline-slow-running-sum.png

# the documentation site, built offline into build/site (open build/site/index.html)
DOCS_STAMP := $(VENV)/.docs-installed-stamp

$(DOCS_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[docs]'
	@touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir build/site

bench: $(STAMP)
	$(BIN)/python benchmarks/throughput.py
	$(BIN)/python benchmarks/instructions.py  # the p=1 job against its plain loop in CPU instructions (needs valgrind)
	$(BIN)/python benchmarks/processes.py
	$(BIN)/python benchmarks/sinks.py
	$(BIN)/python benchmarks/parquet_sink.py
	$(BIN)/python benchmarks/unaligned.py
	$(BIN)/python benchmarks/simulation.py
	$(BIN)/python benchmarks/simulation_scaling.py
	$(BIN)/python benchmarks/state_encoding.py  # keyed-state snapshots: encoding version 3 (msgpack) against 2 (JSON)
	$(BIN)/python benchmarks/spark_feed.py
	$(BIN)/python benchmarks/spark_main_job.py
	$(BIN)/python benchmarks/spark_typed_memory.py  # 1M and 4M rows of decimals and timestamps (10M: CKPTSIM_BENCH_ROWS=1000000,4000000,10000000): peak RSS of the driver's Python and JVM
	$(BIN)/python benchmarks/vs_pyflink.py  # against PyFlink when CKPTSIM_PYFLINK_PYTHON names a Python with apache-flink

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

# the suite on up to 4 workers (pytest-xdist; 2 on CI's 2 cores): the Spark tests in one of
# them, with the one SparkSession, the docs pages in one (tests/conftest.py: GROUPS)
WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); echo $$(( n < 4 ? n : 4 )))

unit: $(STAMP)
	$(BIN)/pytest -n $(WORKERS) --dist loadgroup

test: $(STAMP) java lint typecheck unit

clean:
	rm -rf $(VENV) build *.egg-info .mypy_cache .ruff_cache .pytest_cache .hypothesis
