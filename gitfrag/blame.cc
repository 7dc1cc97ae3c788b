// git's blame (blame.c's assign_blame with cgit's options), written for libgit2: suspects are
// passed from a commit to its parents through a diff of the two blobs with no context, in
// committer-date order; what no parent explains stays with the commit. Line fates are decided
// per line exactly as git's blame_chunk decides them, so the order in which entries are split
// does not matter; the final entries are coalesced as blame_coalesce does.
#include "gitfrag/blame.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <queue>
#include <string_view>
#include <unordered_map>

namespace shellac::gitfrag {

namespace {

using Clock = std::chrono::steady_clock;

constexpr uint32_t kTypeMask = 0170000;
constexpr uint32_t kRegular = 0100000;
constexpr uint32_t kTree = 0040000;
// diffcore-rename's scores: MAX_SCORE, the default minimum (50 %) and the one a unique basename
// pair needs (half way from the minimum to the maximum).
constexpr double kMaxScore = 60000.0;
constexpr int kMinScore = 30000;
constexpr int kMinBasenameScore = kMinScore + static_cast<int>(0.5 * (kMaxScore - kMinScore));
constexpr size_t kRenameLimit = 1000;  // diff.renameLimit's default: sources x destinations <= 1000^2

std::string Key(const git_oid& oid) {
  return std::string(reinterpret_cast<const char*>(oid.id), GIT_OID_RAWSZ);
}

// A run of suspected lines: final lines [lno, lno + num_lines) are lines [s_lno, ...) of the
// owning origin's blob.
struct Entry {
  size_t lno = 0;
  size_t num_lines = 0;
  size_t s_lno = 0;
};

// One blob in one commit that lines are suspected to come from (git's blame_origin).
struct Origin {
  git_oid commit{};
  std::string path;
  git_oid blob{};
  uint32_t mode = 0;
  std::vector<Entry> suspects;  // sorted by s_lno
  BlobPtr content;              // loaded for a diff, dropped once the origin is done
};

struct CommitData {
  int64_t time = 0;  // committer date
  std::vector<git_oid> parents;
  git_oid tree{};
};

// One hunk of a zero-context diff, 0-based: lines [a, a + a_count) of the parent's blob replaced
// by lines [b, b + b_count) of the suspect's.
struct Hunk {
  size_t a = 0, a_count = 0, b = 0, b_count = 0;
};

std::string_view Bytes(git_blob* blob) {
  return {static_cast<const char*>(git_blob_rawcontent(blob)),
          static_cast<size_t>(git_blob_rawsize(blob))};
}

// xdiff's buffer_is_binary: a NUL in the first 8000 bytes.
bool Binary(std::string_view bytes) {
  return bytes.substr(0, 8000).find('\0') != std::string_view::npos;
}

std::string_view Basename(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// git's trim_common_tail (xdi_diff does it before every diff without context): equal 1 KiB
// blocks at the ends of both buffers are cut off, less the part of the last block after its
// first newline.
void TrimCommonTail(std::string_view* a, std::string_view* b) {
  constexpr size_t kBlock = 1024;
  size_t trimmed = 0;
  const size_t smaller = std::min(a->size(), b->size());
  while (kBlock + trimmed <= smaller &&
         std::memcmp(a->data() + a->size() - trimmed - kBlock,
                     b->data() + b->size() - trimmed - kBlock, kBlock) == 0)
    trimmed += kBlock;
  size_t recovered = 0;
  const char* ap = a->data() + a->size() - trimmed;
  while (recovered < trimmed)
    if (ap[recovered++] == '\n') break;
  *a = a->substr(0, a->size() - (trimmed - recovered));
  *b = b->substr(0, b->size() - (trimmed - recovered));
}

int OnHunk(const git_diff_delta*, const git_diff_hunk* h, void* payload) {
  auto* hunks = static_cast<std::vector<Hunk>*>(payload);
  // The header's start is the line before an empty side (as "@@ -k,0"), else 1-based.
  Hunk hunk;
  hunk.a_count = static_cast<size_t>(h->old_lines);
  hunk.a = static_cast<size_t>(h->old_lines ? h->old_start - 1 : h->old_start);
  hunk.b_count = static_cast<size_t>(h->new_lines);
  hunk.b = static_cast<size_t>(h->new_lines ? h->new_start - 1 : h->new_start);
  hunks->push_back(hunk);
  return 0;
}

// The zero-context hunks between two blobs, as git's diff_hunks gives them to blame (xdiff's
// Myers diff, no indent heuristic, the common tail trimmed first). False when libgit2 fails.
bool DiffHunks(std::string_view parent, std::string_view target, std::vector<Hunk>* hunks) {
  TrimCommonTail(&parent, &target);
  git_diff_options options = GIT_DIFF_OPTIONS_INIT;
  options.context_lines = 0;
  options.interhunk_lines = 0;
  options.flags = GIT_DIFF_FORCE_TEXT;
  return git_diff_buffers(parent.data(), parent.size(), nullptr, target.data(), target.size(),
                          nullptr, &options, nullptr, nullptr, OnHunk, nullptr, hunks) == 0;
}

// diffcore-delta's span hashes: chunks of up to 64 bytes ending at a newline (a last chunk without
// one is not counted; CR before LF ignored in text), bytes per hash value.
std::unordered_map<uint32_t, uint32_t> SpanHashes(std::string_view bytes) {
  constexpr uint32_t kHashBase = 107927;
  const bool text = !Binary(bytes);
  std::unordered_map<uint32_t, uint32_t> counts;
  uint32_t accum1 = 0, accum2 = 0, n = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    const uint32_t c = static_cast<unsigned char>(bytes[i]);
    const uint32_t old1 = accum1;
    if (text && c == '\r' && i + 1 < bytes.size() && bytes[i + 1] == '\n') continue;
    accum1 = (accum1 << 7) ^ (accum2 >> 25);
    accum2 = (accum2 << 7) ^ (old1 >> 25);
    accum1 += c;
    if (++n < 64 && c != '\n') continue;
    counts[(accum1 + accum2 * 0x61) % kHashBase] += n;
    n = 0;
    accum1 = accum2 = 0;
  }
  return counts;
}

// diffcore-rename's estimate_similarity for two regular files: the bytes of `dst` copied from
// `src` over the larger size, 0 when the sizes differ too much to reach `minimum`.
int Similarity(std::string_view src, std::string_view dst, int minimum) {
  const double max_size = static_cast<double>(std::max(src.size(), dst.size()));
  const double delta = static_cast<double>(std::max(src.size(), dst.size()) -
                                           std::min(src.size(), dst.size()));
  if (max_size * (kMaxScore - minimum) < delta * kMaxScore) return 0;
  if (dst.empty()) return 0;
  const auto s = SpanHashes(src), d = SpanHashes(dst);
  double copied = 0;
  for (const auto& [hash, count] : s) {
    const auto it = d.find(hash);
    if (it != d.end()) copied += std::min(count, it->second);
  }
  return static_cast<int>(copied * kMaxScore / max_size);
}

class Scoreboard {
 public:
  Scoreboard(git_repository* repo, Clock::time_point deadline) : repo_(repo), deadline_(deadline) {}

