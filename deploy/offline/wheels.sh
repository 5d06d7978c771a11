#!/usr/bin/env bash
# Copies into deploy/wheels/ the llama-cpp-python wheel that `make install` already built from
# the locked sdist (uv keeps it in its cache), so the image build installs it instead of
# compiling llama.cpp a second time. Without one, the image build compiles it (slower, same
# result). Pure-Python/ctypes, so one wheel fits every Python 3.
#   usage: deploy/offline/wheels.sh       (run from the project root)
set -euo pipefail
version="$(grep -A1 -x 'name = "llama-cpp-python"' uv.lock | sed -n 's/^version = "\(.*\)"$/\1/p')"
want="llama_cpp_python-$version-py3-none-linux_x86_64.whl"
rm -f deploy/wheels/llama_cpp_python-*.whl
cache="$(.venv/bin/uv cache dir 2>/dev/null || echo "${XDG_CACHE_HOME:-$HOME/.cache}/uv")"
[ -d "$cache" ] || exit 0
found="$(find "$cache" -path "*/llama-cpp-python/$version/*" -name "$want" -type f 2>/dev/null \
    | head -n 1)"
if [ -n "$found" ]; then
    cp "$found" deploy/wheels/
fi
