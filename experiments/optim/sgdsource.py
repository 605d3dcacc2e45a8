"""The C source of the fused p = 2 step of `experiments.optim.sgdfused` (AVX-512 intrinsics).

``mdcert_sgd`` runs the speculative pass over contiguous per-thread ranges (16 float32 or 8 float64
lanes, a scalar tail with the same roundings), ``mdcert_sgd_undo`` takes a pass back, and
``mdcert_sgd_available`` says whether the target had AVX-512 (else the file defines only that).
"""

from __future__ import annotations

import torch

from experiments.optim.stepsource import C_TYPES

__all__ = ["sgd_source"]

# per dtype: lanes, intrinsic suffixes (vector, integer lanes), mask and vector types, the scalar
# fma; the C type, its bits and masks come from `experiments.optim.stepsource.C_TYPES`
_AVX512 = {
    torch.float32: (16, "ps", "epi32", "__mmask16", "__m512", "fmaf"),
    torch.float64: (8, "pd", "epi64", "__mmask8", "__m512d", "fma"),
}

_TEMPLATE = r"""
#include <stdint.h>
#include <string.h>
#include <math.h>
#include <omp.h>
#if defined(__AVX512F__)
#include <immintrin.h>
typedef REAL real;
typedef UBITS ubits;
#define L LANES
static inline ubits tobits(real x) { ubits b; memcpy(&b, &x, sizeof b); return b; }
int mdcert_sgd_available(void) { return 1; }
static void range(int64_t n, int t, int nt, int64_t* s, int64_t* e) {
  const int64_t v = n / L;
  *s = v * t / nt * L;
  *e = t == nt - 1 ? n : v * (t + 1) / nt * L;
}
/* one entry by scalar code, the same roundings as the vector lanes: 0 written, 1 not finite
   (nothing written), 2 the log is full (nothing written) */
static inline int one(real* w, const real* g, real c, int64_t i, int64_t* li, real* lv,
                      int64_t* k, int64_t cap, ubits* top) {
  const real x = w[i], y = FMA(c, g[i], x), back = FMA(-c, g[i], y);
  const ubits yb = tobits(y) & ABSMASK;
  if (yb >= EXPMASK) return 1;
  if (tobits(back) != tobits(x)) {
    if (*k >= cap) return 2;
    li[*k] = i; lv[*k] = x; (*k)++;
  }
  if (yb > *top) *top = yb;
  w[i] = y;
  return 0;
}
/* status: 0 done, 1 a non-finite entry (undone), 2 a log full (undone); top: max|W+| bits;
   done[t]: the end of what thread t wrote, used[t]: its log entries */
int mdcert_sgd(real* w, const real* g, double coef, int64_t n, int threads, int64_t* lidx,
               real* lval, int64_t cap, int64_t* used, int64_t* done, ubits* top_out, int* nt_out) {
  const real c = (real)coef;
  int status = 0;
  ubits top = 0;
  #pragma omp parallel num_threads(threads) reduction(max:top)
  {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    if (t == 0) *nt_out = nt;  /* the team OpenMP gave: the undo cuts the same ranges */
    int64_t s, e, k = 0;
    range(n, t, nt, &s, &e);
    int64_t* li = lidx + cap * t;
    real* lv = lval + cap * t;
    const VEC cv = _mm512_set1_SFX(c);
    __m512i tv = _mm512_setzero_si512();
    const __m512i absm = _mm512_set1_ISFX(ABSMASK), expm = _mm512_set1_ISFX(EXPMASK);
    int64_t i = s;
    int bad = 0, full = 0;
    while (i < e && !bad && !full) {
      int stop;
      #pragma omp atomic read
      stop = status;
      if (stop) break;
      const int64_t blk = i + 4096 < e ? i + 4096 : e;
      for (; i + L <= blk; i += L) {
        const VEC x = _mm512_loadu_SFX(w + i), gv = _mm512_loadu_SFX(g + i);
        const VEC y = _mm512_fmadd_SFX(cv, gv, x);
        const VEC back = _mm512_fnmadd_SFX(cv, gv, y);
        const MASKT miss = _mm512_cmpneq_ISFX_mask(CASTI(back), CASTI(x));
        const __m512i yb = _mm512_and_si512(CASTI(y), absm);
        if (_mm512_cmpge_epu_ISFX_mask(yb, expm)) { bad = 1; break; }
        if (miss) {
          const int cnt = __builtin_popcountll((unsigned long long)miss);
          if (k + L > cap) { full = 1; break; }  /* whole vectors are stored: L of room */
          _mm512_storeu_SFX(lv + k, _mm512_maskz_compress_SFX(miss, x));
          STORE_INDICES
          k += cnt;
        }
        tv = _mm512_max_epu_ISFX(tv, yb);
        _mm512_storeu_SFX(w + i, y);
      }
      if (!bad && !full && i < blk && blk == e) {  /* the ragged tail of the last range */
        ubits tt = 0;
        for (; i < e; i++) {
          const int r = one(w, g, c, i, li, lv, &k, cap, &tt);
          if (r) { bad = r == 1; full = r == 2; break; }
        }
        if (tt > top) top = tt;
      }
    }
    if (bad || full) {
      #pragma omp atomic write
      status = bad ? 1 : 2;
    }
    done[t] = i;
    used[t] = k;
    const ubits tr = _mm512_reduce_max_epu_ISFX(tv);
    if (tr > top) top = tr;
  }
  *top_out = top;
  return status;
}
/* take back a pass: W <- fma(-coef, G, W) on [start of range, done[t]), then the log */
void mdcert_sgd_undo(real* w, const real* g, double coef, int64_t n, int nt,
                     const int64_t* lidx, const real* lval, int64_t cap, const int64_t* used,
                     const int64_t* done) {
  const real c = (real)coef;
  #pragma omp parallel for num_threads(nt) schedule(static, 1)
  for (int t = 0; t < nt; t++) {
    int64_t s, e, i;
    range(n, t, nt, &s, &e);
    const VEC cv = _mm512_set1_SFX(c);
    for (i = s; i + L <= done[t]; i += L)
      _mm512_storeu_SFX(w + i, _mm512_fnmadd_SFX(cv, _mm512_loadu_SFX(g + i), _mm512_loadu_SFX(w + i)));
    for (; i < done[t]; i++) w[i] = FMA(-c, g[i], w[i]);
    for (int64_t k = 0; k < used[t]; k++) w[lidx[cap * t + k]] = lval[cap * t + k];
  }
}
#else
int mdcert_sgd_available(void) { return 0; }
#endif
"""

