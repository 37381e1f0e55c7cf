"""The Textual dashboard: renders engine state and sends user intents back."""
