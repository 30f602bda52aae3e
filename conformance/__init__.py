"""The conformance suite: checks a backend's gradients, op by op (``arraygrad conformance``)."""
