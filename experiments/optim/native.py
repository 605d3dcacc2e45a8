"""The streaming C kernel of the fused dual step (docs/theory.md section 2.3; issue 25).

Same contract as the compiled kernel of `experiments.optim.fused` (``q_out <- q + coef g;
w <- sign(q_out)|q_out|^e``, the maximum ``max|w|`` returned, NaN if any entry of ``q_out`` or ``w``
is not finite), but written as a small C loop compiled by the system C compiler and called through
`ctypes`. What it adds over inductor's loop is the way it writes: each block of 128 entries is
computed into two buffers on the stack (one vectorized loop, no fast-math and no contraction of
``x y + c`` beyond the explicit ``fma`` of the float64 cube root: the same IEEE operations in the
vector body and the scalar tail, so the bits do not depend on where an entry falls or on the thread
count) and copied out with non-temporal stores. A store that allocates
its cache line first reads it (read for ownership): inductor's loop moves six streams of memory per
entry (read ``q``, ``g``; read and write ``q_out`` and ``w``), this one four, against fused Adam's
seven (read ``w``, ``g``, two moments; write three). The threads take blocks of 65,536 entries
dynamically (OpenMP ``schedule(dynamic)``, at ``torch.get_num_threads()`` at call time), so a
descheduled thread holds up at most one block; the count changes no bit of the result.

Recipes: integer powers (square and multiply), the cube root of `experiments.optim.fused.cbrt_expr`
(Halley in float32, the division-free series in float64; the same operations in the same order,
except that in float64 each ``x y + c`` is one fused multiply-add where the CPU has it:
``fused_madd``, `experiments.optim.stepsource`) and its square, and chains of square roots.
Exponents that need ``exp2``/``log2`` raise `NativeUnavailable` (the caller falls back to inductor).

Why C through `ctypes` and not an extension library: `torch.utils.cpp_extension` compiles against
torch's headers (about a minute per kernel) and cffi's compiled mode needs Python's headers and
setuptools; this needs only the C compiler that inductor needs already, builds in well under a
second, and has no Python-object code. The shared object is cached under
``$MDCERT_KERNEL_CACHE`` (default ``~/.cache/mdcert/kernels``), keyed by a hash of the source, the
compiler's version and the CPU's flags (it is built with ``-march=native``); it is written under a
temporary name and renamed, so concurrent builds never load a half-written file.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

import torch

from experiments.optim.stepsource import C_TYPES, NativeUnavailable, c_power, step_source

__all__ = ["NativeKernel", "NativeUnavailable", "build_library", "c_power", "native_kernel"]

_FLAGS = [
    "-O3",
    "-march=native",
    "-fopenmp",
    "-ffp-contract=off",
    "-fno-math-errno",
    "-fno-trapping-math",
    "-shared",
    "-fPIC",
    "-std=c99",
]
_LOCK = threading.Lock()
_LIBS: dict[str, ctypes.CDLL] = {}


@functools.lru_cache(maxsize=1)
def _cpu_flags() -> str:
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("flags"):
                    return line
    except OSError:
        pass
    return platform.processor() or platform.machine()


@functools.lru_cache(maxsize=8)
def _version(compiler: str) -> str:
    """The compiler's ``--version`` text (asked once per process and compiler)."""
    try:
        return subprocess.run(
            [compiler, "--version"], capture_output=True, text=True, timeout=30, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise NativeUnavailable(f"the C compiler {compiler!r} does not run: {exc}") from None


def _cache_dir() -> Path:
    root = os.environ.get("MDCERT_KERNEL_CACHE")
    if not root:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = os.path.join(base, "mdcert", "kernels")
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


def build_library(source: str) -> ctypes.CDLL:
    """Compile ``source`` (C) with the flags above, or load it from the cache (see the module
    docstring); raises `NativeUnavailable` with the reason."""
    if os.environ.get("MDCERT_NATIVE_KERNELS", "1") == "0":
        raise NativeUnavailable("disabled by MDCERT_NATIVE_KERNELS=0")
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not compiler:
        raise NativeUnavailable("no C compiler found (set CC)")
    version = _version(compiler)
    key = hashlib.sha256(
        "\0".join([source, " ".join(_FLAGS), version, _cpu_flags()]).encode()
    ).hexdigest()[:32]
    with _LOCK:
        try:
            folder = _cache_dir()
        except OSError as exc:
            raise NativeUnavailable(f"no kernel cache directory: {exc}") from None
        target = folder / f"step_{key}.so"
        if str(target) in _LIBS:
            return _LIBS[str(target)]
        if not target.exists():
            with tempfile.TemporaryDirectory(dir=folder) as tmp:
                src, out = Path(tmp) / "step.c", Path(tmp) / "step.so"
                src.write_text(source, encoding="ascii")
                try:
                    done = subprocess.run(
                        [compiler, *_FLAGS, str(src), "-o", str(out)],
                        capture_output=True,
                        text=True,
                        timeout=120,
                    )
                except (OSError, subprocess.SubprocessError) as exc:
                    raise NativeUnavailable(f"the C compiler failed: {exc}") from None
                if done.returncode != 0:
                    lines = done.stderr.strip().splitlines() or ["no message"]
                    first = next((x for x in lines if "error" in x), lines[0])[:200]
                    raise NativeUnavailable(f"the C compiler failed: {first}")
                os.replace(out, target)
        try:
            lib = ctypes.CDLL(str(target))
        except OSError as exc:
            raise NativeUnavailable(f"the built kernel does not load: {exc}") from None
        _LIBS[str(target)] = lib
        return lib


class NativeKernel:
    """``kernel(q, q_out, w, g, coef) -> max|w|`` (a float), as `experiments.optim.fused.step_kernel`
    documents; bit-identical for every thread count (``threads_matter`` is False). ``fused_madd``:
    its float64 cube root rounds each ``x y + c`` once (then its bits differ from inductor's loop
    in the last place)."""

    threads_matter = False

    def __init__(self, lib: ctypes.CDLL, dtype: torch.dtype) -> None:
        real = ctypes.c_float if dtype == torch.float32 else ctypes.c_double
        fn = lib.mdcert_step
        fn.restype = real
        fn.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_double, ctypes.c_int64, ctypes.c_int]
        self._fn, self.dtype = fn, dtype
        self.fused_madd = bool(lib.mdcert_fused_madd())

    def __call__(self, q, q_out, w, g, coef) -> float:
        n = q.numel()
        for t in (q, q_out, w, g):
            if t.dtype != self.dtype or t.numel() != n or not t.is_contiguous() or t.is_cuda:
                raise ValueError("native step: contiguous CPU tensors of one dtype and size")
        ptrs = (q.data_ptr(), q_out.data_ptr(), w.data_ptr(), g.data_ptr())
        top = self._fn(*ptrs, float(coef), n, max(1, torch.get_num_threads()))
        # written in place behind torch's back: counted as an in-place op would be (autograd then
        # refuses a backward through a graph that saved the old values)
        torch.autograd.graph.increment_version((w, q_out))
        return float(top)


def native_kernel(recipe, dtype: torch.dtype, *, fma: bool = True) -> NativeKernel:
    """Build (or load from the cache) the streaming kernel for ``recipe`` and ``dtype`` (``fma``:
    `experiments.optim.stepsource.step_source`'s; False gives inductor's bits everywhere).

    Raises:
        NativeUnavailable: no such recipe here (``exp2``), another dtype, or no working C compiler.
    """
    if dtype not in C_TYPES:
        raise NativeUnavailable(f"the streaming kernel supports float32 and float64, not {dtype}")
    return NativeKernel(build_library(step_source(recipe, dtype, fma=fma)), dtype)
