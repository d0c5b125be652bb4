# The project's one container image: the `anchor serve` replicas (anchor serve --render k8s) and the
# researchers' pods (anchor research render k8s) run it. Build it with `make image BASE_IMAGE=...`.
#
# The base is pinned by digest, never a tag (a tag can move and bring code nobody reviewed): there is
# deliberately no default, and `make image` refuses anything but name@sha256:<64 hex>. Use a Debian
# bookworm Python 3.11 image, e.g. python:3.11-slim-bookworm@sha256:<digest from your registry>.
ARG BASE_IMAGE
FROM ${BASE_IMAGE}

# git: researchers clone and push; bubblewrap: attempts run sandboxed. Nothing else from apt.
RUN apt-get update \
    && apt-get install -y --no-install-recommends git bubblewrap ca-certificates \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /src
# the locked dependencies first (a layer that changes only with the lock), then the package itself
COPY requirements.lock /src/requirements.lock
RUN pip install --no-cache-dir -r /src/requirements.lock
COPY pyproject.toml README.md LICENSE /src/
COPY anchor /src/anchor
COPY api /src/api
RUN pip install --no-cache-dir --no-deps /src && rm -rf /src

# non-root, the uid the rendered manifests run as (runAsUser 10001, runAsNonRoot)
RUN useradd --uid 10001 --create-home --home-dir /home/anchor anchor
USER 10001:10001
WORKDIR /home/anchor
ENV ANCHOR_DATA_DIR=/data PYTHONUNBUFFERED=1
EXPOSE 8000
ENTRYPOINT []
CMD ["anchor", "serve", "--host", "0.0.0.0", "--port", "8000"]
