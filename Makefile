# H100 Lab. Two commands do all set-up on a fresh machine with Python >= 3.10 and pip:
#   make test   unit tests, every chapter and solution notebook under nbval, exercise stubs proven to fail
#   make book   executes every chapter on the machine model and builds the site into _build/html
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
JOBS    ?= 2
export MPLBACKEND := Agg
export PYTHONHASHSEED := 0
export PYDEVD_DISABLE_FILE_VALIDATION := 1
export JUPYTER_PLATFORM_DIRS := 1

.PHONY: venv test test-unit test-notebooks test-gpu book book-instructor test-site lab student measure clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[book,test,gpu]'
	touch $@

venv: $(STAMP)

## make test: everything CI checks before the book build
test: venv
	$(BIN)/python -m h100lab.grading student solutions exercises --check
	$(BIN)/python -m pytest -n $(JOBS) --dist loadfile --nbval-lax --nbval-current-env \
	    --nbval-cell-timeout 300 -p no:cacheprovider tests chapters solutions

test-unit: venv
	$(BIN)/python -m pytest -n $(JOBS) -p no:cacheprovider tests

test-notebooks: venv
	$(BIN)/python -m pytest -n $(JOBS) --dist loadfile --nbval-lax --nbval-current-env -p no:cacheprovider chapters solutions

## make test-gpu: on a Hopper GPU, the backend's GPU tests, every lesson's measurement, then the silicon checks
## on the fresh data. GPU_PY=python3 uses an existing interpreter (e.g. a GPU image with no network):
##   make test-gpu GPU_PY=python3
GPU_PY ?= $(BIN)/python
test-gpu: $(if $(filter $(BIN)/python,$(GPU_PY)),venv)
	PYTHONPATH=$(CURDIR) $(GPU_PY) -m h100lab.cuda
	PYTHONPATH=$(CURDIR) $(GPU_PY) -m pytest -m gpu -p no:cacheprovider -rs tests
	PYTHONPATH=$(CURDIR) $(GPU_PY) -m h100lab.measure all --out $(CURDIR)/data
	PYTHONPATH=$(CURDIR) $(GPU_PY) -m pytest -p no:cacheprovider -rs tests/test_validation.py

## regenerate the student editions of the exercises from solutions/
student: venv
	$(BIN)/python -m h100lab.grading student solutions exercises

## make book: the student site; make book-instructor: the same plus solutions
book: venv
	$(BIN)/python tools/site.py student

book-instructor: venv
	$(BIN)/python tools/site.py instructor

test-site: venv
	$(BIN)/python tools/site.py test

lab: venv
	$(BIN)/jupyter lab chapters

clean:
	rm -rf _build _build_instructor
