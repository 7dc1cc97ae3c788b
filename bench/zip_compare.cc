// bench/zip_compare.cc: compresses each FILE on its own with one of the encoders shellac's page
// objects may use, for instruction counts under callgrind and the bytes they give (a sibling of
// deflate_compare.c, which compares whole-buffer zlib and libdeflate):
//   zlib6, zlib1   zlib's raw deflate at level 6 or 1 with memLevel 5 and a sync flush, one stream
//                  reset per file (the chrome memo's cache::ChainEncoder)
//   igzip0, igzip1 ISA-L's igzip at level 0 or 1, a sync flush (cache::FlushEncoder)
//   igzip0s        igzip level 0 with deflate's static (fixed) codes
//   igzip0t, igzip1t   igzip level 0 or 1 with codes made once (isal_create_hufftables) from the
//                  histogram of the files TRAIN names (a file of paths, one a line)
//   igzip0m        igzip level 0 with the codes cache::FlushEncoder's kMarkup makes (from
//                  cache/markup_histogram.h)
//   igzip0mF, igzip1F  igzip0m or igzip1 with a full flush instead of a sync flush
//   markup         makes those codes only (subtract it from igzip0m)
//   igzip1L        igzip level 1 with the large level buffer (ISAL_DEF_LVL1_LARGE)
//   train          makes the TRAIN codes only (subtract it from igzip0t/igzip1t)
//   hist           prints the TRAIN histogram, scaled, as C++ initialisers (nothing compressed)
//   libdeflateN    libdeflate's whole-buffer raw deflate at level N (ends with a final block)
//   stored         stored blocks (cache::EncodeStored's layout), no crc
//   crc            libdeflate_crc32 of every file only (every encoder needs it too; add it)
//   chain          base::FixedChain, one run per file cut every 64 KiB (fixed codes, or the
//                  block's own codes from 1 KiB on where smaller)
//   fixed          base::DeflateFixed (fixed codes only)
//   none           reads the files only (subtract it)
// Every encoder is made once and kept, as a render thread keeps its own.
//
//   g++ -O2 -std=c++20 -I. -o /tmp/zip_compare bench/zip_compare.cc base/fixed_deflate.cc -lz -ldeflate -lisal
//   valgrind --tool=callgrind /tmp/zip_compare MODE FILE...
// Prints the mode, the files, the bytes in and out. VERIFY=1 inflates every output with zlib and
// compares it with its file.
#include <isa-l/igzip_lib.h>
#include <libdeflate.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "base/fixed_deflate.h"
#include "cache/markup_histogram.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MODE FILE...\n", argv[0]);
    return 2;
  }
  const std::string mode = argv[1];
  std::vector<std::string> files;
  for (int i = 2; i < argc; ++i) {
    std::ifstream in(argv[i], std::ios::binary);
    files.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  size_t in_total = 0, out_total = 0;
  std::vector<unsigned char> out(1 << 20);
  z_stream z{};
  bool z_started = false;
  isal_zstream iz{};
  std::vector<uint8_t> level_buf(ISAL_DEF_LVL1_DEFAULT);
  bool iz_started = false;
  libdeflate_compressor* ld = nullptr;
  shellac::base::FixedChain chain;
  const bool trained = mode == "igzip0t" || mode == "igzip1t" || mode == "train" || mode == "hist";
  isal_hufftables tables{};
  if (trained) {
    const char* train = std::getenv("TRAIN");
    if (train == nullptr) {
      std::fprintf(stderr, "%s needs TRAIN\n", mode.c_str());
      return 2;
    }
    auto histogram = std::make_unique<isal_huff_histogram>();
    std::ifstream list(train);
    for (std::string path; std::getline(list, path);) {
      std::ifstream in(path, std::ios::binary);
      std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
      isal_update_histogram(reinterpret_cast<uint8_t*>(text.data()), static_cast<int>(text.size()),
                            histogram.get());
    }
    if (mode == "hist") {
      uint64_t total = 0;
      for (uint64_t n : histogram->lit_len_histogram) total += n;
      // Scaled so the literal/length counts sum to about 2^20; a seen symbol keeps at least 1.
      auto print = [&](const uint64_t* counts, int n) {
        for (int i = 0; i < n; ++i) {
          const uint64_t v =
              counts[i] == 0 ? 0 : std::max<uint64_t>(1, counts[i] * (1 << 20) / total);
          std::printf("%llu,%s", static_cast<unsigned long long>(v), i % 16 == 15 ? "\n" : " ");
        }
        std::printf("\n");
      };
      print(histogram->lit_len_histogram, ISAL_DEF_LIT_LEN_SYMBOLS);
      print(histogram->dist_histogram, ISAL_DEF_DIST_SYMBOLS);
      return 0;
    }
    if (isal_create_hufftables(&tables, histogram.get()) != 0) return 1;
  }
  const bool markup = mode == "igzip0m" || mode == "igzip0mF" || mode == "markup";
  if (markup) {
    auto histogram = std::make_unique<isal_huff_histogram>();
    std::copy(shellac::cache::kMarkupLiteralLengths.begin(),
              shellac::cache::kMarkupLiteralLengths.end(), histogram->lit_len_histogram);
    std::copy(shellac::cache::kMarkupDistances.begin(), shellac::cache::kMarkupDistances.end(),
              histogram->dist_histogram);
    if (isal_create_hufftables(&tables, histogram.get()) != 0) return 1;
  }
  std::vector<uint8_t> large_buf(ISAL_DEF_LVL1_LARGE);
  const bool verify = std::getenv("VERIFY") != nullptr;
  for (const std::string& text : files) {
    in_total += text.size();
    if (text.size() + 1024 > out.size() / 2) out.resize(text.size() * 2 + 1024);
    size_t got = 0;
    if (mode == "zlib6" || mode == "zlib1") {
      if (!z_started) {
        deflateInit2(&z, mode == "zlib6" ? 6 : 1, Z_DEFLATED, -15, 5, Z_DEFAULT_STRATEGY);
        z_started = true;
      } else {
        deflateReset(&z);
      }
      z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
      z.avail_in = static_cast<uInt>(text.size());
      z.next_out = out.data();
      z.avail_out = static_cast<uInt>(out.size());
      deflate(&z, Z_SYNC_FLUSH);
      got = out.size() - z.avail_out;
    } else if (mode.starts_with("igzip")) {
      if (!iz_started) {
        isal_deflate_init(&iz);
        iz_started = true;
      } else {
        isal_deflate_reset(&iz);
      }
      const bool one = mode.starts_with("igzip1");
      std::vector<uint8_t>& buf = mode == "igzip1L" ? large_buf : level_buf;
      iz.level = one ? 1 : 0;
      iz.level_buf = one ? buf.data() : nullptr;
      iz.level_buf_size = one ? static_cast<uint32_t>(buf.size()) : 0;
      if (mode == "igzip0s") isal_deflate_set_hufftables(&iz, nullptr, IGZIP_HUFFTABLE_STATIC);
      if (trained || markup) isal_deflate_set_hufftables(&iz, &tables, IGZIP_HUFFTABLE_CUSTOM);
      iz.flush = mode.ends_with("F") ? FULL_FLUSH : SYNC_FLUSH;
      iz.end_of_stream = 0;
      iz.next_in = reinterpret_cast<uint8_t*>(const_cast<char*>(text.data()));
      iz.avail_in = static_cast<uint32_t>(text.size());
      iz.next_out = out.data();
      iz.avail_out = static_cast<uint32_t>(out.size());
      if (isal_deflate(&iz) != COMP_OK) return 1;
      got = out.size() - iz.avail_out;
    } else if (mode.starts_with("libdeflate")) {
      if (ld == nullptr) ld = libdeflate_alloc_compressor(std::atoi(mode.c_str() + 10));
      got = libdeflate_deflate_compress(ld, text.data(), text.size(), out.data(), out.size());
    } else if (mode == "chain") {
      std::string deflate;
      chain.Begin();
      for (size_t at = 0; at < text.size(); at += 64 << 10) chain.Add(std::string_view(text).substr(at, 64 << 10), &deflate);
      got = deflate.size();
      std::memcpy(out.data(), deflate.data(), got);  // for VERIFY
    } else if (mode == "fixed") {
      std::string deflate;
      shellac::base::DeflateFixed(text, /*final=*/false, &deflate);
      got = deflate.size();
      std::memcpy(out.data(), deflate.data(), got);  // for VERIFY
    } else if (mode == "stored") {
      std::string deflate;
      for (size_t at = 0; at < text.size(); at += 65535) {
        const size_t n = std::min<size_t>(text.size() - at, 65535);
        const char header[5] = {0, static_cast<char>(n & 0xff), static_cast<char>(n >> 8),
                                static_cast<char>(~n & 0xff), static_cast<char>((~n >> 8) & 0xff)};
        deflate.append(header, 5);
        deflate.append(text.data() + at, n);
      }
      got = deflate.size();
      std::memcpy(out.data(), deflate.data(), got);  // for VERIFY
    } else if (mode == "crc") {
      got = libdeflate_crc32(0, text.data(), text.size()) & 0;
    } else if (mode != "none" && mode != "train" && mode != "markup") {
      std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
      return 2;
    }
    out_total += got;
    if (verify && mode != "none" && mode != "train" && mode != "markup" &&
        mode != "crc" && !mode.starts_with("libdeflate")) {
      z_stream inflater{};
      inflateInit2(&inflater, -15);
      std::string back(text.size() + 1, '\0');
      inflater.next_in = out.data();
      inflater.avail_in = static_cast<uInt>(got);
      inflater.next_out = reinterpret_cast<Bytef*>(back.data());
      inflater.avail_out = static_cast<uInt>(back.size());
      const int rc = inflate(&inflater, Z_SYNC_FLUSH);
      back.resize(back.size() - inflater.avail_out);
      inflateEnd(&inflater);
      if ((rc != Z_OK && rc != Z_BUF_ERROR) || back != text) {
        std::fprintf(stderr, "%s: output does not inflate to its text\n", mode.c_str());
        return 1;
      }
    }
  }
  if (z_started) deflateEnd(&z);
  if (ld != nullptr) libdeflate_free_compressor(ld);
  std::printf("%s files=%zu in=%zu out=%zu\n", mode.c_str(), files.size(), in_total, out_total);
  return 0;
}
