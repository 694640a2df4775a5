"""Command line of the host tools: python3 -m modeltools <command>.

They sit above the runtime (numpy, gguf, network): the engine's own command line
(python3 -m engine transcribe|stream|tiers) reads what they write and never imports them.

    convert phonon2 (--archive F | --container F --config F) --out F [--verify] [--notice F]
                                                  Phonon-2 release -> GGUF
    convert parakeet (--hf DIR | --nemo FILE.nemo) [--weights int8|fv5] --out F [--verify]
                                                  a transformers ParakeetForTDT folder or NVIDIA's
                                                  .nemo checkpoint (Parakeet-TDT) -> GGUF
    fetch phonon-2 [--from URL] [--cache DIR] [--timeout S] [--retries N] [--force]
                                                  download the pinned release (resumable), check
                                                  it, convert with --verify into the cache
    synth --size tiny|full [--seed N] [--archive] --out DIR
                                                  a synthetic model.fermion + config.json
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m modeltools")
    sub = parser.add_subparsers(dest="command", required=True)
    add_convert(sub.add_parser("convert", help="convert a model release to the project's GGUF"))
    synth = sub.add_parser("synth", help="write a synthetic Phonon-2-family model.fermion + config.json")
    synth.add_argument("--size", choices=["tiny", "full"], required=True)
    synth.add_argument("--seed", type=int, default=0)
    synth.add_argument("--archive", action="store_true", help="also write the .bps.tar.zst archive")
    synth.add_argument("--out", required=True)
    from . import fetch
    fetch.add_arguments(sub.add_parser("fetch", help="download a model release into the cache and convert it"))
    args = parser.parse_args(argv)
    if args.command == "fetch":
        return fetch.main(args)
    if args.command == "convert":
        return convert_command(parser, args)
    from .synth import make
    container = make(args.size, args.seed, Path(args.out), archive=args.archive)
    print(f"wrote {container} ({container.stat().st_size:,} bytes) and {Path(args.out) / 'config.json'}")
    return 0


def add_convert(convert) -> None:
    convert.add_argument("source", choices=["phonon2", "parakeet"],
                         help="phonon2: the Phonon-2 release; parakeet: a transformers ParakeetForTDT folder")
    src = convert.add_mutually_exclusive_group()
    src.add_argument("--archive", help="the release archive phonon-2.bps.tar.zst")
    src.add_argument("--container", help="an extracted model.fermion (with --config)")
    src.add_argument("--hf", help="(parakeet) a save_pretrained folder: config.json, model.safetensors, tokenizer.json")
    src.add_argument("--nemo", help="(parakeet) NVIDIA's own .nemo checkpoint (read without NeMo)")
    convert.add_argument("--weights", choices=["int8", "fv5"], default="int8",
                         help="(parakeet) the encoder's linears: int8 rows with a float scale (default), or a "
                              "post-training five-value projection (fv5, for comparison)")
    convert.add_argument("--config", help="the release's config.json (with --container)")
    convert.add_argument("--out", required=True, help="the GGUF to write")
    convert.add_argument("--verify", action="store_true", help="re-read and compare bit for bit")
    convert.add_argument("--notice", help="a NOTICE file to embed instead of the built-in attribution")


def convert_command(parser, args) -> int:
    if args.source == "phonon2" and not (args.archive or args.container):
        parser.error("convert phonon2 needs --archive or --container")
    if args.source == "parakeet" and not (args.hf or args.nemo):
        parser.error("convert parakeet needs --hf DIR or --nemo FILE.nemo")
    if args.container and not args.config:
        parser.error("--container needs --config")
    from .convert_cli import ConversionError, main as convert_main
    from .fermion import ContainerError
    try:
        return convert_main(args)
    except (ConversionError, ContainerError, OSError) as e:
        print(f"convert: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
