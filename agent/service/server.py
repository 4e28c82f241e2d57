"""`endstate serve`: wire a store, a catalog, telemetry and the token into uvicorn."""

from __future__ import annotations

import argparse
import logging
import os
import signal
from pathlib import Path

from agent.cli_review import duration
from agent.runner import Runner, load_catalog
from agent.service.auth import load_token
from agent.store import default_url, open_store

ENV_HOST = "ENDSTATE_HOST"
ENV_PORT = "ENDSTATE_PORT"


def add_serve_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", default=os.environ.get(ENV_HOST, "127.0.0.1"), help="address to listen on")
    p.add_argument(
        "--port", type=int, default=int(os.environ.get(ENV_PORT, "8000")), help="port to listen on"
    )
    p.add_argument("--token-file", default=None, help="file holding the token (or set $ENDSTATE_TOKEN)")
    p.add_argument("--demo-workload", action="store_true", help="keep playing the example scenarios")
    p.add_argument("--demo-interval", type=float, default=15.0, help="seconds between workload rounds")
    p.add_argument("--demo-answer-after", type=float, default=20.0, help="seconds before the demo answers")
    p.add_argument("--sweep-interval", type=float, default=5.0, help="seconds between deadline sweeps")
    p.add_argument("--grace", type=float, default=10.0, help="seconds runs get to checkpoint at shutdown")
    p.add_argument(
        "--retention", metavar="DURATION", help="prune finished runs older than this, e.g. 30d (hourly)"
    )


def serve(args: argparse.Namespace) -> int:
    """Run the service until SIGTERM or Ctrl-C; in-flight runs are checkpointed as cancelled."""
    import uvicorn
    from prometheus_client import CollectorRegistry

    from agent.service.app import Service, create_app
    from agent.service.workload import DemoWorkload
    from telemetry import Telemetry

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    store = open_store(args.store)
    catalog = load_catalog(args.catalog)
    telemetry = Telemetry.from_env(registry=CollectorRegistry(), pending=store.pending_summary)
    try:
        runner = Runner(store, catalog, hooks=telemetry.hooks, lease_seconds=args.lease)
        token, source = load_token(args.token_file, _state_dir(args.store))
        print(f"endstate serve: store {store.shown}; token from {source}", flush=True)
        workload = None
        if args.demo_workload:
            workload = DemoWorkload(runner, args.demo_interval, args.demo_answer_after)
        service = Service(
            runner,
            token,
            registry=telemetry.registry,
            sweep_interval=args.sweep_interval,
            grace=args.grace,
            workload=workload,
            retention=duration("--retention", args.retention) if args.retention else None,
            label_counter=telemetry.metrics,
        )
        config = uvicorn.Config(
            create_app(service), host=args.host, port=args.port, lifespan="on", log_level="info",
            timeout_graceful_shutdown=max(1, int(args.grace)),
        )  # fmt: skip
        # uvicorn re-raises the SIGTERM it handled once it has shut down; this handler lets the
        # process go on to close the store and flush telemetry, then exit 0.
        previous = signal.signal(signal.SIGTERM, lambda *_: None)
        try:
            uvicorn.Server(config).run()
        finally:
            signal.signal(signal.SIGTERM, previous)
    finally:
        catalog.close()
        telemetry.shutdown()
        store.close()
    return 0


def _state_dir(store_url: str | None) -> Path:
    """Where a made token is kept: beside a SQLite store, else ./.endstate."""
    url = store_url or default_url()
    if "://" in url and not url.startswith("sqlite:"):
        return Path(".endstate")
    return Path(url.removeprefix("sqlite:").lstrip("/") if url.startswith("sqlite:") else url).parent
