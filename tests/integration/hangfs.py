#!/usr/bin/python3
"""A FUSE passthrough of a backing directory whose operations block on
command: a hung NFS server, as a test can make one on any machine.

    hangfs.py BACKING MOUNTPOINT CONTROL_SOCKET [--attr-timeout SEC]

Mounts BACKING at MOUNTPOINT (direct_io, so that O_DIRECT opens work and
every read and write reaches this process) and listens on the AF_UNIX
stream socket CONTROL_SOCKET for one-line commands, each answered "ok":

    hang OP[,OP...]   block those operations (getattr, read, write, open,
                      create, readdir, statfs, ... or "all") until release
    release           let every blocked and later call through
    count             answer "ok N": calls that are blocked right now

Runs under Debian's /usr/bin/python3 with python3-fusepy (libfuse 2), in
the foreground: the test starts it, waits for "ready" on stdout, and ends
it with SIGTERM (then fusermount -u)."""
import errno
import os
import socket
import sys
import threading

import fusepy


class HangFS(fusepy.Operations):
    def __init__(self, root):
        self.root = os.path.realpath(root)
        self.hung = set()
        self.cond = threading.Condition()
        self.blocked = 0

    def _gate(self, op):
        with self.cond:
            while op in self.hung or ("all" in self.hung and op != "release"):
                self.blocked += 1
                self.cond.wait()
                self.blocked -= 1

    def _path(self, path):
        return os.path.join(self.root, path.lstrip("/"))

    def __call__(self, op, *args):
        self._gate(op)
        return super().__call__(op, *args)

    def getattr(self, path, fh=None):
        st = os.lstat(self._path(path))
        return {k: getattr(st, k) for k in ("st_atime", "st_ctime", "st_gid", "st_mode", "st_mtime",
                                             "st_nlink", "st_size", "st_uid", "st_blocks")}

    def access(self, path, mode):
        if not os.access(self._path(path), mode):
            raise fusepy.FuseOSError(errno.EACCES)

    def readdir(self, path, fh):
        return [".", ".."] + os.listdir(self._path(path))

    def mkdir(self, path, mode):
        os.mkdir(self._path(path), mode)

    def rmdir(self, path):
        os.rmdir(self._path(path))

    def chmod(self, path, mode):
        os.chmod(self._path(path), mode)

    def chown(self, path, uid, gid):
        os.chown(self._path(path), uid, gid)

    def unlink(self, path):
        os.unlink(self._path(path))

    def rename(self, old, new):
        os.rename(self._path(old), self._path(new))

    def utimens(self, path, times=None):
        os.utime(self._path(path), times)

    def statfs(self, path):
        sv = os.statvfs(self._path(path))
        return {k: getattr(sv, k) for k in ("f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail",
                                             "f_ffree", "f_files", "f_flag", "f_frsize", "f_namemax")}

    def open(self, path, flags):
        return os.open(self._path(path), flags & ~os.O_DIRECT)

    def create(self, path, mode, fi=None):
        return os.open(self._path(path), os.O_RDWR | os.O_CREAT | os.O_EXCL, mode)

    def read(self, path, size, offset, fh):
        return os.pread(fh, size, offset)

    def write(self, path, data, offset, fh):
        return os.pwrite(fh, data, offset)

    def truncate(self, path, length, fh=None):
        if fh is not None:
            os.ftruncate(fh, length)
        else:
            os.truncate(self._path(path), length)

    def fallocate(self, path, mode, offset, length, fh):
        os.posix_fallocate(fh, offset, length)

    def flush(self, path, fh):
        return 0

    def fsync(self, path, datasync, fh):
        (os.fdatasync if datasync else os.fsync)(fh)

    def release(self, path, fh):
        os.close(fh)


def serve_control(fs, path):
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(4)
    while True:
        c, _ = srv.accept()
        with c, c.makefile("rw") as f:
            for line in f:
                words = line.split()
                with fs.cond:
                    if words[:1] == ["hang"]:
                        fs.hung = set(words[1].split(","))
                    elif words[:1] == ["release"]:
                        fs.hung = set()
                        fs.cond.notify_all()
                    reply = f"ok {fs.blocked}" if words[:1] == ["count"] else "ok"
                f.write(reply + "\n")
                f.flush()


def main():
    backing, mountpoint, control = sys.argv[1:4]
    attr_timeout = 1.0
    if "--attr-timeout" in sys.argv:
        attr_timeout = float(sys.argv[sys.argv.index("--attr-timeout") + 1])
    fs = HangFS(backing)
    threading.Thread(target=serve_control, args=(fs, control), daemon=True).start()
    print("ready", flush=True)
    fusepy.FUSE(fs, mountpoint, foreground=True, nothreads=False, direct_io=True, allow_other=True,
                attr_timeout=attr_timeout, entry_timeout=attr_timeout, fsname="hangfs")


if __name__ == "__main__":
    main()
