// Tests for gitfrag/pack_reader.h: every object of packs git wrote (OFS_DELTA and REF_DELTA
// chains up to 50 deep) reads equal to libgit2's; objects reached through alternates (relative,
// two levels); a loose object is left to libgit2; a pack added after the reader looked is found;
// the base cache stays within its bytes (and keeps only chains' roots when asked to); a read that
// leaves large whole objects to be streamed gives their sizes and reads the rest; and damaged data
// (a truncated pack, hand-made packs with a lying size, a cycle of REF_DELTAs, a base offset
// outside the pack, malformed deltas) is an error or "absent", never a crash, an overread or wrong
// bytes. libgit2's reads through the reader's backend give libgit2's own objects, and only inside a
// PackedReadsScope.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "gitfrag/blob_stream.h"
#include "gitfrag/git.h"
#include "gitfrag/pack_reader.h"
#include "gitfrag/render.h"
#include "tests/harness.h"

namespace shellac::gitfrag {
namespace {

// work: 40 commits rewriting a growing file, a shifting one and a small tree; ofs.git: repacked
// with offset deltas up to 50 deep; ref.git: the same objects in a pack of reference deltas
// (pack-objects without --delta-base-offset).
constexpr const char* kScript = R"SH(
set -e
git init -q -b master work && cd work
for i in $(seq 1 40); do
  seq 1 $((i * 60)) > grow.txt
  seq $i 1500 | sed "s/^/line $i /" > shift.txt
  mkdir -p d/e && echo "$i" > d/e/f && printf 'x%.0s' $(seq 1 $i) > d/x
  git add -A && git commit -q -m "commit $i"
done
cd ..
git clone -q --bare --no-local work ofs.git
git -C ofs.git repack -q -a -d -f --depth=50 --window=50
git init -q --bare ref.git
git -C ofs.git rev-list --objects --all | cut -d' ' -f1 |
  git -C ofs.git pack-objects -q --depth=50 --window=50 "$PWD/ref.git/objects/pack/pack" >/dev/null
)SH";

std::vector<git_oid> AllObjects(const std::string& repo) {
  std::istringstream lines(
      test::Shell("git -C " + test::ShellQuote(repo) +
                  " cat-file --batch-all-objects --batch-check='%(objectname)'"));
  std::vector<git_oid> ids;
  for (std::string hex; std::getline(lines, hex);) {
    git_oid id;
    if (git_oid_fromstr(&id, hex.c_str()) == 0) ids.push_back(id);
  }
  return ids;
}

// How many entries of each pack type (1-7) the repository's packs hold.
std::vector<int> EntryTypes(const std::string& repo) {
  std::vector<int> types(8, 0);
  const std::string dir = repo + "/objects/pack";
  std::istringstream names(test::Shell("ls " + test::ShellQuote(dir) + " | sed -n 's/\\.idx$//p'"));
  for (std::string name; std::getline(names, name);) {
    const auto idx = MappedFile::Of(dir + "/" + name + ".idx");
    const auto pack = MappedFile::Of(dir + "/" + name + ".pack");
    if (!idx || !pack) continue;
    const auto index = PackIndex::FromBytes(idx->bytes(), nullptr);
    for (uint32_t i = 0; index && i < index->size(); ++i) {
      const std::optional<uint64_t> at = index->Find(index->Id(i));
      PackEntryHeader h;
      if (at && ParsePackEntryHeader(pack->bytes().substr(*at, 16), &h)) ++types[h.type];
    }
  }
  return types;
}

class PackReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    EnsureLibgit2();
    test::MakeFixture(dir_, kScript);
  }
  std::string Objects(const std::string& repo) const { return dir_.File(repo) + "/objects"; }

  // Every object of `repo` read by `reader` through `objects` equals libgit2's.
  void ExpectAllEqualLibgit2(PackReader* reader, const std::string& repo,
                             const std::string& objects, bool reversed = false) {
    git_repository* raw = nullptr;
    ASSERT_EQ(git_repository_open(&raw, dir_.File(repo).c_str()), 0);
    const RepositoryPtr git(raw);
    git_odb* raw_odb = nullptr;
    ASSERT_EQ(git_repository_odb(&raw_odb, git.get()), 0);
    const OdbPtr odb(raw_odb);
    std::vector<git_oid> ids = AllObjects(dir_.File(repo));
    ASSERT_GT(ids.size(), 150u);
    if (reversed) std::reverse(ids.begin(), ids.end());
    // A header read by `reader` (its cache, or the entry headers and a delta's first ops) and by
    // a reader that read nothing before: libgit2's type and size.
    auto expect_header = [&](PackReader* by, const git_oid& id) {
      git_object_t type = GIT_OBJECT_INVALID;
      uint64_t size = 0;
      std::string error;
      ASSERT_EQ(by->ReadHeader(objects, id, &type, &size, &error), PackReader::Status::kFound)
          << git_oid_tostr_s(&id) << ": " << error;
      size_t want_size = 0;
      git_object_t want_type = GIT_OBJECT_INVALID;
      ASSERT_EQ(git_odb_read_header(&want_size, &want_type, odb.get(), &id), 0);
      EXPECT_EQ(type, want_type) << git_oid_tostr_s(&id);
      EXPECT_EQ(size, want_size) << git_oid_tostr_s(&id);
    };
    for (const git_oid& id : ids) {
      PackReader fresh;
      expect_header(&fresh, id);
      PackedObject got;
      std::string error;
      ASSERT_EQ(reader->Read(objects, id, &got, &error), PackReader::Status::kFound)
          << git_oid_tostr_s(&id) << ": " << error;
      git_odb_object* raw_object = nullptr;
      ASSERT_EQ(git_odb_read(&raw_object, odb.get(), &id), 0);
      const OdbObjectPtr want(raw_object);
      EXPECT_EQ(got.type, git_odb_object_type(want.get()));
      ASSERT_EQ(got.bytes.view(),
                std::string_view(static_cast<const char*>(git_odb_object_data(want.get())),
                                 git_odb_object_size(want.get())))
          << git_oid_tostr_s(&id);
      expect_header(reader, id);
    }
  }

  test::TempDir dir_;
};

