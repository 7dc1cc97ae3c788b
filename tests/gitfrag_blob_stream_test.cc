// Tests for gitfrag/blob_stream.h: the plain page of a large file streamed from its loose object or
// its pack entry (byte-equal to git's blob and to cgit's answer, with cgit's headers), the delta
// fallback, and corrupt or lying files (an index, a pack entry, a loose object) refused or cut,
// never answered with wrong bytes.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <optional>
#include <random>
#include <cstring>
#include <sstream>
#include <fstream>
#include <string>
#include <vector>

#include "conf/config.h"
#include "gitfrag/blob_stream.h"
#include "gitfrag/gitfrag.h"
#include "tests/harness.h"

namespace shellac::gitfrag {
namespace {

using test::MakeFixture;
using test::kDated;
using test::Shell;
using test::ShellQuote;
using test::TempDir;
using test::RunCgit;
using test::CgitInstalled;
using test::CgiHeader;
using test::PageHeader;
using test::Trimmed;

// A work repository with three files over the streaming threshold (1 MiB): a text file changed in
// a second commit (so a repack stores one version as a delta of the other), a binary one, and a
// file of a type the cgitrc names. Three bare copies: every object loose, every object packed
// (as `git gc` leaves them, deltas allowed), and a copy for corrupting.
class LargeBlobs {
 public:
  LargeBlobs() {
    const std::string script = R"SH(
set -e
git init -q -b master work && cd work
seq 1 400000 > big.txt
seq 1 300000 | gzip -n -1 > big.bin && seq 1 300000 | gzip -n -9 >> big.bin
printf '\000' | cat - big.bin > big.dat
seq 500000 800000 | sed 's/^/<p>/' > page.html
git add -A && git commit -q -m one
sed -i 's/^200000$/changed/' big.txt && git commit -q -am two
cd .. && git clone -q --bare --no-local work loose.git
cp -r loose.git packed.git && git -C packed.git repack -q -a -d -f --window=10 --depth=10
)SH";
    MakeFixture(dir_, script, kDated);
  }
  std::string Bare(const std::string& name) const { return dir_.File(name + ".git"); }
  std::string Path() const { return dir_.path(); }
  // --no-local clones by the pack protocol, which leaves a pack: explode it into loose objects.
  void ExplodeLoose() const {
    const std::string bare = Bare("loose");
    Shell("cd " + ShellQuote(bare) + " && mkdir -p ../held && mv objects/pack/* ../held/ && "
          "for p in ../held/*.pack; do git unpack-objects -q < \"$p\"; done && rm -rf ../held");
  }
  std::string Git(const std::string& repo, const std::string& args) const {
    return Shell("git -C " + ShellQuote(Bare(repo)) + " " + args);
  }
  // A blob over 1 MiB that the packed copy stores whole (not as a delta), and its entry's offset:
  // from git verify-pack -v ("SHA TYPE SIZE SIZE-IN-PACK OFFSET [DEPTH BASE]").
  std::pair<std::string, uint64_t> WholePackedBlob() const {
    std::istringstream listing(
        Shell("git verify-pack -v " + ShellQuote(Bare("packed")) + "/objects/pack/*.idx"));
    for (std::string line; std::getline(listing, line);) {
      std::istringstream row(line);
      std::vector<std::string> t;
      for (std::string token; row >> token;) t.push_back(token);
      if (t.size() == 5 && t[1] == "blob" && std::stoull(t[2]) > (1u << 20))
        return {t[0], std::stoull(t[4])};
    }
    ADD_FAILURE() << "no large blob stored whole";
    return {};
  }
  // Whether the packed copy stores `hex` as a delta.
  bool PackedAsDelta(const std::string& hex) const {
    std::istringstream listing(
        Shell("git verify-pack -v " + ShellQuote(Bare("packed")) + "/objects/pack/*.idx"));
    for (std::string line; std::getline(listing, line);) {
      if (!line.starts_with(hex)) continue;
      std::istringstream row(line);
      size_t tokens = 0;
      for (std::string token; row >> token;) ++tokens;
      return tokens == 7;
    }
    ADD_FAILURE() << hex << " is not in the pack";
    return false;
  }
  conf::Config Config(const std::string& repo) const {
    conf::Config c;
    conf::Config::Repository r;
    r.url = r.name = "fix";
    r.path = Bare(repo);
    c.repositories.push_back(r);
    c.css = "/cgit.css";
    c.mimetypes["html"] = "text/html";
    return c;
  }
  // cgit's whole answer (head and body) for PATH_INFO with the same cgitrc.
  std::string Cgit(const std::string& repo, const std::string& path_info,
                   const std::string& query) const {
    const std::string rc = dir_.File("cgitrc-" + repo);
    std::ofstream(rc) << "virtual-root=/\nmimetype.html=text/html\nrepo.url=fix\nrepo.path="
                      << Bare(repo) << "\n";
    return RunCgit(rc, path_info, query);
  }

