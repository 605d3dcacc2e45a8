"""The C source of the streaming step kernel of `experiments.optim.native` (docs/theory.md 2.3).

`step_source` writes the C file of one exponent's kernel: the loop (a block of 128 entries computed
on the stack, copied out with non-temporal stores, blocks dealt to the OpenMP threads as they come
free) around `c_power`, the body of ``|x|^e``. The cube roots follow `experiments.optim.fused.
cbrt_expr` operation for operation: both take their constants from `CBRT` and their products from
`square_and_multiply` and `horner`, so the C kernel and inductor's loop give the same bits, with one
exception: where the target has fused multiply-adds, the float64 cube root's ``x y + c`` is one
rounding in C (``MAD``; inductor's loop never fuses), which took the float64 p = 1.75 kernel from
9.2 to 7.5 ms in one process (benchmarks/README.md, "Eighth session"). Both forms are within 1.4 units of 2^-52
of the cube root (tested against exact arithmetic); ``step_source(..., fma=False)`` writes the
unfused form, tested bit for bit against inductor's loop.
"""

from __future__ import annotations

import torch

__all__ = [
    "CBRT",
    "CBRT_SERIES",
    "C_TYPES",
    "INV_CBRT_SERIES",
    "NativeUnavailable",
    "c_power",
    "horner",
    "square_and_multiply",
    "step_source",
]

# per dtype: the C type, its bits as an unsigned integer, the |x| and exponent masks, the suffix of
# a literal (also `experiments.optim.sgdsource`)
C_TYPES = {
    torch.float32: ("float", "uint32_t", "0x7fffffffu", "0x7f800000u", "f"),
    torch.float64: ("double", "uint64_t", "0x7fffffffffffffffull", "0x7ff0000000000000ull", ""),
}
# the cube roots of both kernels (`experiments.optim.fused.cbrt_expr`), per dtype: the magic of the
# start (float32: of the root, with two Halley iterations; float64: of the inverse root, refined by
# the series below, no division), the Halley iterations, the floor used when the root is multiplied
# by |x| (``e >= 1``: inputs below it give results that underflow to 0 either way), and for
# ``e < 1`` the rescaling of tiny and huge inputs by 2^(+-k3)
CBRT = {
    torch.float32: (709921077.0, 2, 2.0**-114, 2.0**-100, 2.0**120, 99),
    torch.float64: (6142612374334293000.0, 0, 2.0**-810, 2.0**-900, 2.0**960, 900),
}
# the float64 series: the coefficients of (1 + d)^(-1/3) and (1 + d)^(-2/3) after the constant 1
# (third order each: 1.3-1.4 units of 2^-52 in 2e7 sampled inputs, with or without fused
# multiply-adds; the fourth order of the first step was not needed)
INV_CBRT_SERIES = (-1.0 / 3.0, 2.0 / 9.0, -14.0 / 81.0)
CBRT_SERIES = (-2.0 / 3.0, 5.0 / 9.0, -40.0 / 81.0)
_TEMPLATE = r"""
#include <stdint.h>
#include <string.h>
#include <math.h>
#if defined(__SSE2__)
#include <immintrin.h>
#endif
typedef REAL real;
typedef UBITS ubits;
/* a*b + c: one rounding (fma) where the target has fused multiply-adds, else two (the bits of
   inductor's loop, which never fuses them); used by the float64 cube root only */
#if USEFMA && defined(__FMA__)
#define MAD(a, b, c) fma((a), (b), (c))
#define FUSED_MADD 1
#else
#define MAD(a, b, c) ((a) * (b) + (c))
#define FUSED_MADD 0
#endif
int mdcert_fused_madd(void) { return FUSED_MADD; }
#define FABS FABSFN
#define COPYSIGN COPYSIGNFN
#define BLK 128
#define CHUNK 65536
static inline ubits tobits(real x) { ubits b; memcpy(&b, &x, sizeof b); return b; }
static inline real power(real a) {
POWER
}
static void stream(char* dst, const char* src, int64_t nbytes) {
  int64_t i = 0;
  while (i < nbytes && ((uintptr_t)(dst + i) & 63)) { dst[i] = src[i]; i++; }
#if defined(__AVX512F__)
  for (; i + 64 <= nbytes; i += 64)
    _mm512_stream_si512((void*)(dst + i), _mm512_loadu_si512((const void*)(src + i)));
#elif defined(__AVX__)
  for (; i + 32 <= nbytes; i += 32)
    _mm256_stream_si256((__m256i*)(dst + i), _mm256_loadu_si256((const __m256i*)(src + i)));
#elif defined(__SSE2__)
  for (; i + 16 <= nbytes; i += 16)
    _mm_stream_si128((__m128i*)(dst + i), _mm_loadu_si128((const __m128i*)(src + i)));
#endif
  if (i < nbytes) memcpy(dst + i, src + i, (size_t)(nbytes - i));
}
real mdcert_step(const real* q, real* qo, real* w, const real* g, double coef, int64_t n,
                 int threads) {
  const real c = (real)coef;
  ubits top = 0, qtop = 0;
  const int64_t chunks = (n + CHUNK - 1) / CHUNK;
  #pragma omp parallel for schedule(dynamic, 1) num_threads(threads) reduction(max:top, qtop)
  for (int64_t k = 0; k < chunks; k++) {
    real xb[BLK] __attribute__((aligned(64)));
    real wb[BLK] __attribute__((aligned(64)));
    const int64_t end = (k + 1) * CHUNK < n ? (k + 1) * CHUNK : n;
    for (int64_t b = k * CHUNK; b < end; b += BLK) {
      const int64_t m = end - b < BLK ? end - b : BLK;
      ubits t = 0, u = 0;
      #pragma omp simd reduction(max:t, u)
      for (int64_t i = 0; i < m; i++) {
        const real x = q[b + i] + c * g[b + i];
        const real y = power(FABS(x));
        xb[i] = x;
        wb[i] = COPYSIGN(y, x);
        const ubits yb = tobits(y) & ABSMASK, xa = tobits(x) & ABSMASK;
        t = yb > t ? yb : t;
        u = xa > u ? xa : u;
      }
      top = t > top ? t : top;
      qtop = u > qtop ? u : qtop;
      stream((char*)(qo + b), (const char*)xb, m * (int64_t)sizeof(real));
      stream((char*)(w + b), (const char*)wb, m * (int64_t)sizeof(real));
    }
  }
#if defined(__SSE2__)
  _mm_sfence();
#endif
  real out;
  if (qtop >= EXPMASK) top = EXPMASK | 1;  /* a non-finite dual: NaN */
  memcpy(&out, &top, sizeof out);
  return out;
}
"""


