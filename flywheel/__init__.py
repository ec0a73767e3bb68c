"""flywheel: an open AutoResearch data flywheel for GUI and computer-use agents."""

__version__ = "0.1.0"