 private:
  TempDir dir_;
};

Route MustMatch(const Site& site, const std::string& path, const std::string& query) {
  auto route = site.Match(path, query);
  EXPECT_TRUE(route) << path << "?" << query;
  return route ? *route : Route{};
}

// A page's whole body: its stream read to the end (each piece bounded), or its body.
std::string ReadAll(const Page& page, bool* failed = nullptr, std::string* why = nullptr) {
  if (failed != nullptr) *failed = false;
  if (!page.stream) return page.body;
  std::string body, error;
  for (int i = 0; i < 100000; ++i) {
    const size_t before = body.size();
    const BodyStream::Result r = page.stream->Next(&body, &error);
    EXPECT_LE(body.size() - before, BodyStream::kPieceBytes + 8000) << "a piece is bounded";
    if (r == BodyStream::Result::kMore) continue;
    if (r == BodyStream::Result::kFailed) {
      if (failed != nullptr) *failed = true;
      if (why != nullptr) *why = error;
      EXPECT_FALSE(error.empty());
    }
    break;
  }
  return body;
}

git_oid Oid(const std::string& hex) {
  git_oid id;
  EXPECT_EQ(git_oid_fromstr(&id, Trimmed(hex).c_str()), 0) << hex;
  return id;
}

class GitfragBlobStream : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    fx_ = new LargeBlobs();
    fx_->ExplodeLoose();
  }
  static void TearDownTestSuite() {
    delete fx_;
    fx_ = nullptr;
  }
  static LargeBlobs* fx_;
};
LargeBlobs* GitfragBlobStream::fx_ = nullptr;

// plain of every large file, loose and packed: streamed with the blob's length, bytes equal to
// git's and to cgit's whole answer, cgit's content type, ETag and Content-Disposition.
TEST_F(GitfragBlobStream, PlainOfLargeBlobsEqualsGitAndCgit) {
  ASSERT_TRUE(CgitInstalled());
  for (const std::string repo : {"loose", "packed"}) {
    Site site(fx_->Config(repo));
    for (const std::string file : {"big.txt", "big.bin", "big.dat", "page.html"}) {
      const std::string older = Trimmed(fx_->Git(repo, "rev-parse master~1"));
      for (const std::string& query : {std::string(), "h=master&id=" + older}) {
        SCOPED_TRACE(repo + ": " + file + "?" + query);
        const Page page = site.Render(MustMatch(site, "/fix/plain/" + file, query));
        ASSERT_EQ(page.status, 200) << page.reason;
        ASSERT_TRUE(page.stream) << "a blob over 1 MiB is streamed";
        const std::string rev = query.empty() ? "master" : older;
        const std::string blob = fx_->Git(repo, "cat-file blob " + rev + ":" + file);
        ASSERT_GT(blob.size(), 4 * BodyStream::kPieceBytes);
        EXPECT_EQ(page.stream->Length(), blob.size());
        const std::string body = ReadAll(page);
        EXPECT_TRUE(body == blob) << "the streamed bytes differ from git's (" << body.size()
                                  << " bytes, git's " << blob.size() << ")";
        const std::string cgi = fx_->Cgit(repo, "/fix/plain/" + file, query);
        const size_t head_end = cgi.find("\n\n");
        ASSERT_NE(head_end, std::string::npos);
        EXPECT_TRUE(cgi.compare(head_end + 2, std::string::npos, body) == 0)
            << "the streamed bytes differ from cgit's";
        for (const char* name : {"Content-Type", "ETag", "Content-Disposition",
                                 "X-Content-Type-Options", "Content-Security-Policy"})
          EXPECT_EQ(PageHeader(page, name), CgiHeader(cgi, name)) << name;
      }
    }
  }
}

