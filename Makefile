# omni: `make test` runs the whole suite, `make demo` runs the main job end to end.
PY ?= python3
VENV ?= .venv
REF_VENV ?= .venv-ref
BIN := $(VENV)/bin
STAMP := $(VENV)/.omni-setup-stamp

.PHONY: setup test demo lint proto clean images

# The stamp depends on the files that define the environment, so a second `make setup` is a no-op.
$(STAMP): pyproject.toml tools/reference/make_venv.sh
	test -d $(VENV) || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	bash tools/reference/make_venv.sh $(REF_VENV)
	touch $(STAMP)

setup: $(STAMP)

proto: setup
	$(BIN)/python tools/gen_protos.py

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

test: setup
	# One torch thread per process: xdist already runs two workers on two cores, and the tests start services.
	OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OMNI_REF_PYTHON=$(abspath $(REF_VENV))/bin/python \
		$(BIN)/python -m pytest -q -n 2 --dist loadfile --durations=25

demo: setup
	$(BIN)/python tools/demo.py

# Smoke build of the gateway image with podman on a debootstrap base (no Docker engine or registry needed).
images:
	bash tools/build_images.sh

clean:
	rm -rf $(VENV) $(REF_VENV) .pytest_cache