TEST_F(PackReaderTest, EveryObjectOfOffsetDeltaPackEqualsLibgit2) {
  const std::vector<int> types = EntryTypes(dir_.File("ofs.git"));
  EXPECT_GT(types[GIT_OBJECT_OFS_DELTA], 30);  // the reader resolves chains, not only whole ones
  EXPECT_EQ(types[GIT_OBJECT_REF_DELTA], 0);
  PackReader reader;
  ExpectAllEqualLibgit2(&reader, "ofs.git", Objects("ofs.git"));
  // Read again: from the cache now, the same bytes.
  ExpectAllEqualLibgit2(&reader, "ofs.git", Objects("ofs.git"));
  EXPECT_GT(reader.cached_bytes(), 0u);
}

TEST_F(PackReaderTest, EveryObjectOfReferenceDeltaPackEqualsLibgit2) {
  const std::vector<int> types = EntryTypes(dir_.File("ref.git"));
  EXPECT_GT(types[GIT_OBJECT_REF_DELTA], 30);
  EXPECT_EQ(types[GIT_OBJECT_OFS_DELTA], 0);
  PackReader reader;
  ExpectAllEqualLibgit2(&reader, "ref.git", Objects("ref.git"));
}

TEST_F(PackReaderTest, CacheStaysWithinItsBytes) {
  // 4 KiB: most objects are over a quarter and are not kept; the rest evict each other.
  PackReader reader(4096);
  ExpectAllEqualLibgit2(&reader, "ofs.git", Objects("ofs.git"));
  EXPECT_LE(reader.cached_bytes(), 4096u);
  EXPECT_GT(reader.cached_bytes(), 0u);
}

TEST_F(PackReaderTest, ChainsWhoseBasesWereEvictedReadTheSame) {
  // 64 KiB holds a few of the 40 versions of each file: reading every object twice, the second
  // time in the other order, meets chains whose bases and middles were evicted in between (and
  // cached middles whose bases were not).
  PackReader reader(64 << 10);
  ExpectAllEqualLibgit2(&reader, "ofs.git", Objects("ofs.git"));
  ExpectAllEqualLibgit2(&reader, "ofs.git", Objects("ofs.git"), /*reversed=*/true);
  EXPECT_LE(reader.cached_bytes(), size_t{64} << 10);
  EXPECT_GT(reader.cached_bytes(), size_t{32} << 10);
}

// Object ids with their sizes and whether the pack holds them whole (no delta base), by git.
struct PackedEntry {
  git_oid id;
  uint64_t size;
  bool whole;
};
std::vector<PackedEntry> PackedEntries(const std::string& repo) {
  std::istringstream lines(test::Shell(
      "git -C " + test::ShellQuote(repo) +
      " cat-file --batch-all-objects --batch-check='%(objectname) %(objectsize) %(deltabase)'"));
  std::vector<PackedEntry> entries;
  for (std::string hex, base; lines >> hex;) {
    PackedEntry entry{};
    lines >> entry.size >> base;
    entry.whole = base.find_first_not_of('0') == std::string::npos;
    if (git_oid_fromstr(&entry.id, hex.c_str()) == 0) entries.push_back(entry);
  }
  return entries;
}

