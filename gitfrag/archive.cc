// The tar and zip writers (git's layout, see archive.h) and the compressors behind them.
#include "gitfrag/archive.h"

#include <bzlib.h>
#include <isa-l/crc.h>
#include <isa-l/igzip_lib.h>
#include <lzma.h>
#include <zlib.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <mutex>
#include <optional>
#include <vector>

#include "base/owned.h"
#include "gitfrag/archive_attributes.h"
#include "gitfrag/archive_subst.h"
#include "gitfrag/blob_stream.h"
#include "base/fixed_deflate.h"
#include "gitfrag/pack_reader.h"
#include "gitfrag/raw_objects.h"

namespace shellac::gitfrag {

namespace {

constexpr SnapshotFormat kFormats[] = {
    {".tar", "application/x-tar", 1u << 0, true, ArchiveFormat::kTar},
    {".tar.gz", "application/x-gzip", 1u << 1, true, ArchiveFormat::kTarGz},
    {".tar.bz2", "application/x-bzip2", 1u << 2, true, ArchiveFormat::kTarBz2},
    {".tar.lz", "application/x-lzip", 1u << 3, false, ArchiveFormat::kTar},
    {".tar.xz", "application/x-xz", 1u << 4, true, ArchiveFormat::kTarXz},
    {".tar.zst", "application/x-zstd", 1u << 5, false, ArchiveFormat::kTar},
    {".zip", "application/x-zip", 1u << 6, true, ArchiveFormat::kZip},
};

// --- compressors: bytes in, compressed bytes appended to *out ---

class Compressor {
 public:
  virtual ~Compressor() = default;
  // False on a library failure.
  virtual bool Feed(std::string_view in, bool finish, std::string* out) = 0;
};

class Identity : public Compressor {
 public:
  bool Feed(std::string_view in, bool, std::string* out) override {
    out->append(in);
    return true;
  }
};

// `bzip2`'s defaults: 900k blocks, work factor 30 (libbz2 is the program's own code).
class Bzip2 : public Compressor {
 public:
  Bzip2() { ok_ = BZ2_bzCompressInit(&s_, 9, 0, 30) == BZ_OK; }
  ~Bzip2() override {
    if (ok_) BZ2_bzCompressEnd(&s_);
  }
  bool Feed(std::string_view in, bool finish, std::string* out) override {
    if (!ok_) return false;
    s_.next_in = const_cast<char*>(in.data());
    s_.avail_in = static_cast<unsigned>(in.size());
    char buf[64 * 1024];
    for (;;) {
      s_.next_out = buf;
      s_.avail_out = sizeof buf;
      const int rc = BZ2_bzCompress(&s_, finish ? BZ_FINISH : BZ_RUN);
      if (rc < 0) return false;
      out->append(buf, sizeof buf - s_.avail_out);
      if (finish ? rc == BZ_STREAM_END : s_.avail_in == 0) return true;
    }
  }

 private:
  bz_stream s_{};
  bool ok_ = false;
};

// `xz`'s defaults: preset 6, CRC64 check, one thread.
class Xz : public Compressor {
 public:
  Xz() { ok_ = lzma_easy_encoder(&s_, 6, LZMA_CHECK_CRC64) == LZMA_OK; }
  ~Xz() override { lzma_end(&s_); }
  bool Feed(std::string_view in, bool finish, std::string* out) override {
    if (!ok_) return false;
    s_.next_in = reinterpret_cast<const uint8_t*>(in.data());
    s_.avail_in = in.size();
    uint8_t buf[64 * 1024];
    for (;;) {
      s_.next_out = buf;
      s_.avail_out = sizeof buf;
      const lzma_ret rc = lzma_code(&s_, finish ? LZMA_FINISH : LZMA_RUN);
      if (rc != LZMA_OK && rc != LZMA_STREAM_END) return false;
      out->append(reinterpret_cast<const char*>(buf), sizeof buf - s_.avail_out);
      if (finish ? rc == LZMA_STREAM_END : s_.avail_in == 0) return true;
    }
  }

