"""The protocol every experiment uses: trials and their files, fingerprints, the runner and its executors, campaigns.

* :mod:`analysis.core.fingerprint`: what produced a result (config, code) as short hashes;
* :mod:`analysis.core.trials`: an experiment as a list of independent trials, each stored as its own file, and
  the record assembled from them;
* :mod:`analysis.core.runner`: device, seeding, threads, progress and the executors (in-process, local
  processes or GPUs, Ray);
* :mod:`analysis.compute.campaign`: the missing trials of a scale, run in priority order within a time budget.
"""
