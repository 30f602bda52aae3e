"""Rules of the ``fft`` extension."""
