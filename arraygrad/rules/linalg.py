"""Rules of the ``linalg`` extension (``vector_norm`` lives with the linear algebra functions)."""
