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

## make test-gpu: on a machine with a Hopper GPU, the GPU tests and every lesson's measurement script
test-gpu: venv
	$(BIN)/python -m pytest -m gpu -p no:cacheprovider tests
	$(BIN)/python -m h100lab.measure all --out $(CURDIR)/data

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
