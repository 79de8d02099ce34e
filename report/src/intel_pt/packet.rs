//! Intel PT packets (Intel SDM vol. 3, "Intel Processor Trace"), read the
//! way perf's packet decoder reads them: the same lengths, the same payload
//! layout (a TNT's first bit at bit 63, an IP packet's compression in
//! `count`), so that the decoder built on them makes perf's decisions.

/// What a packet is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Bad,
    Pad,
    Tnt,
    TipPgd,
    TipPge,
    Tsc,
    TraceStop,
    Fup,
    Mtc,
    Tma,
    Cyc,
    Vmcs,
    Psb,
    Psbend,
    Cbr,
    Tip,
    ModeExec,
    ModeTsx,
    Pip,
    Ovf,
    Mnt,
    Ptwrite,
    PtwriteIp,
    Exstop,
    ExstopIp,
    Mwait,
    Pwre,
    Pwrx,
    Bbp,
    Bip,
    Bep,
    BepIp,
    Cfe,
    CfeIp,
    Evd,
}

/// A decoded packet. `count` is the TNT bit count, an IP packet's IPBytes
/// field, TMA's fast counter, BBP's size bit, or PTWRITE's size field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Packet {
    pub kind: Kind,
    pub count: u32,
    pub payload: u64,
}

impl Default for Packet {
    fn default() -> Self {
        Packet {
            kind: Kind::Bad,
            count: 0,
            payload: 0,
        }
    }
}

/// Block-item context after a BBP packet: BIP packets are only recognised
/// inside a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) enum Context {
    #[default]
    None,
    Block4,
    Block8,
}

/// Why no packet could be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NoPacket {
    /// The packet runs past the end of the buffer.
    NeedMoreBytes,
    /// The bytes are no packet.
    Bad,
}

/// The 16 bytes of a PSB packet.
pub(crate) const PSB: [u8; 16] = [
    0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
];

fn le(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .rev()
        .fold(0u64, |acc, &b| (acc << 8) | u64::from(b))
}

fn need(buf: &[u8], n: usize) -> Result<(), NoPacket> {
    if buf.len() < n {
        Err(NoPacket::NeedMoreBytes)
    } else {
        Ok(())
    }
}

fn packet(kind: Kind, count: u32, payload: u64, len: usize) -> Result<(Packet, usize), NoPacket> {
    Ok((
        Packet {
            kind,
            count,
            payload,
        },
        len,
    ))
}

/// Reads the packet at the start of `buf`; updates `ctx` for the next one.
/// Returns the packet and its length.
pub(crate) fn next(buf: &[u8], ctx: &mut Context) -> Result<(Packet, usize), NoPacket> {
    let (p, mut len) = read(buf, *ctx)?;
    // perf folds the zero (PAD) bytes after a packet into it, up to 8
    // bytes in all.
    while len < 8 && buf.get(len) == Some(&0) {
        len += 1;
    }
    update_context(&p, ctx);
    Ok((p, len))
}

fn update_context(p: &Packet, ctx: &mut Context) {
    match p.kind {
        Kind::Bbp => {
            *ctx = if p.count != 0 {
                Context::Block4
            } else {
                Context::Block8
            }
        }
        Kind::Bad
        | Kind::Pad
        | Kind::Tsc
        | Kind::Tma
        | Kind::Mtc
        | Kind::Fup
        | Kind::Cyc
        | Kind::Cbr
        | Kind::Mnt
        | Kind::Exstop
        | Kind::ExstopIp
        | Kind::Pwre
        | Kind::Pwrx
        | Kind::Bip => {}
        _ => *ctx = Context::None,
    }
}

