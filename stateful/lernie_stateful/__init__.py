"""Hypothesis machines that run the model and an implementation side by side."""
