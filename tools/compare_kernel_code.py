"""Whether a change to the kernels changed the machine code of the launches the talker's step makes today, found on
the CPU: every case below (the 1.7B step's kernels at the launches their launchers choose, programmatic launch off) is
compiled for sm_90 (H100/H200) from two trees of kernels/ with the Triton wheel's own toolchain, and each pair of SASS
listings compared (nvdisasm, from the same wheel).

    python tools/compare_kernel_code.py --base 327ba4d [--new DIR] [--only skinny] [--check]

--base is a git revision (its kernels/ taken with git archive) or a directory holding a kernels tree; --new the same,
the working tree by default. A case is "same" (identical SASS), "registers" (identical but for register numbers),
"reordered" (the same instructions, registers aside, in another order) or "differs" (other instructions; the
instruction counts say how far). With --check the exit status is 1 if any case differs or fails to compile. A
parameter or constexpr one tree's kernel lacks is left out on that side (a new option at its off value).

Each launch is specialized as Triton's launcher specializes it (pointers and multiples of 16 marked divisible by 16,
arguments of 1 made constants): compiled without the marks the loads neither vectorize nor pipeline, and the code
(registers, spills) is another. --python names an interpreter whose Triton compiles, e.g. one with the GPU's version
(3.6.0 on the lent H200s; this machine's venv has 3.7.1).

Why: session 43 restructured the GEMM kernels for options that are off by default and left their default launches
with other code (up to 19% more SASS instructions with Triton 3.6.0), which only a GPU timing would otherwise have
shown.
"""

import argparse
import inspect
import io
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OFF = {"PDL": False, "EARLY_WEIGHTS": False, "SILU_GATE": False, "RADIX": False}  # options off by default


@dataclass
class Case:
    module: str  # omni.kernels.<module>
    kernel: str
    constexprs: dict
    options: dict = field(default_factory=dict)  # num_warps, num_stages
    types: dict = field(default_factory=dict)  # pointer and scalar types other than *bf16 and i32
    values: dict = field(default_factory=dict)  # integer arguments that are not multiples of 16 at this launch

    @property
    def name(self) -> str:
        launch = " ".join(f"{k}={v}" for k, v in {**self.constexprs, **self.options}.items())
        return f"{self.kernel} {launch}"


ROW = "_skinny_linear_kernel"
DOT = "_skinny_linear_dot_kernel"
FP32 = {"eps": "fp32", "q_eps": "fp32", "k_eps": "fp32", "scale": "fp32"}
IDS = {"slots_ptr": "*i64", "positions_ptr": "*i64", "lengths_ptr": "*i32"}
DRAW = {
    "logits_ptr": "*bf16", "index_ptr": "*i64", "do_sample_ptr": "*i1", "temperature_ptr": "*fp32",
    "top_k_ptr": "*i64", "top_p_ptr": "*fp32", "seed_ptr": "*i64", "counter_ptr": "*i64", "out_ptr": "*i64",
}  # fmt: skip
DRAW_TALKER = {
    **DRAW, "slots_ptr": "*i64", "generated_ptr": "*i64", "seen_ptr": "*i1", "penalty_ptr": "*fp32",
    "min_new_ptr": "*i64", "max_new_ptr": "*i64", "suppressed_ptr": "*i1", "ids_ptr": "*i64", "pending_ptr": "*i64",
    "drawn_ptr": "*i64", "finished_ptr": "*i1", "finished_rows_ptr": "*i1",
}  # fmt: skip

ONE_POSITION = {"T": 1, "pos_stride_b": 1, "pos_stride_t": 1}  # a decode step's positions [B, 1]

