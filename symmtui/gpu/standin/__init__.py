"""A pynvml stand-in driven by scenarios, for tests and the demo."""
