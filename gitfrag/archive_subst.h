// export-subst: in a file with the export-subst attribute, git archive (so cgit's snapshots)
// replaces each "$Format:FMT$" with FMT expanded for the archived commit, as `git log
// --format=FMT` would print it (git's format_subst and format_commit_message; cgit 1.2.3 as Debian
// builds it links git 2.39, whose placeholders these are).
//
// Expanded: %H %h %T %t %P %p; the author's and committer's %an %ae %al, %aN %aE %aL (through
// the repository's mailmap), %ad %aD %ai %aI %as %at %ar (and %c...); %s %f %b %B %e; %d %D (the
// repository's refs, as git decorates them); %m, %n %x00 %%; the empty reflog ones (%gd %gD %gs
// %gn %gN %ge %gE); %(describe) as Debian's cgit writes it (nothing: its git cannot run
// describe); colours (off in an archive: nothing written); and the %+x %-x %' 'x forms. A
// placeholder git does not know is written as it stands, as git writes it. A "$Format:...$"
// holding one git knows but this does not expand (git's "human" dates %ah, %C(always,...),
// %w() and padding, signatures %G?, %(trailers)) is left as stored, and so is every one of a
// commit whose message is not UTF-8.
#ifndef SHELLAC_GITFRAG_ARCHIVE_SUBST_H_
#define SHELLAC_GITFRAG_ARCHIVE_SUBST_H_

#include <git2.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/owned.h"

namespace shellac::gitfrag {

class ExportSubst {
 public:
  // For `commit` of `repo`; `abbrev`: the repository's default abbreviation length (abbrev.h).
  // Reads the commit when first asked; the refs when a format first asks for them.
  ExportSubst(git_repository* repo, const git_oid& commit, int abbrev)
      : repo_(repo), commit_(commit), abbrev_(abbrev) {}

  // `in` with its "$Format:...$" expanded: true with the result in *out, false when none is.
  bool Expand(std::string_view in, std::string* out);

  // One format (the text between "$Format:" and "$"), expanded and appended to *out; false (and
  // *out as it was) when it holds a placeholder not expanded here or the commit cannot be read.
  bool Format(std::string_view format, std::string* out);

 private:
  // The commit's raw object up to its first NUL (git's text of it), the offsets git's
  // format_commit_context keeps into it; false when it cannot be read or is not UTF-8.
  bool Parse();
  // The placeholder at the start of `p` (past its '%'), appended to *out: the bytes it took,
  // 0 when git does not know it, kUnsupported when it is not expanded here.
  size_t One(std::string_view p, std::string* out);
  size_t Person(char part, std::string_view ident, std::string* out);
  // %(describe[:OPTIONS]) (`p` past its '%') as cgit writes it: nothing (archive_subst.cc); once
  // an archive, as git runs describe once, later ones written as they stand.
  size_t Describe(std::string_view p);
  std::string Abbrev(const git_oid& id);
  // git's %D (prefix "", separator ", ", suffix "") and %d (" (", ", ", ")").
  void Decorations(const char* prefix, const char* separator, const char* suffix, std::string* out);

  static constexpr size_t kUnsupported = static_cast<size_t>(-1);

  git_repository* const repo_;
  const git_oid commit_;
  const int abbrev_;
  std::optional<bool> parsed_;
  std::string message_;  // the raw commit
  std::string_view author_, committer_, encoding_;
  size_t message_off_ = 0, subject_off_ = 0, body_off_ = 0;
  git_oid tree_{};
  std::vector<git_oid> parents_;
  std::optional<std::vector<std::string>> decorations_;  // "tag: v1.0", "HEAD -> main", ...
  bool described_ = false;  // git archive runs describe once
  base::Owned<git_mailmap_free> mailmap_;  // read when a format first asks for it
};

}  // namespace shellac::gitfrag

#endif  // SHELLAC_GITFRAG_ARCHIVE_SUBST_H_
