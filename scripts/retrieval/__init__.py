"""Retrieval quality for ``bench.py --retrieval``: labelled questions about the real logs,
a generated corpus with questions of its own, and the scoring both share."""
