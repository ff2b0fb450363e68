"""What published work reports on this chapter's questions, and at what scale: the rows of its published-work table
(:func:`analysis.studies.published.published_table`), beside the claims of this book on the same question."""

from __future__ import annotations

from analysis.studies.published import Published

ROWS: tuple[Published, ...] = (
    Published(
        "Hua, Dai, Liu and Le 2022, *Transformer Quality in Linear Time* (ICML)", "https://arxiv.org/abs/2202.10447",
        "FLASH, built of GAU layers, matches the perplexity of improved Transformers (the paper's Transformer+ and "
        "Transformer++) over short (512) and long (8K) "
        "contexts.",
        "Language models of about 110 M parameters and more on Wiki-40B, PG-19 and C4, at 512 to 8K tokens.",
        ("gau_trained",), (("gau-quality", "flashquad-beats-transformer"), ("gau-quality", "flash-matches-flashquad")),
        "This book's models are more than two orders of magnitude smaller and train for hundreds of steps; the "
        "ordering can change with scale. The gpu campaign trains 33 M-parameter models at 1,024 tokens for 800 steps: "
        "26 M tokens, under one token a parameter.",
    ),
    Published(
        "Su, Pan, Wen and Liu 2022, *GAU-α* (ZhuiyiAI; the CLUE table of its README, dev-set scores)",
        "https://github.com/ZhuiyiTechnology/GAU-alpha",
        "A base GAU model (24 GAU layers, hidden size 768: about a 12-layer BERT's parameters) scores at or above "
        "BERT, RoBERTa and RoFormer on 8 of 11 CLUE dev-set tasks: CMNLI 81.82 (BERT 79.56, RoBERTa 81.24), C3 68.24 "
        "(60.54, 67.66), CHID 87.91 (85.69, 86.71); below RoBERTa on TNEWS, OCNLI and WSC (79.93 against 87.50) and "
        "below RoFormer on OCNLI and WSC.",
        "Chinese masked-LM pre-training at base size (character vocabulary, whole-word masking, 512 tokens), then "
        "fine-tuning on CLUE.",
        ("gau_trained",), (("gau-quality", "flashquad-beats-transformer"),),
        "GAU-α is not the source's GAU: it uses softmax attention scaled by log n / log 512 (a row below), post-norm "
        "and a depth-scaled init, and is compared on fine-tuned accuracy, not pre-training loss.",
    ),
    Published(
        "Su, Pan, Wen and Liu 2022, *GAU-α* (ZhuiyiAI; its released models.py)",
        "https://github.com/ZhuiyiTechnology/GAU-alpha",
        "GAU-α normalises attention with softmax, its logits scaled by log n / log 512, n at least 16 "
        "('softmax_plus'), not the relu² of the FLASH paper or of the source.",
        "The released base model (24 GAU layers, hidden size 768).",
        ("gau_trained",), (("gau-length", "log-scaling-beats-softmax"), ("gau-length", "relu2-length-text")),
        "A choice made for length transfer at base size; this book measures the length transfer of each "
        "normalisation at the small sizes in the 'this book' column.",
    ),
)
