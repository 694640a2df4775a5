"""Command line: python3 -m engine <command>.

    parity [--tier T] [--only SUBSTR] [--json]   kernel sweep digests (compare runtimes)
    tiers                                         kernel tiers this machine can run
    convert phonon2 (--archive F | --container F --config F) --out F [--verify] [--notice F]
                                                  Phonon-2 release -> GGUF (host: numpy, gguf)
    synth --size tiny|full [--seed N] [--archive] --out DIR
                                                  a synthetic model.fermion + config.json
"""

from __future__ import annotations

import argparse
import json
import sys


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m engine")
    sub = parser.add_subparsers(dest="command", required=True)
    parity = sub.add_parser("parity", help="run the deterministic kernel sweep and print digests")
    parity.add_argument("--tier", default="auto")
    parity.add_argument("--only", help="run only cases whose name contains this")
    parity.add_argument("--json", action="store_true", help="print the digest table as JSON")
    sub.add_parser("tiers", help="list the kernel tiers this machine can run")
    convert = sub.add_parser("convert", help="convert a model release to the project's GGUF")
    convert.add_argument("source", choices=["phonon2"])
    src = convert.add_mutually_exclusive_group(required=True)
    src.add_argument("--archive", help="the release archive phonon-2.bps.tar.zst")
    src.add_argument("--container", help="an extracted model.fermion (with --config)")
    convert.add_argument("--config", help="the release's config.json (with --container)")
    convert.add_argument("--out", required=True, help="the GGUF to write")
    convert.add_argument("--verify", action="store_true", help="re-read and compare bit for bit")
    convert.add_argument("--notice", help="a NOTICE file to embed instead of the built-in attribution")
    synth = sub.add_parser("synth", help="write a synthetic Phonon-2-family model.fermion + config.json")
    synth.add_argument("--size", choices=["tiny", "full"], required=True)
    synth.add_argument("--seed", type=int, default=0)
    synth.add_argument("--archive", action="store_true", help="also write the .bps.tar.zst archive")
    synth.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    if args.command == "convert":
        if args.container and not args.config:
            parser.error("--container needs --config")
        from .convert import ConversionError, main as convert_main
        from .fermion import ContainerError
        try:
            return convert_main(args)
        except (ConversionError, ContainerError, OSError) as e:
            print(f"convert: error: {e}", file=sys.stderr)
            return 1
    if args.command == "synth":
        from pathlib import Path
        from .synth import make
        container = make(args.size, args.seed, Path(args.out), archive=args.archive)
        print(f"wrote {container} ({container.stat().st_size:,} bytes) and {Path(args.out) / 'config.json'}")
        return 0

    from . import kernels
    if args.command == "tiers":
        print(" ".join(kernels.available_tiers()))
        return 0
    from . import parity as sweep
    table = sweep.digests(args.tier, args.only)
    if args.json:
        json.dump(table, sys.stdout, indent=1)
        print()
    else:
        combined = sweep_digest(table)
        print(f"tier {table['tier']}: {len(table['cases'])} cases, combined sha256 {combined}")
    return 0


def sweep_digest(table: dict) -> str:
    import hashlib
    text = "\n".join(f"{k} {v}" for k, v in sorted(table["cases"].items()))
    return hashlib.sha256(text.encode()).hexdigest()


if __name__ == "__main__":
    sys.exit(main())