class NativeUnavailable(RuntimeError):
    """The streaming kernel cannot be built here, or not for this exponent (the message says why)."""


def square_and_multiply(base, m: int, mul):
    """``base^m`` by square and multiply (None for ``m = 0``), ``mul(x, y)`` the product: one order
    of operations for both kernels (`experiments.optim.fused` multiplies tensors, `c_power` emits C
    statements), so that their bits agree."""
    result = None
    while m:
        if m & 1:
            result = base if result is None else mul(result, base)
        m >>= 1
        if m:
            base = mul(base, base)
    return result


def horner(d, coefs: tuple[float, ...], mad):
    """``c1 + d (c2 + d (c3 + ...))``, innermost first, with ``mad(x, y, c) = x y + c``: one order
    of operations for both kernels, as `square_and_multiply` (the C kernel's ``MAD`` may fuse it)."""
    acc = coefs[-1]
    for c in reversed(coefs[:-1]):
        acc = mad(d, acc, c)
    return acc


def _lit(value: float, suffix: str = "") -> str:
    return f"{float(value).hex()}{suffix}"


def _c_mad(x, y, c) -> str:
    return f"MAD({x}, {y if isinstance(y, str) else _lit(y)}, {_lit(c)})"


def _c_pow(var: str, m: int, lines: list[str], real: str) -> str | None:
    """C statements for ``var^m`` (`square_and_multiply`); returns the name of the result."""
    names = iter(range(1 << 30))

    def mul(x: str, y: str) -> str:
        name = f"p{next(names)}"
        lines.append(f"  const {real} {name} = {x} * {y};")
        return name

    return square_and_multiply(var, m, mul)


