#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
# Copyright (c) 2026 The qhca authors
"""Check the ICRC of every RoCEv2 frame in pcap/pcapng captures.

An implementation independent of hw/qhca-roce.c: zlib.crc32 over the
masked pseudo-packet, built here in Python, as IBA Annex A17 (RoCEv2)
defines it and Linux's Soft-RoCE computes it:

  8 bytes of 0xFF (the absent LRH)
  IPv4 header with TOS, TTL and header checksum set to all ones
    (IPv6: traffic class, flow label and hop limit set to all ones)
  UDP header with its checksum set to all ones
  BTH with its FECN/BECN/reserved byte (byte 4) set to all ones
  the rest of the UDP payload up to the ICRC (extension headers, payload,
  pad)

The ICRC sits in the last 4 bytes of the UDP payload, least significant
byte first (Soft-RoCE writes the CRC as a little-endian u32).

Frames that are not RoCEv2 (not UDP port 4791 over IPv4/IPv6, optionally
802.1Q tagged) are skipped.  Exit status: 0 if every RoCEv2 frame has a
right ICRC and there was at least one, 1 if any ICRC is wrong (or there
was none and --allow-empty was not given), 2 on a usage or file error.

  icrc-check.py [-q] [--allow-empty] [--expect-bad] FILE...
  icrc-check.py [-q] --hex HEXBYTES...   (frames as hex strings)

--expect-bad inverts the verdict: exit 0 only if every RoCEv2 frame has a
wrong ICRC (to show that the checker can fail).
"""

import argparse
import struct
import sys
import zlib

ROCE_PORT = 4791
ETH_P_IP = 0x0800
ETH_P_IPV6 = 0x86DD
VLAN_TPIDS = (0x8100, 0x88A8)


class CaptureError(Exception):
    pass


def read_pcap(data):
    """Yield (linktype, frame) from a classic pcap file."""
    magic = data[:4]
    if magic in (b'\xd4\xc3\xb2\xa1', b'\x4d\x3c\xb2\xa1'):
        end = '<'
    elif magic in (b'\xa1\xb2\xc3\xd4', b'\xa1\xb2\x3c\x4d'):
        end = '>'
    else:
        raise CaptureError('not a pcap file')
    if len(data) < 24:
        raise CaptureError('truncated pcap header')
    linktype = struct.unpack(end + 'I', data[20:24])[0] & 0x0FFFFFFF
    off = 24
    while off < len(data):
        if off + 16 > len(data):
            raise CaptureError('truncated record header at %d' % off)
        incl = struct.unpack(end + 'I', data[off + 8:off + 12])[0]
        off += 16
        if off + incl > len(data):
            raise CaptureError('truncated record at %d' % off)
        yield linktype, data[off:off + incl]
        off += incl


def read_pcapng(data):
    """Yield (linktype, frame) from a pcapng file (EPB and SPB blocks)."""
    off = 0
    end = '<'
    links = []
    while off + 12 <= len(data):
        btype = struct.unpack(end + 'I', data[off:off + 4])[0]
        if btype == 0x0A0D0D0A:
            bom = data[off + 8:off + 12]
            end = '<' if bom == b'\x4d\x3c\x2b\x1a' else '>'
            links = []
        blen = struct.unpack(end + 'I', data[off + 4:off + 8])[0]
        if blen < 12 or off + blen > len(data):
            raise CaptureError('bad pcapng block at %d' % off)
        body = data[off + 8:off + blen - 4]
        if btype == 1:                          # Interface Description
            links.append(struct.unpack(end + 'H', body[:2])[0])
        elif btype == 6:                        # Enhanced Packet
            ifid, _, _, caplen = struct.unpack(end + 'IIII', body[:16])
            if ifid >= len(links):
                raise CaptureError('packet on unknown interface')
            yield links[ifid], body[20:20 + caplen]
        elif btype == 3:                        # Simple Packet
            caplen = struct.unpack(end + 'I', body[:4])[0]
            yield (links[0] if links else 1), body[4:4 + caplen]
        off += blen


def read_capture(path):
    with open(path, 'rb') as f:
        data = f.read()
    if data[:4] == b'\x0a\x0d\x0d\x0a':
        return list(read_pcapng(data))
    return list(read_pcap(data))


