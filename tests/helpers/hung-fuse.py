#!/usr/bin/python3
"""hung-fuse.py - a file system whose statfs hangs, as a hung NFS mount's does

    hung-fuse.py MOUNTPOINT

Mounts a FUSE file system at MOUNTPOINT (root only: it opens /dev/fuse and
calls mount(2) itself, no libfuse or fusermount) and serves it from this
process. The root directory is empty and stat(2) works; a statfs(2) request
is read and never answered, so the caller waits in the kernel: once the
request is read, even SIGKILL does not end that wait (fs/fuse/dev.c,
request_wait_answer), and the caller stays in state D, as on an NFS mount
whose server is gone. That is the real thing the agent's checks must survive
(a stuck process it cannot kill), with no NFS server and no network.

Every statfs request it holds adds a line to MOUNTPOINT.held (once it is
there, the caller is past the point where a signal could take the request
back). SIGUSR1 heals it: the held requests and every later one are
answered (an empty file system of 1 GiB). SIGTERM unmounts it (lazily) and exits; any
exit closes /dev/fuse, which aborts the connection and ends every waiting
request with ENOTCONN, so nothing stays stuck past this process. Writes
"ready" to MOUNTPOINT.ready once mounted.

Run it in a mount namespace of its own (unshare -m, with the processes that
use the mount) so that the mount goes with the namespace whatever happens.
"""
import ctypes
import errno
import os
import signal
import struct
import sys

FUSE_LOOKUP = 1
FUSE_FORGET = 2
FUSE_GETATTR = 3
FUSE_STATFS = 17
FUSE_INIT = 26
FUSE_INTERRUPT = 36
FUSE_DESTROY = 38
FUSE_BATCH_FORGET = 42

IN_HEADER = struct.Struct("=IIQQIIIHH")  # len opcode unique nodeid uid gid pid ...
OUT_HEADER = struct.Struct("=IiQ")  # len error unique

libc = ctypes.CDLL(None, use_errno=True)
state = {"heal": False, "held": [], "fd": -1}


def reply(unique, error=0, body=b""):
    try:
        os.write(state["fd"], OUT_HEADER.pack(OUT_HEADER.size + len(body),
                                              error, unique) + body)
    except OSError as e:
        # ENOENT: the request was interrupted meanwhile.
        if e.errno != errno.ENOENT:
            raise


def attr_out():
    # fuse_attr_out: attr_valid, attr_valid_nsec, dummy, then fuse_attr
    # (ino size blocks atime mtime ctime, their nsecs, mode nlink uid gid
    # rdev blksize flags).
    attr = struct.pack("=QQQQQQIIIIIIIIII", 1, 0, 0, 0, 0, 0, 0, 0, 0,
                       0o40755, 2, 0, 0, 0, 4096, 0)
    return struct.pack("=QII", 1, 0, 0) + attr


def statfs_out():
    # fuse_kstatfs: blocks bfree bavail files ffree bsize namelen frsize
    # padding spare[6]
    return struct.pack("=QQQQQIIII6I", 262144, 262144, 262144, 65536, 65535,
                       4096, 255, 4096, 0, 0, 0, 0, 0, 0, 0)


def on_usr1(sig, frame):
    state["heal"] = True
    held, state["held"] = state["held"], []
    for unique in held:
        reply(unique, 0, statfs_out())


def on_term(sig, frame):
    libc.umount2(sys.argv[1].encode(), 2)  # MNT_DETACH
    os._exit(0)


def serve(fd):
    while True:
        try:
            req = os.read(fd, 1 << 20)
        except OSError as e:
            if e.errno in (errno.ENODEV, errno.EBADF):
                return  # unmounted
            if e.errno in (errno.EINTR, errno.EAGAIN, errno.ENOENT):
                continue
            raise
        _, opcode, unique, nodeid = IN_HEADER.unpack_from(req)[:4]
        if opcode == FUSE_INIT:
            major, minor = struct.unpack_from("=II", req, IN_HEADER.size)
            # fuse_init_out, 64 bytes: major minor max_readahead flags
            # max_background congestion_threshold max_write time_gran,
            # the rest 0.
            body = struct.pack("=IIIIHHII", 7, min(minor, 31), 0, 0, 16, 12,
                               65536, 1)
            reply(unique, 0, body + bytes(64 - len(body)))
        elif opcode == FUSE_GETATTR:
            reply(unique, 0, attr_out())
        elif opcode == FUSE_STATFS:
            if state["heal"]:
                reply(unique, 0, statfs_out())
            else:
                state["held"].append(unique)
                with open(sys.argv[1] + ".held", "a") as f:
                    f.write("%d\n" % unique)
        elif opcode in (FUSE_FORGET, FUSE_BATCH_FORGET, FUSE_INTERRUPT,
                        FUSE_DESTROY):
            pass  # no answer expected (an interrupt is ignored: hung)
        elif opcode == FUSE_LOOKUP:
            reply(unique, -errno.ENOENT)
        else:
            reply(unique, -errno.ENOSYS)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: hung-fuse.py MOUNTPOINT")
    mnt = sys.argv[1]
    fd = os.open("/dev/fuse", os.O_RDWR)
    state["fd"] = fd
    opts = "fd=%d,rootmode=40755,user_id=0,group_id=0,allow_other" % fd
    if libc.mount(b"hung-fuse", mnt.encode(), b"fuse.hung-fuse", 6,  # nosuid,nodev
                  opts.encode()) != 0:
        e = ctypes.get_errno()
        sys.exit("hung-fuse.py: mount %s: %s" % (mnt, os.strerror(e)))
    signal.signal(signal.SIGUSR1, on_usr1)
    signal.signal(signal.SIGTERM, on_term)
    with open(mnt + ".ready", "w") as f:
        f.write("ready\n")
    serve(fd)


if __name__ == "__main__":
    main()
