"""grokslt: grokking in quadratic networks on modular addition, seen through singular learning theory."""

__version__ = "0.1.0"
