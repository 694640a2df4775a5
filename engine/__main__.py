"""Command line: python3 -m engine <command>.

    parity [--tier T] [--only SUBSTR] [--json]   kernel sweep digests (compare runtimes)
    tiers                                         kernel tiers this machine can run
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
    args = parser.parse_args(argv)

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
