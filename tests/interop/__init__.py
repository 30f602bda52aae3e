"""Interop cases: third-party Array API code called on Variables."""
