"""The PyFlink version whose API this package follows (``pyflink.version.__version__``)."""

from __future__ import annotations

__version__ = "2.3.0"
