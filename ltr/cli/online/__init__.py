"""The before-traffic verbs: ``ltr ope``, ``ltr abtest``, ``ltr exposure`` and ``ltr calibrate``."""