  BlameResult Run(const git_oid& commit, const std::string& path, const git_oid& blob) {
    BlameResult result;
    Origin* origin = GetOrigin(commit, path);
    origin->blob = blob;
    origin->mode = kRegular;
    std::string_view bytes;
    if (!Load(origin, &bytes)) return Fail("the blob cannot be read");
    size_t lines = 0;
    for (size_t i = 0; i < bytes.size(); ++i)
      if (bytes[i] == '\n' || i + 1 == bytes.size()) ++lines;
    origin->suspects.push_back(Entry{0, lines, 0});
    const CommitData* data = Data(commit);
    if (data == nullptr) return Fail("the commit cannot be read");
    queue_.push(Queued{data->time, seq_++, commit});

    while (!queue_.empty()) {
      if (Clock::now() >= deadline_) {
        result.status = BlameResult::Status::kDeadline;
        return result;
      }
      const Queued next = queue_.top();
      queue_.pop();
      // One origin of this commit that still has suspects (a commit queued for several paths is
      // queued once per path).
      Origin* suspect = nullptr;
      for (Origin* o : by_commit_[Key(next.commit)])
        if (!o->suspects.empty()) {
          suspect = o;
          break;
        }
      if (suspect == nullptr) continue;
      if (!PassBlame(suspect)) {
        if (failed_) return Fail(error_);
        result.status = BlameResult::Status::kDeadline;
        return result;
      }
      ++result.commits;
      for (const Entry& e : suspect->suspects)
        guilty_.push_back(BlameEntry{suspect->commit, suspect->path, e.lno, e.num_lines, e.s_lno});
      suspect->suspects.clear();
      suspect->content.reset();
    }

    // blame_sort_final and blame_coalesce.
    std::sort(guilty_.begin(), guilty_.end(),
              [](const BlameEntry& a, const BlameEntry& b) { return a.lno < b.lno; });
    for (BlameEntry& e : guilty_) {
      if (!result.entries.empty()) {
        BlameEntry& last = result.entries.back();
        if (git_oid_equal(&last.commit, &e.commit) && last.path == e.path &&
            last.s_lno + last.num_lines == e.s_lno && last.lno + last.num_lines == e.lno) {
          last.num_lines += e.num_lines;
          continue;
        }
      }
      result.entries.push_back(std::move(e));
    }
    return result;
  }

