"""What leaves ``ltr`` with a run's model: read it back (:mod:`ltr.models.logged`), score data
with it ranked as the run ranked (:mod:`ltr.models.inputs`, :mod:`ltr.models.predict`,
:mod:`ltr.models.outputs`), register it (:mod:`ltr.models.promote`). The artifact itself is built
where runs are recorded (:mod:`ltr.training.artifact`)."""