 private:
  lzma_stream s_ = LZMA_STREAM_INIT;
  bool ok_ = false;
};

// --- the tree, listed in git's order ---

struct Entry {
  std::string path;  // with the prefix; folders end with '/'
  uint32_t mode;     // git's: 040000, 0100644, 0100755, 0120000, 0160000
  git_oid oid;
  ArchiveConversion convert;  // what a checkout does to a file's bytes, as its gitattributes ask
  int8_t binary = -1;  // zip's text flag as they say (ArchiveAttributes::Path), -1: by the bytes
};

bool IsDir(uint32_t mode) { return (mode & 0170000) == 0040000; }
bool IsLink(uint32_t mode) { return (mode & 0170000) == 0120000; }
bool IsGitlink(uint32_t mode) { return (mode & 0170000) == 0160000; }
bool IsFile(uint32_t mode) { return !IsDir(mode) && !IsGitlink(mode) && !IsLink(mode); }

// Depth first, a folder before its contents; a folder with nothing written inside is left out
// (git queues folders and writes them with their first file).
bool ListTree(git_repository* repo, const git_tree* tree, const std::string& base,
              std::vector<Entry>* entries, std::string* error) {
  for (size_t i = 0; i < git_tree_entrycount(tree); ++i) {
    const git_tree_entry* te = git_tree_entry_byindex(tree, i);
    Entry e{base + git_tree_entry_name(te), CanonicalMode(static_cast<uint32_t>(git_tree_entry_filemode_raw(te))),
            *git_tree_entry_id(te)};
    if (!IsDir(e.mode)) {
      if (IsGitlink(e.mode)) e.path += '/';
      entries->push_back(std::move(e));
      continue;
    }
    e.path += '/';
    git_tree* sub_raw = nullptr;
    if (git_tree_lookup(&sub_raw, repo, &e.oid) != 0) {
      *error = "cannot read tree " + e.path;
      return false;
    }
    TreePtr sub(sub_raw);
    const size_t at = entries->size();
    const std::string path = e.path;
    entries->push_back(std::move(e));
    if (!ListTree(repo, sub.get(), path, entries, error)) return false;
    if (entries->size() == at + 1) entries->pop_back();  // nothing inside
  }
  return true;
}

// git archive's export-ignore, end-of-line conversion and zip text flag (archive_attributes.h)
// on the listed entries. An ignored folder leaves the list with what is inside it, an ignored
// file leaves it alone; a folder is written when something not inside an ignored folder is
// inside it, an ignored file too (git writes a folder before it looks at its first file's
// attributes). `base`: the length of the prefix every path starts with (its folder is always
// written).
bool ApplyAttributes(git_repository* repo, const git_oid& commit, size_t base, int abbrev,
                     const ArchiveSources& sources, std::vector<Entry>* entries,
                     std::unique_ptr<ExportSubst>* formats, std::string* error) {
  std::vector<ArchiveAttributes::File> files;
  for (const Entry& e : *entries) {
    const std::string_view relative =
        std::string_view(e.path).substr(std::min(base, e.path.size()));
    if (IsFile(e.mode) && (relative == ".gitattributes" || relative.ends_with("/.gitattributes")))
      files.push_back({std::string(relative.substr(0, relative.size() - 14)), e.oid});
  }
  const ArchiveAttributes attributes(repo, commit, files, sources);
  if (!attributes.active()) return true;
  std::vector<Entry> kept;
  std::vector<bool> ignored_file;  // per kept entry: written only as a reason for its folders
  std::string skip;                // an ignored folder: the paths inside it are left out unread
  for (Entry& e : *entries) {
    if (!skip.empty() && e.path.starts_with(skip)) continue;
    ArchiveAttributes::Path a;
    if (e.path.size() > base &&
        !attributes.Of(std::string_view(e.path).substr(base), IsDir(e.mode), &a, error))
      return false;
    if (a.ignored && IsDir(e.mode)) {
      skip = e.path;
      continue;
    }
    if (IsFile(e.mode)) {
      e.convert = a.convert;
      if (e.convert.subst) {
        if (!*formats) *formats = std::make_unique<ExportSubst>(repo, commit, abbrev);
        e.convert.formats = formats->get();
      }
    }
    e.binary = a.binary;
    kept.push_back(std::move(e));
    ignored_file.push_back(a.ignored);
  }
  // From the end, so that a folder emptied inside an emptied folder goes first.
  std::vector<Entry> written;
  std::string next;  // the path of the entry after this one that stays in the list
  for (size_t i = kept.size(); i-- > 0;) {
    Entry& e = kept[i];
    if (IsDir(e.mode) && e.path.size() > base && !next.starts_with(e.path)) continue;
    next = e.path;
    if (!ignored_file[i]) written.push_back(std::move(e));
  }
  std::reverse(written.begin(), written.end());
  *entries = std::move(written);
  return true;
}

std::string Hex(const git_oid& oid) {
  char hex[GIT_OID_HEXSZ + 1];
  git_oid_tostr(hex, sizeof hex, &oid);
  return hex;
}

// --- tar ---

constexpr size_t kRecord = 512;
constexpr size_t kBlock = kRecord * 20;

struct Ustar {
  char name[100];
  char mode[8];
  char uid[8];
  char gid[8];
  char size[12];
  char mtime[12];
  char chksum[8];
  char typeflag;
  char linkname[100];
  char magic[6];
  char version[2];
  char uname[32];
  char gname[32];
  char devmajor[8];
  char devminor[8];
  char prefix[155];
  char pad[12];
};
static_assert(sizeof(Ustar) == kRecord);

// N-1 octal digits, zero-padded, then a NUL (git's "%07o", "%011o"); the value fits (callers bound it).
template <size_t N>
void Octal(char (&field)[N], uint64_t value) {
  for (size_t i = N - 1; i-- > 0; value >>= 3) field[i] = static_cast<char>('0' + (value & 7));
  field[N - 1] = '\0';
}

// "LEN KEY=VALUE\n", LEN counting itself.
void PaxRecord(std::string* out, std::string_view key, std::string_view value) {
  size_t len = 1 + 1 + key.size() + 1 + value.size() + 1;
  for (size_t tmp = 1; len / 10 >= tmp; tmp *= 10) ++len;
  out->append(std::to_string(len)).append(" ").append(key).append("=").append(value).append("\n");
}

// ustar's path split: the last '/' that leaves at most 155 bytes before it (a folder's own
// trailing '/' not counted).
size_t PathPrefix(std::string_view path, size_t maxlen) {
  size_t i = path.size();
  if (i > 1 && path[i - 1] == '/') --i;
  if (i > maxlen) i = maxlen;
  do {
    --i;
  } while (i > 0 && path[i] != '/');
  return i;
}

class TarWriter {
 public:
  explicit TarWriter(uint64_t mtime) : mtime_(mtime) {}

  void GlobalHeader(std::string* out, const git_oid& commit) {
    std::string ext;
    PaxRecord(&ext, "comment", Hex(commit));
    Ustar h{};
    h.typeflag = 'g';
    std::strcpy(h.name, "pax_global_header");
    Finish(&h, 0100666, ext.size());
    Blocked(out, &h, sizeof h);
    Blocked(out, ext.data(), ext.size());
  }

  // `data`: a file's bytes or a symlink's target.
  void Add(std::string* out, const Entry& e, std::string_view data) {
    const bool reg = !IsDir(e.mode) && !IsGitlink(e.mode) && !IsLink(e.mode);
    Header(out, e, reg ? data.size() : 0, IsLink(e.mode) ? data : std::string_view());
    if (reg && !data.empty()) {
      out->append(data);
      out->append(Data(data.size()), '\0');
    }
  }

