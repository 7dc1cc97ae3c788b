#include "gitfrag/renames.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <memory>
#include <optional>
#include <unordered_map>

#include "gitfrag/git.h"
#include "gitfrag/line_count.h"
#include "gitfrag/pack_reader.h"

namespace shellac::gitfrag {

namespace {

constexpr uint32_t kTypeMask = 0170000;
constexpr uint32_t kRegular = 0100000;
// How many candidates with the same blob the exact pass looks at before taking the best so far.
constexpr int kExactCandidates = 100;
// Candidates kept per destination by the inexact pass.
constexpr size_t kCandidatesPerDestination = 4;

bool IsRegular(uint32_t mode) { return (mode & kTypeMask) == kRegular; }

// One side of a possible rename: a deleted (source) or added (destination) file, with what the
// similarity needs of its blob, read once.
struct Side {
  size_t change = 0;  // index in the changes
  std::string_view path;
  git_oid id{};
  uint32_t mode = 0;
  bool paired = false;
  // Copy detection: a source the commit keeps (modified or not; git's rename_used from the
  // start), which the exact pass ranks below a deleted one and the first inexact pass skips.
  bool kept = false;
  bool unmodified = false;  // kept with the same blob and mode
  std::optional<size_t> size;
  std::optional<std::vector<std::pair<uint32_t, uint32_t>>> hashes;
};

// A candidate pair of the inexact pass (diffcore-rename's diff_score); dst < 0: an empty slot.
struct Candidate {
  int src = 0;
  int dst = -1;
  int score = 0;
  int name = 0;
};

// diffcore-rename's order of candidates: empty slots last, then by score, then by basename
// match, both descending. Negative: a first, positive: b first.
int CompareCandidates(const Candidate& a, const Candidate& b) {
  if (a.dst < 0) return b.dst >= 0 ? 1 : 0;
  if (b.dst < 0) return -1;
  if (a.score == b.score) return b.name - a.name;
  return b.score - a.score;
}

// Keeps `o` among a destination's slots when it beats the worst one kept (the first of equals).
void KeepIfBetter(Candidate* slots, const Candidate& o) {
  size_t worst = 0;
  for (size_t i = 1; i < kCandidatesPerDestination; ++i)
    if (CompareCandidates(slots[i], slots[worst]) > 0) worst = i;
  if (CompareCandidates(slots[worst], o) > 0) slots[worst] = o;
}

class Matcher {
 public:
  Matcher(git_repository* repo, std::vector<TreeChange>* changes, bool blob_lines)
      : repo_(repo), changes_(*changes), blob_lines_(blob_lines) {}

  bool Run(int rename_limit, std::string* reason);
  // FindFollowSource's search: `files`, every file of the parent's tree (in path order, as
  // deletions), `changes` the commit's, changes_ the one added file.
  bool RunFollow(const std::vector<TreeChange>& files, const std::vector<TreeChange>& changes,
                 std::string* reason);

 private:
  bool Size(Side& s, size_t* size);
  bool Hashes(Side& s, const std::vector<std::pair<uint32_t, uint32_t>>** hashes);
  // estimate_similarity: 0 for anything but two regular files or sizes too far apart.
  bool Estimate(Side& src, Side& dst, int minimum, int* score);
  void Pair(Side& src, Side& dst, int score);
  void DropPairedSources();
  bool Failed(std::string* reason) const;
  bool FindExact();
  bool FindBasenames();
  bool FindSimilar(int rename_limit);

