# The service image: dependencies from uv.lock in their own layer, no compilers in the result.
FROM python:3.11-slim AS build
WORKDIR /app
COPY pyproject.toml uv.lock ./
COPY deploy/install.sh deploy/install.sh
RUN deploy/install.sh /opt/venv postgres

FROM python:3.11-slim
RUN useradd --create-home --uid 10001 lats
WORKDIR /app
COPY --from=build /opt/venv /opt/venv
COPY agents agents
COPY app app
COPY tools tools
ENV PATH="/opt/venv/bin:$PATH" \
    PYTHONPATH=/app \
    PYTHONUNBUFFERED=1 \
    LATS_DATA_DIR=/data
RUN mkdir /data && chown lats /data
USER lats
EXPOSE 8000
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=2); sys.exit(0)"]
CMD ["python", "-m", "app", "serve", "--host", "0.0.0.0", "--port", "8000"]
