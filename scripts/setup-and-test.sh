#!/usr/bin/env bash
# Set up realitycheck in .venv (torch pinned to the CPU build by constraints.txt),
# then run the linters, the import contracts (pyproject.toml), the type checker,
# the manual's strict build and the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet -c constraints.txt -e '.[all,distributed,serve,dev,docs]'
# Chromium for the browser checks of the report (tests/report/test_browser.py skip without it):
# installed where it is missing and we may (root with apt-get; the package lists are updated
# when the first try fails, as on a new machine); never fails the set-up.
command -v chromium >/dev/null || { [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null \
  && (apt-get install -y -qq chromium >/dev/null 2>&1 \
       || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq chromium >/dev/null 2>&1; } \
       || true); } || true

.venv/bin/ruff check src tests benchmarks scripts
.venv/bin/ruff format --check src tests benchmarks scripts
PYTHONPATH=scripts .venv/bin/lint-imports --no-cache
.venv/bin/mypy
# The manual (docs/, mkdocs.yml) in strict mode: a broken link, anchor or API reference fails.
site="$(mktemp -d)"
trap 'rm -rf "$site"' EXIT
.venv/bin/mkdocs build --strict --quiet --site-dir "$site"
# A test file (or a folder sharing one fixture: tests/conftest.py's FOLDER_GROUPS) per
# worker, one worker more than there are cores: the extra one works while the others wait
# on servers and child processes, and it keeps the suite's share of a machine that other
# jobs load (2 cores busy with another job: 659 s with 3 workers, 746 s with 2; idle,
# 398 s against 390 s). `-n 0` after it runs the suite in one process.
# With bytecode caches (__pycache__, git-ignored) even where PYTHONDONTWRITEBYTECODE is set:
# without them each worker rewrites every test file's asserts (11 of its 22 CPU seconds of
# collection) and each CLI process a test starts compiles the package again.
env -u PYTHONDONTWRITEBYTECODE .venv/bin/python -m pytest -n "$(($(nproc) + 1))" --dist loadfile "$@"
