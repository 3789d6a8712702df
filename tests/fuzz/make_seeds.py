#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Writes the seed corpora of the fuzz targets (corpus/wqe, corpus/control)
from the layouts of kernel-abi/, corpus/packet from the RoCEv2 layouts of
docs/wire.md, corpus/cm from the CM MADs of docs/rdma_cm.md and
corpus/peer from the records of fuzz_peer.c:
well-formed inputs the fuzzers mutate.
Run it when a format changes; the seeds are committed."""
import ipaddress
import os
import struct
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))

# kernel-abi/ringnic-queue.h
OP_SEND, OP_SEND_IMM, OP_WRITE, OP_WRITE_IMM, OP_READ, OP_CAS, OP_FAA = range(1, 8)
F_SIGNALED, F_SOLICITED, F_FENCE, F_INLINE = 1, 2, 4, 8
SEQ_BITS = 48


def slots(payload, hdr=48):
    return (hdr + payload + 63) // 64


def send_wqe(op, flags, sges=(), inline=b"", remote=0x1000, rkey=0x100):
    payload = inline if flags & F_INLINE else b"".join(
        struct.pack("<QII", a, l, k) for a, l, k in sges)
    n = slots(len(payload))
    hdr = struct.pack("<QBBBBIQIIQQ", 0x1234, op, flags,
                      0 if flags & F_INLINE else len(sges), n, 0xabcd,
                      remote, rkey, len(inline), 7, 9)
    wqe = hdr + payload
    return wqe + b"\0" * (n * 64 - len(wqe))


def recv_wqe(sges):
    n = slots(16 * len(sges), 16)
    hdr = struct.pack("<QBB6x", 0x5678, len(sges), n)
    wqe = hdr + b"".join(struct.pack("<QII", a, l, k) for a, l, k in sges)
    return wqe + b"\0" * (n * 64 - len(wqe))


def write(name, data):
    with open(os.path.join(HERE, "corpus", name), "wb") as f:
        f.write(data)


def wqe_seeds():
    # struct params of fuzz_wqe.c: log2 slots, max_sge, max_inline, head,
    # prod, doorbell record.
    def seed(name, log2, ring, head=0):
        nslots = len(ring) // 64
        rec = (1 << SEQ_BITS) | ((head + nslots) & ((1 << SEQ_BITS) - 1))
        params = struct.pack("<BBH4xQQQ", log2, 32, 1024, head,
                             head + nslots, rec)
        write("wqe/" + name, params + ring)

    sge = [(0x7000, 64, 0x101)]
    seed("send", 4, send_wqe(OP_SEND, F_SIGNALED, sge))
    seed("mixed", 6, send_wqe(OP_WRITE, 0, sge * 3) +
         send_wqe(OP_SEND_IMM, F_INLINE, inline=b"x" * 200) +
         send_wqe(OP_READ, F_FENCE, sge) + send_wqe(OP_CAS, 0, [(0x8000, 8, 1)]))
    seed("big", 8, send_wqe(OP_WRITE, F_INLINE, inline=bytes(range(256)) * 4) +
         send_wqe(OP_SEND, 0, sge * 32), head=250)
    seed("recv", 4, recv_wqe(sge) + recv_wqe(sge * 16))


def control_seeds():
    def msg(op, body=b"", fd=False):
        m = struct.pack("<II", op, 8 + len(body)) + body
        return struct.pack("<BH", 1 if fd else 0, len(m)) + m

    open_ = msg(1, struct.pack("<II", 1, 0), fd=True)
    pd = msg(2)
    cq = msg(6, struct.pack("<QII", 0xc0, 64, 0))
    cq_chan = msg(6, struct.pack("<QII", 0xc1, 16, 0), fd=True)
    cap = struct.pack("<6I", 64, 64, 2, 2, 64, 0)
    qp = msg(8, struct.pack("<QIIIBB2x", 0xd0, 1, 0, 0, 2, 0) + cap)

    def attr(state, **f):
        # struct rn_qp_attr: 9 u32, u16 pkey, 10 u8, ah_attr (32), cap (24)
        u32 = [state, 0, f.get("mtu", 0), 0, 0, 0, 0, f.get("dest", 0),
               f.get("access", 0)]
        u8 = [0, 0, f.get("rd", 0), f.get("dest_rd", 0), f.get("rnr", 0),
              f.get("port", 0), f.get("timeout", 0), f.get("retry", 0),
              f.get("rnr_retry", 0), 0]
        ah = b"\0" * 16 + struct.pack("<IH8B2x", 0, 0, 0, 0, 0, 0, 0, 0, 0, 1)
        return struct.pack("<9IH10B", *u32, 0, *u8) + ah + b"\0" * 24

    def modify(mask, a):
        return msg(9, struct.pack("<II", 0, mask) + a + struct.pack("<QII", 0, 0, 0))

    init = modify(1 | 16 | 32 | 8, attr(1, port=1, access=14))
    rtr = modify(1 | 128 | 256 | 1048576 | 4096 | 131072 | 32768,
                 attr(2, mtu=5, dest=16384, dest_rd=1, rnr=12))
    rts = modify(1 | 65536 | 512 | 1024 | 2048 | 8192,
                 attr(3, timeout=14, retry=7, rnr_retry=7, rd=1))
    query = msg(10, struct.pack("<II", 0, 0))
    mr = msg(4, struct.pack("<QQQII", 0x10000, 4096, 0x10000, 1, 15))
    write("control/open", open_)
    write("control/objects", open_ + pd + cq + cq_chan + qp + mr + query)
    # A connected QP, then its shared memory: a rung doorbell for QP 0 on
    # the device page, and a SEND in its send queue.
    page = bytearray(4096)
    struct.pack_into("<QQ", page, 64, 1, 1)   # qp summary, pending[0]
    ctrl = bytearray(4096)
    struct.pack_into("<QI", ctrl, 0, 1, 1)    # sq_db: qp 0, seq 1; rq_prod 1
    sq = send_wqe(OP_SEND, F_SIGNALED | F_INLINE, inline=b"hello")
    write("control/traffic", open_ + pd + cq + qp + init + rtr + rts + query +
          bytes(page) + bytes(ctrl) + sq)


# RoCEv2 (docs/wire.md): the headers after the BTH of each RC operation;
# UC has the SEND and WRITE ones, XRC all of them with an XRCETH first in
# requests.  Operations 0x0D-0x12 are responses.
RC_OPS = {
    0x00: [], 0x01: [], 0x02: [], 0x03: ["imm"], 0x04: [], 0x05: ["imm"],
    0x06: ["reth"], 0x07: [], 0x08: [], 0x09: ["imm"], 0x0A: ["reth"],
    0x0B: ["reth", "imm"], 0x0C: ["reth"], 0x0D: ["aeth"], 0x0E: [],
    0x0F: ["aeth"], 0x10: ["aeth"], 0x11: ["aeth"], 0x12: ["aeth", "atack"],
    0x13: ["atomic"], 0x14: ["atomic"], 0x16: ["ieth"], 0x17: ["ieth"],
}
NO_PAYLOAD = {0x0C, 0x11, 0x12, 0x13, 0x14}
EXT = {
    "deth": struct.pack(">IBBH", 0x80010000, 0, 0, 0x11),
    "xrceth": struct.pack(">I", 0x000123),
    "reth": struct.pack(">QII", 0x7f0000001000, 0x1234, 4096),
    "aeth": struct.pack(">I", 0x1f000001),
    "atomic": struct.pack(">QIQQ", 0x7f0000002000, 0x1234, 5, 0),
    "atack": struct.pack(">Q", 42),
    "imm": struct.pack(">I", 0xdeadbeef),
    "ieth": struct.pack(">I", 0x5678),
    "cnp": bytes(16),
}


def packet_opcodes():
    """(opcode, headers, carries payload) of every opcode ringnic accepts."""
    for op, hdrs in RC_OPS.items():
        yield op, hdrs, op not in NO_PAYLOAD
        if op <= 0x0B:
            yield 0x20 | op, hdrs, True
        xrc = hdrs if 0x0D <= op <= 0x12 else ["xrceth"] + hdrs
        yield 0xA0 | op, xrc, op not in NO_PAYLOAD
    yield 0x64, ["deth"], True
    yield 0x65, ["deth", "imm"], True
    yield 0x81, ["cnp"], False


def packet_seeds():
    # struct of fuzz_packet.c: IPv4 source and destination, IPv6 source and
    # destination, UDP source and destination port, then the UDP payload.
    v4s, v4d = (ipaddress.IPv4Address(a).packed for a in ("198.18.0.1",
                                                          "198.18.0.2"))
    v6s, v6d = (ipaddress.IPv6Address(a).packed for a in ("fd00::1",
                                                          "fd00::2"))
    sport, dport = 0xC132, 4791

    def icrc(pkt, v6, ip_id=0):
        # docs/wire.md: 8 x 0xFF, masked IP and UDP headers, masked BTH, rest.
        udp_len = 8 + len(pkt)
        if v6:
            ip = b"\x6f\xff\xff\xff" + struct.pack(">HBB", udp_len, 17, 0xff)
            ip += v6s + v6d
        else:
            ip = struct.pack(">BBHHHBBH", 0x45, 0xff, 20 + udp_len, ip_id,
                             0x4000, 0xff, 17, 0xffff) + v4s + v4d
        udp = struct.pack(">HHHH", sport, dport, udp_len, 0xffff)
        bth = pkt[:4] + b"\xff" + pkt[5:12]
        crc = zlib.crc32(b"\xff" * 8 + ip + udp + bth + pkt[12:-4])
        return pkt[:-4] + struct.pack("<I", crc)

    def packet(opcode, hdrs, payload, psn):
        pad = -len(payload) & 3
        bth = struct.pack(">BBHII", opcode, pad << 4, 0xffff, 0x000042,
                          0x80000000 | psn)
        return bth + b"".join(EXT[h] for h in hdrs) + payload + bytes(pad + 4)

    prefix = v4s + v4d + v6s + v6d + struct.pack(">HH", sport, dport)
    for opcode, hdrs, has_payload in packet_opcodes():
        payload = b"payload" if has_payload else b""
        pkt = icrc(packet(opcode, hdrs, payload, opcode), v6=False)
        write("packet/%02x" % opcode, prefix + pkt)
    # IPv6, an MTU-sized packet, and the rxe ACK of docs/wire.md (IP ID
    # 0xd0e6) with its own flow.
    write("packet/v6-send", prefix +
          icrc(packet(0x04, [], b"over IPv6", 7), v6=True))
    write("packet/write-middle-1024", prefix +
          icrc(packet(0x07, [], bytes(range(256)) * 4, 8), v6=False))
    rxe = bytes.fromhex("c0a84d01c0a84d02") + v6s + v6d + \
        struct.pack(">HH", 54099, 4791)
    write("packet/rxe-ack", rxe + bytes.fromhex(
        "1100ffff00000123 0000fff0 1f000001 5589182c".replace(" ", "")))


def mad(attr, tid, msg):
    """A CM MAD: the 24-byte header, then the message padded to 232."""
    return struct.pack(">BBBBHHQHHI", 1, 0x07, 2, 0x03, 0, 0, tid, attr, 0,
                       0) + msg.ljust(232, b"\0")


def cm_seeds():
    """fuzz_cm's input: records of a sender GID and a MAD.  The device is
    198.18.0.1 with listeners on TCP port 7471 and UDP port 7174; its
    first comm ID is 1 << 12 | 2 (comm IDs start at generation 1, and
    handles 0 and 1 are the listeners)."""
    peer = bytes(10) + b"\xff\xff" + bytes([198, 18, 0, 2])
    me = bytes(10) + b"\xff\xff" + bytes([198, 18, 0, 1])
    cma = struct.pack(">BBH", 0, 0x40, 40000) + bytes(12) + peer[12:] + \
        bytes(12) + me[12:]
    req = struct.pack(">I", 0x100) + bytes(4) + \
        struct.pack(">Q", 0x0106 << 16 | 7471) + struct.pack(">Q", 0x99)
    req += bytes(4) + struct.pack(">I", 0) + bytes.fromhex("00012301")
    req += bytes.fromhex("00000004") + bytes(3) + bytes([20 << 3])
    req += bytes.fromhex("abcdef") + bytes([20 << 3 | 7])
    req += bytes.fromhex("ffff") + bytes([3 << 4 | 7, 15 << 4])
    req += bytes.fromhex("ffffffff") + peer + me
    req += bytes(4) + bytes([0, 64, 0, 19 << 3])
    req = req.ljust(140, b"\0") + cma
    comm = 1 << 12 | 2
    rtu = struct.pack(">II", 0x100, comm)
    dreq = struct.pack(">II", 0x100, comm) + bytes.fromhex("00012300")
    rej = struct.pack(">II", 0x100, comm) + bytes([0, 0]) + \
        struct.pack(">H", 28)
    sidr = struct.pack(">IHH", 0x200, 0xffff, 0) + \
        struct.pack(">Q", 0x0111 << 16 | 7174) + cma
    write("cm/req", peer + mad(0x10, 1, req))
    write("cm/req-rtu-dreq", peer + mad(0x10, 1, req) + peer +
          mad(0x14, 1, rtu) + peer + mad(0x15, 2, dreq))
    write("cm/req-twice-rej", peer + mad(0x10, 1, req) + peer +
          mad(0x10, 1, req) + peer + mad(0x12, 1, rej))
    write("cm/sidr-req", peer + mad(0x17, 3, sidr))


# fuzz_peer's records (see packet(), post_work(), qp_state() there)
RC, UC, UD, XRC, QP1 = range(5)
END_BATCH, ACKREQ = 64, 2
R_RW, R_RO, R_LOCAL, R_RECV, WIN_LIVE = 0, 1, 2, 3, 7


def peer_packet(target, opnum, psn_sel=0, psn_d=0, addr=R_RW, off=0,
                key=R_RW, rlen=64, payload=None, srqn_sel=0, raw=None,
                swap=0, compare=0, syndrome=0, flags=END_BATCH | ACKREQ):
    """One packet record: payload None is the RETH's length."""
    r = struct.pack("<BBBB", 0, target, 0x80 if raw is not None else opnum,
                    flags)
    if raw is not None:
        r += bytes([raw])
    r += struct.pack("<BH", psn_sel, psn_d & 0xffff)
    if target == UD:
        r += struct.pack("<I", 0)  # a UD QP has no PSN: a raw one
    r += struct.pack("<BH", 0, rlen)
    r += struct.pack("<Bh", addr, off) + bytes([key])
    r += struct.pack("<QQBHQI", swap, compare, syndrome, 0, 0, 0)
    r += bytes([key]) + bytes([0]) + bytes([0]) + bytes([srqn_sel])
    if payload is None:
        r += bytes([0])
    else:
        r += bytes([1]) + struct.pack("<BH", 0, payload)
    return r + struct.pack("<I", 0x5a5a1234)


