"""Pure functions: closed forms, exact predictions and symbolic derivations."""
