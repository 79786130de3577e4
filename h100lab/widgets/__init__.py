"""Interactive widgets (ipywidgets), one module per topic, all built on :class:`base.Explorer`."""
