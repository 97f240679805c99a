"""Whether a change to the kernels changed the machine code of the launches the talker's and codec's steps make today,
found on the CPU: every launch of a 1.7B decode step with the talker service's default settings (`step_cases`: the GEMM
launches `module_launch` gives the service-built talker's weights at 1 to 32 rows, the norms, the K/V writes, decode
attention, the draws; with the options the defaults turn on: today programmatic launch in steps of at most 64 rows, so
every GEMM launch with it and the other kernels both ways), and every launch of the codec's decode step with the codec
service's default settings (`codec_cases`: recorded, not run, from the released-shape decoder's steps on the CPU at 1 to
16 streams and 1 to 15 frames), is compiled for sm_90 (H100/H200) from two trees of kernels/ with the Triton wheel's own
toolchain, and each pair of SASS listings compared (nvdisasm, from the same wheel).

    python tools/compare_kernel_code.py --base 327ba4d [--new DIR] [--only skinny] [--check]
    python tools/compare_kernel_code.py --base kernels/timed_code.json --check
    python tools/compare_kernel_code.py --write-snapshot kernels/timed_code.json --note "run N timed this code"

--base is a git revision (its kernels/ taken with git archive), a directory holding a kernels tree, or a snapshot
.json; --new the same, the working tree by default. A case is "same" (identical SASS), "registers" (identical but for
register numbers), "reordered" (the same instructions, registers aside, in another order) or "differs" (other
instructions; the instruction counts say how far). With --check the exit status is 1 if any case differs or fails to
compile. A parameter or constexpr one tree's kernel lacks is left out on that side (a new option at its off value).
kernels/timed_code.json is the snapshot of the code last timed on a GPU; tests/test_compare_kernel_code.py fails when
the tree's code leaves it.

Each launch is specialized as Triton's launcher specializes it (pointers and multiples of 16 marked divisible by 16,
arguments of 1 made constants): compiled without the marks the loads neither vectorize nor pipeline, and the code
(registers, spills) is another. --python names an interpreter whose Triton compiles, e.g. one with the GPU's version
(3.6.0 on the lent H200s; this machine's venv has 3.7.1).

Why: session 43 restructured the GEMM kernels for options that are off by default and left their default launches
with other code (up to 16% more SASS instructions with Triton 3.6.0), which only a GPU timing would otherwise have
shown.
"""

import argparse
import dataclasses
import functools
import hashlib
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
sys.path.insert(0, str(ROOT / "tools"))  # bench_talker_step builds the talker as its benchmark does
OFF = {"PDL": False, "EARLY_WEIGHTS": False, "SILU_GATE": False, "RADIX": False}  # options off by default


@dataclass
class Case:
    module: str  # omni.kernels.<module>
    kernel: str
    constexprs: dict
    options: dict = field(default_factory=dict)  # num_warps, num_stages
    types: dict = field(default_factory=dict)  # pointer and scalar types other than *bf16 and i32
    values: dict = field(default_factory=dict)  # integer arguments that are not multiples of 16 at this launch
    tag: str = ""  # a recorded launch's origin and specialization (codec_cases), part of its name

    @property
    def name(self) -> str:
        launch = " ".join(f"{k}={v}" for k, v in {**self.constexprs, **self.options}.items())
        return f"{self.kernel} {launch}" + (f" [{self.tag}]" if self.tag else "")


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


@functools.cache
def step_cases(model: str = "1.7B") -> tuple[Case, ...]:
    """`launch_cases` with the talker service's default settings (cached: a test and the tool ask often)."""
    from omni.services.talker.config import TalkerConfig

    return tuple(launch_cases(TalkerConfig(), model))


