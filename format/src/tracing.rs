//! The TRACING_DATA feature: what `perf record` saved of the kernel's
//! tracing directory so that tracepoint samples can be decoded later, above
//! all each event's `format` file (its fields and how to print it).
//!
//! Layout (perf's `tracing_data_get` / `trace_report`): the magic
//! `"\x17\x08\x44tracing"`, a NUL-terminated version (`"0.6"`), one byte
//! for the tracer's byte order (1 = big endian), one for `sizeof(long)`, a
//! 32-bit page size, then `header_page` and `header_event` (each a
//! NUL-terminated name, a 64-bit size and the text), the ftrace formats (a
//! 32-bit count, each a 64-bit size and the text), the event formats (a
//! 32-bit count of systems, each a NUL-terminated system name, a 32-bit
//! count and, per event, a 64-bit size and the text), kallsyms and printk
//! formats (a 32-bit size and the text each) and, from version 0.6, the
//! saved command lines (a 64-bit size and the text). Numbers are in the
//! file's byte order.

use crate::bytes::Cursor;
use crate::error::{Error, ErrorKind, Result};
use crate::Endian;

const MAGIC: &[u8] = b"\x17\x08\x44tracing";
/// The TRACING_DATA feature number, for errors.
const FEATURE: u32 = 1;

/// One tracepoint's `format` file as saved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventFormatText<'a> {
    /// The tracing system (`sched`, `raw_syscalls`).
    pub system: &'a str,
    /// The format text (`name:`, `ID:`, `format:` fields, `print fmt:`).
    pub text: &'a str,
}

/// The parts of TRACING_DATA that decoding samples needs.
#[derive(Clone, Debug)]
pub struct TracingData<'a> {
    /// The version string (`0.6`).
    pub version: &'a str,
    /// The byte order of the tracepoint records.
    pub big_endian: bool,
    /// `sizeof(long)` of the traced kernel.
    pub long_size: u8,
    /// The kernel's page size.
    pub page_size: u32,
    /// Every event format, in file order.
    pub events: Vec<EventFormatText<'a>>,
    /// The kernel's `printk_formats` (`0xADDR : "text"` lines): the strings
    /// that `const char *` fields point to. Empty when cut off.
    pub printk: &'a str,
}

fn bad(c: &Cursor<'_>, problem: &str) -> Error {
    c.error(ErrorKind::BadFeature {
        feature: FEATURE,
        problem: problem.to_string(),
    })
}

fn cstr<'a>(c: &mut Cursor<'a>, what: &'static str) -> Result<&'a str> {
    let rest = c.rest();
    let Some(len) = rest.iter().position(|&b| b == 0) else {
        return Err(bad(c, &format!("{what}: no terminating NUL")));
    };
    let s = c.bytes(len, what)?;
    c.bytes(1, what)?;
    std::str::from_utf8(s).map_err(|_| bad(c, &format!("{what}: not UTF-8")))
}

fn text<'a>(c: &mut Cursor<'a>, size: u64, what: &'static str) -> Result<&'a str> {
    let n = usize::try_from(size).map_err(|_| bad(c, &format!("{what}: size {size}")))?;
    let b = c.bytes(n, what)?;
    // A format is ASCII; keep what is valid rather than fail on a stray
    // byte.
    Ok(match std::str::from_utf8(b) {
        Ok(s) => s,
        Err(e) => std::str::from_utf8(&b[..e.valid_up_to()]).unwrap_or(""),
    })
}

