# Stand-in for python:3.12-slim: a CPython 3.12 under /usr/local like the official image (the
# machine's own build, copied in by bases.sh), with its shared libraries from Debian.
FROM plantree-offline/debian:bookworm
RUN apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        libbz2-1.0 libexpat1 libffi8 liblzma5 libncursesw6 libreadline8 libsqlite3-0 libssl3 \
        libuuid1 netbase tzdata zlib1g \
    && apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin
COPY cpython/ /usr/local/
RUN ldconfig \
    && ln -sf python3 /usr/local/bin/python \
    && ln -sf pip3 /usr/local/bin/pip \
    && python3 -c "import ssl, sqlite3, ctypes, venv, ensurepip"
CMD ["python3"]
