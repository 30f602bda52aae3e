"""The base of the plugins' wrappers of array-api-compat's namespaces (NumPy's fast paths,
dask's fix-ups): a wrapper's own methods replace the namespace's, every other name is the
namespace's."""


class OverCompat:
    """``compat`` (an array-api-compat namespace, or one of its submodules) with the subclass's
    methods in place of its own. Every other name is ``compat``'s, looked up once: rules look
    functions up on every backward."""

    _role = "wrapper"  # what the subclass adds, for its repr

    def __init__(self, compat):
        self._compat = compat
        if hasattr(compat, "__name__"):  # so that arraygrad.namespace(compat) finds the backend
            self.__name__ = compat.__name__

    def __getattr__(self, name):
        if name == "_compat":  # (not set yet: a copy being made; no endless lookup)
            raise AttributeError(name)
        value = self._adapt(name, getattr(self._compat, name))
        setattr(self, name, value)
        return value

    def _adapt(self, name, value):
        """What stands for ``compat``'s ``name`` (``value``): a subclass may wrap it."""
        return value

    def __repr__(self):
        return f"<arraygrad's {self._role} over {self._compat!r}>"
