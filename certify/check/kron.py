"""The exact Gram matrix of Kronecker rows, a block of rows at a time (trusted code, part of
`certify.check`; docs/theory.md sections 4.3 and 4.6): the tight-row proof of the solver and of the
checker (`certify.check.verified.inverse_diagonal_upper`) forms ``(L L^T) o (Z Z^T)`` from its
factors, so that no n x n array of Python integers is ever held."""

from __future__ import annotations

import numpy as np

__all__ = ["KronGram"]


class KronGram:
    """The exact Gram matrix ``M = (L L^T) o (Z_g Z_g^T)`` of Kronecker rows ``vec(l_i z_g(i)^T)``
    (``M_ij = (l_i . l_j) (z_g(i) . z_g(j))``), formed a block of rows at a time from its factors by
    python-flint products: never an n x n array of Python integers. L: (n, d) exact integers; Zg:
    (k, d) exact integers, the distinct right factors; g: (n,) indices into Zg."""

    def __init__(self, L, Zg, g) -> None:
        import flint

        self.L = np.asarray(L, dtype=object)
        self.g = np.asarray(g, dtype=np.int64)
        self.Zg = Zg = np.asarray(Zg, dtype=object)
        n, d = len(self.g), Zg.shape[1]
        self.shape = (n, n)
        self._Lt = flint.fmpz_mat(n, d, [int(v) for v in self.L.ravel()]).transpose()
        self._Zt = flint.fmpz_mat(Zg.shape[0], d, [int(v) for v in Zg.ravel()]).transpose()
        self.zz = [sum(int(v) * int(v) for v in row) for row in Zg]  # ||z_g||^2

    def top_bits(self) -> int:
        """A bit length >= that of every entry (Cauchy-Schwarz: ``|M_ij| <= max_i M_ii``)."""
        ll = max(sum(int(v) * int(v) for v in row) for row in self.L)
        return ll.bit_length() + max(self.zz[int(e)] for e in set(self.g.tolist())).bit_length()

    def rows(self, i0: int, i1: int) -> np.ndarray:
        """Rows ``i0:i1`` of M (object array of exact integers)."""
        import flint

        b, n, d = i1 - i0, self.shape[0], self.L.shape[1]
        Lb = flint.fmpz_mat(b, d, [int(v) for v in self.L[i0:i1].ravel()])
        G = np.array((Lb * self._Lt).tolist(), dtype=object).reshape(b, n)
        Zb = flint.fmpz_mat(b, d, [int(v) for v in self.Zg[self.g[i0:i1]].ravel()])
        H = np.array((Zb * self._Zt).tolist(), dtype=object).reshape(b, -1)
        return G * H[:, self.g]
