"""Whether a change to the kernels changed the machine code of the launches the talker and codec services make today,
found on the CPU: every launch of the talker service with its default settings (`talker_cases`: recorded, not run,
from the 1.7B talker's decode steps at each CUDA-graph batch bucket, its prefills at each (batch, width) bucket and
its prompt embeddings at 1 to 32 positions, with programmatic launch as on an sm_90 GPU), and every launch of the
codec service with its default settings (`codec_cases`: recorded from the released-shape decoder's steps in each
CUDA graph, (batch bucket, chunk length), and eager steps of longer chunks), and those the profile the chart deploys
(qwen3-tts-1.7b-h200: the talker's 128- and 256-row steps) and the 0.6B talker's shapes add, is compiled for sm_90
(H100/H200) from two trees of kernels/ with the Triton wheel's own toolchain, and each pair of SASS listings compared
(nvdisasm, from the same wheel).

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
shown. The talker's launches were listed by hand until session 47: 19 of those 43 cases were not code the service
runs (decode attention's lengths and the rope tables of another type, the dot kernels' 32-row M taken as not a
multiple of 16, kernels the defaults never launch), and none was a prefill's. The codec's, recorded since session 46
from four steps, missed 16 of the 48 its graphs and eager steps launch.
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
# The talker recorded with a cache this long (the service's default is 2048): a launch depends on the cache length only
# through strides (multiples of 16 at any length) and decode attention's short-cache launch (SHORT_CACHE, 64 positions
# or fewer), and the deployed profile's 257 slots x 2048 positions would fill 30 GB of this machine's memory with zeros.
RECORD_CONTEXT = 80
# The profile the chart deploys by default (charts/omni/values.yaml): its launches are cases too
PROFILE = "qwen3-tts-1.7b-h200"
# (streams, frames) of the eager codec steps recorded: chunks longer than every graph's, of 16 frames and of others
EAGER_CODEC_STEPS = ((1, 16), (1, 100), (3, 37))


def talker_cases(settings=None, model: str = "1.7B") -> tuple[Case, ...]:
    """The launches the talker service makes with `model`'s shapes on an sm_90 GPU with `settings` (a TalkerConfig;
    default: its defaults), as `record_talker_launches` records them in a child process (the launches depend on
    omni.kernels' INTERPRETED tiles, and this process may have imported it interpreted)."""
    from omni.services.talker.config import TalkerConfig

    return _recorded("--record-talker-into", json.dumps(dataclasses.asdict(settings or TalkerConfig())), model)


def codec_cases(settings=None) -> tuple[Case, ...]:
    """The launches the codec service makes on a GPU with `settings` (a CodecConfig; default: its defaults at bf16, as
    deployed), as `record_codec_launches` records them in a child process."""
    from omni.services.codec.config import CodecConfig

    return _recorded("--record-codec-into", json.dumps(dataclasses.asdict(settings or CodecConfig(dtype="bfloat16"))))


@functools.cache
def _recorded(flag: str, settings: str, model: str = "1.7B") -> tuple[Case, ...]:
    """The cases a child process records with `flag`, `settings` (JSON) and `model` (cached: tests and the tool ask
    often)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cases.json"
        pythonpath = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
        args = ("--settings", settings, "--model", model)
        run_child(flag, out, {"PYTHONPATH": pythonpath}, f"recording ({flag})", 600, args=args)
        return tuple(Case(**fields) for fields in json.loads(out.read_text()))


def run_child(
    flag: str, out: Path, env: dict, what: str, timeout: int, python: str = sys.executable, args: tuple = ()
) -> None:
    """This tool run as `python tool flag out *args` with `env` added and without TRITON_INTERPRET (the interpreter
    compiles nothing, and takes its own tiles); stops with the child's errors, named `what`, if it fails."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"} | env
    command = [python, __file__, flag, str(out), *args]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
    if done.returncode:
        raise SystemExit(f"{what} failed:\n{done.stderr[-3000:]}")


def record_launches(origin: str) -> list[Case]:
    """From now on in this process (a child's: there is no going back), every Triton launch is recorded instead of
    run, and fills its integer and bool tensors with zeros (where a kernel would have written ids or flags, the
    PyTorch ops after it then index in range); returns the list the cases go into (`unique_cases` after the run)."""
    import torch
    from triton.runtime.jit import JITFunction

    if os.environ.get("TRITON_INTERPRET") == "1":
        raise SystemExit("record launches without TRITON_INTERPRET (the launches take the GPU's tiles)")
    launched = []

    def record(fn, *args, grid, warmup, **kwargs):
        launched.append(case_from_launch(fn, args, kwargs, origin))
        for value in (*args, *kwargs.values()):
            if isinstance(value, torch.Tensor) and not value.is_floating_point():
                value.zero_()

    JITFunction.run = record
    return launched


def unique_cases(launched: list[Case]) -> list[Case]:
    """One case a name, in the order first launched: the name says all the launcher specializes on."""
    cases: dict[str, Case] = {}
    for case in launched:
        cases.setdefault(case.name, case)
    return list(cases.values())


def record_talker_launches(settings, model: str = "1.7B") -> list[Case]:
    """In a process that has not imported omni.kernels interpreted: the talker of `model`'s shapes (weights left
    uninitialized, bf16) with the kernels `apply_kernels` turns on with `settings` on an sm_90 GPU (programmatic launch
    as there), in a runner of the service's slots, and every launch the service's graphs and its eager prompt
    embedding make, recorded instead of run: a decode step at each captured batch bucket, a prefill at each captured
    (batch, width) bucket, and the prompt embeddings at 1 to MAX_ROWS positions (rows the GEMM kernels take). The
    PyTorch ops that do not launch Triton and cost the most on a CPU (the cuBLAS GEMMs, SDPA and its cache gather)
    return uninitialized tensors of their shapes: a launch is specialized by shapes, strides and types, not values."""
    import torch
    import torch.nn.functional as F
    from bench_talker_step import build_talker
    from omni.kernels.programmatic_launch import set_programmatic_launch
    from omni.kernels.skinny_linear import MAX_ROWS
    from omni.services.common.config import capture_buckets
    from omni.services.talker.service import apply_kernels

    from omni.models.qwen3_tts.talker import KVCache
    from omni.talker.cuda_graphs import PREFILL_GRAPH_POSITIONS, PrefillInputs, prefill_graph_buckets
    from omni.talker.model_runner import TalkerRunner
    from omni.talker.prompt import NO_ID, TalkerPrompt

    launched = record_launches("talker")
    F.linear = linear_shaped
    # In the layout the attention's transpose and reshape after it read without a copy
    F.scaled_dot_product_attention = lambda q, k, v, **_: q.new_empty(q.shape[0], q.shape[2], q.shape[1],
                                                                      v.shape[-1]).transpose(1, 2)  # fmt: skip
    KVCache.read = lambda self, layer, slots, kv_len, dtype=None: (
        (self.k.new_empty(len(slots), kv_len, *self.k.shape[3:], dtype=dtype or self.k.dtype),) * 2
    )
    talker, config = build_talker(model, torch.bfloat16, "meta")
    talker = talker.to_empty(device="cpu")
    kernels = apply_kernels(talker, settings, on_cuda=True)
    # As apply_kernels sets it on an sm_90 GPU (here device_supports says no)
    set_programmatic_launch(settings.programmatic_launch, settings.programmatic_early_weights,
                            settings.programmatic_launch_max_rows)  # fmt: skip
    slots = settings.max_streams
    runner = TalkerRunner(talker, config, slots, RECORD_CONTEXT, "cpu", scratch_slot=True, **kernels)
    with torch.no_grad():
        for batch in capture_buckets(settings.graph_batch_buckets, slots):
            runner.decode_step_padded(torch.full((batch,), runner.scratch_slot))
        if settings.prefill_graphs:
            buckets = prefill_graph_buckets(settings.prefill_batch_buckets, settings.prefill_widths(), slots,
                                            settings.max_context, PREFILL_GRAPH_POSITIONS)  # fmt: skip
            for batch, width in buckets:
                PrefillInputs(runner, batch, width).run()
        for length in range(1, MAX_ROWS + 1):
            ids = torch.zeros(length, dtype=torch.long)
            runner.embed_prompts([TalkerPrompt(text_ids=ids, codec_ids=torch.full_like(ids, NO_ID), trailing_ids=ids)])
    return unique_cases(launched)


def record_codec_launches(settings, eager=EAGER_CODEC_STEPS) -> list[Case]:
    """In a process that has not imported omni.kernels interpreted: the released-shape codec decoder (random weights,
    bf16) with the kernels `apply_kernels` turns on with `settings` (a CodecConfig) on a GPU, and every launch the
    service's graphs make, recorded instead of run: at each captured (batch bucket, chunk length), the graph's two
    warm-up steps and its captured one on its static inputs; then eager steps (chunks longer than every graph's:
    reference codes, long client chunks) at `eager` (streams, frames). The cuBLAS GEMMs and the vocoder's cuDNN convs
    return uninitialized tensors of their shapes (`conv_shaped`): their cost on a CPU."""
    import numpy as np
    import torch
    import torch.nn.functional as F
    from omni.services.codec.engine import apply_kernels, codec_graph_buckets, codec_graph_chunk_lengths

    from omni.models.qwen3_tts.codec import CodecDecoder, CodecDecoderConfig
    from omni.models.qwen3_tts.codec_graphs import CodecGraphs, codec_step, decode_eager

    launched = record_launches("codec")
    F.linear = linear_shaped
    for name in ("conv2d", "conv_transpose2d"):
        shaped = conv_shaped(getattr(torch, name))
        setattr(torch, name, shaped)
        setattr(F, name, shaped)
    torch.manual_seed(0)
    decoder = CodecDecoder(CodecDecoderConfig()).to(torch.bfloat16).eval()
    apply_kernels(decoder, settings)
    buckets = codec_graph_buckets(settings.graph_batch_buckets, settings.max_streams)
    lengths = codec_graph_chunk_lengths(settings.graph_chunk_lengths, settings.max_chunk_frames)
    state = decoder.new_state(settings.max_streams + 1)
    graphs = CodecGraphs(decoder, state, buckets, lengths, capture=False)
    with torch.no_grad():
        for _, io in graphs.graphs.values():
            for _ in range(3):
                codec_step(decoder, state, io["codes"], io["rows"], io["frames"])
        for streams, frames in eager:
            codes = np.zeros((frames, decoder.cfg.num_quantizers), dtype=np.int64)
            decode_eager(decoder, state, list(range(streams)), [codes] * streams)
    return unique_cases(launched)


def linear_shaped(x, weight, bias=None):
    """F.linear's output, uninitialized (a recording's cuBLAS GEMMs: only their shape reaches a launch)."""
    return x.new_empty(*x.shape[:-1], weight.shape[0])


def conv_shaped(conv):
    """`conv` as an op that returns an uninitialized tensor of its output's shape (worked out on the meta device) in
    the memory format ATen's convs choose (channels-last where the input's or the weight's strides suggest it; the
    channels-last vocoder checks)."""
    import torch
    from torch._prims_common import suggest_memory_format

    def run(x, weight, *args, **kwargs):
        meta = [value.to("meta") if isinstance(value, torch.Tensor) else value for value in args]
        shape = conv(x.to("meta"), weight.to("meta"), *meta, **kwargs).shape
        last = any(t.dim() == 4 and suggest_memory_format(t) == torch.channels_last for t in (x, weight))
        return torch.empty(shape, dtype=x.dtype, memory_format=torch.channels_last if last else torch.contiguous_format)

    return run


def case_from_launch(fn, args: tuple, kwargs: dict, origin: str) -> Case:
    """A Triton launch `fn[grid](*args, **kwargs)` as a Case, each argument specialized by Triton's launcher's own rule
    for CUDA (`native_specialize_impl`, which the launcher calls): constexprs by value; a tensor a pointer of its dtype
    (a bool tensor *u1), with its address modulo 16 where not divisible by 16; an integer of 1 a constant, one not a
    multiple of 16 by value; a float fp32, a bool u1. The tag names `origin`, the integers specialized as 1 and as not
    multiples of 16, the pointers off the 16-byte grid and the types other than the defaults (*bf16 for a name ending
    in _ptr, else i32): the name then says everything the launcher specializes on."""
    from triton._C.libtriton import native_specialize_impl
    from triton.backends.nvidia.compiler import CUDABackend

    params = inspect.signature(fn.fn).parameters
    bound = dict(zip(params, args, strict=False)) | {k: v for k, v in kwargs.items() if k in params}
    constexpr_names = {name for name, param in params.items() if "constexpr" in str(param.annotation)}
    constexprs, types, values = {}, {}, {}
    for name, value in bound.items():
        if name in constexpr_names:
            constexprs[name] = value
            continue
        kind, key = native_specialize_impl(CUDABackend, value, False, True, True)  # (type, "D" if divisible by 16)
        if kind == "constexpr":
            if value != 1:  # None: no kernel of ours takes one
                raise TypeError(f"{fn.fn.__name__}: argument {name} = {value!r} of a type cases do not describe")
            values[name] = 1
            continue
        types[name] = kind
        if key == "":  # an integer or a pointer not divisible by 16
            values[name] = value.data_ptr() % 16 if hasattr(value, "data_ptr") else value
    types = {name: kind for name, kind in types.items() if kind != ("*bf16" if name.endswith("_ptr") else "i32")}
    options = {k: v for k, v in kwargs.items() if k not in params}
    ones = [name for name, value in values.items() if value == 1 and not types.get(name, "i").startswith("*")]
    others = [name for name in values if name not in ones]
    typed = [f"{name}={kind}" for name, kind in types.items()]
    tag = "; ".join([origin] + [f"{label}: {','.join(names)}" for label, names in
                                (("1", ones), ("not /16", others), ("types", typed)) if names])  # fmt: skip
    return Case(fn.fn.__module__.removeprefix("omni.kernels."), fn.fn.__name__, constexprs, options, types, values,
                tag)  # fmt: skip


@functools.cache
def all_cases() -> tuple[Case, ...]:
    """Every case the tool compiles, one a name: the talker's and the codec's launches (`talker_cases`,
    `codec_cases`) with the services' defaults, then those only the deployed profile's settings (`deployed`) and the
    0.6B talker's shapes add."""
    talker, codec = deployed()
    talkers = [*talker_cases(), *talker_cases(talker), *talker_cases(model="0.6B")]
    return tuple(unique_cases([*talkers, *codec_cases(), *codec_cases(codec)]))


def deployed(profile: str = PROFILE) -> tuple:
    """The talker's and the codec's settings in deploy profile `profile` (as the services load them, no flags)."""
    from omni.services.codec.config import CodecConfig
    from omni.services.common.config import load_config
    from omni.services.talker.config import TalkerConfig

    return tuple(load_config(cls, name, {}, {}, profile) for cls, name in ((TalkerConfig, "talker"),
                                                                            (CodecConfig, "codec")))  # fmt: skip


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
    parser.add_argument("--record-codec-into", type=Path, help=argparse.SUPPRESS)  # the recording children's
    parser.add_argument("--record-talker-into", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--settings", default="{}", help=argparse.SUPPRESS)  # a recording's service config, as JSON
    parser.add_argument("--model", default="1.7B", help=argparse.SUPPRESS)  # and the talker's shapes
    args = parser.parse_args()
    if args.compile_into:
        compile_cases(args.compile_into)
        return
    if args.record_codec_into:
        from omni.services.codec.config import CodecConfig

        cases = record_codec_launches(CodecConfig(**json.loads(args.settings)))
        args.record_codec_into.write_text(json.dumps([dataclasses.asdict(case) for case in cases]))
        return
    if args.record_talker_into:
        from omni.services.talker.config import TalkerConfig

        cases = record_talker_launches(TalkerConfig(**json.loads(args.settings)), args.model)
        args.record_talker_into.write_text(json.dumps([dataclasses.asdict(case) for case in cases]))
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
