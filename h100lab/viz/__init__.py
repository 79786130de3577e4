"""Plots of the model's answers. ``style`` holds the one style; one module per topic draws."""
from .style import PALETTE, apply, figure, label, styled

__all__ = ["PALETTE", "apply", "figure", "label", "styled"]
