//! Writes a large synthetic perf.data for parser benchmarks.
//!
//! `gen_big OUT [SIZE_MB]` (default 512): one cpu-clock attr as perf's
//! default, a COMM and an MMAP2 for pid 1234, then user-mode SAMPLEs with
//! 5–20-entry callchains and a FINISHED_ROUND every 10000 records.
use std::fs::File;
use std::io::BufWriter;

use prec_format::attr::{attr_type, flags};
use prec_format::constants::sample_type as st;
use prec_format::write::FileWriter;
use prec_format::{Attr, Endian, EventAttr, RecordType};

const PID: u32 = 1234;
const MISC_USER: u16 = 2;
const CONTEXT_USER: u64 = 0xffff_ffff_ffff_fe00;

fn put_u32(b: &mut Vec<u8>, v: u32) {
    b.extend_from_slice(&v.to_le_bytes());
}
fn put_u64(b: &mut Vec<u8>, v: u64) {
    b.extend_from_slice(&v.to_le_bytes());
}
/// NUL-terminated, padded to 8 bytes.
fn put_str(b: &mut Vec<u8>, s: &str) {
    b.extend_from_slice(s.as_bytes());
    let n = (s.len() + 1).div_ceil(8) * 8;
    b.resize(b.len() + n - s.len(), 0);
}
/// sample_id_all trailer for TID|TIME.
fn put_trailer(b: &mut Vec<u8>, time: u64) {
    put_u32(b, PID);
    put_u32(b, PID);
    put_u64(b, time);
}

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let out = args.next().unwrap_or_else(|| {
        eprintln!("usage: gen_big OUT [SIZE_MB]");
        std::process::exit(2)
    });
    let size_mb: u64 = args
        .next()
        .map(|s| s.parse().expect("SIZE_MB"))
        .unwrap_or(512);
    let target = size_mb * 1024 * 1024;

    let attr = Attr {
        type_: attr_type::SOFTWARE,
        size: 128,
        config: 0, // cpu-clock
        sample_period_or_freq: 4000,
        sample_type: st::IP | st::TID | st::TIME | st::PERIOD | st::CALLCHAIN,
        read_format: 0x14,
        flags: flags::DISABLED
            | flags::INHERIT
            | flags::MMAP
            | flags::COMM
            | flags::FREQ
            | flags::ENABLE_ON_EXEC
            | flags::SAMPLE_ID_ALL
            | flags::MMAP2
            | flags::COMM_EXEC,
        ..Attr::default()
    };
    let attrs = [EventAttr {
        attr,
        ids: vec![42],
    }];
    let f = BufWriter::with_capacity(1 << 20, File::create(&out)?);
    let mut w = FileWriter::new(f, Endian::Little, &attrs)?;

    let mut time: u64 = 1_000_000_000;
    let mut body = Vec::with_capacity(256);
    // COMM
    put_u32(&mut body, PID);
    put_u32(&mut body, PID);
    put_str(&mut body, "bigload");
    put_trailer(&mut body, time);
    w.write_record(RecordType::COMM, 0x2000, &body)?;
    // MMAP2
    body.clear();
    let base = 0x5555_5555_4000u64;
    put_u32(&mut body, PID);
    put_u32(&mut body, PID);
    put_u64(&mut body, base);
    put_u64(&mut body, 0x10_0000);
    put_u64(&mut body, 0);
    put_u32(&mut body, 8); // maj
    put_u32(&mut body, 1); // min
    put_u64(&mut body, 123_456); // ino
    put_u64(&mut body, 0); // ino_generation
    put_u32(&mut body, 5); // PROT_READ|PROT_EXEC
    put_u32(&mut body, 2); // MAP_PRIVATE
    put_str(&mut body, "/usr/bin/bigload");
    put_trailer(&mut body, time);
    w.write_record(RecordType::MMAP2, MISC_USER, &body)?;

    let mut rng: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut n: u64 = 0;
    while w.data_size() < target {
        time += 250_000;
        body.clear();
        let ip = base + next() % 0x10_0000;
        put_u64(&mut body, ip);
        put_u32(&mut body, PID);
        put_u32(&mut body, PID);
        put_u64(&mut body, time);
        put_u64(&mut body, 250_000);
        let depth = 5 + next() % 16; // 5..=20 entries, marker included
        put_u64(&mut body, depth);
        put_u64(&mut body, CONTEXT_USER);
        put_u64(&mut body, ip);
        for _ in 2..depth {
            put_u64(&mut body, base + next() % 0x10_0000);
        }
        w.write_record(RecordType::SAMPLE, MISC_USER, &body)?;
        n += 1;
        if n.is_multiple_of(10_000) {
            w.write_record(RecordType::FINISHED_ROUND, 0, &[])?;
        }
    }
    w.write_record(RecordType::FINISHED_ROUND, 0, &[])?;
    let size = w.data_size();
    w.finish(&[])?;
    eprintln!("{out}: {n} samples, {size} data bytes");
    Ok(())
}
