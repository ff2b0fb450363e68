"""What published work reports on this chapter's questions, and at what scale: the rows of its published-work table
(:func:`analysis.studies.published.published_table`), beside the claims of this book on the same question."""

from __future__ import annotations

from analysis.studies.published import Published

ROWS: tuple[Published, ...] = (
    Published(
        "Cover and Thomas 2006, *Elements of Information Theory* (2nd edition, section 2.10)",
        "https://doi.org/10.1002/047174882X",
        "Fano's inequality in its stronger form: the entropy of $X$ given $Y$ is at most $H(P_e) + P_e\\log(K - 1)$ "
        "for an estimate of $X$ with error probability $P_e$, $K$ the number of values of $X$, with equality (for $X$ "
        "alone, the notes' case) when the error mass is spread evenly over the other $K - 1$ values.",
        "A theorem: every distribution over a finite alphabet.",
        ("entropy",),
        (("entropy-bound", "closed-form-vs-direct"), ("entropy-bound", "bound-sampled"), ("entropy-lm", "lm-bound")),
        "None expected: the notes' curve is Fano's bound with $P_e = 1 - p$, so sampling and trained models can only "
        "confirm it.",
    ),
    Published(
        "Braverman, Chen, Kakade, Narasimhan, Zhang and Zhang 2020, *Calibration, Entropy Rates, and Memory in "
        "Language Models* (ICML)", "https://arxiv.org/abs/1906.05664",
        "Language models are miscalibrated in generation: the entropy rate of their own samples drifts upward, "
        "exp(entropy rate) against test perplexity: AWD-LSTM on PTB 93.1 against 58.3, a Transformer on the "
        "Billion Word benchmark 34.7 against 28.1, GPT-2 on WebText 61.2 against 23.7.",
        "LSTM and Transformer language models: word-level on PTB and the Billion Word benchmark, subword-level (GPT-2) "
        "on WebText.",
        ("entropy",),
        (("entropy-lm", "lm-calibration"), ("entropy-lm", "lm-calibration-gau"),
         ("entropy-lm", "lm-calibration-flash")),
        "The paper measures entropy on the model's own generations over long horizons; this book compares "
        "entropy and loss on held-out text, one step ahead, where a model fitted by cross-entropy is pushed "
        "towards calibration.",
    ),
)