# The 1.7B step (hidden 2048, 16 query and 8 K/V heads of 128, MLP 6144; predictor hidden 1024, MLP 3072; vocabularies
# 3072 and 2048) at its launchers' choices: skinny_linear's LAUNCH and row_launch_for's two at one row, dot_launch_for's
# at 16 and 32 rows padded (tl.dot's least is 16), split-K on the down projections.
CASES = [
    *[Case("skinny_linear", ROW, {"HAS_BIAS": bias, "BLOCK_N": n, "BLOCK_K": k}, {"num_warps": w})
      for bias in (False, True) for n, k, w in ((4, 1024, 2), (4, 2048, 4), (2, 1024, 1))],
    *[Case("skinny_linear", DOT, {"HAS_BIAS": False, "ROWS_PAD": rows, "BLOCK_N": n, "BLOCK_K": k, "SPLIT_K": split,
                                  "DOT_FP32": False}, {"num_warps": 4, "num_stages": stages},
           {"part_ptr": "*fp32", "ticket_ptr": "*i32"})
      for rows in (16, 32) for n, k, stages, split in ((16, 512, 3, 1), (32, 256, 4, 1), (64, 128, 4, 1),
                                                       (64, 256, 4, 1), (32, 128, 4, 4))],
    *[Case("transformer_fused", "_rms_norm_kernel", {"BLOCK": n}, {"num_warps": 4}, FP32) for n in (2048, 1024)],
    *[Case("transformer_fused", "_add_rms_norm_kernel", {"HAS_SCALE": scale, "BLOCK": n}, {"num_warps": 4}, FP32)
      for scale in (False, True) for n in (2048, 1024)],
    Case("transformer_fused", "_rms_norm_rope_kernel", {"HALF": 64, "HEADS_PAD": 16, "HALF_PAD": 64, "NORM": True},
         {}, {**FP32, "cos_ptr": "*fp32", "sin_ptr": "*fp32"}),
    Case("transformer_fused", "_silu_mul_kernel", {"BLOCK": 1024}),
    Case("kv_write", "_write_kv_kernel", {"N": 1024, "BLOCK": 1024}, {}, IDS, ONE_POSITION),
    Case("kv_write", "_norm_rope_write_kernel", {"HEADS": 16, "KV_HEADS": 8, "HALF": 64, "HEADS_PAD": 16,
                                                 "KV_HEADS_PAD": 8, "HALF_PAD": 64, "V_BLOCK": 1024}, {},
         {**FP32, **IDS, "cos_ptr": "*fp32", "sin_ptr": "*fp32"}, ONE_POSITION),
    *[Case("decode_attention", "_decode_attention_kernel", {"GROUP": 2, "GROUP_PAD": 16, "DIM": 128, "DIM_PAD": 128,
                                                            "BLOCK_N": n, "PRECISION": "ieee", "DOT_FP32": False},
           {"num_warps": w, "num_stages": s}, {**FP32, **IDS}) for n, w, s in ((64, 4, 3), (16, 1, 2))],
    *[Case("sampling", "_draw_kernel", {"INDEXED": indexed, "BLOCK": 2048, "LIBDEVICE": True}, {"num_warps": 8}, DRAW,
           {"counter_offset": 3, "out_stride": 1}) for indexed in (False, True)],
    Case("sampling", "_draw_talker_kernel", {"DRAWS_PER_FRAME": 16, "BLOCK": 4096, "LIBDEVICE": True},
         {"num_warps": 8}, DRAW_TALKER, {"eos_id": 2150}),
]  # fmt: skip


def signature(params: list[str], case: Case) -> tuple[dict, dict, dict]:
    """The kernel's signature, constexprs and attributes for `case` as Triton's launcher specializes a launch: its
    constexprs and the off options the kernel has; an integer argument of 1 a constexpr; pointers (PyTorch allocates
    at 256 bytes) and the integers that are multiples of 16 (all but `case.values`) marked divisible by 16, which
    lets loads vectorize and copy asynchronously (a launch compiled without the marks has other code)."""
    constexprs = {k: v for k, v in {**OFF, **case.constexprs}.items() if k in params}
    constexprs |= {k: 1 for k, v in case.values.items() if v == 1 and k in params}
    types = {p: "constexpr" if p in constexprs else case.types.get(p, "*bf16" if p.endswith("_ptr") else "i32")
             for p in params}  # fmt: skip
    divisible = [i for i, p in enumerate(params) if types[p].startswith("*") or (types[p] == "i32" and
                 case.values.get(p, 16) % 16 == 0)]  # fmt: skip
    return types, constexprs, {(i,): [["tt.divisibility", 16]] for i in divisible}


