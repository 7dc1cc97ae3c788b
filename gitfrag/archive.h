// archive: the bytes of `git archive` (tar, zip) for one commit's tree, as cgit 1.2.3 serves them
// as snapshots, optionally compressed (gzip, bzip2, xz) in-process, and produced piece by piece
// (a BodyStream), so a snapshot of a large tree never sits whole in memory.
//
// What is git's (2.25, the version cgit 1.2.3 builds with) and reproduced byte for byte: tar with
// a pax global header carrying the commit id, every entry's mtime the committer time, modes as
// git writes them (umask 002), folders written before their contents and only when something is
// written inside, symlinks, submodules as empty folders, long names split into ustar's prefix or
// carried in a pax header, the trailer padded to 10 KiB records; zip with deflate (zlib level 6)
// unless storing is smaller, the extended-timestamp field, DOS time in local time, the commit id
// as the archive comment; the commit's gitattributes' export-ignore, line-end conversion and zip
// text flag (archive_attributes.h). Not applied: export-subst, ident, filter drivers and
// tar.umask / core.bigFileThreshold from the repository's config.
//
// tar.gz and zip are stitched from each blob's deflate pieces, made once per blob id and kept in
// the process's ArchivePieceStore (gitfrag.h) when one is set: one gzip member whose deflate data
// is the tar's records (compressed as they come, each run ending with a full flush) between the
// blobs' pieces; a zip whose entries' data are the same pieces and an empty final block. So zip
// entries hold git's bytes and crcs but not git's compressed bytes. tar, tar.bz2, tar.xz: the
// whole tar through one compressor (their streams cannot be stitched).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "gitfrag/git.h"
#include "gitfrag/gitfrag.h"

namespace shellac::gitfrag {

struct ArchiveSources;  // archive_attributes.h

enum class ArchiveFormat { kTar, kTarGz, kTarBz2, kTarXz, kZip };

struct SnapshotFormat {
  const char* suffix;     // ".tar.gz"
  const char* mimetype;   // cgit's: "application/x-gzip"
  unsigned bit;           // cgit's bit in snapshots= (its table order, lz and zst included)
  bool rendered;          // false: a format cgit runs a program for that shellac does not make
  ArchiveFormat format;   // when rendered
};

// cgit's table, in its order: .tar .tar.gz .tar.bz2 .tar.lz .tar.xz .tar.zst .zip.
const SnapshotFormat* SnapshotFormats(size_t* count);
// The format whose suffix ends `filename`, or null.
const SnapshotFormat* SnapshotFormatOf(std::string_view filename);

// The archive of `commit`'s tree in `repository_path` with every path under `prefix` + "/".
// Opens its own handle of the repository (the stream outlives the render that made it); the
// tree's entries (names and ids) are listed at once, blobs read as the pieces are made. `abbrev`:
// the repository's abbreviation length, for export-subst's %h (then the stream is not
// Shareable()). `sources`: the repository's settings and files that change an archive, as the
// caller read them for its key. Null with *error when the repository or the tree cannot be read.
std::unique_ptr<BodyStream> MakeArchiveStream(const std::string& repository_path,
                                              const git_oid& commit, ArchiveFormat format,
                                              std::string_view prefix, int abbrev,
                                              const ArchiveSources& sources, std::string* error);

}  // namespace shellac::gitfrag
