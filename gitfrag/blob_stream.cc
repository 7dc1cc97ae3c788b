#include "gitfrag/blob_stream.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <set>
#include <utility>
#include <vector>

#include "base/owned.h"

namespace shellac::gitfrag {

namespace {

uint32_t BigEndian32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}

uint64_t BigEndian64(const unsigned char* p) {
  return (uint64_t{BigEndian32(p)} << 32) | BigEndian32(p + 4);
}

constexpr size_t kHeader = 8;  // magic and version
constexpr size_t kFanout = 256 * 4;
constexpr size_t kTrailer = 2 * GIT_OID_RAWSZ;  // the pack's checksum, then the index's
constexpr size_t kInputBytes = 64 << 10;        // read from the file at a time

// A file descriptor, closed with its owner.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  Fd& operator=(Fd&& other) noexcept {
    std::swap(fd_, other.fd_);
    return *this;
  }
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

std::unique_ptr<MappedFile> MappedFile::Of(const std::string& path) {
  const Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return nullptr;
  struct stat st {};
  if (fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0) return nullptr;
  void* addr = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd.get(), 0);
  if (addr == MAP_FAILED) return nullptr;
  return std::unique_ptr<MappedFile>(new MappedFile(addr, static_cast<size_t>(st.st_size)));
}

MappedFile::~MappedFile() {
  munmap(addr_, size_);
}

namespace {

void AddObjectFolders(const std::string& objects, int depth, std::set<std::string>* seen,
                      std::vector<std::string>* out) {
  if (depth > 5 || !seen->insert(objects).second) return;
  out->push_back(objects);
  std::ifstream alternates(objects + "/info/alternates");
  for (std::string line; std::getline(alternates, line);) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    AddObjectFolders(line[0] == '/' ? line : objects + "/" + line, depth + 1, seen, out);
  }
}

}  // namespace

std::vector<std::string> ObjectFolders(const std::string& objects) {
  std::vector<std::string> folders;
  std::set<std::string> seen;
  AddObjectFolders(objects, 0, &seen, &folders);
  return folders;
}

std::unique_ptr<PackIndex> PackIndex::FromBytes(std::string_view bytes, std::string* error) {
  auto fail = [&](const char* why) {
    if (error != nullptr) *error = why;
    return nullptr;
  };
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  if (bytes.size() < kHeader + kFanout + kTrailer) return fail("pack index: too short");
  if (std::memcmp(p, "\377tOc", 4) != 0) return fail("pack index: not version 2 (no magic)");
  if (BigEndian32(p + 4) != 2) return fail("pack index: version is not 2");
  const unsigned char* fanout = p + kHeader;
  uint32_t previous = 0;
  for (int i = 0; i < 256; ++i) {
    const uint32_t n = BigEndian32(fanout + 4 * i);
    if (n < previous) return fail("pack index: fan-out decreases");
    previous = n;
  }
  const uint64_t count = previous;
  const uint64_t fixed = kHeader + kFanout + count * (GIT_OID_RAWSZ + 4 + 4) + kTrailer;
  if (fixed > bytes.size()) return fail("pack index: shorter than its object count");
  if ((bytes.size() - fixed) % 8 != 0) return fail("pack index: 64-bit offsets table is ragged");
  std::unique_ptr<PackIndex> index(new PackIndex());
  index->count_ = static_cast<uint32_t>(count);
  index->fanout_ = fanout;
  index->ids_ = fanout + kFanout;
  index->offsets_ = index->ids_ + count * (GIT_OID_RAWSZ + 4);  // past the ids and the CRCs
  index->large_ = index->offsets_ + count * 4;
  index->large_count_ = (bytes.size() - fixed) / 8;
  return index;
}

git_oid PackIndex::Id(uint32_t pos) const {
  git_oid id;
  std::memcpy(id.id, ids_ + size_t{pos} * GIT_OID_RAWSZ, GIT_OID_RAWSZ);
  return id;
}

