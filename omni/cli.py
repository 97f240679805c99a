"""The `omni` command line.

Each subcommand lives in its own module under `omni.commands` and exposes
`register(subparsers)`; the module must keep heavy imports (torch, grpc) inside
its run function so that `omni --help` stays fast.
"""

import argparse
import importlib
import pkgutil

import omni.commands


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="omni", description="omni: disaggregated streaming TTS serving")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(omni.commands.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"omni.commands.{info.name}")
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    result = args.func(args)
    if isinstance(result, int) and result != 0:
        raise SystemExit(result)


if __name__ == "__main__":
    main()
