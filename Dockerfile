# syntax=docker/dockerfile:1
# One image for every process of the Procfile: `docker run IMAGE worker` runs the Procfile's
# worker line through bin/container (deploy/README.md). Never built on the machine this was
# written on (no container engine there); deploy/README.md says what was checked instead.
#
# The base is pinned to a full version tag. A digest pin (python:3.11.14-slim-bookworm@sha256:…)
# is better still: a tag is re-pushed with new content (every Debian security rebuild), a digest
# never is, so two builds of one commit get the same bytes. It is not pinned here because no
# container registry could be reached to read the digest; pin it where the image is built
# (`docker buildx imagetools inspect python:3.11.14-slim-bookworm`).
ARG PYTHON_IMAGE=python:3.11.14-slim-bookworm

# --- builder: the virtualenv, from the runtime lock only ----------------------------------------
FROM ${PYTHON_IMAGE} AS builder
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /app
COPY requirements.txt ./
# What production installs (docs/dependencies.md): every package pinned and hash-checked, no
# test or benchmark tool. Wheels only: every entry of the lock ships a CPython 3.11 manylinux
# wheel, so no compiler is needed here either, and a future sdist-only entry fails the build
# instead of compiling something unreviewed.
RUN python -m venv /app/.venv \
 && /app/.venv/bin/pip install --require-hashes --only-binary=:all: --no-deps -r requirements.txt

# --- runtime --------------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE} AS runtime
# OCR (Tesseract with the German and French models) and pdftoppm for scanned PDFs, as bin/setup
# installs them; tini as PID 1 forwards signals and reaps children (OCR spawns processes).
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      tesseract-ocr tesseract-ocr-deu tesseract-ocr-fra poppler-utils tini \
 && rm -rf /var/lib/apt/lists/*

# A numeric uid, so a pod's runAsNonRoot can verify it without reading /etc/passwd.
RUN groupadd --system --gid 10001 app \
 && useradd --system --uid 10001 --gid 10001 --home-dir /app --no-create-home --shell /usr/sbin/nologin app

WORKDIR /app
COPY --from=builder /app/.venv /app/.venv
# The application only: .dockerignore admits the packages, templates, manage.py, the Procfiles and
# bin/container (no tests, benchmarks, sample invoices or development scripts).
COPY . /app

ENV PATH=/app/.venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PROMETHEUS_MULTIPROC_DIR=/tmp/prometheus \
    BIND_ADDRESS=0.0.0.0

# Static files (admin, API docs) are collected once here and served by whitenoise. The settings
# refuse to load without a secret key outside development: this one exists for this command
# only, is not kept in the image's environment, and signs nothing.
RUN DJANGO_SECRET_KEY=collectstatic-at-build-time-only \
    /app/.venv/bin/python manage.py collectstatic --noinput \
 && /app/.venv/bin/python -m compileall -q accounts config delivery extraction \
 && mkdir -p /app/var/media \
 && chown 10001:10001 /app/var/media

USER 10001:10001
# web (gunicorn), ws (daphne), and the probe port of every other process (PROBE_PORT)
EXPOSE 8000 8001 9100
ENTRYPOINT ["/usr/bin/tini", "--", "/app/bin/container"]
CMD ["web"]