TEST_F(PackReaderTest, ReadsKeepingOnlyChainRootsGiveTheSameBytesAndKeepOnlyWholeEntries) {
  const std::vector<PackedEntry> entries = PackedEntries(dir_.File("ofs.git"));
  uint64_t whole_bytes = 0, all_bytes = 0;
  int deltas = 0;
  for (const PackedEntry& e : entries) {
    all_bytes += e.size;
    if (e.whole) whole_bytes += e.size;
    deltas += !e.whole;
  }
  ASSERT_GT(deltas, 30);
  const std::string objects = Objects("ofs.git");
  PackReader roots, chains;
  for (const PackedEntry& e : entries) {
    PackedObject root, chain;
    std::string error;
    ASSERT_EQ(roots.Read(objects, e.id, &root, &error, PackReader::Keep::kRoot),
              PackReader::Status::kFound)
        << error;
    ASSERT_EQ(chains.Read(objects, e.id, &chain, &error), PackReader::Status::kFound) << error;
    EXPECT_EQ(root.type, chain.type);
    ASSERT_EQ(root.bytes.view(), chain.bytes.view()) << git_oid_tostr_s(&e.id);
  }
  // Every entry read: the root-keeping reader kept each whole entry once and no delta's result;
  // the other kept every object (the cache's 32 MiB hold them all).
  EXPECT_EQ(roots.cached_bytes(), whole_bytes);
  EXPECT_EQ(chains.cached_bytes(), all_bytes);
}

TEST_F(PackReaderTest, ReadUnlessLargeGivesTheSizeOfLargeWholeEntriesAndReadsTheRest) {
  const std::vector<PackedEntry> entries = PackedEntries(dir_.File("ofs.git"));
  const std::string objects = Objects("ofs.git");
  constexpr uint64_t kLargerThan = 1000;
  PackReader plain;
  int large = 0, read = 0;
  for (const PackedEntry& e : entries) {
    PackReader reader;  // nothing cached: an earlier chain kept its root
    PackedObject got, want;
    bool is_large = true;
    git_object_t type = GIT_OBJECT_INVALID;
    uint64_t size = 0;
    std::string error;
    ASSERT_EQ(
        reader.ReadUnlessLarge(objects, e.id, kLargerThan, &got, &is_large, &type, &size, &error),
        PackReader::Status::kFound)
        << error;
    ASSERT_EQ(plain.Read(objects, e.id, &want, &error), PackReader::Status::kFound) << error;
    EXPECT_EQ(type, want.type);
    EXPECT_EQ(size, e.size);
    EXPECT_EQ(is_large, e.whole && e.size > kLargerThan) << git_oid_tostr_s(&e.id);
    if (is_large) {
      EXPECT_FALSE(got.bytes);
      ++large;
      // Once read (and cached), it is given whole.
      ASSERT_EQ(reader.Read(objects, e.id, &got, &error), PackReader::Status::kFound);
      ASSERT_EQ(
          reader.ReadUnlessLarge(objects, e.id, kLargerThan, &got, &is_large, &type, &size, &error),
          PackReader::Status::kFound);
      EXPECT_FALSE(is_large);
    } else {
      ++read;
    }
    EXPECT_EQ(got.bytes.view(), want.bytes.view()) << git_oid_tostr_s(&e.id);
  }
  EXPECT_GT(large, 0);  // grow.txt's newest versions are stored whole and over 1000 bytes
  EXPECT_GT(read, 100);
}

TEST_F(PackReaderTest, ObjectsOfAlternatesAreFound) {
  // fork2 -> fork1 -> ofs.git: a relative path (from the folder that names it), then an
  // absolute one (libgit2, the reference here, follows relative paths only from the repository's
  // own alternates; git and the reader follow them at every level).
  test::Shell("cd " + test::ShellQuote(dir_.path()) +
              " && git init -q --bare fork1.git && git init -q --bare fork2.git"
              " && echo \"$PWD/ofs.git/objects\" > fork1.git/objects/info/alternates"
              " && echo ../../fork1.git/objects > fork2.git/objects/info/alternates");
  PackReader reader;
  ExpectAllEqualLibgit2(&reader, "fork2.git", Objects("fork2.git"));
  // Contains asks the same chain of indexes (info/refs asks it whether a ref's object exists).
  for (const git_oid& id : AllObjects(dir_.File("ofs.git")))
    EXPECT_TRUE(reader.Contains(Objects("fork2.git"), id));
}

