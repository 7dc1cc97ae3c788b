// fixed_deflate: short runs of bytes as raw deflate with fixed Huffman codes, each run on its own
// (it refers to nothing before it), for a snapshot's tar records between its blobs' pieces
// (archive.cc): a header or two, the zeros that pad a file's data, the trailer.
//
// Those runs are few hundred bytes, mostly zeros and octal digits: a greedy match finder over the
// run alone (4-byte hashes, one candidate each) and the fixed codes find what zlib's level 1 finds
// there, at a tenth of the instructions: no Huffman tree, no window, no hash table to clear beyond
// a small one, and a run of zeros costs one match per 258 bytes.
#pragma once

#include <string>
#include <string_view>

namespace shellac::gitfrag {

// Appends `in` as one fixed-code block whose matches stay inside `in`, then either an empty stored
// block (final false: the output ends on a byte boundary and a decoder's next block may follow,
// as after zlib's full flush) or nothing (final true: the block is the stream's last, its last
// byte padded with zero bits).
void DeflateFixed(std::string_view in, bool final, std::string* out);

}  // namespace shellac::gitfrag