def launch_cases(settings, model: str = "1.7B") -> list[Case]:
    """The launches a decode step of `model` makes with the talker `settings`: every GEMM launch `module_launch`
    gives the talker `apply_kernels` builds (on the meta device: shapes only) at 1 to 32 rows, the norms at both
    widths, SiLU · up, the K/V writes, decode attention at both cache lengths' launches, both draws; with the options
    the settings turn on (the SiLU in the down projections, programmatic launch and early weights; with its max_rows,
    the launches of larger steps without it, each GEMM launch by the rows that take it). An integer
    argument is taken as a multiple of 16 unless given: a dot launch's rows M are the fewest that take it."""
    import torch
    import triton
    from bench_talker_step import build_talker
    from omni.kernels import decode_attention, sampling
    from omni.kernels.skinny_linear import dot_stages
    from omni.services.talker.service import apply_kernels

    from omni.models.qwen3_tts.talker_fused import module_launch, skinny_gemms

    talker, config = build_talker(model, torch.bfloat16, "meta")
    apply_kernels(talker, settings, on_cuda=True)  # programmatic launch stays off here (no GPU): read from settings
    # Each gated down projection's most rows (use_silu_down's max_rows) by the module
    gated = {id(mlp.down_proj): mlp.__dict__["silu_down"] for mlp in talker.modules() if "silu_down" in mlp.__dict__}
    gemms: dict[tuple, Case] = {}
    gemm_rows: dict[str, list[int]] = {}  # each GEMM launch's fewest and most rows (the other kernels: every step)
    for module, weight, bias in skinny_gemms(talker).values():
        for rows in range(1, 33):
            launch = module_launch(module, weight, rows, interpreted=False)
            if launch is None:
                continue
            constexprs = {"HAS_BIAS": bias is not None, "BLOCK_N": launch["block_n"], "BLOCK_K": launch["block_k"]}
            if rows <= gated.get(id(module), 0):  # _fused_mlp hands the gate/up output whole to the down projection
                constexprs["SILU_GATE"] = True
            options = {k: launch[k] for k in ("num_warps", "num_stages") if k in launch}
            if launch.get("dot"):
                rows_pad = max(16, triton.next_power_of_2(rows))
                constexprs |= {"ROWS_PAD": rows_pad, "SPLIT_K": launch.get("split_k", 1), "DOT_FP32": False}
                case = Case("skinny_linear", DOT, constexprs, options, {"part_ptr": "*fp32", "ticket_ptr": "*i32"},
                            {"M": rows})  # fmt: skip
            else:
                case = Case("skinny_linear", ROW, constexprs, options)
            gemms.setdefault((case.kernel, case.name), case)  # the first (fewest rows) of each launch
            gemm_rows.setdefault(case.name, [rows, rows])[1] = rows
    cases = [gemms[key] for key in sorted(gemms)]
    predictor = config.talker.code_predictor
    for width in sorted({config.talker.hidden_size, predictor.hidden_size}, reverse=True):
        norm = {"BLOCK": triton.next_power_of_2(width)}, {"num_warps": 4 if width >= 1024 else 1}
        cases += [
            Case("transformer_fused", "_rms_norm_kernel", *norm, FP32),
            Case("transformer_fused", "_add_rms_norm_kernel", {"HAS_SCALE": False, **norm[0]}, norm[1], FP32),
        ]
    t = config.talker
    heads, kv_heads, dim = t.num_attention_heads, t.num_key_value_heads, t.head_dim
    pad = triton.next_power_of_2
    cases += [
        Case("transformer_fused", "_silu_mul_kernel", {"BLOCK": 1024}),
        Case("kv_write", "_write_kv_kernel", {"N": kv_heads * dim, "BLOCK": pad(kv_heads * dim)}, {}, IDS,
             ONE_POSITION),
        Case("kv_write", "_norm_rope_write_kernel",
             {"HEADS": heads, "KV_HEADS": kv_heads, "HALF": dim // 2, "HEADS_PAD": pad(heads),
              "KV_HEADS_PAD": pad(kv_heads), "HALF_PAD": pad(dim // 2), "V_BLOCK": pad(kv_heads * dim)},
             {}, {**FP32, **IDS, "cos_ptr": "*fp32", "sin_ptr": "*fp32"}, ONE_POSITION),
    ]  # fmt: skip
    for launch in (decode_attention.LAUNCH, decode_attention.LAUNCH_SHORT):
        group = heads // kv_heads
        constexprs = {"GROUP": group, "GROUP_PAD": max(16, pad(group)), "DIM": dim, "DIM_PAD": max(16, pad(dim)),
                      "BLOCK_N": launch["block_n"], "PRECISION": "ieee", "DOT_FP32": False}  # fmt: skip
        options = {"num_warps": launch["num_warps"], "num_stages": launch["num_stages"]}
        cases += [Case("decode_attention", "_decode_attention_kernel", constexprs, options, {**FP32, **IDS})]
    for kernel, vocab, values in (
        ("_draw_kernel", predictor.vocab_size, {"counter_offset": 3, "out_stride": 1}),
        ("_draw_talker_kernel", t.vocab_size, {"eos_id": t.codec_eos_token_id}),
    ):
        chosen = sampling._launch_options(vocab, None, False)
        constexprs = {"BLOCK": chosen["BLOCK"], "LIBDEVICE": True}  # libdevice on a GPU (not the interpreter)
        if kernel == "_draw_kernel":
            cases += [Case("sampling", kernel, {"INDEXED": indexed, **constexprs}, {"num_warps": chosen["num_warps"]},
                           DRAW, values) for indexed in (False, True)]  # fmt: skip
        else:
            constexprs["DRAWS_PER_FRAME"] = sampling.DRAWS_PER_FRAME
            cases += [Case("sampling", kernel, constexprs, {"num_warps": chosen["num_warps"]}, DRAW_TALKER, values)]
    if not settings.programmatic_launch:
        return cases
    # Every launch of a step of at most max_rows rows (0: of every step) launches with it (apply_kernels on a GPU);
    # with max_rows, a launch also made in larger steps is a case both ways.
    limit, launched = settings.programmatic_launch_max_rows, []
    for case in cases:
        fewest, most = gemm_rows.get(case.name, (1, None))
        if not limit or fewest <= limit:
            constexprs, options = {**case.constexprs, "PDL": True}, {**case.options, "launch_pdl": True}
            if case.module == "skinny_linear" and settings.programmatic_early_weights:
                constexprs["EARLY_WEIGHTS"] = True
                if case.kernel == DOT:
                    options["num_stages"] = dot_stages(case.options, True)
            launched.append(dataclasses.replace(case, constexprs=constexprs, options=options))
        if limit and (most is None or most > limit):
            launched.append(case)
    return launched


# (streams, frames) of the codec steps recorded: the graphs' smallest batch buckets and every chunk length they hold
CODEC_STEPS = ((1, 1), (1, 4), (2, 8), (16, 15))
TRITON_TYPES = {torch_name: triton_name for torch_name, triton_name in (
    ("bfloat16", "bf16"), ("float16", "fp16"), ("float32", "fp32"), ("int64", "i64"), ("int32", "i32"),
    ("int8", "i8"), ("uint8", "u8"), ("bool", "i1"),
)}  # fmt: skip


@functools.cache
def codec_cases() -> tuple[Case, ...]:
    """The launches of the codec's decode step with the codec service's default settings on a GPU, as
    `record_codec_launches` records them in a child process (the launches depend on omni.kernels' INTERPRETED tiles,
    and this process may have imported it interpreted)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "codec_cases.json"
        pythonpath = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
        run_child("--record-codec-into", out, {"PYTHONPATH": pythonpath}, "recording the codec's launches", 600)
        return tuple(Case(**fields) for fields in json.loads(out.read_text()))


def run_child(flag: str, out: Path, env: dict, what: str, timeout: int, python: str = sys.executable) -> None:
    """This tool run as `python tool flag out` with `env` added and without TRITON_INTERPRET (the interpreter
    compiles nothing, and takes its own tiles); stops with the child's errors, named `what`, if it fails."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"} | env
    done = subprocess.run([python, __file__, flag, str(out)], env=env, capture_output=True, text=True, timeout=timeout)
    if done.returncode:
        raise SystemExit(f"{what} failed:\n{done.stderr[-3000:]}")


def record_codec_launches(steps=CODEC_STEPS) -> list[Case]:
    """In a process that has not imported omni.kernels interpreted: the released-shape codec decoder (random weights,
    bf16) with the kernels `apply_kernels` turns on by default on a GPU, stepped on the CPU with every Triton launch
    recorded instead of run (the PyTorch ops run; values do not steer the step), two steps a stream (a fresh
    state, then one with history) at each of `steps`; one case per launch as the launcher specializes it."""
    import torch
    from omni.services.codec.config import CodecConfig
    from omni.services.codec.engine import apply_kernels
    from triton.runtime.jit import JITFunction

    from omni.models.qwen3_tts.codec import CodecDecoder, CodecDecoderConfig
    from omni.models.qwen3_tts.codec_graphs import codec_step

    if os.environ.get("TRITON_INTERPRET") == "1":
        raise SystemExit("record the codec's launches without TRITON_INTERPRET (its launches take the GPU's tiles)")
    launched = []
    JITFunction.run = lambda self, *args, grid, warmup, **kwargs: launched.append((self, args, kwargs))
    torch.manual_seed(0)
    decoder = CodecDecoder(CodecDecoderConfig()).to(torch.bfloat16).eval()
    apply_kernels(decoder, CodecConfig(dtype="bfloat16"))
    with torch.no_grad():
        for streams, frames in steps:
            state = decoder.new_state(streams + 1)
            codes = torch.zeros((streams, frames, decoder.cfg.num_quantizers), dtype=torch.long)
            rows, lengths = torch.arange(streams), torch.full((streams,), frames)
            for _ in range(2):
                codec_step(decoder, state, codes, rows, lengths)
    cases: dict[str, Case] = {}
    for fn, args, kwargs in launched:
        case = case_from_launch(fn, args, kwargs, "codec")
        cases.setdefault(case.name, case)  # the name says all the launcher specializes on: one case a name
    return list(cases.values())


def case_from_launch(fn, args: tuple, kwargs: dict, origin: str) -> Case:
    """A Triton launch `fn[grid](*args, **kwargs)` as a Case: constexprs by value, tensors as pointers of their dtype
    (with their address modulo 16 where it is not 0), integers of 1 or not multiples of 16 by value (the launcher
    specializes on those), floats as fp32, bools i1. The tag names `origin`, the integers specialized as 1 and as not
    multiples of 16, the pointers off the 16-byte grid and the types other than the defaults (*bf16 for a name ending
    in _ptr, else i32): the name then says everything the launcher specializes on."""
    params = inspect.signature(fn.fn).parameters
    bound = dict(zip(params, args, strict=False)) | {k: v for k, v in kwargs.items() if k in params}
    constexpr_names = {name for name, param in params.items() if "constexpr" in str(param.annotation)}
    constexprs, types, values = {}, {}, {}
    for name, value in bound.items():
        if name in constexpr_names:
            constexprs[name] = value
        elif hasattr(value, "data_ptr"):  # a tensor
            types[name] = "*" + TRITON_TYPES[str(value.dtype).removeprefix("torch.")]
            if value.data_ptr() % 16:
                values[name] = value.data_ptr() % 16
        elif isinstance(value, bool):
            types[name] = "i1"
        elif isinstance(value, int):
            if not -(2**31) <= value < 2**31:
                types[name] = "i64"
            if value == 1 or value % 16:
                values[name] = value
        elif isinstance(value, float):
            types[name] = "fp32"
        else:
            raise TypeError(f"{fn.fn.__name__}: argument {name} = {value!r} of a type cases do not describe")
    types = {name: kind for name, kind in types.items() if kind != ("*bf16" if name.endswith("_ptr") else "i32")}
    options = {k: v for k, v in kwargs.items() if k not in params}
    ones = [name for name, value in values.items() if value == 1 and not types.get(name, "i").startswith("*")]
    others = [name for name in values if name not in ones]
    typed = [f"{name}={kind}" for name, kind in types.items()]
    tag = "; ".join([origin] + [f"{label}: {','.join(names)}" for label, names in
                                (("1", ones), ("not /16", others), ("types", typed)) if names])  # fmt: skip
    return Case(fn.fn.__module__.removeprefix("omni.kernels."), fn.fn.__name__, constexprs, options, types, values,
                tag)  # fmt: skip


def all_cases() -> tuple[Case, ...]:
    """Every case the tool compiles: the talker step's (`step_cases`) and the codec step's (`codec_cases`)."""
    return step_cases() + codec_cases()


def signature(params: list[str], case: Case) -> tuple[dict, dict, dict]:
    """The kernel's signature, constexprs and attributes for `case` as Triton's launcher specializes a launch: its
    constexprs and the off options the kernel has; an integer argument of 1 a constexpr; pointers (PyTorch allocates
    at 256 bytes; a pointer in `case.values` is a view off the 16-byte grid) and the integers that are multiples of 16
    (all but `case.values`) marked divisible by 16, which lets loads vectorize and copy asynchronously (a launch
    compiled without the marks has other code)."""
    declared = {p: case.types.get(p, "*bf16" if p.endswith("_ptr") else "i32") for p in params}
    constexprs = {k: v for k, v in {**OFF, **case.constexprs}.items() if k in params}
    constexprs |= {k: 1 for k, v in case.values.items() if v == 1 and k in params and declared[k][0] == "i"}
    types = {p: "constexpr" if p in constexprs else declared[p] for p in params}
    # A pointer's value, where given, is its address modulo 16 (a view that starts off the 16-byte grid).
    divisible = [i for i, p in enumerate(params) if (types[p][0] == "*" or types[p] in ("i32", "i64")) and
                 case.values.get(p, 16) % 16 == 0]  # fmt: skip
    return types, constexprs, {(i,): [["tt.divisibility", 16]] for i in divisible}


def compile_case(case: Case):
    """`case` compiled for sm_90 from the omni.kernels this process imports (Triton's CompiledKernel: asm, metadata)."""
    import importlib

    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource, compile

    fn = getattr(importlib.import_module(f"omni.kernels.{case.module}"), case.kernel)
    types, constexprs, attrs = signature(list(inspect.signature(fn.fn).parameters), case)
    return compile(ASTSource(fn, types, constexprs, attrs), target=GPUTarget("cuda", 90, 32), options=case.options)


def compile_cases(out: Path) -> None:
    """In a process whose omni.kernels is the tree under test: each case of out/cases.json (by its index there) to
    out/<index>.cubin, and failures (a kernel the tree lacks, a compile error) to out/failed.json."""
    failed = {}
    for index, fields in json.loads((out / "cases.json").read_text()).items():
        try:
            (out / f"{index}.cubin").write_bytes(compile_case(Case(**fields)).asm["cubin"])
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


def compile_tree(source: str, work: Path, cases: dict[str, Case], python: str = sys.executable) -> Path:
    """`cases` (by index) compiled from `source`'s kernels/ in a process of `python`; returns the folder of cubins."""
    out = work / "cubins"
    out.mkdir(parents=True)
    (out / "cases.json").write_text(json.dumps({index: dataclasses.asdict(case) for index, case in cases.items()}))
    env = {"PYTHONPATH": str(kernels_tree(source, work / "tree")), "TRITON_CACHE_DIR": str(work / "cache")}
    run_child("--compile-into", out, env, f"compiling {source}", 1800, python)
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


REGISTER = re.compile(r"\bU?R\d+\b|\bU?P\d+\b")


def digests(code: list[str]) -> dict:
    """Hashes of the SASS as it is, with register numbers set aside, and also in any order (operand-reuse flags follow
    the schedule, so they go too): `verdict` compares two codes by them, and a snapshot keeps them."""

    def digest(lines) -> str:
        return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]

    renamed = [REGISTER.sub("R", line) for line in code]
    unordered = sorted(line.replace(".reuse", "") for line in renamed)
    return {"sass": digest(code), "sass_but_registers": digest(renamed), "sass_any_order": digest(unordered)}


def verdict(base: dict, new: dict) -> str:
    """same, registers, reordered or differs, from two codes' `digests`."""
    for key, name in (("sass", "same"), ("sass_but_registers", "registers"), ("sass_any_order", "reordered")):
        if base[key] == new[key]:
            return name
    return "differs"


def fingerprints(source: str, only: str | None = None, python: str = sys.executable) -> dict[str, dict]:
    """Each case's code in `source` (a git revision, a directory holding kernels/, or a snapshot .json): its SASS
    instructions, registers, spill loads/stores and `digests`, or why it failed to compile."""
    if source.endswith(".json"):
        cases = json.loads(Path(source).read_text())["cases"]
        return {name: code for name, code in cases.items() if not only or only in name}
    cases = {str(index): case for index, case in enumerate(all_cases()) if not only or only in case.name}
    with tempfile.TemporaryDirectory() as tmp:
        out = compile_tree(source, Path(tmp), cases, python)
        failed = json.loads((out / "failed.json").read_text())
        codes = {}
        for index, case in cases.items():
            if index in failed:
                codes[case.name] = {"failed": failed[index]}
                continue
            cubin = out / f"{index}.cubin"
            code = sass(cubin)
            codes[case.name] = {"instructions": len(code), "registers": registers(cubin), "spills": spills(code),
                                **digests(code)}  # fmt: skip
        return codes


def compare(base: str, new: str, only: str | None = None, python: str = sys.executable) -> list[dict]:
    """Every case's SASS instruction counts, registers and spills in `base` and `new` and its verdict (or why a side
    failed), compiled by `python`'s Triton."""
    sides = {"base": fingerprints(base, only, python), "new": fingerprints(new, only, python)}
    rows = []
    for name in sides["new"] | sides["base"]:
        code = {side: codes.get(name, {"failed": "no such case"}) for side, codes in sides.items()}
        errors = {side: c["failed"] for side, c in code.items() if "failed" in c}
        if errors:
            rows.append({"case": name, "verdict": "failed", "errors": errors})
            continue
        rows.append({
            "case": name, "base": code["base"]["instructions"], "new": code["new"]["instructions"],
            "registers": [code[side]["registers"] for side in sides],
            "spills": [code[side]["spills"] for side in sides], "verdict": verdict(code["base"], code["new"]),
        })  # fmt: skip
    return rows


def snapshot(path: Path, source: str, python: str = sys.executable, only: str | None = None, note: str = "") -> None:
    """`source`'s fingerprints of every case, with the Triton that compiled them and `note` (which GPU run timed this
    code), to `path` (--base can read it)."""
    version = subprocess.run([python, "-c", "import triton; print(triton.__version__)"], capture_output=True,
                             text=True, check=True).stdout.strip()  # fmt: skip
    saved = {"triton": version, "note": note, "cases": fingerprints(source, only, python)}
    path.write_text(json.dumps(saved, indent=1) + "\n")


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
    parser.add_argument("--write-snapshot", type=Path, help="write --new's fingerprints here (a .json) and stop")
    parser.add_argument("--note", default="", help="with --write-snapshot: which GPU run timed this code")
    parser.add_argument("--compile-into", type=Path, help=argparse.SUPPRESS)  # the child process's job
    parser.add_argument("--record-codec-into", type=Path, help=argparse.SUPPRESS)  # the other child's
    args = parser.parse_args()
    if args.compile_into:
        compile_cases(args.compile_into)
        return
    if args.record_codec_into:
        cases = [dataclasses.asdict(case) for case in record_codec_launches()]
        args.record_codec_into.write_text(json.dumps(cases))
        return
    if args.write_snapshot:
        snapshot(args.write_snapshot, args.new, args.python, note=args.note)
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
