// cgit's dumb-HTTP clone paths (cgit 1.2.3's HEAD, info and objects commands), served from the
// repository's files, with git's dumb-HTTP client in mind:
//   info/refs           every ref under refs/ in name order, "ID<TAB>NAME", and for a tag object
//                       "ID<TAB>NAME^{}" with the object it peels to (made here, as cgit makes it,
//                       never read from a file `git update-server-info` may have left stale);
//   objects/info/packs  "P pack-X.pack" for each pack with its index, newest first;
//   objects/PATH, HEAD  the file's bytes, read piece by piece on render threads and sent as they
//                       come: neither held whole nor stored nor compressed (packs are large and
//                       compressed already).
// A file path that climbs (".."), has a character outside cgit's [A-Za-z0-9/.-], or resolves
// (through symbolic links) outside the objects folder, is 404 with the reason; cgit answers 400
// for the first two and follows symbolic links anywhere.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "base/owned.h"
#include "gitfrag/pack_reader.h"
#include "gitfrag/render.h"

namespace shellac::gitfrag {

namespace {

using DirPtr = base::Owned<closedir>;

// An open file descriptor, closed with its owner.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// A file's bytes, kPieceBytes at a time.
class FileStream : public BodyStream {
 public:
  FileStream(std::unique_ptr<Fd> fd, uint64_t size) : fd_(std::move(fd)), size_(size), left_(size) {}

  std::optional<uint64_t> Length() const override { return size_; }

  Result Next(std::string* out, std::string* error) override {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(left_, kPieceBytes));
    const size_t start = out->size();
    out->resize(start + want);
    size_t got = 0;
    while (got < want) {
      const ssize_t n = ::read(fd_->get(), out->data() + start + got, want - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        out->resize(start + got);
        *error = n == 0 ? "the file became shorter while it was sent"
                        : std::string("cannot read the file: ") + std::strerror(errno);
        return Result::kFailed;
      }
      got += static_cast<size_t>(n);
    }
    left_ -= want;
    return left_ == 0 ? Result::kDone : Result::kMore;
  }

