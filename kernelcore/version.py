"""kernelcore's version (its own module so that cache.py can key on it without importing the package)."""
__version__ = "0.1.0"
