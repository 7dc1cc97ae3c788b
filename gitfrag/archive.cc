// The tar and zip writers (git's layout, see archive.h) and the compressors behind them.
#include "gitfrag/archive.h"

#include <bzlib.h>
#include <lzma.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <ctime>
#include <vector>

#include "base/owned.h"

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

// What `gzip -n` as cgit runs it gives, in what it holds (the same tar, one gzip member with no
// name and no time) but not in its bytes: zlib's deflate at level 1, not GNU gzip's at 6. A
// snapshot of the bench corpus then takes ~0.45x the instructions to compress and is ~24 % larger
// (bench/results/kinds-callgrind-2.md). libdeflate is quicker still but compresses whole buffers
// into streams that end with a final block, so a streamed archive would be several gzip members:
// valid gzip, but some readers (Rust's flate2 GzDecoder, for one) stop after the first.
class Gzip : public Compressor {
 public:
  Gzip() { ok_ = deflateInit2(&z_, kLevel, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK; }
  ~Gzip() override {
    if (ok_) deflateEnd(&z_);
  }
  bool Feed(std::string_view in, bool finish, std::string* out) override {
    if (!ok_) return false;
    z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    z_.avail_in = static_cast<uInt>(in.size());
    char buf[64 * 1024];
    for (;;) {
      z_.next_out = reinterpret_cast<Bytef*>(buf);
      z_.avail_out = sizeof buf;
      const int rc = deflate(&z_, finish ? Z_FINISH : Z_NO_FLUSH);
      if (rc == Z_STREAM_ERROR) return false;
      out->append(buf, sizeof buf - z_.avail_out);
      if (finish ? rc == Z_STREAM_END : (z_.avail_in == 0 && z_.avail_out != 0)) return true;
    }
  }

 private:
  static constexpr int kLevel = 1;
  z_stream z_{};
  bool ok_ = false;
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
};

bool IsDir(uint32_t mode) { return (mode & 0170000) == 0040000; }
bool IsLink(uint32_t mode) { return (mode & 0170000) == 0120000; }
bool IsGitlink(uint32_t mode) { return (mode & 0170000) == 0160000; }

// Depth first, a folder before its contents; a folder with nothing written inside is left out
// (git queues folders and writes them with their first file).
bool ListTree(git_repository* repo, const git_tree* tree, const std::string& base,
              std::vector<Entry>* entries, std::string* error) {
  for (size_t i = 0; i < git_tree_entrycount(tree); ++i) {
    const git_tree_entry* te = git_tree_entry_byindex(tree, i);
    Entry e{base + git_tree_entry_name(te), static_cast<uint32_t>(git_tree_entry_filemode_raw(te)),
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
    if (h.typeflag == '2') {
      if (data.size() > sizeof h.linkname) {
        snprintf(h.linkname, sizeof h.linkname, "see %s.paxheader", Hex(e.oid).c_str());
        PaxRecord(&ext, "linkpath", data);
      } else {
        std::memcpy(h.linkname, data.data(), data.size());
      }
    }
    uint64_t size = reg ? data.size() : 0;
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
    if (reg && !data.empty()) Blocked(out, data.data(), data.size());
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

// Raw deflate at git's default level, in one call, as git's zlib_deflate_raw.
bool DeflateRaw(std::string_view in, std::string* out) {
  z_stream z{};
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    return false;
  out->resize(deflateBound(&z, in.size()));
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out->data());
  z.avail_out = static_cast<uInt>(out->size());
  int rc;
  do {
    rc = deflate(&z, Z_FINISH);
  } while (rc == Z_OK);
  out->resize(z.total_out);
  deflateEnd(&z);
  return rc == Z_STREAM_END;
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

  bool Add(std::string* out, const Entry& e, std::string_view data) {
    const std::string_view path = e.path;
    uint32_t flags = 0;
    if (!std::all_of(path.begin(), path.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; }) &&
        IsUtf8(path))
      flags |= 1u << 11;
    const uint64_t offset = offset_;
    uint32_t method = 0, attr2 = 0, creator = 0;
    uint64_t size = 0;
    uint32_t crc = static_cast<uint32_t>(crc32(0, nullptr, 0));
    bool binary = true;  // git's -1 read as true: directories are "binary" (internal attr 0)
    std::string deflated;
    std::string_view stored;
    if (IsDir(e.mode) || IsGitlink(e.mode)) {
      attr2 = 16;
    } else {
      size = data.size();
      attr2 = IsLink(e.mode) ? ((e.mode | 0777) << 16) : (e.mode & 0111) ? (e.mode << 16) : 0;
      if (IsLink(e.mode) || (e.mode & 0111)) creator = 0x0317;
      crc = static_cast<uint32_t>(crc32(crc, reinterpret_cast<const Bytef*>(data.data()),
                                        static_cast<uInt>(data.size())));
      binary = data.substr(0, 8000).find('\0') != std::string_view::npos;
      stored = data;
      if (!IsLink(e.mode) && size > 0) {
        if (!DeflateRaw(data, &deflated)) return false;
        if (deflated.size() < size) {
          method = 8;
          stored = deflated;
        }
      }
    }
    const uint64_t compressed = stored.size();
    std::string extra;  // the extended timestamp: mtime only
    Le(&extra, 0x5455, 2);
    Le(&extra, 5, 2);
    extra.push_back(1);
    Le(&extra, mtime_, 4);

    Le(out, 0x04034b50, 4);
    Le(out, 10, 2);
    Le(out, flags, 2);
    Le(out, method, 2);
    Le(out, dos_time_, 2);
    Le(out, dos_date_, 2);
    Le(out, crc, 4);
    Le(out, compressed, 4);
    Le(out, size, 4);
    Le(out, path.size(), 2);
    Le(out, extra.size(), 2);
    out->append(path).append(extra).append(stored);
    offset_ += 30 + path.size() + extra.size() + compressed;

    Le(&dir_, 0x02014b50, 4);
    Le(&dir_, creator, 2);
    Le(&dir_, 10, 2);
    Le(&dir_, flags, 2);
    Le(&dir_, method, 2);
    Le(&dir_, dos_time_, 2);
    Le(&dir_, dos_date_, 2);
    Le(&dir_, crc, 4);
    Le(&dir_, compressed, 4);
    Le(&dir_, size, 4);
    Le(&dir_, path.size(), 2);
    Le(&dir_, extra.size(), 2);
    Le(&dir_, 0, 2);  // comment
    Le(&dir_, 0, 2);  // disk
    Le(&dir_, binary ? 0 : 1, 2);
    Le(&dir_, attr2, 4);
    Le(&dir_, offset, 4);
    dir_.append(path).append(extra);
    ++entries_;
    return true;
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

// --- the stream ---

class ArchiveStream : public BodyStream {
 public:
  ArchiveStream(RepositoryPtr repo, const git_oid& commit, uint64_t mtime, ArchiveFormat format,
                std::vector<Entry> entries)
      : repo_(std::move(repo)),
        commit_(commit),
        zip_(format == ArchiveFormat::kZip),
        tar_(mtime),
        zip_writer_(mtime),
        entries_(std::move(entries)) {
    switch (format) {
      case ArchiveFormat::kTarGz:
        compressor_ = std::make_unique<Gzip>();
        break;
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
      if (!zip_) tar_.GlobalHeader(&raw, commit_);
    }
    while (raw.size() < kPieceBytes && next_ < entries_.size()) {
      const Entry& e = entries_[next_++];
      BlobPtr blob;
      std::string_view data;
      if (!IsDir(e.mode) && !IsGitlink(e.mode)) {
        git_blob* raw_blob = nullptr;
        if (git_blob_lookup(&raw_blob, repo_.get(), &e.oid) != 0) {
          *error = "cannot read blob " + Hex(e.oid) + " (" + e.path + ")";
          return Result::kFailed;
        }
        blob.reset(raw_blob);
        data = {static_cast<const char*>(git_blob_rawcontent(raw_blob)),
                static_cast<size_t>(git_blob_rawsize(raw_blob))};
      }
      if (zip_) {
        if (!zip_writer_.Add(&raw, e, data)) {
          *error = "zlib failed";
          return Result::kFailed;
        }
      } else {
        tar_.Add(&raw, e, data);
      }
    }
    const bool last = next_ == entries_.size();
    if (last) {
      if (zip_) {
        if (!zip_writer_.Trailer(&raw, commit_)) {
          *error = "the archive needs zip64 (over 4 GiB or 65535 entries), which is not written";
          return Result::kFailed;
        }
      } else {
        tar_.Trailer(&raw);
      }
    }
    if (!compressor_->Feed(raw, last, out)) {
      *error = "the compressor failed";
      return Result::kFailed;
    }
    return last ? Result::kDone : Result::kMore;
  }

 private:
  RepositoryPtr repo_;
  git_oid commit_;
  bool zip_;
  TarWriter tar_;
  ZipWriter zip_writer_;
  std::vector<Entry> entries_;
  size_t next_ = 0;
  bool started_ = false;
  std::unique_ptr<Compressor> compressor_;
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
                                              std::string_view prefix, std::string* error) {
  git_repository* raw_repo = nullptr;
  if (git_repository_open_bare(&raw_repo, repository_path.c_str()) != 0 &&
      git_repository_open(&raw_repo, repository_path.c_str()) != 0) {
    *error = "cannot open the repository";
    return nullptr;
  }
  RepositoryPtr repo(raw_repo);
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
  if (!ListTree(repo.get(), tree.get(), base, &entries, error)) return nullptr;
  const uint64_t mtime = static_cast<uint64_t>(git_commit_committer(commit.get())->when.time);
  return std::make_unique<ArchiveStream>(std::move(repo), commit_id, mtime, format,
                                         std::move(entries));
}

}  // namespace shellac::gitfrag
