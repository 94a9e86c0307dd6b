# GPU Sizer service image: Debian bookworm with Debian's own Python 3.11, the locked
# dependencies (every one hash-checked) and the project's wheel in a virtual environment, an
# unprivileged user. The image runs the installed package, not a source tree: templates, static
# files, catalogs, migrations and data are package data (tests/test_wheel.py).
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
# change rebuilds only the wheel and the last layer, which installs it.
ARG BASE_IMAGE=docker.io/library/debian:bookworm-slim

# --- python: the base system plus Debian's python3 (every stage starts here) ---------------
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
# Wheels only, hash-checked, then `pip check`: the lock is all the service needs.
RUN python3 -m venv /opt/venv \
    && PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 /opt/venv/bin/pip install \
        --require-hashes --only-binary=:all: -r /src/requirements.lock \
    && /opt/venv/bin/pip check

# --- wheel: the project built from pyproject.toml (the package and its package data) -------
FROM python AS wheel
ARG PIP_CERT
COPY pyproject.toml README.md /src/
COPY app /src/app
# pip builds in an isolated environment with the build backend pyproject.toml names.
RUN python3 -m venv /opt/builder \
    && PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 /opt/builder/bin/pip wheel \
        --no-deps --wheel-dir /wheels /src

# --- runtime: the venv with the wheel installed, an unprivileged user ---------------------
FROM python AS runtime

# /app is only the service user's home and working directory: the default SQLite file lives in
# /app/data (writable by the service user); production sets SIZER_DATABASE_URL to PostgreSQL.
ENV PATH="/opt/venv/bin:$PATH" \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    SIZER_DATABASE_URL=sqlite:////app/data/sizer.db
RUN groupadd --system sizer \
    && useradd --system --gid sizer --home-dir /app --no-create-home sizer \
    && mkdir -p /app/data && chown sizer:sizer /app/data
WORKDIR /app
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python3", "-c", "import sys, urllib.request; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4).status == 200 else 1)"]
CMD ["sizer", "serve", "--host", "0.0.0.0"]

# Root owns everything but /app/data: the service cannot change its own code. The wheel goes
# in without resolving anything (--no-deps, --no-index): the lock's layer above has it all,
# and `pip check` fails the build if pyproject.toml asks for what the lock lacks.
COPY --from=build /opt/venv /opt/venv
COPY --from=wheel /wheels /tmp/wheels
RUN PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 /opt/venv/bin/pip install \
        --no-deps --no-index /tmp/wheels/*.whl \
    && /opt/venv/bin/pip check \
    && rm -rf /tmp/wheels
USER sizer