def compile_cases(out: Path, only: str | None) -> None:
    """In a process whose omni.kernels is the tree under test: each case's cubin to out/<index>.cubin, and failures
    (a kernel the tree lacks, a compile error) to out/failed.json."""
    import importlib

    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource, compile

    failed = {}
    for index, case in enumerate(CASES):
        if only and only not in case.name:
            continue
        try:
            fn = getattr(importlib.import_module(f"omni.kernels.{case.module}"), case.kernel)
            types, constexprs, attrs = signature(list(inspect.signature(fn.fn).parameters), case)
            source = ASTSource(fn, types, constexprs, attrs)
            compiled = compile(source, target=GPUTarget("cuda", 90, 32), options=case.options)
            (out / f"{index}.cubin").write_bytes(compiled.asm["cubin"])
        except Exception as error:  # reported per case; the other cases still compile
            failed[index] = f"{type(error).__name__}: {str(error)[:300]}"
    (out / "failed.json").write_text(json.dumps(failed))


def kernels_tree(source: str, into: Path) -> Path:
    """A directory holding a package `omni` whose `kernels` is `source`'s kernels/ (a directory, or a git revision of
    this repository) and whose other subpackages are this tree's; returns it, for PYTHONPATH."""
    package = into / "omni"
    package.mkdir(parents=True)
    # Everything but kernels from this tree: omni.kernels.sampling reads omni.talker.sampling's constants.
    (package / "__init__.py").write_text(f"__path__.append({str(ROOT / 'omni')!r})\n")
    if Path(source).is_dir():
        (package / "kernels").symlink_to(Path(source).resolve() / "kernels")
    else:
        git = ["git", "-C", str(ROOT), "archive", source, "kernels"]
        archive = subprocess.run(git, capture_output=True, check=True)
        with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
            tar.extractall(package, filter="data")
    return into


def compile_tree(source: str, work: Path, only: str | None, python: str = sys.executable) -> Path:
    out = work / "cubins"
    out.mkdir(parents=True)
    path = kernels_tree(source, work / "tree")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}  # the interpreter compiles nothing
    env |= {"PYTHONPATH": str(path), "TRITON_CACHE_DIR": str(work / "cache")}
    args = [python, __file__, "--compile-into", str(out)] + (["--only", only] if only else [])
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=1800)
    if done.returncode:
        raise SystemExit(f"compiling {source} failed:\n{done.stderr[-3000:]}")
    return out


def toolchain(name: str) -> str:
    """A CUDA binary tool the Triton wheel carries (nvdisasm, cuobjdump)."""
    import triton

    return str(Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / name)


def sass(cubin: Path) -> list[str]:
    """The cubin's instructions, one a line, without addresses, encodings or comments."""
    listing = subprocess.run(
        [toolchain("nvdisasm"), "-c", str(cubin)], capture_output=True, text=True, check=True
    ).stdout
    lines = [re.sub(r"/\*[0-9a-f]+\*/", "", line).split(";")[0].strip() for line in listing.splitlines()]
    return [" ".join(line.split()) for line in lines if line and not line.startswith((".", "//"))]


def registers(cubin: Path) -> int:
    """Registers a thread of the kernel holds (cuobjdump's resource usage): past 255 ptxas spills to local memory."""
    usage = subprocess.run(
        [toolchain("cuobjdump"), "--dump-resource-usage", str(cubin)], capture_output=True, text=True
    )
    return int(re.search(r"REG:(\d+)", usage.stdout).group(1))


