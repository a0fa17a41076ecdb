"""Sharing memory through git: segments, the git driver, publish and receive."""