// Where the bytes come from: every object of the loose copy from its file; in the packed copy, the
// version stored whole from the pack, the one stored as a delta not streamed (the page reads it
// whole, as before, and still sends it in pieces).
TEST_F(GitfragBlobStream, OpensLooseAndWholePackEntriesNotDeltas) {
  std::string why;
  for (const std::string rev : {"master", "master~1"}) {
    const std::string hex = fx_->Git("loose", "rev-parse " + rev + ":big.txt");
    const uint64_t size = std::stoull(fx_->Git("loose", "cat-file -s " + Trimmed(hex)));
    const auto loose = OpenBlobStream(fx_->Bare("loose"), Oid(hex), size, &why);
    ASSERT_TRUE(loose) << why;
    EXPECT_STREQ(loose->source(), "loose");
    // A size other than the object's: not the blob asked for.
    EXPECT_FALSE(OpenBlobStream(fx_->Bare("loose"), Oid(hex), size + 1, &why));
  }
  int whole = 0, deltas = 0;
  for (const std::string rev : {"master", "master~1"}) {
    const std::string hex = Trimmed(fx_->Git("packed", "rev-parse " + rev + ":big.txt"));
    const uint64_t size = std::stoull(fx_->Git("packed", "cat-file -s " + hex));
    const auto stream = OpenBlobStream(fx_->Bare("packed"), Oid(hex), size, &why);
    if (fx_->PackedAsDelta(hex)) {
      ++deltas;
      EXPECT_FALSE(stream);
      EXPECT_EQ(why, "stored as a delta");
    } else {
      ++whole;
      ASSERT_TRUE(stream) << why;
      EXPECT_STREQ(stream->source(), "pack");
    }
  }
  EXPECT_EQ(whole, 1);
  EXPECT_EQ(deltas, 1) << "the repack stores one version of big.txt as a delta of the other";
  git_oid absent;
  std::memset(absent.id, 0x42, sizeof absent.id);
  EXPECT_FALSE(OpenBlobStream(fx_->Bare("packed"), absent, 5, &why));
}

// A fork that borrows its objects through objects/info/alternates streams from the upstream's pack.
TEST_F(GitfragBlobStream, StreamsThroughAlternates) {
  TempDir fork;
  Shell("git init -q --bare " + ShellQuote(fork.path()) + " && echo " +
        ShellQuote(fx_->Bare("packed") + "/objects") + " > " + ShellQuote(fork.path()) +
        "/objects/info/alternates");
  const std::string hex = fx_->WholePackedBlob().first;
  const uint64_t size = std::stoull(fx_->Git("packed", "cat-file -s " + hex));
  std::string why;
  const auto stream = OpenBlobStream(fork.path(), Oid(hex), size, &why);
  ASSERT_TRUE(stream) << why;
  Page page;
  page.stream = std::shared_ptr<BodyStream>(stream.get(), [](BodyStream*) {});
  EXPECT_TRUE(ReadAll(page) == fx_->Git("packed", "cat-file blob " + hex));
}

// A flipped byte inside a packed blob's zlib data, and a pack cut short: the stream fails
// (zlib's check, or the data's end) and never ends as if the bytes were whole.
TEST_F(GitfragBlobStream, CorruptPackDataFailsTheStream) {
  TempDir copy;
  Shell("cp -r " + ShellQuote(fx_->Bare("packed")) + "/. " + ShellQuote(copy.path()) +
        " && chmod -R u+w " + ShellQuote(copy.path()));
  const auto [hex, offset] = fx_->WholePackedBlob();
  const uint64_t size = std::stoull(fx_->Git("packed", "cat-file -s " + hex));
  const std::string idx = Trimmed(Shell("ls " + ShellQuote(copy.path()) + "/objects/pack/*.idx"));
  const std::string pack = idx.substr(0, idx.size() - 4) + ".pack";
  {
    std::fstream f(pack, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(offset + 50000));
    char c = 0;
    f.read(&c, 1);
    c = static_cast<char>(c ^ 0x55);
    f.seekp(static_cast<std::streamoff>(offset + 50000));
    f.write(&c, 1);
  }
  std::string why;
  {
    const auto stream = OpenBlobStream(copy.path(), Oid(hex), size, &why);
    ASSERT_TRUE(stream) << why;
    Page page;
    page.stream = std::shared_ptr<BodyStream>(stream.get(), [](BodyStream*) {});
    bool failed = false;
    std::string error;
    ReadAll(page, &failed, &error);
    EXPECT_TRUE(failed) << "a corrupt entry streamed to its end";
  }
  // A whole copy again, cut in the middle of the entry.
  Shell("cp -r " + ShellQuote(fx_->Bare("packed")) + "/. " + ShellQuote(copy.path()) +
        " && chmod -R u+w " + ShellQuote(copy.path()));
  ASSERT_EQ(truncate(pack.c_str(), static_cast<off_t>(offset + 100000)), 0);
  {
    const auto stream = OpenBlobStream(copy.path(), Oid(hex), size, &why);
    ASSERT_TRUE(stream) << why;
    Page page;
    page.stream = std::shared_ptr<BodyStream>(stream.get(), [](BodyStream*) {});
    bool failed = false;
    std::string error;
    const std::string body = ReadAll(page, &failed, &error);
    EXPECT_TRUE(failed);
    EXPECT_EQ(error, "the object's data ends early");
    EXPECT_LT(body.size(), size);
  }
}

