// fixed_deflate: runs of bytes as raw deflate with fixed Huffman codes and a greedy match finder
// (4-byte hashes, one candidate each): no Huffman tree, no window to set up, no hash table to
// clear. Where the runs are short (a few hundred bytes to a few KiB), a block's tree and zlib's
// stream setup cost more than compressing them, and dynamic codes gain little over fixed ones.
//
// - DeflateFixed: a run on its own (it refers to nothing before it): a snapshot's tar records
//   between its blobs' pieces (gitfrag/archive.cc), mostly zeros and octal digits, where it finds
//   what zlib's level 1 finds at a tenth of the instructions.
// - FixedChain: the texts of one run of segments (a frame's literal span, proxy/page_object.cc),
//   each its own block ending on a byte boundary, whose matches may reach back into every text
//   given before it in the run, compressed here or not (Known: a segment made elsewhere that a
//   decoder gets between them). A text of 1 KiB or more is coded with the block's own Huffman
//   codes (built from the same greedy matches) when they take fewer bits than the fixed ones,
//   header included: a commit's message and diffstat are where fixed codes cost most.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace shellac::base {

// Appends `in` as one fixed-code block whose matches stay inside `in`, then either an empty stored
// block (final false: the output ends on a byte boundary and a decoder's next block may follow,
// as after zlib's full flush) or nothing (final true: the block is the stream's last, its last
// byte padded with zero bits).
void DeflateFixed(std::string_view in, bool final, std::string* out);

// One run's texts as fixed-code blocks, each ending on an empty stored block (a sync flush: the
// decoder's window carries on). Keeps its match finder and the run's text between calls: keep one
// per thread. Memory: the run's text, trimmed to its last 32 KiB once it passes 256 KiB.
class FixedChain {
 public:
  FixedChain();
  ~FixedChain();
  FixedChain(const FixedChain&) = delete;
  FixedChain& operator=(const FixedChain&) = delete;

  // Starts a run that refers to nothing before it.
  void Begin();
  // Appends `text` to *out as one non-final block; its matches may refer back into the run's
  // texts so far (up to 32 KiB back), which a decoder of the run's segments in order has. Fixed
  // codes, or from 1 KiB on the block's own codes where those are smaller.
  void Add(std::string_view text, std::string* out);
  // The decoder gets `text` from another segment here: later texts may refer back into it.
  void Known(std::string_view text);

  struct Finder;

 private:
  void Hash(size_t end);  // enters the run's positions before `end` not entered yet

  std::unique_ptr<Finder> finder_;
  std::string run_;     // the run's text (its last 32 KiB at least)
  size_t hashed_ = 0;   // positions of run_ before this are in the finder (or passed over)
};

}  // namespace shellac::base