# compress into a register, then one plain store (a compress store to memory is microcoded and
# slow on AMD Zen 4); the log keeps L entries of room for the lanes past the count
_STORE32 = (
    "{ const __m512i base = _mm512_add_epi64(_mm512_set1_epi64(i), "
    "_mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0));\n"
    "            const __mmask8 lo = (__mmask8)(miss & 0xff), hi = (__mmask8)(miss >> 8);\n"
    "            _mm512_storeu_si512(li + k, _mm512_maskz_compress_epi64(lo, base));\n"
    "            _mm512_storeu_si512(li + k + __builtin_popcount(lo), _mm512_maskz_compress_epi64(\n"
    "                hi, _mm512_add_epi64(base, _mm512_set1_epi64(8)))); }"
)
_STORE64 = (
    "_mm512_storeu_si512(li + k, _mm512_maskz_compress_epi64(miss, _mm512_add_epi64("
    "_mm512_set1_epi64(i), _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0))));"
)


def sgd_source(dtype: torch.dtype) -> str:
    """The C file for ``dtype`` (float32 or float64)."""
    real, ubits, absmask, expmask, _ = C_TYPES[dtype]
    lanes, vsfx, isfx, mask, vec, fma = _AVX512[dtype]
    out = _TEMPLATE
    for key, value in [
        ("STORE_INDICES", _STORE32 if dtype == torch.float32 else _STORE64),
        ("CASTI", f"_mm512_cast{vsfx}_si512"),
        ("_ISFX", "_" + isfx),
        ("_epu_epi32", "_epu32"),
        ("_epu_epi64", "_epu64"),
        ("_SFX", "_" + vsfx),
        ("REAL", real),
        ("UBITS", ubits),
        ("LANES", str(lanes)),
        ("VEC", vec),
        ("MASKT", mask),
        ("ABSMASK", absmask),
        ("EXPMASK", expmask),
        ("FMA", fma),
    ]:
        out = out.replace(key, value)
    return out