TEST_F(PackReaderTest, LooseObjectIsLeftToLibgit2AndANewPackIsFound) {
  const std::string repo = dir_.File("ofs.git");
  PackReader reader;
  PackedObject got;
  std::string error;
  const std::vector<git_oid> ids = AllObjects(repo);
  ASSERT_EQ(reader.Read(Objects("ofs.git"), ids[0], &got, &error), PackReader::Status::kFound);
  const uint64_t rescans = reader.rescans();

  const std::string hex = test::Trimmed(test::Shell(
      "echo 'only loose' | git -C " + test::ShellQuote(repo) + " hash-object -w --stdin"));
  git_oid loose;
  ASSERT_EQ(git_oid_fromstr(&loose, hex.c_str()), 0);
  EXPECT_EQ(reader.Read(Objects("ofs.git"), loose, &got, &error), PackReader::Status::kAbsent);
  EXPECT_FALSE(reader.Contains(Objects("ofs.git"), loose));  // a loose object is libgit2's to find
  EXPECT_TRUE(reader.Contains(Objects("ofs.git"), ids[0]));
  // ReadPacked answers none for it, and libgit2 reads it.
  git_repository* raw = nullptr;
  ASSERT_EQ(git_repository_open(&raw, repo.c_str()), 0);
  const RepositoryPtr git(raw);
  EXPECT_FALSE(ReadPacked(git.get(), loose, GIT_OBJECT_BLOB));
  // Another type than the object's: none too (the caller's libgit2 read gives its error).
  EXPECT_FALSE(ReadPacked(git.get(), ids[0], GIT_OBJECT_TAG));

  // Packed now (a new pack beside the old one; the loose file removed): found, after one look.
  test::Shell("cd " + test::ShellQuote(repo) + " && echo " + hex +
              " | git pack-objects -q objects/pack/pack >/dev/null && git prune-packed");
  ASSERT_EQ(reader.Read(Objects("ofs.git"), loose, &got, &error), PackReader::Status::kFound)
      << error;
  EXPECT_EQ(got.bytes.view(), "only loose\n");
  EXPECT_EQ(got.type, GIT_OBJECT_BLOB);
  EXPECT_GT(reader.rescans(), rescans);
  EXPECT_TRUE(reader.Contains(Objects("ofs.git"), loose));
  EXPECT_TRUE(PackedHas(git.get(), loose));
  // An object in no pack costs a look at the folder, not a new listing while it has not changed.
  git_oid absent;
  std::memset(absent.id, 0x42, sizeof absent.id);
  const uint64_t before = reader.rescans();
  EXPECT_EQ(reader.Read(Objects("ofs.git"), absent, &got, &error), PackReader::Status::kAbsent);
  EXPECT_EQ(reader.Read(Objects("ofs.git"), absent, &got, &error), PackReader::Status::kAbsent);
  EXPECT_FALSE(reader.Contains(Objects("ofs.git"), absent));
  EXPECT_FALSE(PackedHas(git.get(), absent));
  EXPECT_EQ(reader.rescans(), before);
}

