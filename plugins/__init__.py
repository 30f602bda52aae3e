"""The backend plugins shipped with arraygrad, one thin adapter per array library."""