/// Parses the TRACING_DATA section `data`, found at file offset `offset`.
/// Only what precedes the event formats and the formats themselves must be
/// complete; a cut-off tail (kallsyms, printk formats, command lines) is
/// ignored.
pub fn parse(data: &[u8], offset: u64) -> Result<TracingData<'_>> {
    // The byte order is only known after the first fields; the magic and
    // version are bytes.
    let mut c = Cursor::new(data, offset, Endian::Little);
    if c.bytes(MAGIC.len(), "tracing data magic")? != MAGIC {
        return Err(bad(&c, "no tracing data magic"));
    }
    let version = cstr(&mut c, "tracing data version")?;
    let big_endian = c.bytes(1, "tracing data byte order")?[0] != 0;
    let long_size = c.bytes(1, "tracing data long size")?[0];
    let endian = if big_endian {
        Endian::Big
    } else {
        Endian::Little
    };
    let at = c.offset() - offset;
    let mut c = Cursor::new(&data[at as usize..], c.offset(), endian);
    let page_size = c.u32("tracing data page size")?;
    for name in ["header_page", "header_event"] {
        let got = cstr(&mut c, "tracing data header name")?;
        if got != name {
            return Err(bad(&c, &format!("expected {name}, found {got:?}")));
        }
        let size = c.u64("tracing data header size")?;
        text(&mut c, size, "tracing data header")?;
    }
    let ftrace = c.u32("ftrace format count")?;
    for _ in 0..ftrace {
        let size = c.u64("ftrace format size")?;
        text(&mut c, size, "ftrace format")?;
    }
    let systems = c.u32("event system count")?;
    let mut events = Vec::new();
    for _ in 0..systems {
        let system = cstr(&mut c, "event system name")?;
        let count = c.u32("event format count")?;
        for _ in 0..count {
            let size = c.u64("event format size")?;
            let text = text(&mut c, size, "event format")?;
            events.push(EventFormatText { system, text });
        }
    }
    // kallsyms, then printk formats; optional for decoding.
    let mut printk = "";
    if let Ok(size) = c.u32("kallsyms size") {
        if text(&mut c, size.into(), "kallsyms").is_ok() {
            if let Ok(size) = c.u32("printk formats size") {
                printk = text(&mut c, size.into(), "printk formats").unwrap_or("");
            }
        }
    }
    Ok(TracingData {
        version,
        big_endian,
        long_size,
        page_size,
        events,
        printk,
    })
}

/// What [`encode`] writes: the kernel's tracing files, as read.
#[derive(Clone, Debug, Default)]
pub struct TracingFiles {
    /// The tracer's byte order.
    pub big_endian: bool,
    /// `sizeof(long)` of the traced kernel.
    pub long_size: u8,
    pub page_size: u32,
    /// `events/header_page`.
    pub header_page: Vec<u8>,
    /// `events/header_event`.
    pub header_event: Vec<u8>,
    /// `events/ftrace/*/format` files that are included.
    pub ftrace: Vec<Vec<u8>>,
    /// Per system (`sched`), the `format` files of its recorded events.
    pub systems: Vec<(String, Vec<Vec<u8>>)>,
    /// `/proc/kallsyms` (perf 6.1 writes none).
    pub kallsyms: Vec<u8>,
    /// `printk_formats`.
    pub printk: Vec<u8>,
    /// `saved_cmdlines`.
    pub saved_cmdlines: Vec<u8>,
}

