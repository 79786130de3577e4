"""Shared text for tests that write jupytext MyST notebooks: the header every notebook of the book starts with."""

MYST_HEADER = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
    format_version: 0.13
kernelspec:
  display_name: Python 3 (ipykernel)
  language: python
  name: python3
---
"""
