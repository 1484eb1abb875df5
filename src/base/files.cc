#include "fedldp/base/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace fedldp {
namespace {

std::string Folder(const std::string& path) {
  const auto parent = std::filesystem::path(path).parent_path();
  return parent.empty() ? "." : parent.string();
}

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

// A path that may not be written: the caller's to fix.
Status Refuse(std::string why) { return Error{std::move(why), ErrorCode::kInvalidArgument}; }
// The file system failed.
Status Failed(const std::string& what) { return Error{Errno(what), ErrorCode::kIo}; }
Status Exists(const std::string& path) {
  return Error{path + " exists; it is not overwritten unless asked", ErrorCode::kAlreadyExists};
}

// Writes all of `bytes` to `fd`, then syncs it.
Status WriteAll(int fd, std::string_view bytes, const std::string& path) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Failed("cannot write " + path);
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  if (::fsync(fd) != 0 && errno != EINVAL) return Failed("cannot write " + path);
  return {};
}

// OK if `path` is absent or a regular file; else why it may not be written.
Status CheckRegularOrAbsent(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return errno == ENOENT ? Status{} : Refuse(Errno("cannot use " + path));
  }
  if (S_ISDIR(st.st_mode)) return Refuse(path + " is a folder, not a file");
  if (!S_ISREG(st.st_mode)) {
    return Refuse(path + " is not a regular file (a device?); it is never replaced");
  }
  return {};
}

}  // namespace

Status CheckOutputFile(const std::string& path) {
  if (path.empty()) return Refuse("no output file given");
  FEDLDP_RETURN_IF_ERROR(CheckRegularOrAbsent(path));
  const std::string folder = Folder(path);
  if (!std::filesystem::is_directory(folder)) {
    return Refuse("the folder " + folder + " does not exist");
  }
  if (::access(folder.c_str(), W_OK) != 0) return Refuse(Errno("cannot write into " + folder));
  if (::access(path.c_str(), F_OK) == 0 && ::access(path.c_str(), W_OK) != 0) {
    return Refuse(Errno("cannot write " + path));
  }
  return {};
}

Status AppendToFile(const std::string& path, std::string_view text) {
  FEDLDP_RETURN_IF_ERROR(CheckRegularOrAbsent(path));
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Failed("cannot open " + path);
  Status written = WriteAll(fd, text, path);
  if (::close(fd) != 0 && written.ok()) written = Failed("cannot write " + path);
  return written;
}

Status WriteFileAtomically(const std::string& path, std::string_view bytes, unsigned mode,
                           bool overwrite) {
  FEDLDP_RETURN_IF_ERROR(CheckRegularOrAbsent(path));
  if (!overwrite && ::access(path.c_str(), F_OK) == 0) return Exists(path);
  std::string tmp = path + ".XXXXXX";
  const int fd = ::mkstemp(tmp.data());  // 0600, O_EXCL: nobody else's file
  if (fd < 0) return Failed("cannot create a file beside " + path);
  Status written;
  if (::fchmod(fd, static_cast<mode_t>(mode)) != 0)
    written = Failed("cannot set the mode of " + tmp);
  if (written.ok()) written = WriteAll(fd, bytes, path);
  if (::close(fd) != 0 && written.ok()) written = Failed("cannot write " + path);
  if (written.ok() && !overwrite) {
    // link() fails if `path` appeared meanwhile: no replacing after all.
    if (::link(tmp.c_str(), path.c_str()) != 0) {
      written = errno == EEXIST ? Exists(path) : Failed("cannot create " + path);
    }
  } else if (written.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    written = Failed("cannot replace " + path);
  }
  ::unlink(tmp.c_str());  // after link(), or on failure; after rename(), already gone
  return written;
}

}  // namespace fedldp