def icrc_of(ip_packet, version):
    """The ICRC (as a number) of an IP packet that ends with its ICRC."""
    if version == 4:
        ihl = (ip_packet[0] & 0x0F) * 4
        m = bytearray(ip_packet[:-4])
        m[1] = 0xFF                             # TOS
        m[8] = 0xFF                             # TTL
        m[10:12] = b'\xff\xff'                  # header checksum
        udp = ihl
    else:
        m = bytearray(ip_packet[:-4])
        m[0] |= 0x0F                            # traffic class (low half)
        m[1:4] = b'\xff\xff\xff'                # traffic class, flow label
        m[7] = 0xFF                             # hop limit
        udp = 40
    m[udp + 6:udp + 8] = b'\xff\xff'            # UDP checksum
    m[udp + 8 + 4] = 0xFF                       # BTH FECN/BECN/reserved
    return zlib.crc32(b'\xff' * 8 + bytes(m)) & 0xFFFFFFFF


def check_frame(frame):
    """Return None if not RoCEv2, else (stored, computed, description)."""
    off = 12
    if len(frame) < 14:
        return None
    etype = struct.unpack('!H', frame[off:off + 2])[0]
    while etype in VLAN_TPIDS and len(frame) >= off + 6:
        off += 4
        etype = struct.unpack('!H', frame[off:off + 2])[0]
    ip = frame[off + 2:]
    if etype == ETH_P_IP and len(ip) >= 20 and ip[0] >> 4 == 4:
        ihl = (ip[0] & 0x0F) * 4
        total = struct.unpack('!H', ip[2:4])[0]
        if ip[9] != 17 or ihl < 20 or total > len(ip) or total < ihl + 8:
            return None
        if struct.unpack('!H', ip[6:8])[0] & 0x3FFF:
            return None                         # a fragment
        pkt, version, udp = ip[:total], 4, ihl
    elif etype == ETH_P_IPV6 and len(ip) >= 48 and ip[0] >> 4 == 6:
        total = 40 + struct.unpack('!H', ip[4:6])[0]
        if ip[6] != 17 or total > len(ip):
            return None
        pkt, version, udp = ip[:total], 6, 40
    else:
        return None
    if struct.unpack('!H', pkt[udp + 2:udp + 4])[0] != ROCE_PORT:
        return None
    if len(pkt) < udp + 8 + 12 + 4:
        return (None, None, 'too short for BTH and ICRC')
    if version == 4 and udp != 20:
        return (None, None, 'IPv4 options: ICRC undefined here')
    stored = struct.unpack('<I', pkt[-4:])[0]
    computed = icrc_of(pkt, version)
    desc = 'opcode 0x%02x len %d' % (pkt[udp + 8], len(frame))
    return (stored, computed, desc)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('-q', '--quiet', action='store_true',
                    help='print only wrong frames and the summary')
    ap.add_argument('--allow-empty', action='store_true',
                    help='succeed when there is no RoCEv2 frame')
    ap.add_argument('--expect-bad', action='store_true',
                    help='succeed only if every RoCEv2 ICRC is wrong')
    ap.add_argument('--hex', action='store_true',
                    help='arguments are frames in hex, not files')
    ap.add_argument('inputs', nargs='+')
    args = ap.parse_args()

    frames = []
    try:
        for name in args.inputs:
            if args.hex:
                frames.append((name[:16] + '...', 1, bytes.fromhex(name)))
            else:
                for i, (link, fr) in enumerate(read_capture(name)):
                    frames.append(('%s#%d' % (name, i + 1), link, fr))
    except (OSError, ValueError, CaptureError, struct.error) as e:
        print('icrc-check: %s' % e, file=sys.stderr)
        return 2

    good = bad = skipped = 0
    for where, link, frame in frames:
        res = check_frame(frame) if link == 1 else None
        if res is None:
            skipped += 1
            continue
        stored, computed, desc = res
        if stored is not None and stored == computed:
            good += 1
            if not args.quiet:
                print('%s: ok ICRC 0x%08x (%s)' % (where, stored, desc))
        else:
            bad += 1
            if stored is None:
                print('%s: BAD %s' % (where, desc))
            else:
                print('%s: BAD ICRC stored 0x%08x computed 0x%08x (%s)' %
                      (where, stored, computed, desc))
    print('icrc-check: %d right, %d wrong, %d not RoCEv2' %
          (good, bad, skipped))
    if args.expect_bad:
        return 0 if bad and not good else 1
    if bad or (not good and not args.allow_empty):
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
