#include "cache/snapshot.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "cache/wire.h"

namespace shellac::cache {
namespace {

constexpr char kMagic[16] = {'S', 'H', 'E', 'L', 'L', 'A', 'C', '-',
                             'S', 'N', 'A', 'P', 'S', 'H', 'O', 'T'};
constexpr uint32_t kVersion = 1;
constexpr uint32_t kEnd = 0xffffffffu;
constexpr size_t kHead = sizeof kMagic + 4;

void Put32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}
void Put64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}
uint64_t GetLE(const char* p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

// A file descriptor closed once.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

bool WriteAll(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

Status WriteSnapshot(const Store& store, const std::string& path, SnapshotStats* stats) {
  *stats = {};
  const std::string temp = path + ".tmp";
  Fd file{open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)};
  if (file.fd < 0) return Status::Error(Errno(temp));
  std::string buffer(kMagic, sizeof kMagic);
  Put32(&buffer, kVersion);
  uLong crc = crc32(0, nullptr, 0);
  std::string record;
  const auto flush = [&]() {
    crc = crc32_z(crc, reinterpret_cast<const Bytef*>(buffer.data()), buffer.size());
    stats->bytes += buffer.size();
    const bool ok = WriteAll(file.fd, buffer);
    buffer.clear();
    return ok;
  };
  for (const ObjectRef& object : store.Objects()) {
    record.clear();
    if (!EncodeObject(*object, &record)) {
      ++stats->skipped;
      continue;
    }
    Put32(&buffer, static_cast<uint32_t>(record.size()));
    buffer += record;
    ++stats->objects;
    if (buffer.size() >= (1 << 20) && !flush()) {
      unlink(temp.c_str());
      return Status::Error(Errno(temp));
    }
  }
  if (!flush()) {
    unlink(temp.c_str());
    return Status::Error(Errno(temp));
  }
  Put32(&buffer, kEnd);
  Put64(&buffer, stats->objects);
  Put32(&buffer, static_cast<uint32_t>(crc));
  stats->bytes += buffer.size();
  if (!WriteAll(file.fd, buffer) || fsync(file.fd) != 0) {
    const Status error = Status::Error(Errno(temp));
    unlink(temp.c_str());
    return error;
  }
  close(std::exchange(file.fd, -1));
  if (rename(temp.c_str(), path.c_str()) != 0) {
    const Status error = Status::Error(Errno("rename " + temp + " to " + path));
    unlink(temp.c_str());
    return error;
  }
  return Status::Ok();
}

Status LoadSnapshot(Store* store, const std::string& path, std::chrono::sys_seconds now,
                    SnapshotStats* stats, bool* missing) {
  *stats = {};
  *missing = false;
  Fd file{open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (file.fd < 0) {
    *missing = errno == ENOENT;
    return Status::Error(Errno(path));
  }
  // Read whole: the objects it holds are built from it and the copy is dropped at once.
  std::string bytes;
  char chunk[1 << 16];
  for (;;) {
    const ssize_t n = read(file.fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::Error(Errno(path));
    if (n == 0) break;
    bytes.append(chunk, static_cast<size_t>(n));
  }
  stats->bytes = bytes.size();
  const auto refuse = [&](const std::string& why) { return Status::Error(path + ": " + why); };
  if (bytes.size() < kHead || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    return refuse("not a shellac store snapshot");
  if (const uint64_t version = GetLE(bytes.data() + sizeof kMagic, 4); version != kVersion)
    return refuse("snapshot format version " + std::to_string(version) + ", this shellac reads " +
                  std::to_string(kVersion));
  std::vector<ObjectRef> objects;
  uint64_t records = 0;
  size_t at = kHead;
  for (;;) {
    if (bytes.size() - at < 4) return refuse("cut short (no end record)");
    const uint32_t length = static_cast<uint32_t>(GetLE(bytes.data() + at, 4));
    if (length == kEnd) {
      if (bytes.size() - at != 16) return refuse("cut short or trailing bytes after the end record");
      const uint64_t count = GetLE(bytes.data() + at + 4, 8);
      const uint32_t crc = static_cast<uint32_t>(GetLE(bytes.data() + at + 12, 4));
      const uint32_t actual = static_cast<uint32_t>(
          crc32_z(0, reinterpret_cast<const Bytef*>(bytes.data()), at));
      if (count != records) return refuse("end record counts " + std::to_string(count) +
                                          " objects, " + std::to_string(records) + " present");
      if (crc != actual) return refuse("checksum mismatch");
      break;
    }
    at += 4;
    if (bytes.size() - at < length) return refuse("cut short inside object " + std::to_string(records + 1));
    Status status;
    ObjectRef object = DecodeObject(std::string_view(bytes).substr(at, length), &status);
    if (!object) return refuse("object " + std::to_string(records + 1) + ": " + status.message());
    at += length;
    ++records;
    objects.push_back(std::move(object));
  }
  bytes.clear();
  bytes.shrink_to_fit();
  for (ObjectRef& object : objects) {
    if (object->FreshnessAt(now) == Freshness::kExpired || !store->Insert(std::move(object)).ok()) {
      ++stats->skipped;
    } else {
      ++stats->objects;
    }
  }
  return Status::Ok();
}

}  // namespace shellac::cache
