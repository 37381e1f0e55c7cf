"""Notify on the verdict: terminal bell, tmux, desktop and webhooks, as a Session observer."""

from __future__ import annotations
