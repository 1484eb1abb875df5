// A disk whose fdatasync fails every time, for SQLite: while in scope, the
// default VFS is one that forwards every call to the real default VFS
// except a file's sync, which fails as an I/O error does once fail(true)
// (from the start, unless made with false).
#ifndef FEDLDP_TESTS_TESTING_FAILING_SYNC_VFS_H_
#define FEDLDP_TESTS_TESTING_FAILING_SYNC_VFS_H_

#include <sqlite3.h>

#include <atomic>

namespace fedldp::testing {

class FailingSyncVfs {
 public:
  explicit FailingSyncVfs(bool failing = true)
      : base_(sqlite3_vfs_find(nullptr)), vfs_(*base_), failing_(failing) {
    vfs_.zName = "fedldp-failing-sync";
    vfs_.szOsFile = static_cast<int>(sizeof(File)) + base_->szOsFile;
    vfs_.pAppData = this;
    vfs_.xOpen = &Open;
    sqlite3_vfs_register(&vfs_, /*makeDflt=*/1);
  }
  ~FailingSyncVfs() {
    sqlite3_vfs_unregister(&vfs_);
    sqlite3_vfs_register(base_, 1);
  }
  FailingSyncVfs(const FailingSyncVfs&) = delete;
  FailingSyncVfs& operator=(const FailingSyncVfs&) = delete;

  void fail(bool failing) { failing_.store(failing); }
  // Syncs that failed.
  int failed() const { return failed_.load(); }

 private:
  struct File {
    sqlite3_file header;  // first: SQLite sees a sqlite3_file
    sqlite3_file* real;   // the default VFS's, in the bytes after this one
    FailingSyncVfs* owner;
  };
  static sqlite3_file* Real(sqlite3_file* f) { return reinterpret_cast<File*>(f)->real; }
  static const sqlite3_io_methods* M(sqlite3_file* f) { return Real(f)->pMethods; }

  static int Open(sqlite3_vfs* vfs, const char* name, sqlite3_file* f, int flags, int* out) {
    auto* self = static_cast<FailingSyncVfs*>(vfs->pAppData);
    auto* file = reinterpret_cast<File*>(f);
    file->real = reinterpret_cast<sqlite3_file*>(file + 1);
    file->owner = self;
    const int rc = self->base_->xOpen(self->base_, name, file->real, flags, out);
    file->header.pMethods = rc == SQLITE_OK ? &kMethods : nullptr;
    return rc;
  }

  static int Sync(sqlite3_file* f, int flags) {
    FailingSyncVfs* owner = reinterpret_cast<File*>(f)->owner;
    if (!owner->failing_.load()) return M(f)->xSync(Real(f), flags);
    ++owner->failed_;
    return SQLITE_IOERR_FSYNC;
  }

  static constexpr sqlite3_io_methods kMethods = {
      3,
      [](sqlite3_file* f) { return M(f)->xClose(Real(f)); },
      [](sqlite3_file* f, void* b, int n, sqlite3_int64 o) {
        return M(f)->xRead(Real(f), b, n, o);
      },
      [](sqlite3_file* f, const void* b, int n, sqlite3_int64 o) {
        return M(f)->xWrite(Real(f), b, n, o);
      },
      [](sqlite3_file* f, sqlite3_int64 n) { return M(f)->xTruncate(Real(f), n); },
      &Sync,
      [](sqlite3_file* f, sqlite3_int64* n) { return M(f)->xFileSize(Real(f), n); },
      [](sqlite3_file* f, int l) { return M(f)->xLock(Real(f), l); },
      [](sqlite3_file* f, int l) { return M(f)->xUnlock(Real(f), l); },
      [](sqlite3_file* f, int* r) { return M(f)->xCheckReservedLock(Real(f), r); },
      [](sqlite3_file* f, int op, void* a) { return M(f)->xFileControl(Real(f), op, a); },
      [](sqlite3_file* f) { return M(f)->xSectorSize(Real(f)); },
      [](sqlite3_file* f) { return M(f)->xDeviceCharacteristics(Real(f)); },
      [](sqlite3_file* f, int p, int s, int e, void volatile** a) {
        return M(f)->xShmMap(Real(f), p, s, e, a);
      },
      [](sqlite3_file* f, int o, int n, int fl) { return M(f)->xShmLock(Real(f), o, n, fl); },
      [](sqlite3_file* f) { M(f)->xShmBarrier(Real(f)); },
      [](sqlite3_file* f, int d) { return M(f)->xShmUnmap(Real(f), d); },
      [](sqlite3_file* f, sqlite3_int64 o, int n, void** p) {
        return M(f)->xFetch(Real(f), o, n, p);
      },
      [](sqlite3_file* f, sqlite3_int64 o, void* p) { return M(f)->xUnfetch(Real(f), o, p); },
  };

  sqlite3_vfs* base_;
  sqlite3_vfs vfs_;
  std::atomic<bool> failing_;
  std::atomic<int> failed_{0};
};

}  // namespace fedldp::testing

#endif  // FEDLDP_TESTS_TESTING_FAILING_SYNC_VFS_H_
