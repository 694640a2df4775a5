"""`python3 -m modeltools convert phonon2|parakeet ...`: the converters' command line. It sits apart
from modeltools/convert.py so that the Parakeet readers (parakeet_hf.py, parakeet_nemo.py),
which build on convert.py's helpers, and convert.py never import each other."""

from __future__ import annotations

from pathlib import Path

from .convert import (PHONON2_NOTICE, RELEASE_MODEL_ID, ConversionError, check_artifact, check_release_pins,
                      convert, extract_archive, model_id, read_config, read_pins, verify)

__all__ = ["main", "ConversionError"]


def main(args) -> int:
    import tempfile
    out = Path(args.out)
    if out.exists() and out.is_dir():
        raise ConversionError(f"--out {out} is a directory")
    if args.source == "parakeet":
        nemo = getattr(args, "nemo", None)
        if nemo:
            from .parakeet_nemo import convert_nemo as convert_parakeet, verify_nemo as verify_parakeet
        else:
            from .parakeet_hf import convert_hf as convert_parakeet, verify_hf as verify_parakeet
        source = Path(nemo or args.hf)
        summary = convert_parakeet(source, out, args.weights,
                                   Path(args.notice).read_text(encoding="utf-8") if args.notice else "")
        print(f"wrote {out}: {summary['bytes']:,} bytes, {summary['tensors']} tensors ({args.weights} encoder linears)")
        if args.verify:
            print(verify_parakeet(source, out))
        return 0
    with tempfile.TemporaryDirectory(prefix="phonon-convert-") as tmp:
        if args.archive:
            archive = Path(args.archive)
            container, config_path = extract_archive(archive, Path(tmp))
        else:
            archive, container, config_path = None, Path(args.container), Path(args.config)
        config = read_config(config_path)
        check_release_pins(archive, container, config, read_pins())
        check_artifact(config, container)
        notice = Path(args.notice).read_text(encoding="utf-8") if args.notice else PHONON2_NOTICE
        name = model_id(config) or RELEASE_MODEL_ID
        summary = convert(container, config, out, notice, name)
        print(f"wrote {out}: {summary['bytes']:,} bytes, {summary['records']} records, "
              f"{summary['seconds']:.1f} s")
        if args.verify:
            print(verify(container, out))
    return 0
