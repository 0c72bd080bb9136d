"""What every backend learns, stated once: the learner's parameters, the kernel variants,
the compiled learning loops and the host-side aggregation.

- :mod:`pimrl.learners.params`: what a learner is asked to do (:class:`LearnerParams`);
- :mod:`pimrl.learners.variants`: the variant registry, its integer codes and the kernels'
  parameter words (shared with the C kernels' generated headers);
- :mod:`pimrl.learners.kernels`: the compiled loops, one per variant, built on
  :mod:`~pimrl.learners.arith` (intrinsics, Q-format arithmetic, row max),
  :mod:`~pimrl.learners.updates` (the update rules) and :mod:`~pimrl.learners.records`
  (record fields, epoch order), which it re-exports;
- :mod:`pimrl.learners.fixedpoint`: INT32 fixed point and its saturating arithmetic;
- :mod:`pimrl.learners.reference`: the reference offline learner every backend is checked
  against; :mod:`pimrl.learners.oracle`: docs/design.md in plain Python, for the tests;
- :mod:`pimrl.learners.aggregate`: the DPUs' Q-tables merged on the host, chosen by name.
"""