// Writes a loose object file holding `inflated` (header included) for `hex` under `objects`.
void WriteLoose(const std::string& objects, const std::string& hex, const std::string& inflated) {
  uLongf n = compressBound(inflated.size());
  std::string z(n, '\0');
  ASSERT_EQ(compress(reinterpret_cast<Bytef*>(z.data()), &n,
                     reinterpret_cast<const Bytef*>(inflated.data()), inflated.size()),
            Z_OK);
  z.resize(n);
  Shell("mkdir -p " + ShellQuote(objects + "/" + hex.substr(0, 2)));
  std::ofstream(objects + "/" + hex.substr(0, 2) + "/" + hex.substr(2), std::ios::binary) << z;
}

// Loose objects whose header lies: too long, too short, not a blob, no header; a pack index that
// is not one. None is streamed as if it were the blob.
TEST_F(GitfragBlobStream, LyingLooseObjectsAreRefusedOrCut) {
  TempDir dir;
  const std::string objects = dir.File("objects");
  const std::string hex = "ab" + std::string(38, 'c');
  const std::string bytes(3 << 20, 'x');
  std::string why;
  // Says 3 MiB, holds 2 MiB more: the stream fails at the end of the size.
  WriteLoose(objects, hex, "blob " + std::to_string(bytes.size()) + std::string(1, '\0') + bytes + bytes);
  {
    const auto stream = OpenBlobStream(dir.path(), Oid(hex), bytes.size(), &why);
    ASSERT_TRUE(stream) << why;
    Page page;
    page.stream = std::shared_ptr<BodyStream>(stream.get(), [](BodyStream*) {});
    bool failed = false;
    std::string error;
    const std::string body = ReadAll(page, &failed, &error);
    EXPECT_TRUE(failed) << "a loose object longer than its header was sent as whole";
    EXPECT_EQ(error, "the object's data is longer than its header says");
    EXPECT_TRUE(body == bytes) << "no byte past the size is sent";
  }
  // Says 3 MiB, holds 1 MiB: the stream fails when the data ends.
  WriteLoose(objects, hex,
             "blob " + std::to_string(bytes.size()) + std::string(1, '\0') + bytes.substr(0, 1 << 20));
  {
    const auto stream = OpenBlobStream(dir.path(), Oid(hex), bytes.size(), &why);
    ASSERT_TRUE(stream) << why;
    Page page;
    page.stream = std::shared_ptr<BodyStream>(stream.get(), [](BodyStream*) {});
    bool failed = false;
    std::string error;
    ReadAll(page, &failed, &error);
    EXPECT_TRUE(failed);
    EXPECT_EQ(error, "the object's data is shorter than its header says");
  }
  // Exactly right: streamed whole.
  WriteLoose(objects, hex, "blob " + std::to_string(bytes.size()) + std::string(1, '\0') + bytes);
  {
    const auto stream = OpenBlobStream(dir.path(), Oid(hex), bytes.size(), &why);
    ASSERT_TRUE(stream) << why;
    std::string error;
    const auto head = stream->Head(8000, &error);
    ASSERT_TRUE(head) << error;
    EXPECT_EQ(*head, bytes.substr(0, 8000));
    Page page;
    page.stream = std::shared_ptr<BodyStream>(stream.get(), [](BodyStream*) {});
    bool failed = true;
    EXPECT_TRUE(ReadAll(page, &failed, &error) == bytes);
    EXPECT_FALSE(failed) << error;
  }
  WriteLoose(objects, hex, "tree 3" + std::string(1, '\0') + "abc");
  EXPECT_FALSE(OpenBlobStream(dir.path(), Oid(hex), 3, &why));
  WriteLoose(objects, hex, "no header at all");
  EXPECT_FALSE(OpenBlobStream(dir.path(), Oid(hex), 3, &why));
  std::ofstream(objects + "/ab/" + std::string(38, 'c'), std::ios::binary) << "not zlib";
  EXPECT_FALSE(OpenBlobStream(dir.path(), Oid(hex), 3, &why));

  // Pack indexes: a short one, a wrong version, a decreasing fan-out, one shorter than its count.
  std::string error;
  EXPECT_FALSE(PackIndex::FromBytes("\377tOc", &error));
  std::string idx = std::string("\377tOc\0\0\0\2", 8) + std::string(1024 + 40, '\0');
  EXPECT_TRUE(PackIndex::FromBytes(idx, &error)) << error;
  std::string v3 = idx;
  v3[7] = 3;
  EXPECT_FALSE(PackIndex::FromBytes(v3, &error));
  std::string decreasing = idx;
  decreasing[8 + 3] = 5;  // fan-out[0] = 5, fan-out[1] = 0
  EXPECT_FALSE(PackIndex::FromBytes(decreasing, &error));
  EXPECT_EQ(error, "pack index: fan-out decreases");
  std::string counted = idx;
  counted[8 + 1023] = 1;  // one object, no room for it
  EXPECT_FALSE(PackIndex::FromBytes(counted, &error));
}

