"""Dashboard screens and modals."""
