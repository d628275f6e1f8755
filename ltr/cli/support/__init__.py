"""What every verb shares: the one-line argument parser, output guard, JSON output, console log, GC policy and quick exit."""
