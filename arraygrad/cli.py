"""The ``arraygrad`` command: ``arraygrad backends``, ``arraygrad conformance``."""

from __future__ import annotations

import argparse
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


def main(argv: list[str] | None = None) -> int:
    """Run the ``arraygrad`` command line; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["conformance"]:
        from .conformance.cli import main as conformance_main

        return conformance_main(argv[1:])
    parser = argparse.ArgumentParser(prog="arraygrad", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("backends", help="list backends, their availability, version and devices")
    commands.add_parser("conformance", help="check every backend's gradients (see --help)")
    args = parser.parse_args(argv)
    return {"backends": _backends}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