fn read(buf: &[u8], ctx: Context) -> Result<(Packet, usize), NoPacket> {
    let Some(&byte) = buf.first() else {
        return Err(NoPacket::NeedMoreBytes);
    };
    if ctx != Context::None && byte & 7 == 4 {
        let size = if ctx == Context::Block4 { 4 } else { 8 };
        need(buf, 1 + size)?;
        return packet(
            Kind::Bip,
            u32::from(byte >> 3),
            le(&buf[1..1 + size]),
            1 + size,
        );
    }
    if byte & 1 == 0 {
        return match byte {
            0 => packet(Kind::Pad, 0, 0, 1),
            2 => extended(buf),
            _ => {
                let mut b = u64::from(byte);
                let mut count = 6;
                while count > 0 && b & 0x80 == 0 {
                    b <<= 1;
                    count -= 1;
                }
                packet(Kind::Tnt, count, b << 57, 1)
            }
        };
    }
    if byte & 2 != 0 {
        return cyc(buf);
    }
    match byte & 0x1f {
        0x0d => ip(Kind::Tip, buf),
        0x11 => ip(Kind::TipPge, buf),
        0x01 => ip(Kind::TipPgd, buf),
        0x1d => ip(Kind::Fup, buf),
        0x19 => match byte {
            0x99 => {
                need(buf, 2)?;
                match (buf[1] >> 5, buf[1] & 3) {
                    (_, 3) => Err(NoPacket::Bad),
                    // The address size, with the byte in `count` (its IF
                    // bit).
                    (0, mode) => packet(
                        Kind::ModeExec,
                        u32::from(buf[1]),
                        [16, 64, 32][mode as usize],
                        2,
                    ),
                    (1, tx) => packet(Kind::ModeTsx, 0, u64::from(tx), 2),
                    _ => Err(NoPacket::Bad),
                }
            }
            0x19 => {
                need(buf, 8)?;
                packet(Kind::Tsc, 0, le(&buf[1..8]), 8)
            }
            0x59 => {
                need(buf, 2)?;
                packet(Kind::Mtc, 0, u64::from(buf[1]), 2)
            }
            _ => Err(NoPacket::Bad),
        },
        _ => Err(NoPacket::Bad),
    }
}

fn ip(kind: Kind, buf: &[u8]) -> Result<(Packet, usize), NoPacket> {
    let count = u32::from(buf[0] >> 5);
    let size = match count {
        0 => 0,
        1 => 2,
        2 => 4,
        3 | 4 => 6,
        6 => 8,
        _ => return Err(NoPacket::Bad),
    };
    need(buf, 1 + size)?;
    packet(kind, count, le(&buf[1..1 + size]), 1 + size)
}

fn cyc(buf: &[u8]) -> Result<(Packet, usize), NoPacket> {
    let mut payload = u64::from(buf[0] >> 3);
    let mut more = buf[0] & 4 != 0;
    let mut offset = 1;
    let mut shift = 5;
    while more {
        if offset > 9 {
            return Err(NoPacket::Bad);
        }
        need(buf, offset + 1)?;
        let b = buf[offset];
        offset += 1;
        payload |= u64::from(b >> 1) << shift;
        more = b & 1 != 0;
        shift += 7;
    }
    packet(Kind::Cyc, 0, payload, offset)
}

fn extended(buf: &[u8]) -> Result<(Packet, usize), NoPacket> {
    need(buf, 2)?;
    let fixed = |kind: Kind, len: usize, payload: fn(&[u8]) -> u64| {
        need(buf, len)?;
        packet(kind, 0, payload(buf), len)
    };
    match buf[1] {
        0xa3 => {
            need(buf, 8)?;
            let mut payload = le(&buf[..8]);
            let mut count = 47;
            while count > 0 && payload & (1 << 63) == 0 {
                payload <<= 1;
                count -= 1;
            }
            packet(Kind::Tnt, count, payload << 1, 8)
        }
        0x43 => fixed(Kind::Pip, 8, |b| le(&b[2..8])),
        0x83 => fixed(Kind::TraceStop, 2, |_| 0),
        0x23 => fixed(Kind::Psbend, 2, |_| 0),
        0x03 => fixed(Kind::Cbr, 4, |b| le(&b[2..4])),
        0xc8 => fixed(Kind::Vmcs, 7, |b| le(&b[2..7])),
        0xf3 => fixed(Kind::Ovf, 2, |_| 0),
        0x82 => {
            need(buf, PSB.len())?;
            if buf[..PSB.len()] == PSB {
                packet(Kind::Psb, 0, 0, PSB.len())
            } else {
                Err(NoPacket::Bad)
            }
        }
        0xc3 => {
            need(buf, 11)?;
            if buf[2] != 0x88 {
                return Err(NoPacket::Bad);
            }
            packet(Kind::Mnt, 0, le(&buf[3..11]), 11)
        }
        0x73 => {
            need(buf, 7)?;
            let fc = u32::from(buf[5]) | (u32::from(buf[6] & 1) << 8);
            packet(Kind::Tma, fc, le(&buf[2..4]), 7)
        }
        0xc2 => fixed(Kind::Mwait, 10, |b| le(&b[2..10])),
        0x22 => fixed(Kind::Pwre, 4, |b| le(&b[2..4])),
        0xa2 => fixed(Kind::Pwrx, 7, |b| le(&b[2..7])),
        0x62 => fixed(Kind::Exstop, 2, |_| 0),
        0xe2 => fixed(Kind::ExstopIp, 2, |_| 0),
        0x63 => {
            need(buf, 3)?;
            packet(
                Kind::Bbp,
                u32::from(buf[2] >> 7),
                u64::from(buf[2] & 0x1f),
                3,
            )
        }
        0x33 => fixed(Kind::Bep, 2, |_| 0),
        0xb3 => fixed(Kind::BepIp, 2, |_| 0),
        0x13 | 0x93 => {
            need(buf, 4)?;
            let kind = if buf[2] & 0x80 != 0 {
                Kind::CfeIp
            } else {
                Kind::Cfe
            };
            packet(kind, u32::from(buf[2] & 0x1f), u64::from(buf[3]), 4)
        }
        0x53 => {
            need(buf, 11)?;
            packet(Kind::Evd, u32::from(buf[2] & 0x3f), le(&buf[3..11]), 11)
        }
        b if b & 0x1f == 0x12 => {
            let count = u32::from((b >> 5) & 3);
            let size = match count {
                0 => 4,
                1 => 8,
                _ => return Err(NoPacket::Bad),
            };
            need(buf, 2 + size)?;
            let kind = if b & 0x80 != 0 {
                Kind::PtwriteIp
            } else {
                Kind::Ptwrite
            };
            packet(kind, count, le(&buf[2..2 + size]), 2 + size)
        }
        _ => Err(NoPacket::Bad),
    }
}

