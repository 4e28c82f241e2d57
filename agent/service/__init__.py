"""`endstate serve`: agents as a long-lived HTTP service, with the help inbox and /metrics."""