// A version-2 index of `ids` (sorted here unless `unsorted`), entry i at offset 1000 + i, every
// fifth through the 64-bit table.
std::string IndexOf(std::vector<std::string> ids, bool unsorted = false) {
  if (!unsorted) std::sort(ids.begin(), ids.end());
  auto be32 = [](std::string* out, uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) out->push_back(static_cast<char>(v >> shift));
  };
  std::string idx("\377tOc\0\0\0\2", 8);
  for (unsigned b = 0; b < 256; ++b)
    be32(&idx, static_cast<uint32_t>(std::count_if(ids.begin(), ids.end(), [b](const std::string& id) {
           return static_cast<unsigned char>(id[0]) <= b;
         })));
  for (const std::string& id : ids) idx += id;
  idx.append(4 * ids.size(), '\0');  // CRCs
  std::string large;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i % 5 == 4) {
      be32(&idx, 0x80000000u | static_cast<uint32_t>(large.size() / 8));
      be32(&large, 0);
      be32(&large, static_cast<uint32_t>(1000 + i));
    } else {
      be32(&idx, static_cast<uint32_t>(1000 + i));
    }
  }
  return idx + large + std::string(40, '\0');
}

git_oid OidOfBytes(const std::string& bytes) {
  git_oid id;
  std::memcpy(id.id, bytes.data(), GIT_OID_RAWSZ);
  return id;
}