impl Packet {
    fn name(&self) -> &'static str {
        match self.kind {
            Kind::Bad => "Bad Packet!",
            Kind::Pad => "PAD",
            Kind::Tnt => "TNT",
            Kind::TipPgd => "TIP.PGD",
            Kind::TipPge => "TIP.PGE",
            Kind::Tsc => "TSC",
            Kind::TraceStop => "TraceSTOP",
            Kind::Fup => "FUP",
            Kind::Mtc => "MTC",
            Kind::Tma => "TMA",
            Kind::Cyc => "CYC",
            Kind::Vmcs => "VMCS",
            Kind::Psb => "PSB",
            Kind::Psbend => "PSBEND",
            Kind::Cbr => "CBR",
            Kind::Tip => "TIP",
            Kind::ModeExec => "MODE.Exec",
            Kind::ModeTsx => "MODE.TSX",
            Kind::Pip => "PIP",
            Kind::Ovf => "OVF",
            Kind::Mnt => "MNT",
            Kind::Ptwrite | Kind::PtwriteIp => "PTWRITE",
            Kind::Exstop | Kind::ExstopIp => "EXSTOP",
            Kind::Mwait => "MWAIT",
            Kind::Pwre => "PWRE",
            Kind::Pwrx => "PWRX",
            Kind::Bbp => "BBP",
            Kind::Bip => "BIP",
            Kind::Bep | Kind::BepIp => "BEP",
            Kind::Cfe | Kind::CfeIp => "CFE",
            Kind::Evd => "EVD",
        }
    }

    /// The packet as perf's intel_pt_pkt_desc describes it (`perf report
    /// -D`).
    pub(crate) fn describe(&self) -> String {
        let name = self.name();
        let p = self.payload;
        match self.kind {
            Kind::Bad | Kind::Pad | Kind::Psb | Kind::Psbend | Kind::TraceStop | Kind::Ovf => {
                name.to_string()
            }
            Kind::Tnt => {
                let bits: String = (0..self.count)
                    .map(|i| if (p << i) & (1 << 63) != 0 { 'T' } else { 'N' })
                    .collect();
                format!("{name} {bits} ({})", self.count)
            }
            Kind::TipPgd | Kind::TipPge | Kind::Tip | Kind::Fup if self.count == 0 => {
                format!("{name} no ip")
            }
            Kind::TipPgd
            | Kind::TipPge
            | Kind::Tip
            | Kind::Fup
            | Kind::Cyc
            | Kind::Vmcs
            | Kind::Mtc
            | Kind::Mnt
            | Kind::Cbr
            | Kind::Tsc => format!("{name} {p:#x}"),
            Kind::Tma => format!("{name} CTC {:#x} FC {:#x}", p as u32, self.count),
            Kind::ModeExec => format!("{name} IF:{} {p}", (self.count >> 2) & 1),
            Kind::ModeTsx => format!("{name} TXAbort:{} InTX:{}", (p >> 1) & 1, p & 1),
            // The payload holds the NR bit at bit 0; perf shows CR3 >> 5.
            Kind::Pip => format!("{name} {:#x} (NR={})", p >> 1, p & 1),
            Kind::Ptwrite => format!("{name} {p:#x} IP:0"),
            Kind::PtwriteIp => format!("{name} {p:#x} IP:1"),
            Kind::Bep | Kind::Exstop => format!("{name} IP:0"),
            Kind::BepIp | Kind::ExstopIp => format!("{name} IP:1"),
            Kind::Mwait => format!(
                "{name} {p:#x} Hints {:#x} Extensions {:#x}",
                p & 0xff,
                (p >> 32) & 3
            ),
            Kind::Pwre => format!(
                "{name} {p:#x} HW:{} CState:{} Sub-CState:{}",
                u8::from(p & 0x80 != 0),
                (p >> 12) & 0xf,
                (p >> 8) & 0xf
            ),
            Kind::Pwrx => format!(
                "{name} {p:#x} Last CState:{} Deepest CState:{} Wake Reason {:#x}",
                (p >> 4) & 0xf,
                p & 0xf,
                (p >> 8) & 0xf
            ),
            Kind::Bbp => format!(
                "{name} SZ {}-byte Type {p:#x}",
                if self.count != 0 { 4 } else { 8 }
            ),
            Kind::Bip => format!("{name} ID 0x{:02x} Value {p:#x}", self.count),
            Kind::Cfe | Kind::CfeIp => format!(
                "{name} IP:{} Type 0x{:02x} Vector {p:#x}",
                u8::from(self.kind == Kind::CfeIp),
                self.count
            ),
            Kind::Evd => format!("{name} Type 0x{:02x} Payload {p:#x}", self.count),
        }
    }
}

