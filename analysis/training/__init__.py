"""Training: the trainer and ensembles of seeds trained side by side."""
