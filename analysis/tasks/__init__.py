"""Data the experiments train on: corpora, recall tasks and length tasks."""
