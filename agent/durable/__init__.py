"""Durable runs: the run store, the runner that drives runs through it, the catalog of agents it
can resume, and the review queue of finished runs."""
