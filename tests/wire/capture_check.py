#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""capture_check.py PCAP CHECK [NAME=VALUE...]: what Debian's tshark reads
in a capture of ringnic-dump against what the tools posted (capture.sh).

Every packet must be RoCEv2 as tshark decodes it with no configuration
(UDP port 4791), and carry a valid ICRC, computed here from the packet as
captured (IB spec, RoCEv2 annex: CRC-32 over 8 bytes of ones, the IP and
UDP headers and the BTH with their variant fields masked, then the rest).
CHECK names what the capture must show; the values are those the tools
printed (QPNs, PSNs: client_out=FILE reads them from what a perftest or
ibv_*_pingpong client printed) and what they were asked to move (bytes).
"""
import re
import struct
import subprocess
import sys
import zlib

FIELDS = ["frame.len", "frame.cap_len", "ip.src", "ipv6.src", "ip.dst",
          "ipv6.dst", "udp.dstport", "infiniband.bth.opcode",
          "infiniband.bth.destqp", "infiniband.bth.psn",
          "infiniband.invariant.crc", "data.len", "infiniband.reth.dmalen",
          "infiniband.mad.attributeid"]

# IB opcodes (BTH), by transport
RC_SEND = {0, 1, 2, 3, 4, 5}
RC_WRITE = {6, 7, 8, 9, 10, 11}
RC_READ_REQ = 12
RC_READ_RESP = {13, 14, 15, 16}
RC_ACK = 17
RC_ATOMIC_ACK = 18
RC_ATOMIC = {19, 20}
UD_SEND_ONLY = 0x64
CM_REQ, CM_REP, CM_RTU = 0x0010, 0x0013, 0x0014

failures = []


def fail(msg):
    failures.append(msg)


def packets_from_file(path):
    """Each record of a pcap file (LINKTYPE_RAW, ns): (caplen, len, bytes)."""
    data = open(path, "rb").read()
    magic, major, minor, _, _, snaplen, linktype = struct.unpack(
        "<IHHiIII", data[:24])
    if magic != 0xa1b23c4d or linktype != 101:
        fail(f"not a nanosecond pcap of LINKTYPE_RAW: {magic:#x} {linktype}")
        return []
    out, off = [], 24
    while off + 16 <= len(data):
        _, _, cap, length = struct.unpack("<IIII", data[off:off + 16])
        out.append((cap, length, data[off + 16:off + 16 + cap]))
        off += 16 + cap
    return out


def icrc(pkt):
    """The ICRC a RoCEv2 packet must carry, from its IP header on."""
    if pkt[0] >> 4 == 4:
        ihl = (pkt[0] & 15) * 4
        ip = bytearray(pkt[:ihl])
        ip[1] = 0xff            # TOS
        ip[8] = 0xff            # TTL
        ip[10:12] = b"\xff\xff"  # header checksum
    else:
        ihl = 40
        ip = bytearray(pkt[:40])
        ip[0] |= 0x0f           # traffic class and flow label
        ip[1:4] = b"\xff\xff\xff"
        ip[7] = 0xff            # hop limit
    udp = bytearray(pkt[ihl:ihl + 8])
    udp[6:8] = b"\xff\xff"      # checksum
    bth = bytearray(pkt[ihl + 8:ihl + 20])
    bth[4] = 0xff               # FECN, BECN, reserved
    return zlib.crc32(b"\xff" * 8 + bytes(ip) + bytes(udp) + bytes(bth) +
                      pkt[ihl + 20:-4])


def decode(path):
    out = subprocess.run(["tshark", "-n", "-r", path, "-T", "fields",
                          "-E", "separator=\t"] +
                         sum((["-e", f] for f in FIELDS), []),
                         capture_output=True, text=True, check=True).stdout
    rows = []
    for line in out.splitlines():
        v = dict(zip(FIELDS, line.split("\t")))
        rows.append(v)
    return rows


def num(s):
    return int(s, 0) if s else None


def addresses(path):
    """The client's QPN and first PSN, and the server's QPN, as the client
    printed them ("local address: ... QPN 0x.., PSN 0x..")."""
    text = open(path).read()
    mine = re.search(r"local address: .*?QPN (0x[0-9a-fA-F]+).*?PSN (0x[0-9a-fA-F]+)", text)
    theirs = re.search(r"remote address: .*?QPN (0x[0-9a-fA-F]+)", text)
    if not mine or not theirs:
        fail(f"{path}: no local and remote address printed")
        return {}
    return {"client_qpn": int(mine[1], 16), "client_psn": int(mine[2], 16),
            "server_qpn": int(theirs[1], 16)}


def main():
    path, check = sys.argv[1], sys.argv[2]
    arg = dict(a.split("=", 1) for a in sys.argv[3:])
    client_out = arg.pop("client_out", None)
    arg = {k: int(v, 0) for k, v in arg.items()}
    if client_out:
        arg.update(addresses(client_out))
    raw = packets_from_file(path)
    rows = decode(path)
    if len(rows) != len(raw):
        fail(f"tshark read {len(rows)} packets, the file has {len(raw)}")
    if not rows:
        fail("no packet captured")
    snap = arg.get("snaplen")
    pkts = []
    for i, (v, (cap, length, data)) in enumerate(zip(rows, raw)):
        if v["udp.dstport"] != "4791" or not v["infiniband.bth.opcode"]:
            fail(f"packet {i + 1}: tshark does not read RoCEv2: {v}")
            continue
        if num(v["frame.len"]) != length:
            fail(f"packet {i + 1}: length {v['frame.len']} != {length}")
        if snap:
            if cap > snap:
                fail(f"packet {i + 1}: {cap} bytes kept, snap length {snap}")
        elif cap != length:
            fail(f"packet {i + 1}: cut to {cap} of {length} bytes")
        else:
            stored = struct.unpack("<I", data[-4:])[0]
            if icrc(data) != stored:
                fail(f"packet {i + 1}: ICRC {stored:#x}, should be {icrc(data):#x}")
            # tshark reads the 4 bytes as one big-endian number.
            if num(v["infiniband.invariant.crc"]) != struct.unpack(">I", data[-4:])[0]:
                fail(f"packet {i + 1}: tshark's ICRC {v['infiniband.invariant.crc']}")
        pkts.append({
            "dst": v["ip.dst"] or v["ipv6.dst"],
            "op": num(v["infiniband.bth.opcode"]),
            "qp": num(v["infiniband.bth.destqp"]),
            "psn": num(v["infiniband.bth.psn"]),
            "data": num(v["data.len"]) or 0,
            "dmalen": num(v["infiniband.reth.dmalen"]),
            "attr": num(v["infiniband.mad.attributeid"]),
        })
    CHECKS[check](pkts, arg)
    for f in failures[:20]:
        print(f"capture_check: {path}: {f}")
    print(f"capture_check: {path}: {len(raw)} packets, "
          f"{'FAIL' if failures else 'ok'}")
    sys.exit(1 if failures else 0)


def psns_cover(pkts, first, count, what):
    """The packets' PSNs (retransmissions aside) are first .. first+count-1."""
    got = {p["psn"] for p in pkts}
    want = {(first + i) & 0xffffff for i in range(count)}
    if got != want:
        fail(f"{what}: PSNs {len(got)} distinct, {len(want)} expected from "
             f"{first:#x}; missing {sorted(want - got)[:5]}, extra {sorted(got - want)[:5]}")


