"""What an ``ltr`` process sets up around its work: the output layer, stop signals, OpenMP's spinning and numpy's page size."""
