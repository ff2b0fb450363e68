"""Compute: what the gpu campaign runs on lent machines, in which order, and what each lent command decides."""
