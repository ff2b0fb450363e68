"""Torch modules used by the experiments."""
