"""scenes package."""
