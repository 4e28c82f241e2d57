"""Endstate's Grafana dashboards as code (grafana-foundation-sdk).

`python -m dashboards.build` writes the JSON under dashboards/json/, which
Grafana loads through dashboards/provisioning/.
"""
