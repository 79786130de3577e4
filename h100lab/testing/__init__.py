"""Test helpers shared by the repository's tests (a pytest plugin for jupytext notebooks)."""
