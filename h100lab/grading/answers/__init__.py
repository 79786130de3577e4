"""Answer modules, one per lesson: ``lNN.py`` registers that lesson's exercises."""