std::optional<uint64_t> PackIndex::Find(const git_oid& id) const {
  const unsigned first = id.id[0];
  uint32_t lo = first == 0 ? 0 : BigEndian32(fanout_ + 4 * (first - 1));
  uint32_t hi = BigEndian32(fanout_ + 4 * first);  // <= count_: the fan-out never decreases
  // Ids are hashes, spread evenly over their bucket: the first probes go where the id's next eight
  // bytes say it lies between the keys known at the range's ends (each probe narrows them), so a
  // large index is searched in a few cache lines instead of a binary search's ~log2(n) misses.
  // Then halving, which also bounds the search when the ids are not spread evenly (at most
  // kGuesses probes are spent guessing).
  constexpr int kGuesses = 3;
  const uint64_t want = BigEndian64(id.id + 1);
  uint64_t lo_key = 0, hi_key = ~uint64_t{0};  // every id in [lo, hi) has its key in between
  for (int guess = 0; lo < hi; ++guess) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (guess < kGuesses && hi - lo > 8 && lo_key <= hi_key) {
      // want is within [lo_key, hi_key] when the index is sorted and has the id; otherwise any
      // probe in the range is as good (lo_key > hi_key only in an unsorted index).
      // (In doubles: a guess needs no exactness, and a 128-bit division is a libgcc call.)
      const uint64_t clamped = std::clamp(want, lo_key, hi_key);
      const double share = static_cast<double>(clamped - lo_key) /
                           (static_cast<double>(hi_key - lo_key) + 1.0);
      mid = std::min(hi - 1, lo + static_cast<uint32_t>(share * (hi - lo)));
    }
    const unsigned char* at = ids_ + size_t{mid} * GIT_OID_RAWSZ;
    const int c = std::memcmp(at, id.id, GIT_OID_RAWSZ);
    if (c == 0) {
      const uint32_t offset = BigEndian32(offsets_ + size_t{mid} * 4);
      if ((offset & 0x80000000u) == 0) return offset;
      const size_t large = offset & 0x7fffffffu;
      if (large >= large_count_) return std::nullopt;
      return BigEndian64(large_ + large * 8);
    }
    if (c < 0) {
      lo = mid + 1;
      lo_key = BigEndian64(at + 1);
    } else {
      hi = mid;
      hi_key = BigEndian64(at + 1);
    }
  }
  return std::nullopt;
}

