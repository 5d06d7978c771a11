#!/bin/sh
# Installs the service's runtime environment from the lock file into a virtual environment.
# The Dockerfile runs exactly this, and the test suite runs it too, so the two cannot drift.
#   usage: deploy/install.sh VENV_DIR [EXTRA ...]     (run from the project root)
set -eu
venv="$1"; shift
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check "uv==0.13.9"
extras=""
for extra in "$@"; do extras="$extras --extra $extra"; done
# --no-install-project + PYTHONPATH keeps the code out of site-packages: one copy, in /app.
UV_PROJECT_ENVIRONMENT="$venv" "$venv/bin/uv" sync --frozen --no-dev --no-install-project \
    $extras --python "$venv/bin/python"
