# GPU Sizer service image.
#   docker build -t gpu-sizer .
#   docker run -p 8000:8000 -e SIZER_DATABASE_URL=postgresql+psycopg://... \
#       -e SIZER_SECRET_KEY=... -e SIZER_PUBLIC_BASE_URL=https://sizer.shop.example gpu-sizer
# Migrate and seed with the same image: docker run ... gpu-sizer sizer db upgrade

# --- build: install the locked dependencies into a virtual environment -------
FROM python:3.11-slim AS build

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1

RUN python -m venv /opt/venv
ENV PATH="/opt/venv/bin:$PATH"

WORKDIR /src
# The locked, hash-checked versions CI tested first (a layer cached while only code changes),
# then the project itself without resolving anything again.
COPY requirements.lock ./
RUN pip install --require-hashes -r requirements.lock
COPY pyproject.toml README.md ./
COPY app/ app/
RUN pip install --no-deps . && pip check

# --- runtime: the venv, the source tree, an unprivileged user -----------------
FROM python:3.11-slim AS runtime

# PYTHONPATH: the source tree in /app wins over the copy in site-packages, so
# app.config.ROOT is /app and templates/, static/, migrations/ sit next to the code.
# The default SQLite file lives in /app/data (writable by the service user);
# production sets SIZER_DATABASE_URL to PostgreSQL.
ENV PATH="/opt/venv/bin:$PATH" \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONPATH=/app \
    SIZER_DATABASE_URL=sqlite:////app/data/sizer.db

RUN groupadd --system sizer && useradd --system --gid sizer --home-dir /app --no-create-home sizer

COPY --from=build /opt/venv /opt/venv
WORKDIR /app
COPY --chown=root:root app/ app/
COPY --chown=root:root templates/ templates/
COPY --chown=root:root static/ static/
COPY --chown=root:root migrations/ migrations/
COPY --chown=root:root alembic.ini ./
RUN mkdir -p /app/data && chown sizer:sizer /app/data

USER sizer
EXPOSE 8000

HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4).status == 200 else 1)"]

CMD ["sizer", "serve", "--host", "0.0.0.0"]