def _cbrt64_lines() -> list[str]:
    """The float64 cube root of `experiments.optim.fused._cbrt64`, the same operations in order
    (``MAD`` where it has ``x y + c``)."""
    inv, root = (horner("d", coefs, _c_mad) for coefs in (INV_CBRT_SERIES, CBRT_SERIES))
    return [
        "  int64_t sb; memcpy(&sb, &s, sizeof sb);",
        f"  const int64_t rb = (int64_t)MAD(-(double)sb, 1.0 / 3.0, {_lit(CBRT[torch.float64][0])});",
        "  double r; memcpy(&r, &rb, sizeof r);",
        f"  {{ const double t = s * r, r2 = r * r, d = MAD(t, r2, -1.0); r = r * MAD(d, {inv}, 1.0); }}",
        "  const double t = s * r, r2 = r * r, d = MAD(t, r2, -1.0), u = t * r;",
        f"  double y = MAD(u, d * ({root}), u);",
    ]


def c_power(recipe: tuple[int, str, float, tuple[int, ...]], dtype: torch.dtype) -> str:
    """The C body of ``|x|^e`` for ``a = |x|`` (``recipe`` from `experiments.optim.fused`)."""
    whole, kind, _, bits = recipe
    real, _, _, _, suf = C_TYPES[dtype]
    magic, iters, lowest, tiny, huge, k3 = CBRT[dtype]
    lines: list[str] = []
    if kind == "integer":
        result = _c_pow("a", whole, lines, real)
        return "\n".join(lines + [f"  return {result};"])
    if kind in ("cbrt", "cbrt2"):
        floor = whole >= 1
        if floor:
            lines.append(f"  const {real} s = a < {_lit(lowest, suf)} ? {_lit(lowest, suf)} : a;")
        else:
            lines += [
                f"  const int small = a < {_lit(tiny, suf)}, big = a > {_lit(huge, suf)};",
                f"  {real} s = small ? a * {_lit(2.0**k3, suf)} : (big ? a * "
                f"{_lit(2.0**-k3, suf)} : a);",
                f"  s = s < {_lit(tiny, suf)} ? {_lit(tiny, suf)} : s;",
            ]
        if dtype == torch.float64:
            lines += _cbrt64_lines()
        else:
            lines.append("  int32_t sb; memcpy(&sb, &s, sizeof sb);")
            lines.append(
                f"  const int32_t yb = (int32_t)((float)sb * (float)(1.0 / 3.0) + "
                f"(float){_lit(magic)});"
            )
            lines.append(f"  {real} y; memcpy(&y, &yb, sizeof y);")
        for _ in range(iters):
            lines.append(
                f"  {{ const {real} y3 = y * y * y; y = y * ((y3 + 2 * s) / (2 * y3 + s)); }}"
            )
        if not floor:
            lines.append(
                f"  y = small ? y * {_lit(2.0 ** -(k3 // 3), suf)} : (big ? y * "
                f"{_lit(2.0 ** (k3 // 3), suf)} : y);"
            )
            lines.append("  y = a == 0 ? a : y;")
        lines.append(f"  const {real} root = {'y' if kind == 'cbrt' else 'y * y'};")
    elif kind == "roots":
        lines.append(f"  {real} t = a, root = 0;")
        first = True
        for i in range(1, bits[-1] + 1):
            lines.append(f"  t = {'sqrtf' if dtype == torch.float32 else 'sqrt'}(t);")
            if i in bits:
                lines.append("  root = t;" if first else "  root = root * t;")
                first = False
    else:
        raise NativeUnavailable(f"the streaming kernel has no {kind} recipe (exp2/log2)")
    power = _c_pow("a", whole, lines, real)
    lines.append(f"  return {'root' if power is None else f'root * {power}'};")
    return "\n".join(lines)


def step_source(recipe, dtype: torch.dtype, *, fma: bool = True) -> str:
    """The C file of the kernel for ``recipe`` (`experiments.optim.fused`) and ``dtype``; ``fma``:
    fuse the float64 cube root's multiply-adds where the target has the instruction (the kernel's
    ``mdcert_fused_madd()`` says whether it did; ``False``: inductor's bits everywhere)."""
    real, ubits, absmask, expmask, _ = C_TYPES[dtype]
    body = c_power(recipe, dtype)
    return (
        _TEMPLATE.replace("REAL", real)
        .replace("UBITS", ubits)
        .replace("USEFMA", "1" if fma else "0")
        .replace("ABSMASK", absmask)
        .replace("EXPMASK", expmask)
        .replace("POWER", body)
        .replace("FABSFN", "fabsf" if dtype == torch.float32 else "fabs")
        .replace("COPYSIGNFN", "copysignf" if dtype == torch.float32 else "copysign")
    )