  // The records before an entry's data: its pax header when it needs one, then its ustar header.
  // `size`: a file's length (its data, then Data(size) zeros, follow); `link`: a symlink's target.
  void Header(std::string* out, const Entry& e, uint64_t size, std::string_view link) {
    const std::string_view data = link;
    Ustar h{};
    uint32_t mode = e.mode;
    if (IsDir(mode) || IsGitlink(mode)) {
      h.typeflag = '5';
      mode = (mode | 0777) & ~kUmask;
    } else if (IsLink(mode)) {
      h.typeflag = '2';
      mode |= 0777;
    } else {
      h.typeflag = '0';
      mode = (mode | ((mode & 0100) ? 0777 : 0666)) & ~kUmask;
    }
    std::string ext;
    const std::string_view path = e.path;
    if (path.size() > sizeof h.name) {
      const size_t plen = PathPrefix(path, sizeof h.prefix);
      const size_t rest = path.size() - plen - 1;
      if (plen > 0 && rest <= sizeof h.name) {
        std::memcpy(h.prefix, path.data(), plen);
        std::memcpy(h.name, path.data() + plen + 1, rest);
      } else {
        snprintf(h.name, sizeof h.name, "%s.data", Hex(e.oid).c_str());
        PaxRecord(&ext, "path", path);
      }
    } else {
      std::memcpy(h.name, path.data(), path.size());
    }
    const bool reg = h.typeflag == '0';
    if (!reg) size = 0;
    if (h.typeflag == '2') {
      if (data.size() > sizeof h.linkname) {
        snprintf(h.linkname, sizeof h.linkname, "see %s.paxheader", Hex(e.oid).c_str());
        PaxRecord(&ext, "linkpath", data);
      } else {
        std::memcpy(h.linkname, data.data(), data.size());
      }
    }
    if (size > 077777777777ull) {
      PaxRecord(&ext, "size", std::to_string(size));
      size = 0;
    }
    Finish(&h, mode, size);
    if (!ext.empty()) {
      Ustar x{};
      x.typeflag = 'x';
      snprintf(x.name, sizeof x.name, "%s.paxheader", Hex(e.oid).c_str());
      Finish(&x, 0100666, ext.size());
      Blocked(out, &x, sizeof x);
      Blocked(out, ext.data(), ext.size());
    }
    Blocked(out, &h, sizeof h);
  }

  // A file's `size` bytes of data are written: the zeros that pad them to a whole record.
  size_t Data(uint64_t size) {
    const size_t pad = static_cast<size_t>((kRecord - size % kRecord) % kRecord);
    written_ += size + pad;
    return pad;
  }

  // Zeros to the end of the 10 KiB block, and one more block when fewer than two records of
  // zeros would remain.
  void Trailer(std::string* out) {
    const size_t offset = written_ % kBlock;
    const size_t tail = kBlock - offset;
    out->append(tail, '\0');
    if (tail < 2 * kRecord) out->append(kBlock, '\0');
  }

 private:
  static constexpr uint32_t kUmask = 002;

  void Finish(Ustar* h, uint32_t mode, uint64_t size) {
    Octal(h->mode, mode & 07777);
    Octal(h->size, size);
    Octal(h->mtime, mtime_);
    Octal(h->uid, 0);
    Octal(h->gid, 0);
    std::strcpy(h->uname, "root");
    std::strcpy(h->gname, "root");
    Octal(h->devmajor, 0);
    Octal(h->devminor, 0);
    std::memcpy(h->magic, "ustar", 6);
    std::memcpy(h->version, "00", 2);
    unsigned sum = 0;
    const auto* p = reinterpret_cast<const unsigned char*>(h);
    for (size_t i = 0; i < sizeof *h; ++i) sum += p[i];
    sum += 8 * ' ';  // the checksum field counts as blanks (it is all zeros here)
    Octal(h->chksum, sum);
  }

  // Appends `size` bytes padded to a whole record.
  void Blocked(std::string* out, const void* data, size_t size) {
    out->append(static_cast<const char*>(data), size);
    const size_t pad = (kRecord - size % kRecord) % kRecord;
    out->append(pad, '\0');
    written_ += size + pad;
  }

  uint64_t mtime_;
  uint64_t written_ = 0;
};

// --- zip ---

void Le(std::string* out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

bool IsUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 0 : (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2 : (c & 0xf8) == 0xf0 ? 3 : 9;
    if (n == 9 || (n == 1 && c < 0xc2) || i + n >= s.size() + (n == 0 ? 1 : 0)) return false;
    uint32_t cp = n == 0 ? c : c & (0x3f >> n);
    for (size_t k = 1; k <= n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3f);
    }
    if ((n == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
        (n == 3 && (cp < 0x10000 || cp > 0x10ffff)))
      return false;
    i += n + 1;
  }
  return true;
}

class ZipWriter {
 public:
  explicit ZipWriter(uint64_t mtime) : mtime_(mtime) {
    const time_t t = static_cast<time_t>(mtime);
    tm local{};
    localtime_r(&t, &local);
    dos_date_ = local.tm_mday + (local.tm_mon + 1) * 32 + (local.tm_year + 1900 - 1980) * 512;
    dos_time_ = local.tm_sec / 2 + local.tm_min * 32 + local.tm_hour * 2048;
  }

  // What an entry's local header says of its data.
  struct Data {
    uint32_t method = 0;  // 0 stored, 8 deflated
    uint32_t crc = 0;     // of the file's bytes
    uint64_t size = 0;    // the file's bytes (a symlink's target)
    uint64_t compressed = 0;  // the data's bytes, which follow the local header
    bool binary = true;   // git's -1 read as true: folders are "binary" (internal attribute 0)
  };

