"""Launching, stopping and relaunching the server: profiles, the supervisor, its state and history."""
