"""Studies: configurations expanded into runs, run and recorded, and reported.

- :mod:`pimrl.experiments.config`: study files (TOML) and their expansion into runs;
- :mod:`pimrl.experiments.runner`: ``pimrl scale``, one CSV row a run, resumable, here or on
  a Dask cluster; its parts: :mod:`~pimrl.experiments.columns` (results.csv's columns),
  :mod:`~pimrl.experiments.results` (results.csv read, validated and written, the lock, the
  machine for meta.json), :mod:`~pimrl.experiments.tasks` (a row's PIM run and baselines)
  and :mod:`~pimrl.experiments.executors` (local and Dask);
- :mod:`pimrl.experiments.quality`: time to quality (the greedy policy evaluated after every
  round);
- :mod:`pimrl.experiments.plots`: ``pimrl plot``, figures and a summary table (the tables:
  :mod:`~pimrl.experiments.tables`);
- :mod:`pimrl.experiments.datasize`: the data-size study's report.
"""
