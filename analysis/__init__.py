"""Computes and measures every number of the book on attention, GAU and FLASH.

Subpackages: ``theory`` (closed forms, numpy/scipy/sympy), ``models`` (torch
modules), ``experiments`` (one module per measured experiment). Modules:
``verify`` (claims and verdicts), ``results`` (recorded runs with provenance),
``data`` (corpora), ``scale`` (smoke / cpu / gpu).
"""

__version__ = "0.1.0"

import os as _os
import sys as _sys

if "triton" not in _sys.modules:
    # Without a GPU, Triton runs kernels only in its interpreter (the tests run the fused kernel that way), and it
    # reads TRITON_INTERPRET once, when first imported (torch.utils.flop_counter imports it): decided here, before
    # any module of the package can import it.
    import torch as _torch

    if not _torch.cuda.is_available():
        _os.environ.setdefault("TRITON_INTERPRET", "1")
