"""What users did, as data: click logs and their checks, logged positions, synthetic clicks, and label recipes from behaviour columns."""
