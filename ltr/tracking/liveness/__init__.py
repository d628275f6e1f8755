"""Whether a run is alive: heartbeats, what /proc says of a process, and the trials of a reaped run."""