 private:
  std::unique_ptr<Fd> fd_;
  const uint64_t size_;
  uint64_t left_;
};

// The folder `path` really is (symbolic links resolved), or "".
std::string RealPath(const std::string& path) {
  char resolved[PATH_MAX];
  if (::realpath(path.c_str(), resolved) == nullptr) return {};
  return resolved;
}

// cgit's headers for a file it sends: Content-Disposition names the file's path in the
// repository.
Page FilePage(const std::string& content_type, const std::string& name) {
  Page page;
  page.content_type = content_type;
  page.headers.emplace_back("Content-Disposition", "inline; filename=\"" + name + "\"");
  return page;
}

// The file `name` ("HEAD", "objects/...") of the repository whose git folder is `git_dir`,
// streamed, provided it resolves inside `root` (the git folder, or its objects folder).
Page SendFile(const std::string& git_dir, const std::string& root, const std::string& name) {
  const std::string real_root = RealPath(root);
  const std::string real = RealPath(git_dir + name);
  if (real_root.empty() || real.empty()) return ErrorPage(404, "Not found: " + name);
  if (!real.starts_with(real_root + "/"))
    return ErrorPage(404, "Not found: " + name + " leads outside the repository's " +
                              (root == git_dir ? "folder" : "objects folder"));
  auto fd = std::make_unique<Fd>(::open(real.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (fd->get() < 0)
    return ErrorPage(errno == EACCES ? 403 : 404,
                     (errno == EACCES ? "Forbidden: " : "Not found: ") + name);
  struct stat st;
  if (::fstat(fd->get(), &st) != 0 || !S_ISREG(st.st_mode))
    return ErrorPage(404, "Not found: " + name + " is not a file");
  Page page = FilePage("application/octet-stream; charset=UTF-8", name);
  page.stream = std::make_shared<FileStream>(std::move(fd), static_cast<uint64_t>(st.st_size));
  return page;
}

// info/refs' text as cgit writes it (its for_each_ref: refs under refs/ by name, symbolic ones
// resolved; a ref whose object cannot be read is left out).
std::string MakeInfoRefs(git_repository* repo, git_odb* odb, const RefIndex& refs) {
  std::string out;
  size_t bytes = 0;
  for (const RefIndex::Ref& ref : refs.refs())
    bytes += (ref.peeled ? 2 : 1) * (GIT_OID_HEXSZ + ref.name.size() + 2) + (ref.peeled ? 3 : 0);
  out.reserve(bytes);
  auto line = [&out](const git_oid& id, std::string_view name, std::string_view suffix) {
    static constexpr char kDigits[] = "0123456789abcdef";
    char hex[GIT_OID_HEXSZ + 1];
    for (size_t i = 0; i < GIT_OID_RAWSZ; ++i) {
      hex[2 * i] = kDigits[id.id[i] >> 4];
      hex[2 * i + 1] = kDigits[id.id[i] & 15];
    }
    hex[GIT_OID_HEXSZ] = '\t';
    out.append(hex, sizeof hex).append(name).append(suffix).push_back('\n');
  };
  PackedLookup packed(repo);
  // The ref index has every ref in name order, and packed-refs' peeled lines: a packed ref needs
  // no object read beyond knowing it exists (cgit leaves out a ref whose object it cannot read):
  // the pack reader's indexes say so for a packed object, libgit2 for a loose one.
  for (const RefIndex::Ref& ref : refs.refs()) {
    if (ref.peel_known) {
      if (!packed.Has(ref.id) && !git_odb_exists(odb, &ref.id)) continue;
      line(ref.id, ref.name, "");
      if (ref.peeled) line(*ref.peeled, ref.name, "^{}");
      continue;
    }
    // A loose ref (or packed-refs without the traits): the object says whether it is a tag.
    size_t size = 0;
    git_object_t type = GIT_OBJECT_INVALID;
    if (git_odb_read_header(&size, &type, odb, &ref.id) != 0) continue;
    if (type != GIT_OBJECT_TAG) {
      line(ref.id, ref.name, "");
      continue;
    }
    git_object* raw_tag = nullptr;
    if (git_object_lookup(&raw_tag, repo, &ref.id, GIT_OBJECT_TAG) != 0) continue;
    const ObjectPtr tag(raw_tag);
    git_object* raw_peeled = nullptr;
    if (git_tag_peel(&raw_peeled, reinterpret_cast<git_tag*>(raw_tag)) != 0) continue;
    const ObjectPtr peeled(raw_peeled);
    line(ref.id, ref.name, "");
    line(*git_object_id(peeled.get()), ref.name, "^{}");
  }
  return out;
}

constexpr size_t kMinShared = 4096;  // shorter: not worth a deflate block of its own

// info/refs: made once per generation of the repository's refs (a crawler asks every fork for
// it, and the text of a repository with thousands of tags is some 100 KiB), and marked so that
// the proxy keeps it compressed for that generation too.
Page InfoRefs(const PageContext& ctx) {
  git_repository* repo = ctx.lease.repo();
  git_odb* raw_odb = nullptr;
  if (git_repository_odb(&raw_odb, repo) != 0) return ErrorPage(500, "cannot read the objects");
  const OdbPtr odb(raw_odb);
  const RefIndex& refs = ctx.lease.refs();
  const std::string& text = refs.InfoRefs([&] { return MakeInfoRefs(repo, odb.get(), refs); });
  ctx.out.Raw(text);
  Page page = FilePage("text/plain; charset=UTF-8", "info/refs");
  page.reuse_key = "info/refs " + std::to_string(refs.generation()) + " " + ctx.repo.url;
  // The tags (after the branches, in name order) are what the forks of a farm list alike: the
  // proxy compresses that range once per render thread, each fork's text only the rest.
  if (const size_t tab = text.find("\trefs/tags/"); tab != std::string::npos) {
    const size_t line = text.rfind('\n', tab) + 1;  // 0 when it is the first line
    if (text.size() - line >= kMinShared) page.shared.emplace_back(line, text.size());
  }
  return page;
}

// objects/info/packs: the packs git would use (a .pack with its .idx), newest first, as cgit lists
// its packed_git list.
Page InfoPacks(const PageContext& ctx, const std::string& objects) {
  std::vector<std::pair<int64_t, std::string>> packs;  // (-mtime in ns, name)
  const std::string folder = objects + "pack/";
  if (DirPtr dir{::opendir(folder.c_str())}) {
    while (const dirent* entry = ::readdir(dir.get())) {
      const std::string_view idx = entry->d_name;
      if (!idx.starts_with("pack-") || !idx.ends_with(".idx")) continue;
      const std::string pack = std::string(idx.substr(0, idx.size() - 4)) + ".pack";
      struct stat st;
      if (::stat((folder + pack).c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
      packs.emplace_back(-(int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec), pack);
    }
  }
  std::sort(packs.begin(), packs.end());
  for (const auto& [when, pack] : packs) ctx.out.Raw("P ").Raw(pack).Raw("\n");
  return FilePage("text/plain; charset=UTF-8", "objects/info/packs");
}

}  // namespace

Page RenderClone(const PageContext& ctx) {
  const std::string& file = ctx.route.path;  // "HEAD", "info/...", "objects/..."
  // The common folder holds the objects of a linked worktree's repository.
  const std::string git_dir = git_repository_commondir(ctx.lease.repo());  // ends with '/'
  if (file == "HEAD") return SendFile(git_repository_path(ctx.lease.repo()),
                                      git_repository_path(ctx.lease.repo()), "HEAD");
  if (file == "info/refs") return InfoRefs(ctx);
  if (!file.starts_with("objects/")) return ErrorPage(404, "Not found: " + file);
  const std::string objects = git_dir + "objects/";
  if (file == "objects/info/packs") return InfoPacks(ctx, objects);
  const std::string_view rest = std::string_view(file).substr(8);
  if (rest.empty() || rest.starts_with('/'))
    return ErrorPage(404, "Not found: " + file + " (no file named)");
  for (size_t i = 0; i < rest.size(); ++i) {
    const char c = rest[i];
    if (c == '.' && i + 1 < rest.size() && rest[i + 1] == '.')
      return ErrorPage(404, "Not found: a path with \"..\" (" + file + ")");
    const bool alnum = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    if (!alnum && c != '/' && c != '.' && c != '-')
      return ErrorPage(404, "Not found: a character outside [A-Za-z0-9/.-] in " + file);
  }
  return SendFile(git_dir, objects, file);
}

}  // namespace shellac::gitfrag
