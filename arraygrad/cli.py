"""The ``arraygrad`` command: ``arraygrad backends``, ``arraygrad conformance``."""

from __future__ import annotations

import argparse
import importlib.metadata
import sys


def _backends(args) -> int:
    from . import backends

    rows = backends()
    width = max([len(info.name) for info in rows] + [7])
    for info in rows:
        if info.available:
            devices = ", ".join(str(d) for d in info.devices) or "-"
            print(f"{info.name:<{width}}  available      {info.version:<10}  devices: {devices}")
        else:
            print(f"{info.name:<{width}}  not available: {info.reason}")
    return 0


def _version() -> str:
    """arraygrad's version: its installed distribution's, else the package's ``__version__``."""
    try:
        return importlib.metadata.version("arraygrad")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree, not installed
        from . import __version__

        return __version__


def main(argv: list[str] | None = None) -> int:
    """Run the ``arraygrad`` command line; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["conformance"]:
        from .conformance.cli import main as conformance_main

        return conformance_main(argv[1:])
    parser = argparse.ArgumentParser(
        prog="arraygrad", description="PyTorch-style autograd for every Array API library.",
        epilog="'arraygrad COMMAND --help' describes each command.")
    parser.add_argument("--version", action="version", version=f"arraygrad {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    listing = "list every backend: available (with its version and devices) or not, and why"
    commands.add_parser("backends", help=listing, description=listing.capitalize() + "; "
                        "plugins that failed to load are listed with their reason.")
    commands.add_parser("conformance", help="certify backends' gradients, function by function "
                        "(the main job)")
    args = parser.parse_args(argv)
    return {"backends": _backends}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
