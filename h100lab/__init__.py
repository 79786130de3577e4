"""H100 Lab machine model."""
from ._version import __version__