 private:
  struct Queued {
    int64_t time;
    uint64_t seq;
    git_oid commit;
    // std::priority_queue puts the greatest first: the newest, then the first queued.
    bool operator<(const Queued& o) const { return time != o.time ? time < o.time : seq > o.seq; }
  };

  BlameResult Fail(std::string why) {
    BlameResult r;
    r.status = BlameResult::Status::kError;
    r.error = std::move(why);
    return r;
  }

  Origin* GetOrigin(const git_oid& commit, const std::string& path) {
    auto key = std::make_pair(Key(commit), path);
    auto it = origins_.find(key);
    if (it != origins_.end()) return it->second.get();
    auto origin = std::make_unique<Origin>();
    origin->commit = commit;
    origin->path = path;
    Origin* raw = origin.get();
    by_commit_[key.first].push_back(raw);
    origins_.emplace(std::move(key), std::move(origin));
    return raw;
  }

  Origin* FindOrigin(const git_oid& commit, const std::string& path) {
    auto it = origins_.find(std::make_pair(Key(commit), path));
    return it == origins_.end() ? nullptr : it->second.get();
  }

  const CommitData* Data(const git_oid& id) {
    const std::string key = Key(id);
    auto it = commits_.find(key);
    if (it != commits_.end()) return &it->second;
    git_commit* raw = nullptr;
    if (git_commit_lookup(&raw, repo_, &id) != 0) return nullptr;
    const CommitPtr commit(raw);
    CommitData data;
    data.time = git_commit_time(commit.get());
    data.tree = *git_commit_tree_id(commit.get());
    for (unsigned i = 0; i < git_commit_parentcount(commit.get()); ++i)
      data.parents.push_back(*git_commit_parent_id(commit.get(), i));
    return &commits_.emplace(key, std::move(data)).first->second;
  }

  bool Load(Origin* origin, std::string_view* bytes) {
    if (!origin->content) {
      git_blob* raw = nullptr;
      if (git_blob_lookup(&raw, repo_, &origin->blob) != 0) return false;
      origin->content.reset(raw);
    }
    *bytes = Bytes(origin->content.get());
    return true;
  }

  // The entry for `path` in a commit's tree: false when there is none.
  bool PathEntry(const git_oid& tree_id, const std::string& path, git_oid* id, uint32_t* mode) {
    git_tree* raw_tree = nullptr;
    if (git_tree_lookup(&raw_tree, repo_, &tree_id) != 0) return false;
    const TreePtr tree(raw_tree);
    git_tree_entry* raw_entry = nullptr;
    if (git_tree_entry_bypath(&raw_entry, tree.get(), path.c_str()) != 0) return false;
    const TreeEntryPtr entry(raw_entry);
    *id = *git_tree_entry_id(entry.get());
    *mode = static_cast<uint32_t>(git_tree_entry_filemode(entry.get()));
    return true;
  }

