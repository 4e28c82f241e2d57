# The Endstate agent service: `endstate serve --demo-workload`, /metrics on :8000.
FROM python:3.11.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /src
COPY pyproject.toml README.md LICENSE ./
COPY agent ./agent
COPY telemetry ./telemetry
# EXTRAS="[temporal]" builds the Temporal worker image (docker-compose.yml, profile "temporal").
ARG EXTRAS=""
RUN pip install .${EXTRAS} \
    && useradd --system --uid 10001 --home-dir /home/endstate --create-home endstate

USER endstate
WORKDIR /home/endstate
# The run store and the token live here (a volume in docker-compose.yml).
RUN mkdir -p /home/endstate/.endstate
ENV ENDSTATE_HOST=0.0.0.0 \
    ENDSTATE_PORT=8000
EXPOSE 8000
CMD ["endstate", "serve", "--demo-workload"]
