"""Benchmarks of hf_pgen against its base encoder-decoder. Run them as modules from the repository root:

python -m benchmarks.run --quick      # see benchmarks/README.md
"""
