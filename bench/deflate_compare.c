// bench/deflate_compare.c: compresses each FILE whole, for instruction counts under callgrind:
// zlibN as cache::SegmentEncoder sets zlib up for a body of known size (window and hash table of
// the body's size, one sync flush) at level N (default 1), libdeflateN as libdeflate's whole-buffer
// raw deflate at level N (one compressor for all files, as a thread would keep it); each with the
// crc32 a segment or a gzip member needs. `none` reads the files only (subtract it).
//
//   apt-get install libdeflate-dev   # not a dependency of shellac itself
//   gcc -O2 -o /tmp/deflate_compare bench/deflate_compare.c -lz -ldeflate
//   valgrind --tool=callgrind /tmp/deflate_compare zlib1|zlib6|libdeflate1|libdeflate6|none FILE...
// Prints the bytes in and out; bench/results/kinds-callgrind-2.md has what it measured.
#include <libdeflate.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
static char* slurp(const char* p, size_t* n) {
  FILE* f = fopen(p, "rb");
  fseek(f, 0, SEEK_END);
  *n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* b = malloc(*n + 1);
  if (fread(b, 1, *n, f) != *n) exit(1);
  fclose(f);
  return b;
}
int main(int argc, char** argv) {
  const char* mode = argv[1];
  size_t in_total = 0, out_total = 0;
  struct libdeflate_compressor* c = NULL;
  for (int i = 2; i < argc; ++i) {
    size_t n;
    char* b = slurp(argv[i], &n);
    size_t cap = n + n / 8 + 64;
    unsigned char* out = malloc(cap);
    size_t got = 0;
    if (!strncmp(mode, "zlib", 4)) {
      int level = mode[4] ? atoi(mode + 4) : 1;
      int bits = 9;
      while (bits < 15 && ((size_t)1 << bits) < n) ++bits;
      int mem = bits - 7;
      if (mem < 1) mem = 1;
      if (mem > 8) mem = 8;
      z_stream z;
      memset(&z, 0, sizeof z);
      deflateInit2(&z, level, Z_DEFLATED, -bits, mem, Z_DEFAULT_STRATEGY);
      z.next_in = (Bytef*)b;
      z.avail_in = n;
      z.next_out = out;
      z.avail_out = cap;
      deflate(&z, Z_SYNC_FLUSH);
      got = cap - z.avail_out;
      deflateEnd(&z);
      crc32(0, (Bytef*)b, n);
    } else if (!strncmp(mode, "libdeflate", 10)) {
      if (!c)
        c = libdeflate_alloc_compressor(mode[10] ? atoi(mode + 10)
                                                 : 1);  // kept per thread, as an encoder would be
      got = libdeflate_deflate_compress(c, b, n, out, cap);
      libdeflate_crc32(0, b, n);
    }
    in_total += n;
    out_total += got;
    free(b);
    free(out);
  }
  printf("%s files=%d in=%zu out=%zu\n", mode, argc - 2, in_total, out_total);
  return 0;
}
