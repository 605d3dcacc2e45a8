"""The paper's transformer studies, offline and reproducible: sentiment encoder and small ViT (docs/theory.md section 6.5)."""
