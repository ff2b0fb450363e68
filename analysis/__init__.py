"""Computes and measures every number of the book on attention, GAU and FLASH.

Subpackages: ``theory`` (closed forms, numpy/scipy/sympy), ``models`` (torch
modules), ``experiments`` (one module per measured experiment). Modules:
``verify`` (claims and verdicts), ``results`` (recorded runs with provenance),
``data`` (corpora), ``scale`` (smoke / cpu / gpu).
"""

__version__ = "0.1.0"