TEST_F(PackReaderTest, Libgit2ReadsGoThroughTheReaderOnlyInsideAScope) {
  const std::string repo = dir_.File("ofs.git");
  const std::string hex = test::Trimmed(test::Shell(
      "echo 'only loose' | git -C " + test::ShellQuote(repo) + " hash-object -w --stdin"));
  git_oid loose;
  ASSERT_EQ(git_oid_fromstr(&loose, hex.c_str()), 0);
  std::vector<git_oid> ids = AllObjects(repo);
  ASSERT_GT(ids.size(), 150u);
  // Every object read through libgit2 with the backend: the reference's bytes and type, and the
  // thread's reader cached what it read only when inside a scope. (Each repository is opened
  // afresh: libgit2's object cache would answer a second read without any backend.)
  auto read_all = [&](bool scoped) {
    git_repository* raw = nullptr;
    ASSERT_EQ(git_repository_open(&raw, repo.c_str()), 0);
    const RepositoryPtr git(raw);
    ASSERT_TRUE(AddPackReaderBackend(git.get()));
    git_repository* raw_reference = nullptr;
    ASSERT_EQ(git_repository_open(&raw_reference, repo.c_str()), 0);
    const RepositoryPtr reference(raw_reference);
    const size_t cached = ThreadPackReader().cached_bytes();
    std::optional<PackedReadsScope> scope;
    if (scoped) scope.emplace();
    git_odb* raw_odb = nullptr;
    ASSERT_EQ(git_repository_odb(&raw_odb, git.get()), 0);
    const OdbPtr odb(raw_odb);
    git_odb* raw_reference_odb = nullptr;
    ASSERT_EQ(git_repository_odb(&raw_reference_odb, reference.get()), 0);
    const OdbPtr reference_odb(raw_reference_odb);
    for (const git_oid& id : ids) {
      // A header (the reader's backend answers it inside a scope): libgit2's own.
      size_t got_size = 0, want_size = 0;
      git_object_t got_type = GIT_OBJECT_INVALID, want_type = GIT_OBJECT_INVALID;
      ASSERT_EQ(git_odb_read_header(&got_size, &got_type, odb.get(), &id), 0);
      ASSERT_EQ(git_odb_read_header(&want_size, &want_type, reference_odb.get(), &id), 0);
      EXPECT_EQ(got_type, want_type) << git_oid_tostr_s(&id);
      EXPECT_EQ(got_size, want_size) << git_oid_tostr_s(&id);
      git_object* raw_got = nullptr;
      git_object* raw_want = nullptr;
      ASSERT_EQ(git_object_lookup(&raw_got, git.get(), &id, GIT_OBJECT_ANY), 0);
      const ObjectPtr got(raw_got);
      ASSERT_EQ(git_object_lookup(&raw_want, reference.get(), &id, GIT_OBJECT_ANY), 0);
      const ObjectPtr want(raw_want);
      ASSERT_EQ(git_object_type(got.get()), git_object_type(want.get()));
      if (git_object_type(got.get()) != GIT_OBJECT_BLOB) continue;
      const auto* a = reinterpret_cast<const git_blob*>(got.get());
      const auto* b = reinterpret_cast<const git_blob*>(want.get());
      ASSERT_EQ(std::string_view(static_cast<const char*>(git_blob_rawcontent(a)),
                                 static_cast<size_t>(git_blob_rawsize(a))),
                std::string_view(static_cast<const char*>(git_blob_rawcontent(b)),
                                 static_cast<size_t>(git_blob_rawsize(b))))
          << git_oid_tostr_s(&id);
    }
    if (scoped)
      EXPECT_GT(ThreadPackReader().cached_bytes(), cached);
    else
      EXPECT_EQ(ThreadPackReader().cached_bytes(), cached);
  };
  ASSERT_NE(std::find_if(ids.begin(), ids.end(),
                         [&](const git_oid& id) { return git_oid_equal(&id, &loose); }),
            ids.end());  // the loose object is among them: libgit2's loose backend reads it
  read_all(false);
  read_all(true);

  // Listing the objects (git_odb_foreach asks every backend) lists each once, as without it.
  git_repository* raw = nullptr;
  ASSERT_EQ(git_repository_open(&raw, repo.c_str()), 0);
  const RepositoryPtr git(raw);
  ASSERT_TRUE(AddPackReaderBackend(git.get()));
  git_odb* raw_odb = nullptr;
  ASSERT_EQ(git_repository_odb(&raw_odb, git.get()), 0);
  const OdbPtr odb(raw_odb);
  size_t listed = 0;
  ASSERT_EQ(git_odb_foreach(
                odb.get(),
                [](const git_oid*, void* payload) {
                  ++*static_cast<size_t*>(payload);
                  return 0;
                },
                &listed),
            0);
  EXPECT_EQ(listed, ids.size());
}

// A page's commit resolved by ResolveCommit (an id, a branch name) is read by the thread's reader
// without a scope of the caller's: libgit2's own packed backend would inflate it with zlib and
// keep no delta base.
TEST_F(PackReaderTest, ResolveCommitReadsThroughTheReader) {
  const std::string repo = dir_.File("ofs.git");
  const std::string first = test::Trimmed(
      test::Shell("git -C " + test::ShellQuote(repo) + " rev-list --reverse master | head -n 1"));
  for (const std::string& spec : {first, std::string("master")}) {
    git_repository* raw = nullptr;
    ASSERT_EQ(git_repository_open(&raw, repo.c_str()), 0);  // afresh: libgit2's cache is empty
    const RepositoryPtr git(raw);
    ASSERT_TRUE(AddPackReaderBackend(git.get()));
    const size_t cached = ThreadPackReader().cached_bytes();
    int status = 200;
    std::string reason;
    const CommitPtr commit = ResolveCommit(git.get(), spec, "", &status, &reason);
    ASSERT_NE(commit, nullptr) << spec << ": " << reason;
    const std::string want = test::Trimmed(
        test::Shell("git -C " + test::ShellQuote(repo) + " rev-parse " + spec));
    EXPECT_EQ(OidHex(*git_commit_id(commit.get())), want);
    EXPECT_EQ(git_commit_parentcount(commit.get()), spec == first ? 0u : 1u);
    EXPECT_GT(ThreadPackReader().cached_bytes(), cached) << spec;
    const size_t limit = ThreadPackReader().cache_limit();
    ThreadPackReader().set_cache_limit(0);  // emptied: the next spec's read is seen again
    ThreadPackReader().set_cache_limit(limit);
  }
}