// Find answers every id an index holds with its offset and no other, whether the ids are spread
// as hashes are (the search guesses from their bytes) or crowded (the guesses go wrong and the
// search halves); an unsorted index is answered without reading outside it.
TEST(GitfragPackIndex, FindsEveryIdHoweverTheyAreSpread) {
  std::mt19937_64 random(7);
  auto bytes = [&random](size_t n) {
    std::string s;
    while (s.size() < n) {
      const uint64_t v = random();
      s.append(reinterpret_cast<const char*>(&v), sizeof v);
    }
    s.resize(n);
    return s;
  };
  std::vector<std::vector<std::string>> sets(4);
  for (int i = 0; i < 20000; ++i) sets[0].push_back(bytes(20));  // hashes
  for (int i = 0; i < 3000; ++i)  // one first byte, the next eight equal: keys tell nothing
    sets[1].push_back(std::string(1, '\x42') + std::string(8, '\x17') + bytes(11));
  for (int i = 0; i < 3000; ++i) {  // crowded at both ends of a bucket's key range
    std::string id = "\x42" + bytes(19);
    id[1] = i % 2 == 0 ? '\x00' : '\xff';
    id[2] = i % 3 == 0 ? '\x00' : '\xff';
    sets[2].push_back(id);
  }
  for (int i = 0; i < 40; ++i) sets[3].push_back(bytes(20));  // small buckets
  for (const std::vector<std::string>& ids : sets) {
    const std::string idx = IndexOf(ids);
    std::string error;
    const auto index = PackIndex::FromBytes(idx, &error);
    ASSERT_TRUE(index) << error;
    std::vector<std::string> sorted = ids;
    std::sort(sorted.begin(), sorted.end());
    for (size_t i = 0; i < sorted.size(); ++i) {
      const std::optional<uint64_t> at = index->Find(OidOfBytes(sorted[i]));
      ASSERT_TRUE(at) << i;
      EXPECT_EQ(*at, 1000 + i);
      std::string near = sorted[i];
      near[19] = static_cast<char>(near[19] ^ 1);  // a neighbour: absent unless the set has it
      if (!std::binary_search(sorted.begin(), sorted.end(), near)) {
        EXPECT_FALSE(index->Find(OidOfBytes(near)));
      }
    }
    for (int i = 0; i < 1000; ++i) EXPECT_FALSE(index->Find(OidOfBytes(bytes(20))));
  }
  // Unsorted: some ids are not found (the search assumes order), none is answered wrongly.
  const std::string idx = IndexOf(sets[0], /*unsorted=*/true);
  const auto index = PackIndex::FromBytes(idx, nullptr);
  ASSERT_TRUE(index);
  for (size_t i = 0; i < sets[0].size(); ++i) {
    const std::optional<uint64_t> at = index->Find(OidOfBytes(sets[0][i]));
    if (at) {
      EXPECT_EQ(*at, 1000 + i);
    }
  }
}

// Pack entry and loose headers as git writes them, and what is refused.
TEST(GitfragPackHeaders, ParseAsGitWrites) {
  PackEntryHeader h;
  ASSERT_TRUE(ParsePackEntryHeader(std::string("\xb5\x0a", 2), &h));
  EXPECT_EQ(h.type, 3);
  EXPECT_EQ(h.size, 5u + (10u << 4));
  EXPECT_EQ(h.length, 2u);
  ASSERT_TRUE(ParsePackEntryHeader(std::string("\x6c", 1), &h));
  EXPECT_EQ(h.type, 6);
  EXPECT_EQ(h.size, 12u);
  EXPECT_FALSE(ParsePackEntryHeader(std::string("\x95", 1), &h)) << "a cut header";
  EXPECT_FALSE(ParsePackEntryHeader(std::string("\x05", 1), &h)) << "type 0";
  EXPECT_FALSE(ParsePackEntryHeader(std::string("\x55", 1), &h)) << "type 5";
  EXPECT_FALSE(ParsePackEntryHeader(std::string("\xbf\xff\xff\xff\xff\xff\xff\xff\xff\x1f", 10), &h))
      << "over 64 bits";
  ASSERT_TRUE(ParsePackEntryHeader(std::string("\xbf\xff\xff\xff\xff\xff\xff\xff\xff\x0f", 10), &h));
  EXPECT_EQ(h.size, UINT64_MAX);
  std::string_view type;
  uint64_t size = 0;
  size_t length = 0;
  ASSERT_TRUE(ParseLooseHeader(std::string("blob 12\0abc", 11), &type, &size, &length));
  EXPECT_EQ(type, "blob");
  EXPECT_EQ(size, 12u);
  EXPECT_EQ(length, 8u);
  EXPECT_FALSE(ParseLooseHeader(std::string("blob 012\0", 9), &type, &size, &length));
  EXPECT_FALSE(ParseLooseHeader(std::string("blob \0", 6), &type, &size, &length));
  EXPECT_FALSE(ParseLooseHeader(std::string("blob 12", 7), &type, &size, &length));
  EXPECT_FALSE(ParseLooseHeader(std::string("blub 12\0", 8), &type, &size, &length));
  EXPECT_FALSE(ParseLooseHeader(std::string("blob 99999999999999999999\0", 26), &type, &size, &length));
}

}  // namespace
}  // namespace shellac::gitfrag
