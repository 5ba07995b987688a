// Checks a git index written in a jail before the init copies it back to the
// host's .git (git_state::write_back_in_child). The host's git trusts its own
// index: it checks entries out where their paths say, hides what their flags
// say, and follows what their extensions point to. So an index is written back
// only when every part of it is something brig has read and proved harmless;
// anything else is refused whole, and the host keeps its own index.
//
// Rules and where they come from:
//
//  1. Structure (gitformat-index(5), "The Git index file has the following
//     format"; read-cache.c create_from_disk(), read_eoie_extension(),
//     read_ieot_extension()). Header "DIRC", version 2, 3 or 4, entry count;
//     entries, extensions, then a hash trailer, ending exactly at the end of
//     the file. Hash size: SHA-1 (20-byte object ids) and SHA-256 (32) are
//     both tried; when both parse, both must pass, since the host reads the
//     index with its repository's algorithm, which brig does not pass in. The
//     trailer's value is not verified (git only does in fsck); it need not be,
//     since everything before it is checked here. Entry fields: mode one git
//     writes (0100644, 0100755, 0120000 symlink, 0160000 gitlink); the
//     extended bit only from version 3, extended flags only the ones git
//     knows; v2/v3 names exactly as long as the flags say, NUL-terminated and
//     padded with NULs to a multiple of 8 as git pads them; v4 names
//     prefix-compressed (git's varint, varint.c), rebuilt in a fixed buffer,
//     and as long as the flags say. Entries strictly sorted by (name, stage)
//     (gitformat-index(5), "Index entry"). Why: wherever git would read the
//     bytes differently from this check (a length that disagrees with the
//     NUL, an unsorted entry git's binary search cannot find), the check
//     would have vouched for an index the host does not see.
//
//  2. Paths (gitformat-index(5): no ".", "..", ".git", no trailing slash;
//     read-cache.c verify_path() and verify_dotfile(); path.c
//     is_ntfs_dotgit(), is_ntfs_dotgitmodules(); utf8.c is_hfs_dotgit(),
//     is_hfs_dotgitmodules()). Refused: an empty path, a leading '/', an
//     empty component ("a//b", "a/"), "." or "..", a component that is .git
//     in any ASCII case, or that NTFS or HFS+ would take for .git (".git"
//     followed by only spaces and dots, or by ':', "git~1", and .git with
//     the code points HFS+ ignores, U+200C-U+200F, U+202A-U+202E,
//     U+206A-U+206F, U+FEFF, anywhere in it); a symlink named .gitmodules,
//     or its NTFS short names ("gitmod~1"..4, "gi7eba~N") or HFS+ spellings;
//     any byte below 0x20. The .git checks are made on every part of a
//     component between backslashes too, as git does with core.protectNTFS.
//     Both NTFS and HFS+ rules apply whatever the host's filesystem, as git's
//     own defaults and fsck do. Why: the host's git writes an entry's file at
//     its path on the next checkout, reset or stash; "../x" lands outside the
//     worktree, ".git/hooks/x" becomes code the host runs.
//
//  3. Flags (gitformat-index(5), "Index entry"). Refused: assume-valid
//     (`git update-index --assume-unchanged`) and skip-worktree (sparse
//     checkout, `--skip-worktree`). Intent-to-add is allowed. Why: with
//     either bit, git status and git diff on the host skip the entry, so what
//     the jail changed there would not be seen in review.
//
//  4. Extensions (gitformat-index(5), "Extensions"; read-cache.c
//     read_index_extension()). Allowed: TREE (cache tree), REUC (resolve
//     undo), and the offset tables EOIE and IEOT, which must agree with the
//     entries: EOIE last and pointing at the end of the entries, each IEOT
//     block starting exactly at an entry and counting all of them, and in v4
//     each block's first entry keeping nothing of the previous name (a
//     threaded reader starts each block with an empty previous name). Refused:
//     everything else, in particular "link" (split index: the entries would
//     come from a sharedindex.* file brig did not check), "sdir" (sparse
//     index), UNTR (untracked cache: can hide untracked files) and FSMN
//     (fsmonitor: can hide changed files). Why: git with index.threads reads
//     entries and extensions from the offsets EOIE and IEOT give, so a table
//     pointing elsewhere would show the host an index this check never saw.
//
// Not checked: the contents of TREE and REUC, beyond their sizes. Git checks
// a REUC path again (verify_path) when it turns it back into an entry, but a
// TREE node names a tree object that `git commit` on the host uses as is for
// an unchanged directory.
#pragma once

#include <cstddef>
#include <cstdint>

namespace brig::jail::git_index {

enum class Verdict : uint8_t {
  ok,           // every rule above holds
  truncated,    // something runs past the end of the file
  bad_header,   // not "DIRC", or a version other than 2, 3, 4
  bad_entry,    // an entry git would read differently, or refuse (rule 1)
  unsafe_path,  // an entry's path breaks rule 2, or is longer than PATH_MAX
  hidden_flag,  // assume-valid or skip-worktree (rule 3)
  extension,    // an extension brig does not accept, or one that disagrees (rule 4)
};

// Where the parts of an index lie, for a caller that rewrites its extensions.
struct Parsed {
  size_t hash_size = 0;    // 20 (SHA-1) or 32 (SHA-256): the reading that parsed (SHA-1 if both)
  size_t entries_end = 0;  // where the extensions (or the trailer) start
};

// Checks an index file's bytes (gitformat-index(5)): ok only when all rules
// above hold; then *parsed (if given) says where its parts lie.
// Async-signal-safe: no allocation, no locks, no exceptions, no recursion;
// about 4 KiB of stack (one path buffer).
Verdict check(const unsigned char* data, size_t size, Parsed* parsed = nullptr);

// Zeroes every entry's cached stat data (times, device, inode, owner,
// size; the mode stays) in an index check() passed, as `parsed` says. The
// host's git trusts that data: where it matches the file on disk, git never
// reads the file again, so an entry with a forged size and times would hide
// an edit from `git status` and `git diff`. Zeroed, each file's content is
// compared once more on the next look. False if the entries do not walk as
// check() found them. Async-signal-safe.
bool clear_stat_data(unsigned char* data, size_t size, const Parsed& parsed);

// A short static English phrase for messages ("an entry's path is not one git
// would check out").
const char* verdict_text(Verdict v);

}  // namespace brig::jail::git_index