TEST_F(PackReaderTest, TruncatedPackFailsOrReadsTrueBytes) {
  const std::string repo = dir_.File("ofs.git");
  test::Shell(
      "cd " + test::ShellQuote(dir_.path()) + " && cp -r ofs.git cut.git && chmod -R u+w cut.git" +
      " && for p in cut.git/objects/pack/*.pack; do truncate -s $(( $(stat -c %s $p) / 2 )) $p;"
      " done");
  git_repository* raw = nullptr;
  ASSERT_EQ(git_repository_open(&raw, repo.c_str()), 0);
  const RepositoryPtr git(raw);
  git_odb* raw_odb = nullptr;
  ASSERT_EQ(git_repository_odb(&raw_odb, git.get()), 0);
  const OdbPtr odb(raw_odb);
  PackReader reader;
  size_t found = 0, failed = 0;
  for (const git_oid& id : AllObjects(repo)) {
    PackedObject got;
    std::string error;
    const PackReader::Status status = reader.Read(Objects("cut.git"), id, &got, &error);
    if (status != PackReader::Status::kFound) {
      EXPECT_EQ(status, PackReader::Status::kFailed);
      EXPECT_FALSE(error.empty());
      ++failed;
      continue;
    }
    ++found;
    git_odb_object* raw_object = nullptr;
    ASSERT_EQ(git_odb_read(&raw_object, odb.get(), &id), 0);
    const OdbObjectPtr want(raw_object);
    ASSERT_EQ(got.bytes.view(),
              std::string_view(static_cast<const char*>(git_odb_object_data(want.get())),
                               git_odb_object_size(want.get())));
  }
  EXPECT_GT(found, 0u);
  EXPECT_GT(failed, 0u);
}

// Hand-made packs: an entry is its header and (zlib) data; the index is written to match.
std::string EntryHeader(int type, uint64_t size) {
  std::string h;
  unsigned char c = static_cast<unsigned char>((type << 4) | (size & 15));
  size >>= 4;
  while (size != 0) {
    h.push_back(static_cast<char>(c | 0x80));
    c = size & 0x7f;
    size >>= 7;
  }
  h.push_back(static_cast<char>(c));
  return h;
}

std::string Deflated(const std::string& data) {
  uLongf n = compressBound(data.size());
  std::string out(n, '\0');
  compress(reinterpret_cast<Bytef*>(out.data()), &n, reinterpret_cast<const Bytef*>(data.data()),
           data.size());
  out.resize(n);
  return out;
}

std::string Be32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}

git_oid IdOf(char c) {
  git_oid id;
  std::memset(id.id, c, sizeof id.id);
  return id;
}

struct HandEntry {
  git_oid id;
  std::string bytes;  // header and data, as in the pack
};

// Writes objects/pack/pack-test.{pack,idx} under `objects`.
void WritePack(const std::string& objects, std::vector<HandEntry> entries) {
  std::string pack = "PACK" + Be32(2) + Be32(static_cast<uint32_t>(entries.size()));
  std::vector<std::pair<std::string, uint32_t>> index;
  for (const HandEntry& e : entries) {
    index.emplace_back(std::string(reinterpret_cast<const char*>(e.id.id), GIT_OID_RAWSZ),
                       static_cast<uint32_t>(pack.size()));
    pack += e.bytes;
  }
  pack += std::string(20, '\0');
  std::sort(index.begin(), index.end());
  std::string idx = "\377tOc" + Be32(2);
  for (int b = 0; b < 256; ++b) {
    uint32_t n = 0;
    for (const auto& [id, offset] : index) n += static_cast<unsigned char>(id[0]) <= b;
    idx += Be32(n);
  }
  for (const auto& [id, offset] : index) idx += id;
  for (size_t i = 0; i < index.size(); ++i) idx += Be32(0);  // CRCs: not read
  for (const auto& [id, offset] : index) idx += Be32(offset);
  idx += std::string(40, '\0');
  test::Shell("mkdir -p " + test::ShellQuote(objects + "/pack"));
  test::WriteFile(objects + "/pack/pack-test.pack", pack);
  test::WriteFile(objects + "/pack/pack-test.idx", idx);
}