/// Encodes a TRACING_DATA section (version 0.6) in `files`' byte order:
/// the layout [`parse`] reads.
pub fn encode(files: &TracingFiles) -> Vec<u8> {
    let endian = if files.big_endian {
        Endian::Big
    } else {
        Endian::Little
    };
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(b"0.6\0");
    out.push(u8::from(files.big_endian));
    out.push(files.long_size);
    endian.put_u32(&mut out, files.page_size);
    let sized64 = |out: &mut Vec<u8>, text: &[u8]| {
        endian.put_u64(out, text.len() as u64);
        out.extend_from_slice(text);
    };
    let sized32 = |out: &mut Vec<u8>, text: &[u8]| {
        // Texts over 4 GiB cannot be described; perf has the same limit.
        endian.put_u32(out, u32::try_from(text.len()).unwrap_or(0));
        if u32::try_from(text.len()).is_ok() {
            out.extend_from_slice(text);
        }
    };
    for (name, text) in [
        ("header_page", &files.header_page),
        ("header_event", &files.header_event),
    ] {
        out.extend_from_slice(name.as_bytes());
        out.push(0);
        sized64(&mut out, text);
    }
    endian.put_u32(&mut out, files.ftrace.len() as u32);
    for f in &files.ftrace {
        sized64(&mut out, f);
    }
    endian.put_u32(&mut out, files.systems.len() as u32);
    for (system, formats) in &files.systems {
        out.extend_from_slice(system.as_bytes());
        out.push(0);
        endian.put_u32(&mut out, formats.len() as u32);
        for f in formats {
            sized64(&mut out, f);
        }
    }
    sized32(&mut out, &files.kallsyms);
    sized32(&mut out, &files.printk);
    sized64(&mut out, &files.saved_cmdlines);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(big: bool) -> Vec<u8> {
        let u32b = |v: u32| {
            if big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let u64b = |v: u64| {
            if big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let mut d = MAGIC.to_vec();
        d.extend_from_slice(b"0.6\0");
        d.push(big as u8);
        d.push(8);
        d.extend_from_slice(&u32b(4096));
        for name in ["header_page", "header_event"] {
            d.extend_from_slice(name.as_bytes());
            d.push(0);
            d.extend_from_slice(&u64b(2));
            d.extend_from_slice(b"hi");
        }
        d.extend_from_slice(&u32b(0));
        d.extend_from_slice(&u32b(1));
        d.extend_from_slice(b"sched\0");
        d.extend_from_slice(&u32b(1));
        let f = b"name: sched_switch\nID: 7\n";
        d.extend_from_slice(&u64b(f.len() as u64));
        d.extend_from_slice(f);
        d
    }

    #[test]
    fn parses_both_byte_orders() {
        for big in [false, true] {
            let d = sample(big);
            let t = parse(&d, 100).expect("parses");
            assert_eq!(t.version, "0.6");
            assert_eq!(t.big_endian, big);
            assert_eq!(t.page_size, 4096);
            assert_eq!(t.events.len(), 1);
            assert_eq!(t.events[0].system, "sched");
            assert!(t.events[0].text.starts_with("name: sched_switch"));
        }
    }

    #[test]
    fn encode_then_parse() {
        for big in [false, true] {
            let files = TracingFiles {
                big_endian: big,
                long_size: 8,
                page_size: 4096,
                header_page: b"field: u64 timestamp;".to_vec(),
                header_event: b"type_len : 5 bits".to_vec(),
                ftrace: vec![b"name: function\n".to_vec()],
                systems: vec![
                    (
                        "sched".into(),
                        vec![b"name: a\n".to_vec(), b"name: b\n".to_vec()],
                    ),
                    ("irq".into(), vec![b"name: c\n".to_vec()]),
                ],
                kallsyms: Vec::new(),
                printk: b"0x1 : \"x\"\n".to_vec(),
                saved_cmdlines: b"1 init\n".to_vec(),
            };
            let bytes = encode(&files);
            assert!(bytes.starts_with(&sample(big)[..16]));
            let t = parse(&bytes, 0).expect("parses");
            assert_eq!((t.big_endian, t.long_size, t.page_size), (big, 8, 4096));
            let names: Vec<(&str, &str)> = t.events.iter().map(|e| (e.system, e.text)).collect();
            assert_eq!(
                names,
                [
                    ("sched", "name: a\n"),
                    ("sched", "name: b\n"),
                    ("irq", "name: c\n")
                ]
            );
            assert_eq!(t.printk, "0x1 : \"x\"\n");
        }
    }

    #[test]
    fn cut_off_data_is_an_error_with_its_offset() {
        let d = sample(false);
        for cut in [5, 20, d.len() - 3] {
            let e = parse(&d[..cut], 100).expect_err("cut off");
            assert!(e.offset >= 100 && e.offset <= 100 + cut as u64, "{e}");
        }
    }
}
