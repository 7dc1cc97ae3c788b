// What git's archive code (cgit's snapshots) does to a path by its gitattributes, read as git
// archive reads them: from the archived commit's own .gitattributes files (git puts the commit's
// tree in its index for the lookups), the repository's info/attributes, the system's and the
// user's attribute files; and by core.autocrlf and core.eol.
//
// Applied: export-ignore (the path, and a folder's contents, left out) and the conversions a
// checkout makes: ident ("$Id$" keywords given the blob's id) and line ends (text, eol, crlf, the
// binary macro, core.autocrlf, core.eol: lone LFs written as CRLF where git would), and
// export-subst (archive_subst.h). Not applied: filter drivers and working-tree-encoding
// (gitfrag/README.md).
#ifndef SHELLAC_GITFRAG_ARCHIVE_ATTRIBUTES_H_
#define SHELLAC_GITFRAG_ARCHIVE_ATTRIBUTES_H_

#include <git2.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace shellac::gitfrag {

class ExportSubst;

// How a file's line ends leave the archive.
enum class ArchiveEol : uint8_t {
  kAsIs,      // as stored
  kCrlf,      // each LF without a CR before it gets one (git's "text eol=crlf")
  kCrlfAuto,  // the same unless the file has a CR already or looks binary (git's text=auto)
};

// What outside an archived tree can change its archive, as read from a repository: its config
// (core.autocrlf, core.eol, core.attributesFile, diff.NAME.binary) and the attribute files
// libgit2 reads besides the tree's (info/attributes, core.attributesFile's, the system's and the
// XDG one).
// What a checkout does to a file's bytes, in git's order (convert_to_working_tree): its "$Id$"
// keywords, then its line ends; then git archive's export-subst.
struct ArchiveConversion {
  bool ident = false;                  // "$Id$" written as "$Id: BLOB-ID $" (the ident attribute)
  ArchiveEol eol = ArchiveEol::kAsIs;  // line ends
  bool subst = false;                  // export-subst: "$Format:...$" expanded (archive_subst.h)
  ExportSubst* formats = nullptr;      // the archive's expander, for `subst`
  bool any() const { return ident || eol != ArchiveEol::kAsIs || subst; }
};

struct ArchiveSources {
  explicit ArchiveSources(git_repository* repo);

  // "" when none of them can change an archive (no such file, core.autocrlf false, core.eol not
  // crlf, no diff.NAME.binary); else a digest (hex) of the settings and of the files' bytes, for
  // the key of a kept archive: repositories whose sources differ do not share one.
  std::string Digest() const;

  enum class AutoCrlf : uint8_t { kFalse, kTrue, kInput } auto_crlf = AutoCrlf::kFalse;
  bool eol_crlf = false;    // core.eol is crlf
  bool text_crlf = false;   // text files get CRLF (git's text_eol_is_crlf)
  std::string info;         // info/attributes, when it exists
  std::string config_file;  // core.attributesFile, when set (the file may not exist)
  std::string system, xdg;  // the system's and the XDG attributes files, when found
  bool unknown = false;     // libgit2's search path could not be read: assume files exist
  std::vector<std::pair<std::string, bool>> diff_binary;  // diff.NAME.binary settings
};

class ArchiveAttributes {
 public:
  // A .gitattributes file of the archived tree: the folder it is in (relative to the root, with
  // its '/'; "" for the root's) and its blob.
  struct File {
    std::string folder;
    git_oid blob;
  };
  // For `commit` of `repo`, whose tree holds `files`, with `repo`'s sources (read once by the
  // caller, whose archive key holds their digest). When nothing can set an attribute or convert
  // a line end (no such file, no info/attributes, no system or user attributes file,
  // core.autocrlf false, core.eol not crlf), every path is as stored and no lookup is made.
  ArchiveAttributes(git_repository* repo, const git_oid& commit, const std::vector<File>& files,
                    const ArchiveSources& sources);

  bool active() const { return active_; }

  struct Path {
    bool ignored = false;                // export-ignore
    ArchiveConversion convert;           // a file's bytes
    int8_t binary = -1;  // zip's text flag from the diff attribute (-diff, a driver's binary
                         // setting): 1 binary, 0 text, -1 by the bytes (a NUL in the first 8000)
  };
  // `path` relative to the tree's root as git asks for it (a folder's and a submodule's with a
  // '/' at the end); only export-ignore for a folder. False with *error when the lookup fails.
  bool Of(std::string_view path, bool folder, Path* out, std::string* error) const;

 private:
  git_repository* repo_;
  mutable git_attr_options options_ = GIT_ATTR_OPTIONS_INIT;  // libgit2 takes it non-const
  bool active_ = false;
  ArchiveSources sources_;

  // libgit2's lookup stats the repository's and the user's attribute files at every path (~5 us
  // a path on git/git, 4,500 paths an archive), so paths no line could change are not asked
  // about: a line can only when it names export-ignore, export-subst, ident, eol=crlf, -diff,
  // binary, a macro that does, or diff=NAME with diff.NAME.binary set (with core.autocrlf false
  // and core.eol not crlf; else every path is asked about). Such a line's pattern, kept as a superset of what it
  // matches: without a '/', the name matched by fnmatch(3) (git's wildmatch on a name is the
  // same); with one, the text before its first wildcard, which a path under the file's folder
  // must start with.
  struct Rule {
    std::string folder;  // the file's folder: the rule holds below it
    bool by_name;        // pattern below matches the last name; else `pattern` is a path prefix
    std::string pattern;
  };
  void AddRules(const std::string& folder, std::string_view text);
  bool Might(std::string_view path) const;
  bool ask_all_ = false;
  std::vector<Rule> rules_;
};

// `in`, the bytes of blob `blob`, as git archive writes them for `convert` (git's
// ident_to_worktree, crlf_to_worktree, then format_subst): true with the converted bytes in *out,
// false when nothing changes.
bool ConvertForCheckout(std::string_view in, const git_oid& blob, const ArchiveConversion& convert,
                        std::string* out);

}  // namespace shellac::gitfrag

#endif  // SHELLAC_GITFRAG_ARCHIVE_ATTRIBUTES_H_
