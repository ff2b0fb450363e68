"""Computes and measures every number of the book on attention, GAU and FLASH.

Floors, lowest first (a module imports only from floors below its own): ``theory``, ``models`` and ``tasks``;
``training``; ``core`` (the experiment protocol, records, claims and verdicts); ``compute`` (gpu sizing, campaigns,
leases); ``studies`` (one package per chapter); ``site`` (the book's build) and ``cli`` (the command line).
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