TEST(PackReaderDamage, LyingSizesCyclesAndBadOffsetsAreErrors) {
  test::TempDir dir;
  const std::string objects = dir.File("objects");
  const std::string text = "hello, packs\n";
  const std::string delta_ops = std::string("\x0d\x0e", 2) + "\x90\x0d" + "\x01!";  // copy 13, "!"
  // Entry offsets: 12 is the first; the OFS_DELTA below (third) points back at the first.
  std::vector<HandEntry> entries;
  entries.push_back({IdOf(0x01), EntryHeader(GIT_OBJECT_BLOB, text.size()) + Deflated(text)});
  // A blob whose header promises more bytes than its data holds, and one promising fewer.
  entries.push_back({IdOf(0x02), EntryHeader(GIT_OBJECT_BLOB, 100) + Deflated(text)});
  const size_t third = 12 + entries[0].bytes.size() + entries[1].bytes.size();
  entries.push_back({IdOf(0x03), EntryHeader(GIT_OBJECT_OFS_DELTA, delta_ops.size()) +
                                     std::string(1, static_cast<char>(third - 12)) +
                                     Deflated(delta_ops)});
  entries.push_back({IdOf(0x04), EntryHeader(GIT_OBJECT_BLOB, 5) + Deflated(text)});
  // Two reference deltas whose bases are each other.
  const auto ref = [&](char base) {
    const git_oid b = IdOf(base);
    return EntryHeader(GIT_OBJECT_REF_DELTA, delta_ops.size()) +
           std::string(reinterpret_cast<const char*>(b.id), GIT_OID_RAWSZ) + Deflated(delta_ops);
  };
  entries.push_back({IdOf(0x05), ref(0x06)});
  entries.push_back({IdOf(0x06), ref(0x05)});
  // An offset delta reaching before the pack's start, one whose delta's target size lies, and a
  // reference delta to an object in no pack.
  entries.push_back({IdOf(0x07), EntryHeader(GIT_OBJECT_OFS_DELTA, delta_ops.size()) +
                                     std::string("\xff\x7f", 2) + Deflated(delta_ops)});
  const std::string lying_ops = std::string("\x0d\x20", 2) + "\x90\x0d" + "\x01!";  // says 32
  entries.push_back(
      {IdOf(0x08), EntryHeader(GIT_OBJECT_REF_DELTA, lying_ops.size()) +
                       std::string(reinterpret_cast<const char*>(IdOf(0x01).id), GIT_OID_RAWSZ) +
                       Deflated(lying_ops)});
  entries.push_back({IdOf(0x09), ref(0x7f)});
  // Zlib data cut short by the pack's end (the trailer follows at once).
  entries.push_back(
      {IdOf(0x0a), EntryHeader(GIT_OBJECT_BLOB, text.size()) + Deflated(text).substr(0, 6)});
  WritePack(objects, entries);

  PackReader reader;
  PackedObject got;
  std::string error;
  ASSERT_EQ(reader.Read(objects, IdOf(0x01), &got, &error), PackReader::Status::kFound) << error;
  EXPECT_EQ(got.bytes.view(), text);
  ASSERT_EQ(reader.Read(objects, IdOf(0x03), &got, &error), PackReader::Status::kFound) << error;
  EXPECT_EQ(got.bytes.view(), text + "!");
  for (const char bad : {0x02, 0x04, 0x05, 0x06, 0x07, 0x08, 0x0a}) {
    error.clear();
    EXPECT_EQ(reader.Read(objects, IdOf(bad), &got, &error), PackReader::Status::kFailed)
        << int{bad};
    EXPECT_FALSE(error.empty()) << int{bad};
  }
  EXPECT_EQ(reader.Read(objects, IdOf(0x09), &got, &error), PackReader::Status::kAbsent);
}

PackedObject BytesOf(size_t size, char fill) {
  PackedObject object;
  object.type = GIT_OBJECT_BLOB;
  object.bytes = ObjectBytes::Make(size);
  std::memset(object.bytes.data(), fill, size);
  return object;
}

TEST(PackCache, FindsWhatItKeptByPackAndOffset) {
  PackCache cache(1000);
  EXPECT_EQ(cache.Find(1, 12), nullptr);
  cache.Keep(1, 12, BytesOf(10, 'a'));
  cache.Keep(2, 12, BytesOf(20, 'b'));  // the same offset in another pack
  cache.Keep(1, 12, BytesOf(30, 'c'));  // kept already: not replaced
  ASSERT_NE(cache.Find(1, 12), nullptr);
  EXPECT_EQ(cache.Find(1, 12)->bytes.view(), std::string(10, 'a'));
  ASSERT_NE(cache.Find(2, 12), nullptr);
  EXPECT_EQ(cache.Find(2, 12)->bytes.view(), std::string(20, 'b'));
  EXPECT_EQ(cache.Find(1, 13), nullptr);
  EXPECT_EQ(cache.count(), 2u);
  EXPECT_EQ(cache.bytes(), 30u);
  cache.Keep(1, 99, BytesOf(251, 'd'));  // over a quarter: not kept
  EXPECT_EQ(cache.Find(1, 99), nullptr);
  cache.set_limit(0);
  EXPECT_EQ(cache.count(), 0u);
  EXPECT_EQ(cache.Find(1, 12), nullptr);
}