def payload(pkts):
    """Bytes carried, each PSN once (cut by a snap length: not known)."""
    seen = {}
    for p in pkts:
        seen.setdefault(p["psn"], p["data"])
    return sum(seen.values())


def to_server(pkts, a, ops):
    return [p for p in pkts if p["op"] in ops and p["qp"] == a["server_qpn"]]


def to_client(pkts, a, ops):
    return [p for p in pkts if p["op"] in ops and p["qp"] == a["client_qpn"]]


def check_write(pkts, a):
    writes = to_server(pkts, a, RC_WRITE)
    segs = -(-a["size"] // a["mtu"])
    psns_cover(writes, a["client_psn"], a["iters"] * segs, "WRITEs")
    if a.get("ipv6") and any(":" not in p["dst"] for p in pkts):
        fail("packets that are not IPv6")
    if not a.get("snaplen") and payload(writes) != a["iters"] * a["size"]:
        fail(f"WRITEs carry {payload(writes)} bytes, {a['iters'] * a['size']} posted")
    if not to_client(pkts, a, {RC_ACK}):
        fail("no ACK to the client's QP")
    only_qps(pkts, a)


def check_read(pkts, a):
    reqs = to_server(pkts, a, {RC_READ_REQ})
    if not reqs or any(p["dmalen"] != a["size"] for p in reqs):
        fail(f"READ requests: {len(reqs)}, each must ask for {a['size']} bytes")
    resps = to_client(pkts, a, RC_READ_RESP)
    if payload(resps) != a["iters"] * a["size"]:
        fail(f"READ responses carry {payload(resps)} bytes, {a['iters'] * a['size']} read")
    only_qps(pkts, a)


def check_send(pkts, a):
    sends = to_server(pkts, a, RC_SEND)
    segs = -(-a["size"] // a["mtu"])
    psns_cover(sends, a["client_psn"], a["iters"] * segs, "SENDs")
    if payload(sends) != a["iters"] * a["size"]:
        fail(f"SENDs carry {payload(sends)} bytes, {a['iters'] * a['size']} posted")
    only_qps(pkts, a)


def check_atomic(pkts, a):
    ops = to_server(pkts, a, RC_ATOMIC)
    psns_cover(ops, a["client_psn"], a["iters"], "atomics")
    acks = to_client(pkts, a, {RC_ATOMIC_ACK})
    if {p["psn"] for p in acks} != {p["psn"] for p in ops}:
        fail(f"{len(acks)} atomic ACKs for {len(ops)} atomics")
    only_qps(pkts, a)


def check_ud(pkts, a):
    ins = to_server(pkts, a, {UD_SEND_ONLY})
    outs = to_client(pkts, a, {UD_SEND_ONLY})
    # ibv_ud_pingpong: each side sends iters messages of size bytes, but
    # the GRH's 40 bytes are the receive buffer's, not the packet's.
    for what, got in (("to the server", ins), ("to the client", outs)):
        if len(got) < a["iters"] or any(p["data"] != a["size"] for p in got):
            fail(f"UD SENDs {what}: {len(got)}, each {a['size']} bytes expected")
    only_qps(pkts, a)


def check_cm(pkts, a):
    mads = [p for p in pkts if p["qp"] == 1 and p["op"] == UD_SEND_ONLY]
    attrs = [p["attr"] for p in mads]
    for want, name in ((CM_REQ, "REQ"), (CM_REP, "REP"), (CM_RTU, "RTU")):
        if want not in attrs:
            fail(f"no CM {name} among {len(mads)} MADs ({attrs})")
    if not [p for p in pkts if p["op"] in RC_SEND | RC_WRITE | RC_READ_RESP]:
        fail("no RC traffic after the CM's MADs")


def check_rping(pkts, a):
    """rping -C 5 -S 64 on the local path: per round, the client's SEND of
    its buffer, the server's READ of it, a SEND, the client's next SEND,
    the server's WRITE into it, a SEND; all acknowledged."""
    kinds = {"READ requests": [p for p in pkts if p["op"] == RC_READ_REQ],
             "READ responses": [p for p in pkts if p["op"] in RC_READ_RESP],
             "WRITEs": [p for p in pkts if p["op"] in RC_WRITE]}
    for what, got in kinds.items():
        if len(got) != 5:
            fail(f"{len(got)} {what}, 5 expected")
    if any(p["dmalen"] != 64 for p in kinds["READ requests"]):
        fail("READ requests not of the 64-byte buffer")
    if any(p["data"] != 64 for p in kinds["READ responses"] + kinds["WRITEs"]):
        fail("READ responses or WRITEs not of 64 bytes")
    sends = [p for p in pkts if p["op"] in RC_SEND]
    if len(sends) < 20:
        fail(f"{len(sends)} SENDs, 4 a round expected")
    acks = [p for p in pkts if p["op"] == RC_ACK]
    if len(acks) != len(sends) + len(kinds["WRITEs"]):
        fail(f"{len(acks)} ACKs for {len(sends)} SENDs and "
             f"{len(kinds['WRITEs'])} WRITEs")


def check_filter(pkts, a):
    if not pkts:
        fail("no packet of the QP captured")
    only_qps(pkts, dict(a, only=1))


def check_none(pkts, a):
    if pkts:
        fail(f"{len(pkts)} packets captured, none should have been")


def only_qps(pkts, a):
    """With -q: every packet is the server QP's (to it, or to its peer)."""
    if a.get("only"):
        others = [p for p in pkts
                  if p["qp"] not in (a["server_qpn"], a["client_qpn"])]
        if others:
            fail(f"-q {a['server_qpn']:#x}: {len(others)} packets of other QPs")


CHECKS = {"write": check_write, "read": check_read, "send": check_send,
          "atomic": check_atomic, "ud": check_ud, "cm": check_cm,
          "rping": check_rping,
          "filter": check_filter, "none": check_none}

if __name__ == "__main__":
    main()