def spills(code: list[str]) -> int:
    """Local-memory loads and stores in the code: register spills (the step's kernels keep no local arrays)."""
    opcodes = (line.split()[1 if line.startswith("@") else 0] for line in code)  # past a predicate
    return sum(opcode.split(".")[0] in ("LDL", "STL") for opcode in opcodes)


def verdict(base: list[str], new: list[str]) -> str:
    if base == new:
        return "same"
    registers = re.compile(r"\bU?R\d+\b|\bU?P\d+\b")
    base, new = [registers.sub("R", line) for line in base], [registers.sub("R", line) for line in new]
    if base == new:
        return "registers"
    # Operand-reuse flags follow the schedule, so they are set aside when the order differs.
    base, new = sorted(line.replace(".reuse", "") for line in base), sorted(line.replace(".reuse", "") for line in new)
    return "reordered" if base == new else "differs"


def compare(base: str, new: str, only: str | None = None, python: str = sys.executable) -> list[dict]:
    """Every case's SASS instruction counts, registers and spills in `base` and `new` and its verdict (or why a side
    failed), compiled by `python`'s Triton."""
    with tempfile.TemporaryDirectory() as tmp:
        sides = {
            side: compile_tree(source, Path(tmp) / side, only, python)
            for side, source in (("base", base), ("new", new))
        }
        failed = {side: json.loads((out / "failed.json").read_text()) for side, out in sides.items()}
        rows = []
        for index, case in enumerate(CASES):
            if only and only not in case.name:
                continue
            row = {"case": case.name}
            errors = {side: failed[side][str(index)] for side in sides if str(index) in failed[side]}
            if errors:
                rows.append(row | {"verdict": "failed", "errors": errors})
                continue
            code = {side: sass(out / f"{index}.cubin") for side, out in sides.items()}
            rows.append(row | {
                "base": len(code["base"]), "new": len(code["new"]),
                "registers": [registers(out / f"{index}.cubin") for out in sides.values()],
                "spills": [spills(code[side]) for side in sides], "verdict": verdict(code["base"], code["new"]),
            })  # fmt: skip
        return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", help="git revision or directory holding kernels/")
    parser.add_argument("--new", default=str(ROOT), help="git revision or directory holding kernels/ (this tree)")
    parser.add_argument("--only", help="only the cases whose name contains this (e.g. a kernel's name)")
    parser.add_argument("--check", action="store_true", help="exit 1 if any case differs or failed")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    parser.add_argument(
        "--python", default=sys.executable, help="the interpreter whose Triton compiles (the GPU's version)"
    )
    parser.add_argument("--compile-into", type=Path, help=argparse.SUPPRESS)  # the child process's job
    args = parser.parse_args()
    if args.compile_into:
        compile_cases(args.compile_into, args.only)
        return
    if not args.base:
        parser.error("--base is required")
    rows = compare(args.base, args.new, args.only, args.python)
    print("SASS instructions, registers and spill loads/stores, base → new; verdict; case")
    for row in rows:
        if "base" in row:
            (rb, rn), (sb, sn) = row["registers"], row["spills"]
            sizes = f"{row['base']:>6} → {row['new']:<6} {rb:>3} → {rn:<3} {sb:>3} → {sn:<3}"
            print(f"{sizes} {row['verdict']:<9} {row['case']}")
        else:
            print(f"{'':>35}{row['verdict']:<9} {row['case']}")
        for side, error in row.get("errors", {}).items():
            print(f"{'':>45}{side}: {error}")
    tally = {v: sum(r["verdict"] == v for r in rows) for v in ("same", "registers", "reordered", "differs", "failed")}
    print(" ".join(f"{v}: {n}" for v, n in tally.items()))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    if args.check and (tally["differs"] or tally["failed"]):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