/// Writes `data` packet by packet as perf's `-D` dumps an Intel PT
/// buffer: offset, bytes (padded to 16) and description.
pub(crate) fn dump(data: &[u8], out: &mut dyn std::io::Write) -> std::io::Result<()> {
    writeln!(
        out,
        ". ... Intel Processor Trace data: size {} bytes",
        data.len()
    )?;
    let mut ctx = Context::None;
    let mut at = 0;
    while at < data.len() {
        let read = next(&data[at..], &mut ctx);
        let len = read.map_or(1, |(_, n)| n);
        let mut line = format!(".  {at:08x}: ");
        for b in &data[at..at + len] {
            line.push_str(&format!(" {b:02x}"));
        }
        for _ in len..16 {
            line.push_str("   ");
        }
        match read {
            Ok((p, _)) => writeln!(out, "{line} {}", p.describe())?,
            Err(_) => writeln!(out, "{line} Bad packet!")?,
        }
        at += len;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(bytes: &[u8]) -> (Packet, usize) {
        next(bytes, &mut Context::None).expect("a packet")
    }

    // Byte strings and readings from `perf report -D` on quipper's
    // perf.data.intel_pt-4.14.
    #[test]
    fn reads_packets_as_perf_dumps_them() {
        let (p, n) = one(&[0x7d, 0x00, 0xd3, 0x60, 0xb9, 0xff, 0xff, 0x00]);
        assert_eq!(
            (p.kind, p.count, p.payload, n),
            (Kind::Fup, 3, 0xffffb960d300, 8)
        );
        // "TNT NT (2)" with its padding: `0a 00 00 00 00`.
        assert_eq!(one(&[0x0a, 0, 0, 0, 0, 0x2d]).1, 5);
        let (p, n) = one(&[0x19, 0xe8, 0xcf, 0xd2, 0x4c, 0xbc, 0x00, 0x00]);
        assert_eq!((p.kind, p.payload, n), (Kind::Tsc, 0xbc4cd2cfe8, 8));
        let (p, n) = one(&[0x02, 0x73, 0x3c, 0xb2, 0x00, 0x30, 0x00]);
        assert_eq!(
            (p.kind, p.payload, p.count, n),
            (Kind::Tma, 0xb23c, 0x30, 7)
        );
        let (p, _) = one(&[0x02, 0x03, 0x1d, 0x00]);
        assert_eq!((p.kind, p.payload), (Kind::Cbr, 0x1d));
        // "TNT TTNTTT (6)"
        let (p, _) = one(&[0xee]);
        assert_eq!((p.kind, p.count), (Kind::Tnt, 6));
        assert_eq!(p.payload >> 58, 0b110111);
        let (p, n) = one(&[0x2d, 0x94, 0xd7]);
        assert_eq!((p.kind, p.count, p.payload, n), (Kind::Tip, 1, 0xd794, 3));
        assert_eq!(one(&PSB).0.kind, Kind::Psb);
        assert_eq!(
            next(&[0x19, 0x01], &mut Context::None),
            Err(NoPacket::NeedMoreBytes)
        );
        assert_eq!(next(&[0x02, 0x99], &mut Context::None), Err(NoPacket::Bad));
    }
}
