"""Experiments: what copying buys, per tokenizer family (not cost; that is benchmarks/). Run them as modules from the
repository root:

    python -m experiments.copy_by_family --steps 30 --out /tmp/smoke      # see experiments/README.md
"""