  // An entry's local header (its `d.compressed` bytes of data are written next) and its central
  // record.
  void Add(std::string* out, const Entry& e, const Data& d) {
    const std::string_view path = e.path;
    uint32_t flags = 0;
    if (!std::all_of(path.begin(), path.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; }) &&
        IsUtf8(path))
      flags |= 1u << 11;
    const uint64_t offset = offset_;
    uint32_t attr2 = 0, creator = 0;
    if (IsDir(e.mode) || IsGitlink(e.mode)) {
      attr2 = 16;
    } else {
      attr2 = IsLink(e.mode) ? ((e.mode | 0777) << 16) : (e.mode & 0111) ? (e.mode << 16) : 0;
      if (IsLink(e.mode) || (e.mode & 0111)) creator = 0x0317;
    }
    std::string extra;  // the extended timestamp: mtime only
    Le(&extra, 0x5455, 2);
    Le(&extra, 5, 2);
    extra.push_back(1);
    Le(&extra, mtime_, 4);

    Le(out, 0x04034b50, 4);
    Le(out, 10, 2);
    Le(out, flags, 2);
    Le(out, d.method, 2);
    Le(out, dos_time_, 2);
    Le(out, dos_date_, 2);
    Le(out, d.crc, 4);
    Le(out, d.compressed, 4);
    Le(out, d.size, 4);
    Le(out, path.size(), 2);
    Le(out, extra.size(), 2);
    out->append(path).append(extra);
    offset_ += 30 + path.size() + extra.size() + d.compressed;

    Le(&dir_, 0x02014b50, 4);
    Le(&dir_, creator, 2);
    Le(&dir_, 10, 2);
    Le(&dir_, flags, 2);
    Le(&dir_, d.method, 2);
    Le(&dir_, dos_time_, 2);
    Le(&dir_, dos_date_, 2);
    Le(&dir_, d.crc, 4);
    Le(&dir_, d.compressed, 4);
    Le(&dir_, d.size, 4);
    Le(&dir_, path.size(), 2);
    Le(&dir_, extra.size(), 2);
    Le(&dir_, 0, 2);  // comment
    Le(&dir_, 0, 2);  // disk
    Le(&dir_, d.binary ? 0 : 1, 2);
    Le(&dir_, attr2, 4);
    Le(&dir_, offset, 4);
    dir_.append(path).append(extra);
    ++entries_;
  }

  // False when the archive needs zip64 (over 4 GiB or 65535 entries), which is not written.
  bool Trailer(std::string* out, const git_oid& commit) {
    if (offset_ > 0xffffffffull || entries_ > 0xffff) return false;
    out->append(dir_);
    Le(out, 0x06054b50, 4);
    Le(out, 0, 2);
    Le(out, 0, 2);
    Le(out, entries_, 2);
    Le(out, entries_, 2);
    Le(out, dir_.size(), 4);
    Le(out, offset_, 4);
    Le(out, GIT_OID_HEXSZ, 2);
    out->append(Hex(commit));
    return true;
  }