  // git's find_origin: the same path in the parent, when it is there as the same kind of file
  // (a missing path, a folder there or a changed type give none).
  Origin* FindSamePath(const git_oid& parent, Origin* origin) {
    if (Origin* known = FindOrigin(parent, origin->path)) return known;
    const CommitData* data = Data(parent);
    if (data == nullptr) return nullptr;
    git_oid id;
    uint32_t mode = 0;
    if (!PathEntry(data->tree, origin->path, &id, &mode)) return nullptr;
    if ((mode & kTypeMask) == kTree || (mode & kTypeMask) != (origin->mode & kTypeMask))
      return nullptr;
    Origin* porigin = GetOrigin(parent, origin->path);
    porigin->blob = id;
    porigin->mode = mode;
    return porigin;
  }

  // git's find_rename: with the path new in the commit (not in the parent), the file deleted
  // from the parent it was renamed from, by diffcore-rename's rules for one destination: an exact
  // copy first (the same basename preferred), then the only deleted file of the same basename if
  // it is similar enough, then the most similar deleted file of at least 50 %.
  Origin* FindRename(const git_oid& parent, Origin* origin) {
    const CommitData* pdata = Data(parent);
    const CommitData* cdata = Data(origin->commit);
    if (pdata == nullptr || cdata == nullptr) return nullptr;
    git_tree *raw_old = nullptr, *raw_new = nullptr;
    if (git_tree_lookup(&raw_old, repo_, &pdata->tree) != 0) return nullptr;
    const TreePtr old_tree(raw_old);
    if (git_tree_lookup(&raw_new, repo_, &cdata->tree) != 0) return nullptr;
    const TreePtr new_tree(raw_new);
    git_diff_options options = GIT_DIFF_OPTIONS_INIT;
    options.flags = GIT_DIFF_INCLUDE_TYPECHANGE;
    git_diff* raw_diff = nullptr;
    if (git_diff_tree_to_tree(&raw_diff, repo_, old_tree.get(), new_tree.get(), &options) != 0)
      return nullptr;
    const DiffPtr diff(raw_diff);
    struct Source {
      std::string path;
      git_oid id;
      uint32_t mode;
    };
    std::vector<Source> sources;
    bool added = false;
    uint32_t dst_mode = 0;
    for (size_t i = 0; i < git_diff_num_deltas(diff.get()); ++i) {
      const git_diff_delta* d = git_diff_get_delta(diff.get(), i);
      if (d->status == GIT_DELTA_ADDED && origin->path == d->new_file.path) {
        added = true;
        dst_mode = d->new_file.mode;
      } else if (d->status == GIT_DELTA_DELETED) {
        sources.push_back(Source{d->old_file.path, d->old_file.id, d->old_file.mode});
      }
    }
    if (!added || sources.empty()) return nullptr;
    const std::string_view base = Basename(origin->path);
    auto found = [&](const Source& s) {
      Origin* porigin = GetOrigin(parent, s.path);
      porigin->blob = s.id;
      porigin->mode = s.mode;
      return porigin;
    };
    // Exact renames.
    const Source* best = nullptr;
    int best_score = -1;
    for (const Source& s : sources) {
      if (!git_oid_equal(&s.id, &origin->blob)) continue;
      if (((s.mode & kTypeMask) != kRegular || (dst_mode & kTypeMask) != kRegular) &&
          s.mode != dst_mode)
        continue;
      const int score = 1 + (Basename(s.path) == base ? 1 : 0);
      if (score > best_score) {
        best = &s;
        best_score = score;
        if (score == 2) break;
      }
    }
    if (best != nullptr) return found(*best);
    if ((dst_mode & kTypeMask) != kRegular) return nullptr;
    if (sources.size() > kRenameLimit * kRenameLimit) return nullptr;
    std::string_view dst;
    if (!Load(origin, &dst)) return nullptr;
    auto similarity = [&](const Source& s) -> int {
      if ((s.mode & kTypeMask) != kRegular) return 0;
      git_blob* raw = nullptr;
      if (git_blob_lookup(&raw, repo_, &s.id) != 0) return 0;
      const BlobPtr blob(raw);
      return Similarity(Bytes(blob.get()), dst, kMinScore);
    };
    // A unique basename on both sides.
    const Source* same_base = nullptr;
    size_t same_count = 0;
    for (const Source& s : sources)
      if (Basename(s.path) == base) {
        same_base = &s;
        ++same_count;
      }
    if (same_count == 1 && similarity(*same_base) >= kMinBasenameScore) return found(*same_base);
    // The most similar (the same basename first among equals, then the first in path order).
    best = nullptr;
    int best_similarity = -1, best_name = -1;
    for (const Source& s : sources) {
      if (Clock::now() >= deadline_) return nullptr;
      const int score = similarity(s);
      const int name = Basename(s.path) == base ? 1 : 0;
      if (score > best_similarity || (score == best_similarity && name > best_name)) {
        best = &s;
        best_similarity = score;
        best_name = name;
      }
    }
    if (best != nullptr && best_similarity >= kMinScore) return found(*best);
    return nullptr;
  }