TEST(PackCache, WhatWasReadSinceItWasKeptOutlivesWhatWasNot) {
  PackCache cache(400);
  for (uint64_t offset = 100; offset <= 400; offset += 100)
    cache.Keep(1, offset, BytesOf(100, 'x'));
  ASSERT_EQ(cache.bytes(), 400u);
  ASSERT_NE(cache.Find(1, 200), nullptr);
  ASSERT_NE(cache.Find(1, 400), nullptr);
  // Room for one more: one of the two never read goes, wherever the hand stands.
  cache.Keep(1, 500, BytesOf(100, 'y'));
  EXPECT_EQ(cache.bytes(), 400u);
  EXPECT_EQ(cache.count(), 4u);
  const bool kept_100 = cache.Find(1, 100) != nullptr;
  const bool kept_300 = cache.Find(1, 300) != nullptr;
  EXPECT_NE(kept_100, kept_300);
  EXPECT_NE(cache.Find(1, 200), nullptr);
  EXPECT_NE(cache.Find(1, 400), nullptr);
  // Now all but the newest were read since it was kept: it is what goes for the next.
  cache.Keep(1, 600, BytesOf(100, 'z'));
  EXPECT_EQ(cache.Find(1, 500), nullptr);
  EXPECT_NE(cache.Find(1, 600), nullptr);
  EXPECT_NE(cache.Find(1, 200), nullptr);
  EXPECT_NE(cache.Find(1, 400), nullptr);
  EXPECT_NE(cache.Find(1, kept_100 ? 100 : 300), nullptr);
  // All read again: a sweep clears their marks and the first the hand meets goes.
  cache.Keep(1, 700, BytesOf(100, 'w'));
  EXPECT_EQ(cache.count(), 4u);
  EXPECT_NE(cache.Find(1, 700), nullptr);
}

TEST(PackCache, StaysWithinItsBytesAndFindsEveryEntryLeftAfterEvictions) {
  // Thousands of keeps of mixed sizes over few packs (probe runs that wrap and entries moved back
  // as others are evicted), some found again: after each round every entry the cache counts is
  // found with its own bytes, and the bytes it counts are theirs.
  PackCache cache(64 << 10);
  uint64_t seed = 1;
  const auto next = [&seed] {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    return seed >> 33;
  };
  std::vector<std::pair<uint32_t, uint64_t>> kept;
  for (int round = 0; round < 20; ++round) {
    for (int i = 0; i < 500; ++i) {
      const uint32_t pack = 1 + next() % 3;
      const uint64_t offset = 12 + next() % 100000;
      cache.Keep(pack, offset, BytesOf(next() % 2000, static_cast<char>(offset % 251)));
      kept.emplace_back(pack, offset);
      ASSERT_LE(cache.bytes(), size_t{64} << 10);
      if (next() % 4 == 0) {
        const auto& [p, o] = kept[next() % kept.size()];
        cache.Find(p, o);
      }
    }
    std::sort(kept.begin(), kept.end());
    kept.erase(std::unique(kept.begin(), kept.end()), kept.end());
    size_t found = 0, bytes = 0;
    for (const auto& [pack, offset] : kept) {
      const PackedObject* object = cache.Find(pack, offset);
      if (object == nullptr) continue;
      ++found;
      bytes += object->bytes.size();
      ASSERT_EQ(object->bytes.view(),
                std::string(object->bytes.size(), static_cast<char>(offset % 251)));
    }
    EXPECT_EQ(found, cache.count()) << round;
    EXPECT_EQ(bytes, cache.bytes()) << round;
    EXPECT_GT(cache.bytes(), size_t{48} << 10) << round;  // evicted only what room needed
  }
}

TEST(PackReaderDelta, MalformedDeltasAreRefused) {
  const std::string base = "0123456789abcdef";
  std::string out, error;
  // A good one: copy 4 bytes from offset 2, insert "xy", copy the rest from 10 (6 bytes).
  const std::string good = std::string("\x10\x0c", 2) + "\x91\x02\x04" + "\x02xy" + "\x91\x0a\x06";
  ASSERT_TRUE(ApplyDelta(base, good, 1000, &out, &error)) << error;
  EXPECT_EQ(out, "2345xyabcdef");
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"", "no sizes"},
      {std::string("\x10", 1), "no target size"},
      {std::string("\x11\x0c", 2) + "\x91\x02\x04" + "\x02xy" + "\x91\x0a\x06", "source size"},
      {std::string("\x10\x0d", 2) + "\x91\x02\x04" + "\x02xy" + "\x91\x0a\x06", "target longer"},
      {std::string("\x10\x0b", 2) + "\x91\x02\x04" + "\x02xy" + "\x91\x0a\x06", "target shorter"},
      {std::string("\x10\x0c\x00", 3), "op 0"},
      {std::string("\x10\x0c", 2) + "\x91\x0c\x08", "copy past the base"},
      {std::string("\x10\x0c", 2) + "\x91\xff", "copy truncated"},
      {std::string("\x10\x0c", 2) + "\x0cxy", "insert past the delta"},
      {std::string("\x10\x0c", 2) + "\x80", "copy of 0x10000 bytes from a 16-byte base"},
      {std::string("\x10\xff\xff\xff\xff\x0f", 6), "target over the bound"},
      {std::string("\x10\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12), "size over 64 bits"},
  };
  for (const auto& [delta, why] : bad) {
    error.clear();
    EXPECT_FALSE(ApplyDelta(base, delta, 1000, &out, &error)) << why;
    EXPECT_FALSE(error.empty()) << why;
  }
}

}  // namespace
}  // namespace shellac::gitfrag
