"""The systems from the seeds as example agents, runnable offline with scripted models."""
