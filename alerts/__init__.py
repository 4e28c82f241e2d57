"""Endstate's Prometheus rules (alerts/rules/) and the tool that sets their runbook links."""