  // Hands the origin's suspects a parent with the same blob keeps as they are.
  void PassWhole(Origin* origin, Origin* parent) {
    if (!parent->content && origin->content) parent->content = std::move(origin->content);
    Queue(parent, std::move(origin->suspects));
    origin->suspects.clear();
  }

  // Adds entries to a parent's suspects (kept sorted by s_lno); a parent that had none is queued.
  void Queue(Origin* parent, std::vector<Entry> entries) {
    if (entries.empty()) return;
    const bool was_empty = parent->suspects.empty();
    std::vector<Entry> merged;
    merged.reserve(parent->suspects.size() + entries.size());
    std::merge(parent->suspects.begin(), parent->suspects.end(), entries.begin(), entries.end(),
               std::back_inserter(merged),
               [](const Entry& a, const Entry& b) { return a.s_lno < b.s_lno; });
    parent->suspects = std::move(merged);
    if (was_empty) {
      const CommitData* data = Data(parent->commit);
      queue_.push(Queued{data != nullptr ? data->time : 0, seq_++, parent->commit});
    }
  }

  // git's pass_blame_to_parent: the lines of the target the diff leaves unchanged go to the
  // parent at their line there; the changed ones stay. A line goes by the first hunk whose
  // changed part ends after it: before that hunk's start it is unchanged, with the offset of the
  // hunks before (git's blame_chunk, which an entry of no lines follows too).
  bool PassToParent(Origin* target, Origin* parent) {
    if (target->suspects.empty()) return true;
    std::string_view a, b;
    if (!Load(parent, &a) || !Load(target, &b)) {
      failed_ = true;
      error_ = "a blob cannot be read";
      return false;
    }
    std::vector<Hunk> hunks;
    if (!DiffHunks(a, b, &hunks)) {
      failed_ = true;
      error_ = "the diff failed";
      return false;
    }
    std::vector<Entry> to_parent, stay;
    size_t h = 0;  // first hunk whose changed part ends after the entry's start (entries sorted)
    // offset (parent line - target line) before hunk k: a_k - b_k; after the last: that of the end.
    auto offset_before = [&](size_t k) -> std::ptrdiff_t {
      if (k < hunks.size()) return static_cast<std::ptrdiff_t>(hunks[k].a) -
                                   static_cast<std::ptrdiff_t>(hunks[k].b);
      if (hunks.empty()) return 0;
      const Hunk& last = hunks.back();
      return static_cast<std::ptrdiff_t>(last.a + last.a_count) -
             static_cast<std::ptrdiff_t>(last.b + last.b_count);
    };
    auto pass = [&](size_t lno, size_t n, size_t s_lno, std::ptrdiff_t offset) {
      to_parent.push_back(Entry{lno, n, static_cast<size_t>(static_cast<std::ptrdiff_t>(s_lno) + offset)});
    };
    for (const Entry& e : target->suspects) {
      while (h < hunks.size() && hunks[h].b + hunks[h].b_count <= e.s_lno) ++h;
      if (e.num_lines == 0) {
        if (h < hunks.size() && e.s_lno >= hunks[h].b)
          stay.push_back(e);
        else
          pass(e.lno, 0, e.s_lno, offset_before(h));
        continue;
      }
      size_t s = e.s_lno, lno = e.lno;
      const size_t end = e.s_lno + e.num_lines;
      size_t k = h;
      while (s < end) {
        while (k < hunks.size() && hunks[k].b + hunks[k].b_count <= s) ++k;
        if (k == hunks.size()) {
          pass(lno, end - s, s, offset_before(k));
          break;
        }
        const Hunk& hk = hunks[k];
        if (s < hk.b) {
          const size_t n = std::min(end, hk.b) - s;
          pass(lno, n, s, offset_before(k));
          s += n;
          lno += n;
          continue;
        }
        const size_t n = std::min(end, hk.b + hk.b_count) - s;
        stay.push_back(Entry{lno, n, s});
        s += n;
        lno += n;
      }
    }
    // Entries may overlap (lines of the parent that several final lines came from, through
    // merges): the pieces of one are not all before those of the next. Keep both lists sorted.
    auto by_line = [](const Entry& x, const Entry& y) { return x.s_lno < y.s_lno; };
    std::stable_sort(stay.begin(), stay.end(), by_line);
    std::stable_sort(to_parent.begin(), to_parent.end(), by_line);
    target->suspects = std::move(stay);
    Queue(parent, std::move(to_parent));
    return true;
  }