 private:
  uint64_t mtime_;
  unsigned dos_date_ = 0, dos_time_ = 0;
  uint64_t offset_ = 0;
  uint64_t entries_ = 0;
  std::string dir_;  // the central directory, written at the end
};

// --- blobs compressed once ---

constexpr size_t kChunk = BodyStream::kPieceBytes;  // a blob's bytes per piece, at most
// igzip's levels (0-3). A piece made to keep is made once and read by every later archive: level
// 2, which costs about what level 1 does for fewer bytes; level 3 took 1.37 times the instructions
// a git/git snapshot (most of its blobs new) for 2.5 % fewer bytes
// (bench/results/snaplevel-callgrind.md; zlib's level 6 was 4.4 times level 3's time,
// snapwall-callgrind.md). A piece made for one archive (no store, or a blob too large): level 1.
constexpr uint32_t kKeptLevel = 2;
constexpr uint32_t kPassingLevel = 1;

std::mutex piece_store_mu;
std::shared_ptr<ArchivePieceStore> piece_store;  // under piece_store_mu

std::shared_ptr<ArchivePieceStore> PieceStore() {
  const std::lock_guard<std::mutex> lock(piece_store_mu);
  return piece_store;
}

// The store's key of a blob's pieces: what makes them (compressor, level, piece size) is in it.
std::string PieceKey(const git_oid& oid) { return "gitfrag-archive/igzip2-256k/" + Hex(oid); }

// zlib's crc32 (gzip's), by ISA-L (folding with carry-less multiplies: five times zlib's speed).
uint32_t Crc32(uint32_t crc, std::string_view bytes) {
  return crc32_gzip_refl(crc, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
}

// A raw deflate stream by ISA-L's igzip (no header, never a final block), its state allocated at
// the first Reset (a stream that finds every blob kept never needs one).
class PieceDeflater {
 public:
  explicit PieceDeflater(uint32_t level) : level_(level) {}

  // Forgets everything before: what follows refers to nothing before it.
  void Reset() {
    if (!z_) {
      z_ = std::make_unique<isal_zstream>();
      buffer_ = std::make_unique_for_overwrite<uint8_t[]>(kLevelBuffer);  // igzip sets it up
      isal_deflate_init(z_.get());
      // What any piece can become: stored blocks bound deflate's output (5 bytes per 64 KiB),
      // then the flush's.
      out_ = std::make_unique_for_overwrite<uint8_t[]>(kOutBytes);
    } else {
      isal_deflate_reset(z_.get());
    }
    z_->level = level_;
    z_->level_buf = buffer_.get();
    z_->level_buf_size = kLevelBuffer;
    z_->flush = SYNC_FLUSH;
    z_->end_of_stream = 0;
  }
  // Compresses `in` (at most kChunk bytes) onto *out and ends with a sync flush (on a byte
  // boundary, no final block). Through a buffer of its own: a string grown to take it would be
  // zero-filled first.
  bool Feed(std::string_view in, std::string* out) {
    if (!z_ || in.size() > kChunk) return false;
    z_->next_in = reinterpret_cast<uint8_t*>(const_cast<char*>(in.data()));
    z_->avail_in = static_cast<uint32_t>(in.size());
    for (;;) {
      z_->next_out = out_.get();
      z_->avail_out = static_cast<uint32_t>(kOutBytes);
      const int rc = isal_deflate(z_.get());
      if (rc != COMP_OK) return false;
      out->append(reinterpret_cast<const char*>(out_.get()), kOutBytes - z_->avail_out);
      // All of it in, and room left: the flush is out (igzip's rule).
      if (z_->avail_in == 0 && z_->avail_out != 0) return true;
    }
  }

 private:
  static constexpr uint32_t kLevelBuffer = ISAL_DEF_LVL3_DEFAULT;  // enough for every level
  static constexpr size_t kOutBytes = kChunk + kChunk / 1024 + 64;
  uint32_t level_;
  std::unique_ptr<isal_zstream> z_;
  std::unique_ptr<uint8_t[]> buffer_;
  std::unique_ptr<uint8_t[]> out_;
};

// A blob's bytes a chunk at a time: inflated piece by piece from its loose file or whole pack
// entry (blob_stream.h) when it is larger than a chunk, else (or when it is a delta) read whole,
// by the render thread's pack reader (pack_reader.h: libdeflate and its delta-base cache, which
// the blobs of a commit far from the last one archived need: each is a delta chain) or, for what
// that does not have, by libgit2.
class BlobReader {
 public:
  // Its size from the object's header, or, when `convert` may change its bytes, read whole and
  // converted (converted()); false with *error when it cannot be read.
  bool Open(git_repository* repo, git_odb* odb, const git_oid& oid,
            const ArchiveConversion& convert, std::string* error) {
    // The thread's pack reader reads it now (it would be read whole anyway), or, when it is
    // stored whole and over a chunk, gives its size: one look-up, where libgit2's header read
    // inflated each delta of a chain's first bytes with zlib before the read (6 % of a cold
    // archive's time), then the reader found it again.
    std::optional<uint64_t> large;
    if (ReadPackedUnlessLarge(repo, oid, GIT_OBJECT_BLOB, kChunk, PackReader::Keep::kRoot, &packed_,
                              &large)) {
      size_ = large ? *large : packed_.size();
    } else {
      git_object_t type = GIT_OBJECT_INVALID;
      size_t size = 0;
      if (git_odb_read_header(&size, &type, odb, &oid) != 0 || type != GIT_OBJECT_BLOB) {
        *error = "cannot read blob " + Hex(oid);
        return false;
      }
      size_ = size;
    }
    oid_ = oid;
    repo_ = repo;
    odb_ = odb;
    if (convert.any()) {
      if (!Load(error)) return false;
      std::string converted;
      if (ConvertForCheckout(All(), oid, convert, &converted)) {
        converted_ = std::move(converted);
        size_ = converted_->size();
      }
      return true;
    }
    if (size_ > kChunk && !packed_) {
      std::string why;
      stream_ = OpenBlobStream(git_repository_path(repo), oid, size_, &why);
    }
    return true;
  }
  uint64_t size() const { return size_; }
  // Its bytes are not the blob's (its line ends converted).
  bool converted() const { return converted_.has_value(); }
  // The next chunk (empty at the end); valid until the next call. False with *error.
  bool Read(std::string_view* chunk, std::string* error) {
    if (stream_) {
      buffer_.clear();
      if (done_) {
        *chunk = {};
        return true;
      }
      const auto result = stream_->Next(&buffer_, error);
      if (result == BodyStream::Result::kFailed) return false;
      done_ = result == BodyStream::Result::kDone;
      *chunk = buffer_;
      return true;
    }
    if (!Load(error)) return false;
    const std::string_view all = All();
    *chunk = all.substr(std::min(at_, all.size()), kChunk);
    at_ += chunk->size();
    return true;
  }

 private:
  // The whole blob, read once.
  bool Load(std::string* error) {
    if (whole_ || packed_) return true;
    packed_ = ReadPacked(repo_, oid_, GIT_OBJECT_BLOB, PackReader::Keep::kRoot);
    git_odb_object* raw = nullptr;
    if (!packed_ && git_odb_read(&raw, odb_, &oid_) != 0) {
      *error = "cannot read blob " + Hex(oid_);
      return false;
    }
    whole_.reset(raw);
    return true;
  }
  std::string_view All() const {
    if (converted_) return *converted_;
    return packed_ ? packed_.view()
                   : std::string_view(static_cast<const char*>(git_odb_object_data(whole_.get())),
                                      git_odb_object_size(whole_.get()));
  }

  git_repository* repo_ = nullptr;
  git_odb* odb_ = nullptr;
  git_oid oid_{};
  uint64_t size_ = 0;
  std::unique_ptr<InflatingBlob> stream_;
  std::string buffer_;
  bool done_ = false;
  ObjectBytes packed_;  // or whole_
  OdbObjectPtr whole_;
  std::optional<std::string> converted_;  // what is read instead of them
  size_t at_ = 0;
};

// crc32_combine's operator for a second part of `length` bytes: what crc32_combine spends most of
// its time on, so it is kept with a blob's pieces (every piece but the last is kChunk long).
uint32_t CombineOp(uint32_t length) {
  static const uint32_t chunk = static_cast<uint32_t>(crc32_combine_gen(kChunk));
  return length == kChunk ? chunk : static_cast<uint32_t>(crc32_combine_gen(length));
}

bool LooksBinary(std::string_view head) { return head.substr(0, 8000).find('\0') != std::string_view::npos; }

// One blob's pieces, in order: found kept, or made here (and kept when it is small enough). The
// pieces of one blob share the compressor's window (a sync flush after each, a fresh stream at
// the first): they decode in order after anything else, and nothing in them refers before them.
class BlobPieces {
 public:
  using Piece = ArchivePieceStore::Piece;

  // False with *error when the blob cannot be read. A file whose bytes `convert` changes is
  // compressed for this archive alone (its pieces are not the blob's).
  bool Open(git_repository* repo, git_odb* odb, const git_oid& oid, ArchivePieceStore* store,
            const ArchiveConversion& convert, std::string* error) {
    oid_ = oid;
    if (convert.any()) {
      if (!reader_.Open(repo, odb, oid, convert, error)) return false;
      if (reader_.converted()) {
        size_ = reader_.size();
        return true;
      }
    }
    store_ = store;
    if (store && store->Find(PieceKey(oid), &kept_)) {
      from_store_ = true;
      for (const Piece& p : kept_.pieces) size_ += p.length;
      // "binary|text OP": OP the combine operator of the last piece's length, in hex.
      binary_ = kept_.meta.starts_with("binary");
      const size_t space = kept_.meta.find(' ');
      last_op_ = space == std::string::npos
                     ? CombineOp(kept_.pieces.empty() ? 0 : kept_.pieces.back().length)
                     : static_cast<uint32_t>(std::strtoul(kept_.meta.c_str() + space + 1, nullptr, 16));
      return true;
    }
    if (!convert.any() && !reader_.Open(repo, odb, oid, convert, error)) return false;
    size_ = reader_.size();
    keep_ = store && size_ > 0 && size_ <= store->max_blob_bytes();
    return true;
  }
  uint64_t size() const { return size_; }
  // crc32 of what came before `piece` and `piece` (one of this blob's, just returned by Next).
  uint32_t Combine(uint32_t crc, const Piece& piece) const {
    return static_cast<uint32_t>(crc32_combine_op(
        crc, piece.crc, piece.length == kChunk ? CombineOp(kChunk) : last_op_));
  }
  // The first 8000 bytes hold a NUL (zip's text flag): known once the first piece is out.
  bool binary() const { return binary_; }

  enum class Step { kPiece, kEnd, kFailed };
  // The next piece into *out (valid until the next call); kFailed with *error.
  Step Next(PieceDeflater* kept_deflater, PieceDeflater* passing_deflater, Piece* out,
            std::string* error) {
    if (from_store_) {
      if (next_ == kept_.pieces.size()) return Step::kEnd;
      *out = kept_.pieces[next_++];
      return Step::kPiece;
    }
    if (made_ >= size_ && (made_ > 0 || size_ == 0)) return Step::kEnd;
    std::string_view chunk;
    if (!reader_.Read(&chunk, error)) return Step::kFailed;
    if (chunk.empty()) {
      *error = "blob " + Hex(oid_) + " is shorter than its header says";
      return Step::kFailed;
    }
    if (made_ == 0) binary_ = LooksBinary(chunk);
    PieceDeflater* deflater = keep_ ? kept_deflater : passing_deflater;
    if (made_ == 0) deflater->Reset();
    std::string bytes;
    if (!deflater->Feed(chunk, &bytes)) {
      *error = "igzip failed";
      return Step::kFailed;
    }
    made_ += chunk.size();
    const uint32_t crc = static_cast<uint32_t>(
        Crc32(0, chunk));
    const auto length = static_cast<uint32_t>(chunk.size());
    if (length != kChunk) last_op_ = CombineOp(length);
    if (keep_) {
      own_.push_back(std::move(bytes));
      crcs_.push_back(crc);
      lengths_.push_back(length);
      *out = {own_.back(), crc, length};
      // Kept with its last piece, before that piece is written: an archive made meanwhile finds it.
      if (made_ >= size_) {
        std::vector<Piece> views;
        for (size_t i = 0; i < own_.size(); ++i) views.push_back({own_[i], crcs_[i], lengths_[i]});
        char meta[32];
        snprintf(meta, sizeof meta, "%s %x", binary_ ? "binary" : "text", last_op_);
        store_->Keep(PieceKey(oid_), views, meta);
      }
    } else {
      scratch_ = std::move(bytes);
      *out = {scratch_, crc, length};
    }
    return Step::kPiece;
  }

 private:
  ArchivePieceStore* store_ = nullptr;
  git_oid oid_{};
  uint32_t last_op_ = 0;  // CombineOp of the last piece's length, when that is not kChunk
  uint64_t size_ = 0;
  bool binary_ = false;
  bool from_store_ = false;
  ArchivePieceStore::Kept kept_;
  size_t next_ = 0;
  BlobReader reader_;
  bool keep_ = false;
  uint64_t made_ = 0;
  std::deque<std::string> own_;  // the pieces made to keep (a deque: views into them stay put)
  std::vector<uint32_t> crcs_, lengths_;
  std::string scratch_;
};

// --- the streams ---

// What the streams below share: the repository, its object database and the tree's entries.
struct ArchiveSource {
  RepositoryPtr repo;
  OdbPtr odb;
  git_oid commit{};
  uint64_t mtime = 0;
  std::vector<Entry> entries;
  std::shared_ptr<ArchivePieceStore> store;
  // export-subst's expander, when a file has the attribute (its entries point to it): the
  // archive then depends on the repository's refs and abbreviation too.
  std::unique_ptr<ExportSubst> formats;

  // A symlink's target; false with *error.
  bool Target(const Entry& e, BlobPtr* blob, std::string_view* target, std::string* error) {
    git_blob* raw = nullptr;
    if (git_blob_lookup(&raw, repo.get(), &e.oid) != 0) {
      *error = "cannot read blob " + Hex(e.oid) + " (" + e.path + ")";
      return false;
    }
    blob->reset(raw);
    *target = {static_cast<const char*>(git_blob_rawcontent(raw)),
               static_cast<size_t>(git_blob_rawsize(raw))};
    return true;
  }
};

// tar, tar.bz2, tar.xz: the tar made whole, blob by blob, through the compressor.
class ArchiveStream : public BodyStream {
 public:
  bool Shareable() const override { return src_.formats == nullptr; }
  ArchiveStream(ArchiveSource source, ArchiveFormat format)
      : src_(std::move(source)), tar_(src_.mtime) {
    switch (format) {
      case ArchiveFormat::kTarBz2:
        compressor_ = std::make_unique<Bzip2>();
        break;
      case ArchiveFormat::kTarXz:
        compressor_ = std::make_unique<Xz>();
        break;
      default:
        compressor_ = std::make_unique<Identity>();
        break;
    }
  }

  Result Next(std::string* out, std::string* error) override {
    std::string raw;
    if (!started_) {
      started_ = true;
      tar_.GlobalHeader(&raw, src_.commit);
    }
    while (raw.size() < kPieceBytes && next_ < src_.entries.size()) {
      const Entry& e = src_.entries[next_++];
      BlobPtr blob;
      std::string_view data;
      if (!IsDir(e.mode) && !IsGitlink(e.mode) && !src_.Target(e, &blob, &data, error))
        return Result::kFailed;
      std::string converted;
      if (ConvertForCheckout(data, e.oid, e.convert, &converted)) data = converted;
      tar_.Add(&raw, e, data);
    }
    const bool last = next_ == src_.entries.size();
    if (last) tar_.Trailer(&raw);
    if (!compressor_->Feed(raw, last, out)) {
      *error = "the compressor failed";
      return Result::kFailed;
    }
    return last ? Result::kDone : Result::kMore;
  }

 private:
  ArchiveSource src_;
  TarWriter tar_;
  size_t next_ = 0;
  bool started_ = false;
  std::unique_ptr<Compressor> compressor_;
};

// tar.gz stitched: one gzip member whose deflate data is, in the tar's order, the tar's own
// records (headers, padding, trailer) compressed as they come, each run on its own (DeflateFixed:
// it refers to nothing before it and ends on a byte boundary), and every file's pieces
// (BlobPieces) as found or made. The trailer's run is the final block; the gzip trailer's crc32
// is combined from the runs' and the pieces' (crc32_combine), nothing inflated.
class StitchedTarGz : public BodyStream {
 public:
  bool Shareable() const override { return src_.formats == nullptr; }
  explicit StitchedTarGz(ArchiveSource source) : src_(std::move(source)), tar_(src_.mtime) {}

  Result Next(std::string* out, std::string* error) override {
    if (!started_) {
      started_ = true;
      // gzip -n's header: no name, no time, XFL 0 (GNU gzip's at its default level), Unix.
      out->append("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03", 10);
      tar_.GlobalHeader(&records_, src_.commit);
    }
    const size_t start = out->size();
    // What the loop appends stays under two pieces' worth (it stops past one, and a blob's
    // piece or a run is at most about one): one allocation, no copy as it grows.
    out->reserve(start + 2 * kPieceBytes + 4096);
    while (out->size() - start < kPieceBytes) {
      if (blob_) {
        ArchivePieceStore::Piece piece;
        const BlobPieces::Step step = blob_->Next(&kept_deflater_, &passing_deflater_, &piece, error);
        if (step == BlobPieces::Step::kFailed) return Result::kFailed;
        if (step == BlobPieces::Step::kPiece) {
          out->append(piece.deflate);
          crc_ = blob_->Combine(crc_, piece);
          length_ += piece.length;
          continue;
        }
        records_.append(tar_.Data(blob_->size()), '\0');
        blob_.reset();
        continue;
      }
      if (next_ == src_.entries.size()) {
        tar_.Trailer(&records_);
        Records(/*final=*/true, out);
        Le(out, crc_, 4);
        Le(out, length_, 4);
        return Result::kDone;
      }
      const Entry& e = src_.entries[next_++];
      if (IsFile(e.mode)) {
        auto blob = std::make_unique<BlobPieces>();
        if (!blob->Open(src_.repo.get(), src_.odb.get(), e.oid, src_.store.get(), e.convert, error))
          return Result::kFailed;
        tar_.Header(&records_, e, blob->size(), {});
        if (blob->size() > 0) {
          Records(/*final=*/false, out);
          blob_ = std::move(blob);
        }
      } else {
        BlobPtr link;
        std::string_view target;
        if (IsLink(e.mode) && !src_.Target(e, &link, &target, error)) return Result::kFailed;
        tar_.Header(&records_, e, 0, target);
        if (records_.size() >= kPieceBytes) Records(/*final=*/false, out);
      }
    }
    return Result::kMore;
  }

 private:
  // The tar records gathered since the last run, compressed onto *out as one run (`final`: the
  // stream's last block).
  void Records(bool final, std::string* out) {
    crc_ = Crc32(crc_, records_);
    length_ += records_.size();
    base::DeflateFixed(records_, final, out);
    records_.clear();
  }

  ArchiveSource src_;
  TarWriter tar_;
  size_t next_ = 0;
  bool started_ = false;
  // Tar records not yet compressed. Their runs (a header or two and some zeros each) by
  // DeflateFixed: for the bench corpus's 726 runs 82.7 KB, zlib's level 1 with fixed codes 82.1 KB
  // at 15 times the time, its level 6 74 KB, stored 602 KB (bench/results/snapwall-callgrind.md).
  std::string records_;
  PieceDeflater kept_deflater_{kKeptLevel};
  PieceDeflater passing_deflater_{kPassingLevel};
  std::unique_ptr<BlobPieces> blob_;  // the file whose pieces are being written
  uint32_t crc_ = 0;
  uint64_t length_ = 0;  // of the tar (the gzip trailer keeps it mod 2^32)
};

// zip stitched: each file's data is its pieces (the ones tar.gz uses) and an empty final block,
// deflated (method 8), or its bytes stored when that is not smaller (git's rule). The local header
// needs the data's crc32 and length first: a blob's pieces are all found or made before it is
// written (its compressed bytes held meanwhile; a stored file is read again).
class StitchedZip : public BodyStream {
 public:
  bool Shareable() const override { return src_.formats == nullptr; }
  explicit StitchedZip(ArchiveSource source) : src_(std::move(source)), zip_(src_.mtime) {}

  Result Next(std::string* out, std::string* error) override {
    const size_t start = out->size();
    while (out->size() - start < kPieceBytes) {
      if (reader_) {  // a stored file's bytes
        std::string_view chunk;
        if (!reader_->Read(&chunk, error)) return Result::kFailed;
        if (chunk.empty()) {
          reader_.reset();
        } else {
          out->append(chunk);
        }
        continue;
      }
      if (next_ == src_.entries.size()) {
        if (!zip_.Trailer(out, src_.commit)) {
          *error = "the archive needs zip64 (over 4 GiB or 65535 entries), which is not written";
          return Result::kFailed;
        }
        return Result::kDone;
      }
      const Entry& e = src_.entries[next_++];
      ZipWriter::Data d;
      if (IsLink(e.mode)) {
        BlobPtr link;
        std::string_view target;
        if (!src_.Target(e, &link, &target, error)) return Result::kFailed;
        d.size = d.compressed = target.size();
        d.crc = static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(target.data()),
                                            static_cast<uInt>(target.size())));
        d.binary = e.binary >= 0 ? e.binary == 1 : LooksBinary(target);
        zip_.Add(out, e, d);
        out->append(target);
        continue;
      }
      if (!IsFile(e.mode)) {
        zip_.Add(out, e, d);
        continue;
      }
      BlobPieces blob;
      if (!blob.Open(src_.repo.get(), src_.odb.get(), e.oid, src_.store.get(), e.convert, error))
        return Result::kFailed;
      std::string deflated;
      ArchivePieceStore::Piece piece;
      for (;;) {
        const BlobPieces::Step step = blob.Next(&kept_deflater_, &passing_deflater_, &piece, error);
        if (step == BlobPieces::Step::kFailed) return Result::kFailed;
        if (step == BlobPieces::Step::kEnd) break;
        deflated.append(piece.deflate);
        d.crc = blob.Combine(d.crc, piece);
      }
      d.size = blob.size();
      d.binary = e.binary >= 0 ? e.binary == 1 : blob.binary();
      deflated.append("\x03\x00", 2);  // an empty final block (fixed codes: BFINAL, 01, EOB)
      if (d.size > 0 && deflated.size() < d.size) {
        d.method = 8;
        d.compressed = deflated.size();
        zip_.Add(out, e, d);
        out->append(deflated);
        continue;
      }
      d.compressed = d.size;
      zip_.Add(out, e, d);
      if (d.size > 0) {
        reader_ = std::make_unique<BlobReader>();
        if (!reader_->Open(src_.repo.get(), src_.odb.get(), e.oid, e.convert, error))
          return Result::kFailed;
      }
    }
    return Result::kMore;
  }

