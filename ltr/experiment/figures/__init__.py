"""The figures a run logs: drawn in a child process, so the run's own process never loads matplotlib."""