uint32_t PackIndex::LowerBound(const git_oid& id) const {
  const unsigned first = id.id[0];
  uint32_t lo = first == 0 ? 0 : BigEndian32(fanout_ + 4 * (first - 1));
  uint32_t hi = BigEndian32(fanout_ + 4 * first);
  while (lo < hi) {
    const uint32_t mid = lo + (hi - lo) / 2;
    if (std::memcmp(ids_ + size_t{mid} * GIT_OID_RAWSZ, id.id, GIT_OID_RAWSZ) < 0) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

bool ParsePackEntryHeader(std::string_view bytes, PackEntryHeader* out) {
  if (bytes.empty()) return false;
  auto c = static_cast<unsigned char>(bytes[0]);
  const int type = (c >> 4) & 7;
  if (type == 0 || type == 5) return false;
  uint64_t size = c & 15;
  unsigned shift = 4;
  size_t i = 1;
  while (c & 0x80) {
    if (i == bytes.size()) return false;
    c = static_cast<unsigned char>(bytes[i++]);
    const uint64_t bits = c & 0x7f;
    // 4 + 7 * 8 = 60 bits so far: the next group may hold 4 more, no further.
    if (shift > 60 || (shift == 60 && bits > 15)) return false;
    size |= bits << shift;
    shift += 7;
  }
  out->type = type;
  out->size = size;
  out->length = i;
  return true;
}

bool ParseLooseHeader(std::string_view inflated, std::string_view* type, uint64_t* size,
                      size_t* length) {
  const size_t space = inflated.find(' ');
  const size_t nul = inflated.find('\0');
  if (space == std::string_view::npos || nul == std::string_view::npos || nul < space + 2)
    return false;
  const std::string_view name = inflated.substr(0, space);
  if (name != "blob" && name != "tree" && name != "commit" && name != "tag") return false;
  const std::string_view digits = inflated.substr(space + 1, nul - space - 1);
  if (digits.size() > 1 && digits[0] == '0') return false;
  uint64_t n = 0;
  for (const char d : digits) {
    if (d < '0' || d > '9') return false;
    const uint64_t v = static_cast<uint64_t>(d - '0');
    if (n > (UINT64_MAX - v) / 10) return false;
    n = n * 10 + v;
  }
  *type = name;
  *size = n;
  *length = nul + 1;
  return true;
}

// The file and the zlib state a stream inflates from.
struct InflatingBlob::State {
  Fd fd;
  uint64_t offset = 0;  // the next byte of the file to read
  uint64_t end = 0;     // the file's size: reading stops there
  z_stream z{};
  bool z_ready = false;
  std::unique_ptr<unsigned char[]> input{new unsigned char[kInputBytes]};
  std::string header;  // a loose object's header, inflated before the blob's bytes
  ~State() {
    if (z_ready) inflateEnd(&z);
  }
};

InflatingBlob::InflatingBlob(std::unique_ptr<State> state, uint64_t size, bool loose)
    : state_(std::move(state)), size_(size), loose_(loose) {}

InflatingBlob::~InflatingBlob() = default;

bool InflatingBlob::Inflate(std::string* out, size_t want, std::string* error) {
  State& s = *state_;
  z_stream& z = s.z;
  const uint64_t left = size_ - produced_;
  const size_t target = static_cast<size_t>(std::min<uint64_t>(want, left));
  // Asked for the last bytes: room for one more, which a stream that goes on past the size
  // fills; the loop then runs until zlib has read (and checked) the stream's end.
  const size_t room = target < left ? target : target + 1;
  const size_t start = out->size();
  out->resize(start + room);
  size_t got = 0;
  bool ok = true;
  while (!ended_ && (got < target || target == left)) {
    if (got > target) break;
    if (z.avail_in == 0) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(kInputBytes, s.end - s.offset));
      const ssize_t r =
          n == 0 ? 0 : ::pread(s.fd.get(), s.input.get(), n, static_cast<off_t>(s.offset));
      if (r <= 0) {
        *error = "the object's data ends early";
        ok = false;
        break;
      }
      s.offset += static_cast<uint64_t>(r);
      z.next_in = s.input.get();
      z.avail_in = static_cast<uInt>(r);
    }
    z.next_out = reinterpret_cast<Bytef*>(out->data() + start + got);
    z.avail_out = static_cast<uInt>(room - got);
    const int rc = inflate(&z, Z_NO_FLUSH);
    got = room - z.avail_out;
    if (rc == Z_STREAM_END) {
      ended_ = true;
    } else if (rc != Z_OK) {
      *error =
          std::string("the object's data is corrupt (zlib: ") + (z.msg ? z.msg : "error") + ")";
      ok = false;
      break;
    }
  }
  if (got > target) {  // a byte past the size: not the blob's, and not sent
    got = target;
    if (ok) *error = "the object's data is longer than its header says";
    ok = false;
  }
  out->resize(start + got);
  produced_ += got;
  return ok;
}

std::optional<std::string_view> InflatingBlob::Head(size_t n, std::string* error) {
  const uint64_t target = std::min<uint64_t>(n, size_);
  while (pending_.size() < target) {
    if (!Inflate(&pending_, static_cast<size_t>(target - pending_.size()), error))
      return std::nullopt;
    if (ended_ && produced_ < size_) {
      *error = "the object's data is shorter than its header says";
      return std::nullopt;
    }
  }
  return std::string_view(pending_).substr(0, static_cast<size_t>(target));
}

BodyStream::Result InflatingBlob::Next(std::string* out, std::string* error) {
  size_t sent = 0;
  if (!pending_.empty()) {
    sent = pending_.size();
    out->append(pending_);
    std::string().swap(pending_);
  }
  if (sent < kPieceBytes && produced_ < size_ && !Inflate(out, kPieceBytes - sent, error))
    return Result::kFailed;
  if (ended_ && produced_ < size_) {
    *error = "the object's data is shorter than its header says";
    return Result::kFailed;
  }
  if (produced_ < size_) return Result::kMore;
  // Every byte is out: the zlib stream must end here (its trailer checks the data).
  if (!ended_) {
    std::string extra;
    if (!Inflate(&extra, 0, error)) return Result::kFailed;
  }
  return Result::kDone;
}

