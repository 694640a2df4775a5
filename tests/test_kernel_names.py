"""One naming rule for kernel tiers (kernels/common.h): what a SIMD tier's own
files (`kernels/<op>__<tier>.c`, `<part>__<tier>.h`) define at the top level is an entry point
`<op>__<tier>` or a helper, type or constant `pk_<name>_<tier>` of that tier; the code written
once for several tiers lives in `*_impl.h`. (The scalar files are the specification and the
ops with one implementation, exported as `pk_<op>`: ops.h, frontend.h, pcm.h, resample.h.)"""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KERNELS = ROOT / "kernels"

FUNCTION = re.compile(r"^(?!typedef)(?:static\s+|inline\s+|PK_API\s+|PK_ALWAYS_INLINE\s+)*[A-Za-z_][\w\s\*]*?\b(\w+)\s*\(", re.M)
TYPEDEF = re.compile(r"^typedef\b(?:[^;{]*\{[^}]*\})?[^;]*?\b(\w+)\s*(?:__attribute__\(\(.*\)\))?\s*;", re.M)
ENUM = re.compile(r"^enum\s*\{([^}]*)\}", re.M)
DEFINE = re.compile(r"^#define\s+(pk_\w+)", re.M)
KEYWORDS = {"if", "for", "while", "return", "switch", "sizeof"}


def defined_names(text: str) -> set:
    names = {m.group(1) for m in FUNCTION.finditer(text)} - KEYWORDS
    names |= {m.group(1) for m in TYPEDEF.finditer(text)}
    names |= {part.split("=")[0].strip() for m in ENUM.finditer(text) for part in m.group(1).split(",") if part.strip()}
    names |= {m.group(1) for m in DEFINE.finditer(text)}
    return names


def test_tier_files_define_only_their_tiers_names():
    tier_files = sorted(p for p in KERNELS.rglob("*__*.*") if p.suffix in (".c", ".h") and not p.stem.endswith("__scalar"))
    assert len(tier_files) > 25
    wrong = []
    for path in tier_files:
        tier = path.stem.split("__", 1)[1]
        for name in defined_names(path.read_text(encoding="utf-8")):
            if not (name.endswith(f"__{tier}") or (name.startswith("pk_") and name.endswith(f"_{tier}"))):
                wrong.append(f"{path.name}: {name}")
    assert not wrong, "names outside the rule <op>__<tier> / pk_<name>_<tier>:\n" + "\n".join(wrong)


def test_the_rule_finds_what_it_should():
    names = defined_names((KERNELS / "gemm_tile__avx512vnni.h").read_text(encoding="utf-8"))
    assert {"pk_tile_avx512vnni", "pk_tile_sums_avx512vnni", "pk_tile_tokens_avx512vnni",
            "pk_act_avx512vnni"} <= names
    assert "int8_gemm__avx512vnni" in defined_names((KERNELS / "fv5_gemm__avx512vnni.c").read_text(encoding="utf-8"))
