// Output files written so that a failure loses nothing and a success is
// whole. Each function returns OK or a Status saying why not: a path that
// may not be written (a folder, a device, a missing folder) is
// kInvalidArgument, an existing file not to be replaced kAlreadyExists, and
// a failure of the file system (a full disk) kIo.
#ifndef FEDLDP_BASE_FILES_H_
#define FEDLDP_BASE_FILES_H_

#include <string>
#include <string_view>

#include "fedldp/base/status.h"

namespace fedldp {

// Before any work: `path` names a regular file (it will be appended to) or
// nothing, in an existing folder this process can write into. A device, a
// folder or a dangling name in a missing folder is refused now, not after
// an hour of training.
Status CheckOutputFile(const std::string& path);

// Appends `text` to `path` (created 0644 if absent) and checks that every
// byte reached the file: a full disk is an error, never a silent success.
Status AppendToFile(const std::string& path, std::string_view text);

// Writes `bytes` as the whole of `path`: into a temporary file in the same
// folder, created with `mode` from the start (0600 for secrets, so they are
// never readable by others, not even for an instant), synced, then renamed
// over `path`, so readers see the old file or the new one, never a part.
// Refuses a `path` that exists and is not a regular file (a device, a
// folder: never replaced), and an existing file unless `overwrite`.
Status WriteFileAtomically(const std::string& path, std::string_view bytes, unsigned mode = 0644,
                           bool overwrite = false);

}  // namespace fedldp

#endif  // FEDLDP_BASE_FILES_H_