  // git's pass_blame without move or copy detection. False on a deadline or a failure.
  bool PassBlame(Origin* origin) {
    const CommitData* data = Data(origin->commit);
    if (data == nullptr) {
      failed_ = true;
      error_ = "a commit cannot be read";
      return false;
    }
    const size_t n = data->parents.size();
    if (n == 0) return true;
    std::vector<Origin*> sg(n, nullptr);
    for (int pass = 0; pass < 2; ++pass) {
      for (size_t i = 0; i < n; ++i) {
        if (sg[i] != nullptr) continue;
        if (Clock::now() >= deadline_) return false;
        const git_oid parent = data->parents[i];
        Origin* porigin = pass == 0 ? FindSamePath(parent, origin) : FindRename(parent, origin);
        if (porigin == nullptr) continue;
        if (git_oid_equal(&porigin->blob, &origin->blob)) {
          PassWhole(origin, porigin);
          return true;
        }
        bool same = false;
        for (size_t j = 0; j < i; ++j)
          if (sg[j] != nullptr && git_oid_equal(&sg[j]->blob, &porigin->blob)) same = true;
        if (!same) sg[i] = porigin;
      }
    }
    for (size_t i = 0; i < n; ++i) {
      if (sg[i] == nullptr) continue;
      if (Clock::now() >= deadline_) return false;
      if (!PassToParent(origin, sg[i])) return false;
      if (sg[i]->suspects.empty()) sg[i]->content.reset();
      if (origin->suspects.empty()) break;
    }
    for (size_t i = 0; i < n; ++i)
      if (sg[i] != nullptr && sg[i]->suspects.empty()) sg[i]->content.reset();
    return true;
  }

  git_repository* repo_;
  Clock::time_point deadline_;
  std::map<std::pair<std::string, std::string>, std::unique_ptr<Origin>> origins_;
  std::unordered_map<std::string, std::vector<Origin*>> by_commit_;
  std::unordered_map<std::string, CommitData> commits_;
  std::priority_queue<Queued> queue_;
  uint64_t seq_ = 0;
  std::vector<BlameEntry> guilty_;
  bool failed_ = false;
  std::string error_;
};

}  // namespace

BlameResult Blame(git_repository* repo, const git_oid& commit, const std::string& path,
                  const git_oid& blob, Clock::time_point deadline) {
  Scoreboard board(repo, deadline);
  return board.Run(commit, path, blob);
}

}  // namespace shellac::gitfrag
