# The service image. Stages: `build` makes /opt/venv from uv.lock; `runtime` is that venv and
# the code, run as a non-root user; `simulator` adds the test kit's Gemini simulator (for the
# deployment tests only); `service`, the last and default stage, is what compose runs.
# No `# syntax=` line: the engine's built-in Dockerfile frontend is enough (no registry needed).
ARG PYTHON_IMAGE=python:3.12-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
WORKDIR /app
# Dependencies only: this layer is rebuilt when pyproject.toml, uv.lock or a supplied wheel
# changes, never for a code change.
COPY pyproject.toml uv.lock ./
COPY deploy/install.sh deploy/install.sh
COPY deploy/wheels/ deploy/wheels/
# llama-cpp-python builds from source (minutes) unless deploy/wheels holds a wheel of the
# locked version; only then are compilers needed. The uv cache mount keeps downloads and built
# wheels across builds on the same engine without putting them in a layer. binutils' `strip`
# takes the debug symbols out of the wheels' shared libraries (about 40 MB of the image).
RUN --mount=type=cache,target=/var/cache/apt,sharing=locked \
    --mount=type=cache,target=/var/lib/apt/lists,sharing=locked \
    rm -f /etc/apt/apt.conf.d/docker-clean \
    && apt-get update -qq \
    && if ls deploy/wheels/llama_cpp_python-*.whl >/dev/null 2>&1; then tools=binutils; \
       else tools=build-essential; fi \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $tools
# Bytecode compiled at build time: a container then starts in seconds instead of compiling
# every imported module again at each start (its user cannot write them). After the install,
# the runtime needs no installer (uv), nor what llama-cpp-python's wheel puts at the
# site-packages root: a second copy of the llama.cpp libraries (it loads those under
# llama_cpp/lib), their headers and CMake files.
ENV UV_COMPILE_BYTECODE=1
RUN --mount=type=cache,target=/root/.cache/uv,sharing=locked \
    deploy/install.sh /opt/venv postgres local \
    && cd /opt/venv/lib/python3*/site-packages \
    && rm -rf /opt/venv/bin/uv /opt/venv/bin/uvx uv uv-*.dist-info \
    && if [ -d llama_cpp/lib ]; then rm -rf lib include; fi \
    && find /opt/venv -name '*.so*' -type f -exec strip --strip-unneeded {} +

FROM ${PYTHON_IMAGE} AS runtime
# llama.cpp (the bundled local model) is linked against OpenMP's runtime.
RUN apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libgomp1 \
    && apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin \
    && useradd --create-home --uid 10001 lats \
    && mkdir /data && chown lats /data
COPY --from=build /opt/venv /opt/venv
WORKDIR /app
COPY agents agents
COPY app app
COPY calls calls
COPY tools tools
RUN python -m compileall -q agents app calls tools
# MALLOC_ARENA_MAX: glibc gives each thread that allocates its own arena, so the store's and
# the tools' worker threads keep freed memory apart and the resident size wanders by tens of
# MiB from one run to the next; two arenas keep it close to what the process holds.
ENV PATH="/opt/venv/bin:$PATH" \
    MALLOC_ARENA_MAX=2 \
    PYTHONPATH=/app \
    PYTHONUNBUFFERED=1 \
    LATS_DATA_DIR=/data
USER lats

# The Gemini REST simulator, for the deployment tests: kept out of `service` so that the
# image users run carries no test code.
FROM runtime AS simulator
COPY testkit testkit
EXPOSE 8080
CMD ["python", "-m", "testkit.gemini_sim", "--host", "0.0.0.0", "--port", "8080", \
     "--scenario", "research"]

FROM runtime AS service
EXPOSE 8000
HEALTHCHECK --interval=5s --timeout=3s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=2)"]
CMD ["python", "-m", "app", "serve", "--host", "0.0.0.0", "--port", "8000"]