std::unique_ptr<InflatingBlob> OpenBlobStream(const std::string& git_dir, const git_oid& id,
                                              uint64_t size, std::string* why) {
  std::string objects = git_dir;
  while (objects.ends_with('/')) objects.pop_back();
  objects += "/objects";
  const std::vector<std::string> folders = ObjectFolders(objects);
  char hex[GIT_OID_HEXSZ + 1];
  git_oid_tostr(hex, sizeof hex, &id);
  *why = "not found in the object folders";
  for (const std::string& folder : folders) {
    // Loose: objects/XX/YYYY..., one zlib stream of the header and the bytes.
    const std::string loose = folder + "/" + std::string(hex, 2) + "/" + (hex + 2);
    if (Fd fd(::open(loose.c_str(), O_RDONLY | O_CLOEXEC)); fd.get() >= 0) {
      struct stat st {};
      if (fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
        *why = "the loose object is not a file";
        return nullptr;
      }
      auto state = std::make_unique<InflatingBlob::State>();
      state->fd = std::move(fd);
      state->end = static_cast<uint64_t>(st.st_size);
      if (inflateInit(&state->z) != Z_OK) {
        *why = "zlib cannot start";
        return nullptr;
      }
      state->z_ready = true;
      // The header: at most "commit " and 20 digits and the NUL, inflated before the size is
      // known (so with no size to hold the stream to), and a few of the blob's bytes after it.
      std::unique_ptr<InflatingBlob> blob(new InflatingBlob(std::move(state), UINT64_MAX, true));
      std::string head;
      if (!blob->Inflate(&head, 32, why)) return nullptr;
      std::string_view type;
      uint64_t declared = 0;
      size_t length = 0;
      if (!ParseLooseHeader(head, &type, &declared, &length)) {
        *why = "the loose object's header is not valid";
        return nullptr;
      }
      if (type != "blob" || declared != size) {
        *why = "the loose object is not the blob its id names";
        return nullptr;
      }
      // What was inflated past the header is the blob's first bytes.
      blob->size_ = size;
      blob->pending_ = head.substr(length);
      blob->produced_ = blob->pending_.size();
      if (blob->produced_ > size || (blob->ended_ && blob->produced_ < size)) {
        *why = "the loose object's data does not match its header";
        return nullptr;
      }
      return blob;
    }
    // Packed: the first pack whose index has the id.
    const std::string pack_dir = folder + "/pack";
    const base::Owned<closedir> dir(opendir(pack_dir.c_str()));
    if (dir == nullptr) continue;
    std::vector<std::string> indexes;
    while (const dirent* e = readdir(dir.get())) {
      const std::string_view name = e->d_name;
      if (name.starts_with("pack-") && name.ends_with(".idx")) indexes.emplace_back(name);
    }
    for (const std::string& name : indexes) {
      const std::string base = pack_dir + "/" + name.substr(0, name.size() - 4);
      const std::unique_ptr<MappedFile> mapping = MappedFile::Of(base + ".idx");
      if (!mapping) continue;
      const std::unique_ptr<PackIndex> index = PackIndex::FromBytes(mapping->bytes(), nullptr);
      if (!index) continue;
      const std::optional<uint64_t> offset = index->Find(id);
      if (!offset) continue;
      Fd fd(::open((base + ".pack").c_str(), O_RDONLY | O_CLOEXEC));
      struct stat st {};
      if (fd.get() < 0 || fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
        *why = "the pack is not readable";
        return nullptr;
      }
      const uint64_t pack_size = static_cast<uint64_t>(st.st_size);
      // 12 bytes of pack header before the first entry, 20 of checksum after the last.
      if (*offset < 12 || *offset + 20 >= pack_size) {
        *why = "the index points outside its pack";
        return nullptr;
      }
      char head[16];
      const ssize_t n = ::pread(fd.get(), head, sizeof head, static_cast<off_t>(*offset));
      PackEntryHeader entry;
      if (n <= 0 || !ParsePackEntryHeader(std::string_view(head, static_cast<size_t>(n)), &entry)) {
        *why = "the pack entry's header is not valid";
        return nullptr;
      }
      if (entry.type == 6 || entry.type == 7) {
        *why = "stored as a delta";
        return nullptr;
      }
      if (entry.type != 3 || entry.size != size) {
        *why = "the pack entry is not the blob its id names";
        return nullptr;
      }
      auto state = std::make_unique<InflatingBlob::State>();
      state->fd = std::move(fd);
      state->offset = *offset + entry.length;
      state->end = pack_size - 20;
      if (inflateInit(&state->z) != Z_OK) {
        *why = "zlib cannot start";
        return nullptr;
      }
      state->z_ready = true;
      return std::unique_ptr<InflatingBlob>(new InflatingBlob(std::move(state), size, false));
    }
  }
  return nullptr;
}

}  // namespace shellac::gitfrag
