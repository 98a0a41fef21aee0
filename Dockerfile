# knowhub server image: `knowhub serve` on 0.0.0.0:8765, API keys required, data in /data.
#
#   docker build -t knowhub .
#   docker run -p 127.0.0.1:8765:8765 -v knowhub-data:/data \
#     -e KNOWHUB_AUTH__KEYS='[{"key": "...", "principal": "user:ops", "admin_of": ["public"]}]' knowhub
#
# Without a key the server refuses to start (it would listen on 0.0.0.0 with every request
# acting as one default user). compose.yaml runs it with PostgreSQL + pgvector; the
# settings, probes and metrics are in docs/deployment.md.
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /opt/knowhub
COPY pyproject.toml README.md ./
COPY src ./src
# the PostgreSQL driver (psycopg 3) comes with the postgres extra
RUN pip install ".[postgres]" \
    && useradd --system --uid 10001 --user-group --home-dir /data --no-create-home --shell /usr/sbin/nologin knowhub \
    && mkdir -p /data \
    && chown knowhub:knowhub /data

# Everything below runs unprivileged; /data is the only place the server writes.
USER knowhub
ENV KNOWHUB_DATA_DIR=/data \
    KNOWHUB_SERVER__PORT=8765 \
    KNOWHUB_SERVER__LOAD_SAMPLE=false
VOLUME ["/data"]
EXPOSE 8765

# /ready: every engine open, the index worker running, every configured database answering.
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8765/ready', timeout=4).status == 200 else 1)"]

ENTRYPOINT ["knowhub"]
CMD ["serve", "--host", "0.0.0.0"]
