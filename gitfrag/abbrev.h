// Abbreviated object ids as git prints them in a diff's "index" line, which is what cgit 1.2.3
// shows (Debian's package links git 2.39.1; cgit leaves core.abbrev at its default, "auto").
//
// git's auto length grows with the repository: len = ceil((msb(N) + 1) / 2) hex digits, at least
// 7, where N is the number of objects in the repository's pack indexes (loose objects are not
// counted; a multi-pack-index is not read: its packs are counted from their own indexes). 16,384
// packed objects give 8 digits, 65,536 give 9, git/git's ~850k give 10. Each id is then
// lengthened until no other object in the repository starts with the same digits.
#pragma once

#include <git2.h>

#include <string>

namespace shellac::gitfrag {

// The object count git's abbreviation length is derived from: the objects listed in every pack
// index under `git_dir`/objects/pack and in those of its alternates. Reads each .idx file's
// fan-out table only.
uint64_t PackedObjectCount(const std::string& git_dir);

// git's default abbreviation length for `packed_objects` objects (7 .. 40).
int AbbrevLength(uint64_t packed_objects);

// The shortest prefix of `oid`, `min_len` hex digits or more, that no other object in `repo`
// (`odb`: its object database) shares. The null id (an added or deleted file's side) is `min_len`
// zeros.
//
// That is min_len or one more than the most digits any other object shares with `oid`, and only
// `oid`'s neighbours can share the most: in each pack index the entries on either side of where
// `oid` is or would be (this thread's PackReader looks), and of the loose objects those in the one
// folder objects/XX that holds ids beginning with `oid`'s first two digits, in the repository and
// in each alternate (one directory opened each: it fails when there are none). Where the reader
// cannot speak for every pack (pack_reader.h: SharedHexDigits), or a loose entry is not a
// lowercase id, the answer is libgit2's (UniqueAbbrevThroughOdb).
std::string UniqueAbbrev(git_repository* repo, git_odb* odb, const git_oid& oid, int min_len);

// The same through libgit2: git_odb_exists_prefix for each length from min_len until no other
// object has the prefix (each call reads every backend: a stat of objects/XX and a search of every
// pack index, in the repository and each alternate). UniqueAbbrev's fallback, and its tests'
// oracle.
std::string UniqueAbbrevThroughOdb(git_odb* odb, const git_oid& oid, int min_len);

}  // namespace shellac::gitfrag
