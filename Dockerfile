# GPU Sizer service image: Debian bookworm with Debian's own Python 3.11, the locked
# dependencies (every one hash-checked) in a virtual environment, the source tree in /app,
# an unprivileged user.
#
#   make image                      # docker where a daemon answers, buildah otherwise (tools/image.py)
#   docker run -p 8000:8000 -e SIZER_DATABASE_URL=postgresql+psycopg://... \
#       -e SIZER_SECRET_KEY=... -e SIZER_PUBLIC_BASE_URL=https://sizer.shop.example gpu-sizer
# Migrate and seed with the same image: docker run ... gpu-sizer sizer db upgrade
# Several instances behind nginx on one PostgreSQL and one Redis: compose.yaml and
# docs/operations.md, "Deployment".
#
# BASE_IMAGE: Debian's bookworm-slim where a registry is reachable. CI reaches none: it builds
# the same system with Debian's own `debootstrap --variant=minbase bookworm` from the Debian
# mirror, tags it localhost/gpu-sizer-base:bookworm and builds this file FROM it (tools/image.py).
#
# Layer order: what changes least comes first. The lock decides the dependency layers; a code
# change rebuilds only the last layer (`COPY . /app`, what .dockerignore lets through).
ARG BASE_IMAGE=docker.io/library/debian:bookworm-slim

# --- python: the base system plus Debian's python3 (both stages start here) ----------------
FROM ${BASE_IMAGE} AS python
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
        python3 python3-venv \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb

# --- build: the locked dependencies in a virtual environment -------------------------------
FROM python AS build
# PIP_CERT: a CA bundle for pip where package downloads go through a proxy with its own
# certificate authority (CI mounts the machine's bundle there); unset, pip trusts Debian's.
ARG PIP_CERT
COPY requirements.lock /src/
# Wheels only, hash-checked; the project itself is not installed (it runs from /app through
# PYTHONPATH), only its `sizer` command ([project.scripts] in pyproject.toml).
RUN python3 -m venv /opt/venv \
    && PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 /opt/venv/bin/pip install \
        --require-hashes --only-binary=:all: -r /src/requirements.lock \
    && /opt/venv/bin/pip check \
    && printf '#!/opt/venv/bin/python3\nimport sys\nfrom app.cli import main\nsys.exit(main())\n' \
        > /opt/venv/bin/sizer \
    && chmod 755 /opt/venv/bin/sizer

# --- runtime: the venv, the source tree, an unprivileged user ----------------------------
FROM python AS runtime

# PYTHONPATH: the source tree in /app is the application, so app.config.ROOT is /app and
# templates/, static/, migrations/ sit next to the code. The default SQLite file lives in
# /app/data (writable by the service user); production sets SIZER_DATABASE_URL to PostgreSQL.
ENV PATH="/opt/venv/bin:$PATH" \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONPATH=/app \
    SIZER_DATABASE_URL=sqlite:////app/data/sizer.db
RUN groupadd --system sizer \
    && useradd --system --gid sizer --home-dir /app --no-create-home sizer \
    && mkdir -p /app/data && chown sizer:sizer /app/data
WORKDIR /app
USER sizer
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python3", "-c", "import sys, urllib.request; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4).status == 200 else 1)"]
CMD ["sizer", "serve", "--host", "0.0.0.0"]

# Root owns everything but /app/data: the service cannot change its own code.
COPY --from=build /opt/venv /opt/venv
# app/, templates/, static/, migrations/, alembic.ini, and the two results documents
# "How we calculate" shows (docs/accuracy.json, tools/calibrate/external/results.json).
COPY --chown=root:root . /app
