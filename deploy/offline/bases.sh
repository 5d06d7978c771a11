#!/usr/bin/env bash
# Builds, on the private engine, the images that the project's Dockerfile and compose file name
# (python, postgres, redis, nginx) from Debian packages alone, for machines that reach Debian's
# and PyPI's registries but no container registry. Each image carries a hash of this recipe in a
# label: an unchanged recipe costs nothing, a changed one rebuilds.
#   usage: DOCKER_HOST=... deploy/offline/bases.sh      (run from the project root)
set -euo pipefail
# Debian's client, of the engine's own version (and without the newer client's notices).
docker() { /usr/bin/docker "$@"; }
here="deploy/offline"
cache=".cache/docker"
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
# The machine's own CPython 3.12 (pyenv) stands in for the official image's /usr/local build.
cpython="${STANDIN_CPYTHON:-$(ls -d /root/.pyenv/versions/3.12.* 2>/dev/null | sort -V | tail -n 1)}"
[ -x "$cpython/bin/python3.12" ] || { echo "no CPython 3.12 found (set STANDIN_CPYTHON)" >&2; exit 1; }

recipe="$( { cat "$here/bases.sh" "$here"/bases/*; echo "$mirror $cpython"; \
    cat /usr/local/share/ca-certificates/*.crt 2>/dev/null; } | sha256sum | cut -c1-16)"
# The root file system depends on the mirror alone: recipe changes above it keep it.
rootfs_recipe="$(echo "debootstrap minbase bookworm $mirror" | sha256sum | cut -c1-16)"
label="org.plantree.recipe"
PYTHON_IMAGE="python:3.12-slim-bookworm"
POSTGRES_IMAGE="postgres:15-bookworm"
REDIS_IMAGE="redis:7.0-bookworm"
NGINX_IMAGE="nginx:1.27-bookworm"

current() {  # is image $1 built from recipe $2 (default: this one)?
    [ "$(docker image inspect -f "{{index .Config.Labels \"$label\"}}" "$1" 2>/dev/null)" \
        = "${2:-$recipe}" ]
}

if current "$PYTHON_IMAGE" && current "$POSTGRES_IMAGE" && current "$REDIS_IMAGE" \
    && current "$NGINX_IMAGE"; then
    exit 0
fi

ctx="$(mktemp -d)"
trap 'rm -rf "$ctx"' EXIT
if ! current plantree-offline/rootfs:bookworm "$rootfs_recipe"; then
    echo "bases: debootstrap bookworm (minbase)" >&2
    rootfs="$ctx/rootfs"
    debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$cache/debootstrap.log" 2>&1 \
        || { tail -n 20 "$cache/debootstrap.log" >&2; exit 1; }
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/cache/apt/*.bin \
        "$rootfs"/var/lib/apt/lists/*
    tar -C "$rootfs" -c . | docker import --change "LABEL $label=$rootfs_recipe" \
        --change 'CMD ["bash"]' - plantree-offline/rootfs:bookworm >/dev/null
    rm -rf "$rootfs"
fi

mkdir -p "$ctx/host-ca" "$ctx/cpython"
cp /usr/local/share/ca-certificates/*.crt "$ctx/host-ca/" 2>/dev/null || true
cp "$here"/bases/* "$ctx/"
# The interpreter without its test suite, IDLE/Tk, static library and whatever was
# pip-installed into it: about what the official slim image keeps.
tar -C "$cpython" -c \
    --exclude='./lib/python3.12/test' --exclude='./lib/python3.12/idlelib' \
    --exclude='./lib/python3.12/tkinter' --exclude='./lib/python3.12/turtledemo' \
    --exclude='./lib/python3.12/site-packages/*' --exclude='*.a' --exclude='_tkinter*' \
    --exclude='./bin/idle*' --exclude='./bin/2to3*' --exclude='./bin/pip*' . \
    | tar -C "$ctx/cpython" -x
strip --strip-unneeded "$ctx"/cpython/lib/libpython3.12.so.1.0

build() {  # image dockerfile
    echo "bases: $1" >&2
    docker build -q --label "$label=$recipe" -t "$1" -f "$ctx/$2" "$ctx" >/dev/null
}
build plantree-offline/debian:bookworm debian.Dockerfile
build "$PYTHON_IMAGE" python.Dockerfile
build "$POSTGRES_IMAGE" postgres.Dockerfile
build "$REDIS_IMAGE" redis.Dockerfile
build "$NGINX_IMAGE" nginx.Dockerfile
docker image prune -f >/dev/null  # the images the recipe replaced
