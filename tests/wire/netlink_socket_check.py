#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""netlink_socket_check.py NDEVICES: run under ringnic-run (the shim), with
NDEVICES ringnicd in the runtime dir.  Checks what a NETLINK_RDMA socket
does as a socket, where the rdma tool would not notice a difference from
the kernel's: several requests in one datagram, a malformed one, a
request naming no device there is, a dup'd descriptor, the sender's
address, notifications (not offered), signals, many sockets and fork."""
import os
import signal
import socket
import struct
import sys

NETLINK_RDMA = 20
NLM_F_REQUEST, NLM_F_ACK, NLM_F_DUMP = 0x1, 0x4, 0x300
NLMSG_ERROR, NLMSG_DONE = 2, 3
NETLINK_ADD_MEMBERSHIP = 1
SOL_NETLINK = 270
RDMA_NL_NLDEV = 5
CMD_GET, CMD_SYS_GET = 1, 6
ATTR_DEV_INDEX, ATTR_DEV_NAME = 1, 2

failed = 0


def fail(what):
    global failed
    print("FAIL", what)
    failed += 1


def msg(cmd, flags, seq, attrs=b""):
    body = attrs
    return struct.pack("=IHHII", 16 + len(body), (RDMA_NL_NLDEV << 10) + cmd,
                       NLM_F_REQUEST | flags, seq, 0) + body


def attr_u32(kind, value):
    return struct.pack("=HHI", 8, kind, value)


def attrs_of(payload):
    out, at = {}, 0
    while at + 4 <= len(payload):
        length, kind = struct.unpack_from("=HH", payload, at)
        if length < 4:
            break
        out[kind & 0x3FFF] = payload[at + 4:at + length]
        at += (length + 3) & ~3
    return out


def read(sock):
    """One datagram: a list of (type, flags, seq, payload)."""
    data = sock.recv(65536)
    out, at = [], 0
    while at + 16 <= len(data):
        length, kind, flags, seq, _ = struct.unpack_from("=IHHII", data, at)
        out.append((kind, flags, seq, data[at + 16:at + length]))
        at += (length + 3) & ~3
    return out


def answers(sock, seq):
    """The messages answering request seq, up to DONE or ERROR."""
    got = []
    sock.settimeout(10)
    while True:
        for m in read(sock):
            if m[2] != seq:
                fail("answer of seq %d while waiting for %d" % (m[2], seq))
                return got
            got.append(m)
            if m[0] in (NLMSG_DONE, NLMSG_ERROR):
                return got


def device_names(sock, seq):
    names = []
    for kind, _, _, payload in answers(sock, seq):
        if kind not in (NLMSG_DONE, NLMSG_ERROR):
            names.append(attrs_of(payload)[ATTR_DEV_NAME].rstrip(b"\0"))
    return names


def error_of(got):
    last = got[-1] if got else None
    if not last or last[0] != NLMSG_ERROR:
        return None
    return -struct.unpack_from("=i", last[3])[0]


def rdma_socket():
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_RDMA)
    s.bind((0, 0))
    return s


def main():
    ndevices = int(sys.argv[1])
    s = rdma_socket()

    # Two requests in one datagram: both answered, in order.
    s.send(msg(CMD_GET, NLM_F_DUMP, 1) + msg(CMD_SYS_GET, NLM_F_ACK, 2))
    names = device_names(s, 1)
    if len(names) != ndevices:
        fail("dump of devices: %r" % names)
    sys_answer = answers(s, 2)
    if not sys_answer or sys_answer[0][0] == NLMSG_ERROR:
        fail("the second request of a datagram: %r" % sys_answer)

    # A message shorter than its header is dropped, as the kernel drops it;
    # the next request is answered.
    s.send(struct.pack("=IHHII", 8, (RDMA_NL_NLDEV << 10) + CMD_GET,
                       NLM_F_REQUEST | NLM_F_DUMP, 3, 0))
    s.send(msg(CMD_GET, NLM_F_DUMP, 4))
    if device_names(s, 4) != names:
        fail("a request after a malformed one")

    # A device index that names no device: the kernel's EINVAL.
    got = answers(s, 5) if s.send(msg(CMD_GET, 0, 5,
                                      attr_u32(ATTR_DEV_INDEX, 99))) else []
    if error_of(got) != 22:
        fail("index 99: %r" % got)

    # Answers come from the kernel's address, whatever the caller's buffer.
    s.send(msg(CMD_GET, 0, 6, attr_u32(ATTR_DEV_INDEX, 1)))
    _, address = s.recvfrom(65536)
    if address != (0, 0):
        fail("recvfrom's address: %r" % (address,))
    s.send(msg(CMD_GET, 0, 7, attr_u32(ATTR_DEV_INDEX, 1)))
    address = s.recvmsg(65536)[3]
    if address != (0, 0):
        fail("recvmsg's address: %r" % (address,))

    # A dup'd descriptor is the same socket: its name, its answers.
    d = socket.socket(fileno=os.dup(s.fileno()))
    if d.family != socket.AF_NETLINK or d.getsockname() != s.getsockname():
        fail("dup: %r %r" % (d.family, d.getsockname()))
    d.send(msg(CMD_GET, NLM_F_DUMP, 8))
    if device_names(d, 8) != names:
        fail("a request on a dup'd descriptor")
    d.close()

    # Notifications are not offered.
    for what, call in (
            ("bind to a group", lambda: rdma_socket().bind((0, 1))),
            ("NETLINK_ADD_MEMBERSHIP", lambda: s.setsockopt(
                SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, 1))):
        try:
            call()
            fail(what + ": succeeded")
        except OSError as e:
            if e.errno != 95:
                fail("%s: %s" % (what, e))

    # Many sockets, as rdma opens one per request and keeps them: one
    # thread of the shim answers them all, and it takes no signal.
    many = [rdma_socket() for _ in range(30)]
    for i, m in enumerate(many):
        m.send(msg(CMD_GET, NLM_F_DUMP, 100 + i))
    for i, m in enumerate(many):
        if device_names(m, 100 + i) != names:
            fail("socket %d of 30" % i)
    tasks = os.listdir("/proc/self/task")
    if len(tasks) != 2:
        fail("%d threads for 31 sockets" % len(tasks))
    for t in tasks:
        if int(t) == os.getpid():
            continue
        with open("/proc/self/task/%s/status" % t) as f:
            blocked = int([l.split()[1] for l in f
                           if l.startswith("SigBlk:")][0], 16)
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGALRM,
                    signal.SIGCHLD, signal.SIGUSR1):
            if not blocked >> (sig - 1) & 1:
                fail("the shim's thread takes %s" % sig.name)

    # A child of fork(): its own sockets are answered, and the parent's too.
    pid = os.fork()
    if pid == 0:
        c = rdma_socket()
        c.send(msg(CMD_GET, NLM_F_DUMP, 200))
        ok = device_names(c, 200) == names
        s.send(msg(CMD_GET, NLM_F_DUMP, 201))
        ok = ok and device_names(s, 201) == names
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    if status:
        fail("in a child of fork()")
    s.send(msg(CMD_GET, NLM_F_DUMP, 202))
    if device_names(s, 202) != names:
        fail("the parent after fork()")

    print("netlink socket: %s" % ("all checks passed" if not failed
                                  else "%d failed" % failed))
    return 1 if failed else 0


sys.exit(main())
