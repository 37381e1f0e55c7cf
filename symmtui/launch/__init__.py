"""Launching, stopping and relaunching the server: profiles, process trees, history."""