  git_repository* repo_;
  std::vector<TreeChange>& changes_;
  const bool blob_lines_;  // also hash the lines of each blob read (RememberBlobLines)
  bool copies_ = false;    // copy detection: kept files are sources, a source may pair again
  OdbPtr odb_;
  std::vector<Side> sources_, destinations_;
  // The pairs found, as indexes in the changes, applied once all are found.
  struct Found {
    size_t src = 0, dst = 0;
    int score = 0;
  };
  std::vector<Found> pairs_;
};

bool Matcher::Size(Side& s, size_t* size) {
  if (!s.size) {
    if (!odb_) {
      git_odb* raw = nullptr;
      if (git_repository_odb(&raw, repo_) != 0) return false;
      odb_.reset(raw);
    }
    size_t n = 0;
    git_object_t type;
    if (git_odb_read_header(&n, &type, odb_.get(), &s.id) != 0) return false;
    s.size = n;
  }
  *size = *s.size;
  return true;
}

bool Matcher::Hashes(Side& s, const std::vector<std::pair<uint32_t, uint32_t>>** hashes) {
  if (!s.hashes) {
    // Through the thread's pack reader, its bytes as they are (libgit2's blob would copy them);
    // what it does not have through libgit2.
    const auto use = [&](std::string_view bytes) {
      s.hashes = SpanHashes(bytes);
      if (blob_lines_) RememberBlobLines(s.id, bytes);
    };
    if (const ObjectBytes packed = ReadPacked(repo_, s.id, GIT_OBJECT_BLOB)) {
      use(packed.view());
    } else {
      git_blob* raw = nullptr;
      if (git_blob_lookup(&raw, repo_, &s.id) != 0) return false;
      const BlobPtr blob(raw);
      use(std::string_view(static_cast<const char*>(git_blob_rawcontent(raw)),
                           static_cast<size_t>(git_blob_rawsize(raw))));
    }
  }
  *hashes = &*s.hashes;
  return true;
}

bool Matcher::Estimate(Side& src, Side& dst, int minimum, int* score) {
  *score = 0;
  if (!IsRegular(src.mode) || !IsRegular(dst.mode)) return true;
  size_t src_size = 0, dst_size = 0;
  const std::vector<std::pair<uint32_t, uint32_t>>*src_hashes = nullptr, *dst_hashes = nullptr;
  if (!Size(src, &src_size) || !Size(dst, &dst_size)) return false;
  if (!SizesCanReach(src_size, dst_size, minimum)) return true;
  if (!Hashes(src, &src_hashes) || !Hashes(dst, &dst_hashes)) return false;
  *score = SpanSimilarity(*src_hashes, src_size, *dst_hashes, dst_size);
  return true;
}

void Matcher::Pair(Side& src, Side& dst, int score) {
  src.paired = true;
  dst.paired = true;
  pairs_.push_back(Found{src.change, dst.change, score});
}

void Matcher::DropPairedSources() {
  if (!copies_) std::erase_if(sources_, [](const Side& s) { return s.paired; });
}

bool Matcher::Failed(std::string* reason) const {
  const git_error* e = git_error_last();
  *reason = std::string("rename detection cannot read a blob: ") +
            (e != nullptr ? e->message : "unknown error");
  return false;
}

// Each destination in path order takes the first unpaired source with its blob (and, unless both
// are regular files, its mode), one with the same basename first, among the first
// kExactCandidates such sources. With copies, a source already paired or kept is taken too, after
// a free one (git's score: 1 for a source not used, 1 for the same basename).
bool Matcher::FindExact() {
  std::unordered_map<std::string_view, std::vector<size_t>> by_id;
  for (size_t i = 0; i < sources_.size(); ++i)
    by_id[std::string_view(reinterpret_cast<const char*>(sources_[i].id.id), GIT_OID_RAWSZ)]
        .push_back(i);
  for (Side& dst : destinations_) {
    const auto it =
        by_id.find(std::string_view(reinterpret_cast<const char*>(dst.id.id), GIT_OID_RAWSZ));
    if (it == by_id.end()) continue;
    Side* best = nullptr;
    int best_score = -1, left = kExactCandidates;
    for (const size_t i : it->second) {
      Side& src = sources_[i];
      if ((!IsRegular(src.mode) || !IsRegular(dst.mode)) && src.mode != dst.mode) continue;
      const bool used = src.paired || src.kept;
      if (used && !copies_) continue;
      const int score = (used ? 0 : 1) + (Basename(src.path) == Basename(dst.path) ? 1 : 0);
      if (score > best_score) {
        best = &src;
        best_score = score;
        if (score == 2) break;
      }
      if (--left == 0) break;
    }
    if (best != nullptr) Pair(*best, dst, kMaxSimilarity);
  }
  DropPairedSources();
  return true;
}

// A basename held by exactly one remaining source and one unpaired destination pairs them when
// they score kMinBasenameScore or more.
bool Matcher::FindBasenames() {
  constexpr size_t kNotUnique = SIZE_MAX;
  std::unordered_map<std::string_view, size_t> src_bases, dst_bases;
  for (size_t i = 0; i < sources_.size(); ++i) {
    const auto [it, fresh] = src_bases.emplace(Basename(sources_[i].path), i);
    if (!fresh) it->second = kNotUnique;
  }
  for (size_t i = 0; i < destinations_.size(); ++i) {
    if (destinations_[i].paired) continue;
    const auto [it, fresh] = dst_bases.emplace(Basename(destinations_[i].path), i);
    if (!fresh) it->second = kNotUnique;
  }
  for (size_t i = 0; i < sources_.size(); ++i) {
    const std::string_view base = Basename(sources_[i].path);
    const auto d = dst_bases.find(base);
    if (d == dst_bases.end() || d->second == kNotUnique || src_bases[base] == kNotUnique) continue;
    Side& dst = destinations_[d->second];
    if (dst.paired) continue;
    int score = 0;
    if (!Estimate(sources_[i], dst, kMinBasenameScore, &score)) return false;
    if (score >= kMinBasenameScore) Pair(sources_[i], dst, score);
  }
  DropPairedSources();
  return true;
}

// The remaining sources against each unpaired destination, its best kCandidatesPerDestination
// kept; all kept candidates in order of score (stable), each taken when both sides are free. With
// copies, a second pass takes for a destination still unpaired its best candidate, used or not.
bool Matcher::FindSimilar(int rename_limit) {
  const size_t wanted = static_cast<size_t>(
      std::count_if(destinations_.begin(), destinations_.end(), [](const Side& s) {
        return !s.paired;
      }));
  if (wanted == 0 || sources_.empty()) return true;
  const uint64_t limit = static_cast<uint64_t>(rename_limit) * rename_limit;
  if (rename_limit > 0 && static_cast<uint64_t>(wanted) * sources_.size() > limit) {
    if (!copies_) return true;  // git gives up on inexact renames (and warns) rather than do part
    // With copies git leaves the files the commit did not change out when that is enough.
    std::erase_if(sources_, [](const Side& s) { return s.unmodified; });
    if (static_cast<uint64_t>(wanted) * sources_.size() > limit) return true;
  }
  std::vector<Candidate> kept(wanted * kCandidatesPerDestination);
  size_t row = 0;
  for (size_t d = 0; d < destinations_.size(); ++d) {
    Side& dst = destinations_[d];
    if (dst.paired) continue;
    Candidate* slots = &kept[row * kCandidatesPerDestination];
    for (size_t s = 0; s < sources_.size(); ++s) {
      Candidate c;
      c.src = static_cast<int>(s);
      c.dst = static_cast<int>(d);
      if (!Estimate(sources_[s], dst, kMinRenameScore, &c.score)) return false;
      c.name = Basename(sources_[s].path) == Basename(dst.path) ? 1 : 0;
      KeepIfBetter(slots, c);
    }
    ++row;
  }
  std::stable_sort(kept.begin(), kept.end(), [](const Candidate& a, const Candidate& b) {
    return CompareCandidates(a, b) < 0;
  });
  for (const bool second : {false, true}) {
    if (second && !copies_) break;
    for (const Candidate& c : kept) {
      if (c.dst < 0 || c.score < kMinRenameScore) break;
      Side& src = sources_[static_cast<size_t>(c.src)];
      Side& dst = destinations_[static_cast<size_t>(c.dst)];
      if (dst.paired || (!second && (src.paired || src.kept))) continue;
      Pair(src, dst, c.score);
    }
  }
  return true;
}

bool Matcher::Run(int rename_limit, std::string* reason) {
  // Only deletions and additions are candidates: a modified or kind-changed file (git's 'M' and
  // 'T' pairs) is neither a source nor a destination without copy detection.
  for (size_t i = 0; i < changes_.size(); ++i) {
    const TreeChange& c = changes_[i];
    if (c.status != GIT_DELTA_ADDED && c.status != GIT_DELTA_DELETED) continue;
    Side s;
    s.change = i;
    s.path = c.path;
    if (c.status == GIT_DELTA_DELETED) {
      s.id = c.old_id;
      s.mode = c.old_mode;
      sources_.push_back(std::move(s));
    } else {
      s.id = c.new_id;
      s.mode = c.new_mode;
      destinations_.push_back(std::move(s));
    }
  }
  if (sources_.empty() || destinations_.empty()) return true;
  // git keeps both tables sorted by path, byte by byte.
  auto by_path = [](const Side& a, const Side& b) { return a.path < b.path; };
  std::sort(sources_.begin(), sources_.end(), by_path);
  std::sort(destinations_.begin(), destinations_.end(), by_path);
  if (!FindExact() || !FindBasenames() || !FindSimilar(rename_limit)) return Failed(reason);
  if (pairs_.empty()) return true;
  // Each pair takes the added file's place; the deleted file leaves the list.
  std::vector<bool> gone(changes_.size(), false);
  for (const Found& f : pairs_) {
    TreeChange& d = changes_[f.dst];
    const TreeChange& s = changes_[f.src];
    d.status = GIT_DELTA_RENAMED;
    d.old_path = s.path;
    d.old_mode = s.old_mode;
    git_oid_cpy(&d.old_id, &s.old_id);
    d.score = f.score;
    gone[f.src] = true;
  }
  std::vector<TreeChange> kept;
  kept.reserve(changes_.size() - pairs_.size());
  for (size_t i = 0; i < changes_.size(); ++i)
    if (!gone[i]) kept.push_back(std::move(changes_[i]));
  changes_ = std::move(kept);
  return true;
}

bool Matcher::RunFollow(const std::vector<TreeChange>& files,
                        const std::vector<TreeChange>& changes, std::string* reason) {
  copies_ = true;
  // The commit's changes by path: a file it deletes is a free source, one it keeps a used one.
  std::unordered_map<std::string_view, git_delta_t> status;
  for (const TreeChange& c : changes) status.emplace(c.path, c.status);
  for (const TreeChange& f : files) {
    Side s;
    s.change = sources_.size();  // RunFollow's pairs name sources
    s.path = f.path;
    s.id = f.old_id;
    s.mode = f.old_mode;
    const auto it = status.find(f.path);
    s.kept = it == status.end() || it->second != GIT_DELTA_DELETED;
    s.unmodified = it == status.end();
    sources_.push_back(std::move(s));
  }
  const TreeChange& added = changes_.front();
  Side d;
  d.path = added.path;
  d.id = added.new_id;
  d.mode = added.new_mode;
  destinations_.push_back(std::move(d));
  if (sources_.empty()) return true;
  // No basename pass with copies (git skips it); the limit is git's default, not cgit's.
  if (!FindExact() || !FindSimilar(kDefaultRenameLimit)) return Failed(reason);
  if (pairs_.empty()) return true;
  const auto src_it = std::find_if(sources_.begin(), sources_.end(),
                                   [&](const Side& s) { return s.change == pairs_.front().src; });
  if (src_it == sources_.end()) return true;
  const Side& src = *src_it;
  TreeChange& c = changes_.front();
  c.status = src.kept ? GIT_DELTA_COPIED : GIT_DELTA_RENAMED;
  c.old_path = std::string(src.path);
  c.old_mode = src.mode;
  c.old_id = src.id;
  c.score = pairs_.front().score;
  return true;
}

// diffcore-delta's chunks: up to this many bytes, ending at a '\n'; their hashes are below
// kHashBase.
constexpr size_t kSpanBytes = 64;
constexpr uint32_t kHashBase = 107927;

// diffcore-delta's hash of a chunk, above its length in bytes: the bytes [p, p + n), then a '\n'
// when `newline` (the one after a skipped CR). git's step, accum1 = (accum1 << 7 ^ accum2 >> 25)
// + c and accum2 = accum2 << 7 ^ old accum1 >> 25, is a rotation of the 64 bits (accum2, accum1)
// by 7 and then c added to accum1 alone, mod 2^32: one rotate and a 32-bit add.
uint64_t SpanOf(const char* p, size_t n, bool newline = false) {
  constexpr uint64_t kHigh = ~uint64_t{0} << 32;
  uint64_t accum = 0;  // accum2 << 32 | accum1
  const auto feed = [&](uint32_t c) {
    accum = std::rotl(accum, 7);
    accum = (accum & kHigh) | static_cast<uint32_t>(static_cast<uint32_t>(accum) + c);
  };
#pragma GCC unroll 4
  for (size_t i = 0; i < n; ++i) feed(static_cast<unsigned char>(p[i]));
  if (newline) feed('\n');
  const uint32_t accum1 = static_cast<uint32_t>(accum), accum2 = static_cast<uint32_t>(accum >> 32);
  return uint64_t{(accum1 + accum2 * 0x61) % kHashBase} << 32 | (n + (newline ? 1 : 0));
}

// Sorts SpanOf's numbers by hash (17 bits: under kHashBase), keeping the order of equal hashes:
// two passes of a counting sort, on the hash's low 9 bits and then its high 8, where std::sort
// took ~180 instructions a chunk. Few numbers go to std::sort (the counts would cost more).
void SortByHash(std::vector<uint64_t>* spans) {
  static_assert(kHashBase <= 512 * 256);
  constexpr size_t kFew = 64;
  if (spans->size() < kFew) {
    std::sort(spans->begin(), spans->end());
    return;
  }
  std::array<uint32_t, 513> low{};
  std::array<uint32_t, 257> high{};
  for (const uint64_t s : *spans) {
    ++low[((s >> 32) & 511) + 1];
    ++high[(s >> 41) + 1];
  }
  for (size_t i = 1; i < low.size(); ++i) low[i] += low[i - 1];
  for (size_t i = 1; i < high.size(); ++i) high[i] += high[i - 1];
  std::vector<uint64_t> by_low(spans->size());
  for (const uint64_t s : *spans) by_low[low[(s >> 32) & 511]++] = s;
  for (const uint64_t s : by_low) (*spans)[high[s >> 41]++] = s;
}

}  // namespace

bool LooksBinary(std::string_view bytes) {
  return bytes.substr(0, 8000).find('\0') != std::string_view::npos;
}

std::string_view Basename(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

std::vector<std::pair<uint32_t, uint32_t>> SpanHashes(std::string_view bytes) {
  const bool text = !LooksBinary(bytes);
  // Every chunk's hash and bytes as one number (hash << 32 | bytes), then sorted by hash and each
  // hash's bytes summed: a blob has a chunk a line, and sorting them costs a fraction of a hash
  // table's node per chunk.
  std::vector<uint64_t> spans;
  spans.reserve(bytes.size() / 32 + 1);
  // git feeds the bytes one at a time, ending a chunk at a '\n' or its 64th byte. Here each line is
  // found first (memchr), then cut into chunks hashed in a loop that tests nothing: a CR skipped
  // before the line's '\n' is the only byte not fed, and it is never inside a full chunk (a line
  // of more than 64 fed bytes has it at 64 or more past the chunk's start).
  const char* p = bytes.data();
  const char* const end = p + bytes.size();
  while (p < end) {
    const void* found = std::memchr(p, '\n', static_cast<size_t>(end - p));
    if (found == nullptr) {  // the last bytes, no '\n': their full chunks, not the rest
      for (; static_cast<size_t>(end - p) >= kSpanBytes; p += kSpanBytes)
        spans.push_back(SpanOf(p, kSpanBytes));
      break;
    }
    const char* const nl = static_cast<const char*>(found);
    const bool cr = text && nl > p && nl[-1] == '\r';
    const size_t fed = static_cast<size_t>(nl + 1 - p) - (cr ? 1 : 0);
    for (size_t left = fed; left > kSpanBytes; left -= kSpanBytes, p += kSpanBytes)
      spans.push_back(SpanOf(p, kSpanBytes));
    if (cr)  // the line's last chunk without its CR: the bytes before it, then the '\n'
      spans.push_back(SpanOf(p, static_cast<size_t>(nl - 1 - p), true));
    else
      spans.push_back(SpanOf(p, static_cast<size_t>(nl + 1 - p)));
    p = nl + 1;
  }
  SortByHash(&spans);
  std::vector<std::pair<uint32_t, uint32_t>> summed;
  summed.reserve(spans.size());
  for (const uint64_t span : spans) {
    const uint32_t hash = static_cast<uint32_t>(span >> 32), n = static_cast<uint32_t>(span);
    if (!summed.empty() && summed.back().first == hash)
      summed.back().second += n;
    else
      summed.emplace_back(hash, n);
  }
  return summed;
}

bool SizesCanReach(size_t src_size, size_t dst_size, int minimum) {
  const double max_size = static_cast<double>(std::max(src_size, dst_size));
  const double delta = static_cast<double>(std::max(src_size, dst_size) - std::min(src_size, dst_size));
  return !(max_size * (kMaxSimilarity - minimum) < delta * kMaxSimilarity);
}

int SpanSimilarity(const std::vector<std::pair<uint32_t, uint32_t>>& src, size_t src_size,
                   const std::vector<std::pair<uint32_t, uint32_t>>& dst, size_t dst_size) {
  if (dst_size == 0) return 0;
  uint64_t copied = 0;
  auto d = dst.begin();
  for (const auto& [hash, count] : src) {
    while (d != dst.end() && d->first < hash) ++d;
    if (d != dst.end() && d->first == hash) copied += std::min(count, d->second);
  }
  const double max_size = static_cast<double>(std::max(src_size, dst_size));
  return static_cast<int>(static_cast<double>(copied) * kMaxSimilarity / max_size);
}

int Similarity(std::string_view src, std::string_view dst, int minimum) {
  if (!SizesCanReach(src.size(), dst.size(), minimum)) return 0;
  return SpanSimilarity(SpanHashes(src), src.size(), SpanHashes(dst), dst.size());
}

bool DetectRenames(git_repository* repo, std::vector<TreeChange>* changes, int rename_limit,
                   bool blob_lines, std::string* reason) {
  return Matcher(repo, changes, blob_lines).Run(rename_limit, reason);
}

bool FindFollowSource(git_repository* repo, RawObjects* objects, const git_oid& parent_tree,
                      const git_oid& commit_tree, TreeChange* added, std::string* reason) {
  std::vector<TreeChange> files, changes;
  if (!DiffTreeIds(repo, objects, &parent_tree, nullptr, &files, reason) ||
      !DiffTreeIds(repo, objects, &parent_tree, &commit_tree, &changes, reason))
    return false;
  std::vector<TreeChange> found{*added};
  if (!Matcher(repo, &found, false).RunFollow(files, changes, reason)) return false;
  *added = std::move(found.front());
  return true;
}

}  // namespace shellac::gitfrag