def peer_post(op, length, off=0):
    """Work on the RC QP: op 0 WRITE, 1 READ, 2 SEND, 3 CAS, 4 FAA."""
    return struct.pack("<BBHH", 4, op, length, off)


def peer_seeds():
    ack = 0x11
    seeds = {
        "write": peer_packet(RC, 0x0A, rlen=64),
        "write-window": peer_packet(RC, 0x0A, addr=WIN_LIVE, key=WIN_LIVE,
                                    rlen=100),
        "write-end": peer_packet(RC, 0x0A, addr=0x40 | R_RW, rlen=16),
        "read-end": peer_packet(RC, 0x0C, addr=0x40 | R_RO, key=R_RO,
                                rlen=100, payload=0),
        "read": peer_packet(RC, 0x0C, addr=R_RO, key=R_RO, rlen=1000,
                            payload=0),
        "cas": peer_packet(RC, 0x13, rlen=0, payload=0, compare=0, swap=9),
        "faa-window": peer_packet(RC, 0x14, addr=WIN_LIVE, key=WIN_LIVE,
                                  rlen=0, payload=0, swap=3),
        "send": peer_packet(RC, 0x04, rlen=100),
        "send-3": peer_packet(RC, 0x00, rlen=1024, flags=0) +
        peer_packet(RC, 0x01, rlen=1024, flags=0) +
        peer_packet(RC, 0x02, rlen=10),
        "write-3": peer_packet(RC, 0x06, rlen=2100, payload=1024,
                               flags=0) +
        peer_packet(RC, 0x07, rlen=1024, flags=0) +
        peer_packet(RC, 0x08, rlen=52),
        "uc-write": peer_packet(UC, 0x0A, rlen=64),
        "uc-send": peer_packet(UC, 0x04, rlen=64),
        "ud-send": peer_packet(UD, 0x04, rlen=64),
        "xrc-send": peer_packet(XRC, 0x04, rlen=64),
        "xrc-write": peer_packet(XRC, 0x0A, rlen=64),
        "xrc-read": peer_packet(XRC, 0x0C, rlen=512, payload=0),
        "cnp": peer_packet(RC, 0, raw=0x81, rlen=0, payload=0),
        "qp1": peer_packet(QP1, 0x04, rlen=256),
        "acked-write": peer_post(0, 100) +
        peer_packet(RC, ack, psn_sel=1, rlen=0, payload=0),
        "answered-read": peer_post(1, 300) +
        peer_packet(RC, 0x10, psn_sel=1, rlen=300),
        "answered-cas": peer_post(3, 8) +
        peer_packet(RC, 0x12, psn_sel=1, rlen=0, payload=0),
        "nak-write": peer_post(0, 100) +
        peer_packet(RC, ack, psn_sel=1, rlen=0, payload=0, syndrome=0x62),
        "reset-rc": struct.pack("<BB", 7, 0) + peer_packet(RC, 0x0A),
    }
    for name, data in seeds.items():
        write("peer/" + name, data)


if __name__ == "__main__":
    for corpus in ("wqe", "control", "packet", "cm", "peer"):
        os.makedirs(os.path.join(HERE, "corpus", corpus), exist_ok=True)
    wqe_seeds()
    control_seeds()
    packet_seeds()
    cm_seeds()
    peer_seeds()
