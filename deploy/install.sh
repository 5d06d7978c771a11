#!/bin/sh
# Installs the service's runtime environment from the lock file into a virtual environment.
# The Dockerfile runs exactly this, and the test suite runs it too, so the two cannot drift.
#   usage: deploy/install.sh VENV_DIR [EXTRA ...]     (run from the project root)
# A wheel in deploy/wheels/ of exactly the version the lock installs for these extras (one
# built earlier from the same locked sdist, e.g. llama-cpp-python, which otherwise compiles for
# minutes) is installed instead of building that package again; any other wheel is ignored.
set -eu
venv="$1"; shift
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check "uv==0.13.9"
args=""
for extra in "$@"; do args="$args --extra $extra"; done
export UV_PROJECT_ENVIRONMENT="$venv"
# What the lock installs for these extras, as name==version lines.
# shellcheck disable=SC2086  # $args is a list of options
wanted="$("$venv/bin/uv" export --frozen --no-dev --no-hashes --no-emit-project $args \
    --python "$venv/bin/python" | sed -n 's/^\([A-Za-z0-9._-]*==[^ ;]*\).*/\1/p')"
prebuilt=""
for wheel in deploy/wheels/*.whl; do
    [ -e "$wheel" ] || continue
    file="$(basename "$wheel")"
    dist="$(echo "$file" | cut -d- -f1)"
    version="$(echo "$file" | cut -d- -f2)"
    name="$(echo "$dist" | tr '_' '-')"
    if echo "$wanted" | grep -qix "$name==$version"; then
        args="$args --no-install-package $name"
        prebuilt="$prebuilt $wheel"
    fi
done
# --no-install-project + PYTHONPATH keeps the code out of site-packages: one copy, in /app.
# shellcheck disable=SC2086  # $args is a list of options
"$venv/bin/uv" sync --frozen --no-dev --no-install-project \
    $args --python "$venv/bin/python"
if [ -n "$prebuilt" ]; then
    # shellcheck disable=SC2086
    "$venv/bin/uv" pip install --quiet --no-deps --python "$venv/bin/python" $prebuilt
fi
