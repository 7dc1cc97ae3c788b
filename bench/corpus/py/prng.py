"""Seeded PRNG shared by bench/corpus's generators.

splitmix64 on Python integers: the same seed gives the same sequence on every platform and every
Python 3 release (no floats, no dependence on the random module's algorithms, which have changed
between releases).
"""

M64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


class Rng:
    __slots__ = ("s",)

    def __init__(self, seed, stream=0):
        self.s = ((seed & M64) * GOLDEN + 0xD1B54A32D192ED03 + stream * 0x2545F4914F6CDD1D) & M64
        for _ in range(4):
            self.u64()

    def u64(self):
        s = (self.s + GOLDEN) & M64
        self.s = s
        z = ((s ^ (s >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        return z ^ (z >> 31)

    def below(self, n):
        """Integer in [0, n); n >= 1."""
        return self.u64() % n

    def between(self, a, b):
        """Integer in [a, b] (inclusive)."""
        return a + self.u64() % (b - a + 1)

    def chance(self, num, den):
        """True with probability num/den."""
        return self.u64() % den < num

    def pick(self, seq):
        return seq[self.u64() % len(seq)]

    def weighted(self, pairs):
        """pairs: [(weight, value), ...] with integer weights."""
        total = 0
        for w, _ in pairs:
            total += w
        x = self.u64() % total
        for w, v in pairs:
            if x < w:
                return v
            x -= w
        return pairs[-1][1]

    def sample(self, seq, k):
        """k distinct elements of seq, in draw order (partial Fisher-Yates on a copy)."""
        a = list(seq)
        n = len(a)
        k = min(k, n)
        for i in range(k):
            j = i + self.u64() % (n - i)
            a[i], a[j] = a[j], a[i]
        return a[:k]

    def randbytes(self, n):
        out = bytearray()
        while len(out) < n:
            out += self.u64().to_bytes(8, "little")
        return bytes(out[:n])

    def hexstr(self, n):
        return self.randbytes((n + 1) // 2).hex()[:n]
