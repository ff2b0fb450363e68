"""What published work reports on this chapter's questions, and at what scale: the rows of its published-work table
(:func:`analysis.studies.published.published_table`), beside the claims of this book on the same question."""

from __future__ import annotations

from analysis.studies.published import Published

ROWS: tuple[Published, ...] = (
    Published(
        "Wang, Cheng, Liu and Liu 2018, *Additive Margin Softmax for Face Verification*",
        "https://arxiv.org/abs/1801.05599",
        "Cosine logits of normalised 512-d face features and class weights, multiplied by a fixed scale s = 30.",
        "Face verification networks trained on CASIA-WebFace (10,575 identities).",
        ("source_checks",), (("scale-gradient-notes", "cosine-scale-am-softmax"),),
        "The source's α* is for the objective at initialisation, with random directions; a trained face model's "
        "cosines are far from random, and s was chosen for accuracy, not for the gradient at the start.",
    ),
    Published(
        "Gao, Yao and Chen 2021, *SimCSE* (EMNLP)", "https://arxiv.org/abs/2104.08821",
        "Contrastive sentence embeddings with cosine similarity divided by a temperature τ = 0.05, a scale of 20.",
        "BERT-base and RoBERTa encoders (768-d), in-batch negatives of batches of 64 sentences (unsupervised).",
        ("source_checks",), (("scale-gradient-notes", "cosine-scale-simcse"),),
        "Pre-trained encoders start far from random directions, so the source's random-cosine α* need not apply; "
        "the temperature was chosen by validation, not from the gradient at the start.",
    ),
)
