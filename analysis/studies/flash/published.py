"""What published work reports on this chapter's questions, and at what scale: the rows of its published-work table
(:func:`analysis.studies.published.published_table`), beside the claims of this book on the same question."""

from __future__ import annotations

from analysis.studies.published import Published

ROWS: tuple[Published, ...] = (
    Published(
        "Hua, Dai, Liu and Le 2022, *Transformer Quality in Linear Time* (ICML)", "https://arxiv.org/abs/2202.10447",
        "FLASH matches the perplexity of improved Transformers (the paper's Transformer+ and Transformer++) at 512 and "
        "8K tokens of context, and trains up to 4.9x faster "
        "on Wiki-40B and 12.1x on PG-19 (auto-regressive) and 4.8x on C4 (masked LM).",
        "Language models of about 110 M parameters and more (the paper's smallest), on TPUs, at 512 to 8K tokens.",
        ("flash",), (("flash-bench", "quad-overtakes-transformer"), ("flash-bench", "flash-linear-time")),
        "The speed-ups are for accelerators at long context, where attention dominates; this book times a 2-core CPU "
        "at the sizes in the 'this book' column. The gpu campaign times FLASH-Quad, FLASH and Transformer++ on an "
        "H100.",
    ),
)
