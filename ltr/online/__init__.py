"""Before traffic, from what is already logged: off-policy estimates of a ranking's online metrics
from a click log (:mod:`ltr.online.ope`), and the line of past A/B tests' online deltas on their
offline deltas (:mod:`ltr.online.ols`, :mod:`ltr.online.calibrate`)."""