 private:
  ArchiveSource src_;
  ZipWriter zip_;
  size_t next_ = 0;
  PieceDeflater kept_deflater_{kKeptLevel};
  PieceDeflater passing_deflater_{kPassingLevel};
  std::unique_ptr<BlobReader> reader_;  // a stored file's bytes being written
};

}  // namespace

const SnapshotFormat* SnapshotFormats(size_t* count) {
  *count = std::size(kFormats);
  return kFormats;
}

const SnapshotFormat* SnapshotFormatOf(std::string_view filename) {
  for (const auto& f : kFormats)
    if (filename.ends_with(f.suffix)) return &f;
  return nullptr;
}

std::unique_ptr<BodyStream> MakeArchiveStream(const std::string& repository_path,
                                              const git_oid& commit_id, ArchiveFormat format,
                                              std::string_view prefix, int abbrev,
                                              const ArchiveSources& sources, std::string* error) {
  git_repository* raw_repo = nullptr;
  if (git_repository_open_bare(&raw_repo, repository_path.c_str()) != 0 &&
      git_repository_open(&raw_repo, repository_path.c_str()) != 0) {
    *error = "cannot open the repository";
    return nullptr;
  }
  RepositoryPtr repo(raw_repo);
  // The commit, its trees and gitattributes read by the render thread's pack reader (libdeflate,
  // its base cache), as the pages' are: libgit2's own reads were 3 % of a cold archive's time.
  AddPackReaderBackend(repo.get());
  const PackedReadsScope packed_reads;
  git_commit* raw_commit = nullptr;
  if (git_commit_lookup(&raw_commit, repo.get(), &commit_id) != 0) {
    *error = "not a commit: " + Hex(commit_id);
    return nullptr;
  }
  CommitPtr commit(raw_commit);
  git_tree* raw_tree = nullptr;
  if (git_commit_tree(&raw_tree, commit.get()) != 0) {
    *error = "cannot read the commit's tree";
    return nullptr;
  }
  TreePtr tree(raw_tree);
  std::vector<Entry> entries;
  std::string base;
  if (!prefix.empty()) {
    base = std::string(prefix) + "/";
    entries.push_back({base, 040777, *git_tree_id(tree.get())});
  }
  ArchiveSource source;
  if (!ListTree(repo.get(), tree.get(), base, &entries, error) ||
      !ApplyAttributes(repo.get(), commit_id, base.size(), abbrev, sources, &entries,
                       &source.formats, error))
    return nullptr;
  git_odb* raw_odb = nullptr;
  if (git_repository_odb(&raw_odb, repo.get()) != 0) {
    *error = "cannot open the object database";
    return nullptr;
  }
  source.odb.reset(raw_odb);
  source.repo = std::move(repo);
  source.commit = commit_id;
  source.mtime = static_cast<uint64_t>(git_commit_committer(commit.get())->when.time);
  source.entries = std::move(entries);
  source.store = PieceStore();
  if (format == ArchiveFormat::kTarGz) return std::make_unique<StitchedTarGz>(std::move(source));
  if (format == ArchiveFormat::kZip) return std::make_unique<StitchedZip>(std::move(source));
  return std::make_unique<ArchiveStream>(std::move(source), format);
}

void SetArchivePieceStore(std::shared_ptr<ArchivePieceStore> store) {
  const std::lock_guard<std::mutex> lock(piece_store_mu);
  piece_store = std::move(store);
}

}  // namespace shellac::gitfrag
